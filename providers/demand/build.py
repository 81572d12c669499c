"""Build the remote demand sources the ``capacityAware.demand`` block asks for.

``statistics`` is fed by the listener loop and ``hud`` keeps its own poller
(``providers.hud.client``); this module builds ``github`` and ``http``, each a
:class:`PolledDemand` with its poll interval, and the closers of their HTTP clients.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

import httpx
from pydantic import SecretStr

from providers.actions.auth import Credentials
from providers.actions.config_url import GitHubConfig, Scope
from providers.demand import OnChange
from providers.demand.github_rest import NAME as GITHUB
from providers.demand.github_rest import GitHubQueuedJobs, token_provider
from providers.demand.http_endpoint import NAME as HTTP
from providers.demand.http_endpoint import HttpEndpointClient
from providers.demand.polling import PolledDemand
from reconciler.demand_settings import DemandSettings


@dataclass
class RemoteSources:
    polled: list[tuple[PolledDemand, float]] = field(default_factory=list)
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    async def aclose(self) -> None:
        for close in self.closers:
            await close()


def repositories_for(settings: DemandSettings, github: GitHubConfig) -> list[str]:
    """Configured ``owner/repo`` list, else the config URL's own repository."""
    if settings.github.repositories:
        return list(settings.github.repositories)
    if github.scope is Scope.REPOSITORY:
        return [f"{github.organization}/{github.repository}"]
    return []


def build_remote_sources(
    names: Sequence[str],
    settings: DemandSettings,
    *,
    labels: Sequence[str],
    github: GitHubConfig,
    credentials: Credentials,
    env: Mapping[str, str],
    on_change: OnChange | None = None,
    http: httpx.AsyncClient | None = None,
) -> RemoteSources:
    built = RemoteSources()
    if GITHUB in names:
        gh = settings.github
        client = http or httpx.AsyncClient(timeout=httpx.Timeout(gh.timeout), trust_env=True)
        if http is None:
            built.closers.append(client.aclose)
        fetch = GitHubQueuedJobs(
            github.api_base,
            repositories_for(settings, github),
            labels,
            token_provider(credentials, github.api_base, client),
            http=client,
            timeout=gh.timeout,
            rate_limit_reserve=gh.rate_limit_reserve,
            max_runs=gh.max_runs,
        )
        built.polled.append((PolledDemand(GITHUB, fetch, on_change=on_change), gh.poll_interval))
    if HTTP in names and settings.http.url:
        hs = settings.http
        token = env.get(hs.token_env, "").strip()
        endpoint = HttpEndpointClient(
            hs.url or "",
            labels,
            token=SecretStr(token) if token else None,
            timeout=hs.timeout,
            http=http,
        )
        built.closers.append(endpoint.aclose)
        built.polled.append(
            (PolledDemand(HTTP, endpoint.queued_jobs, on_change=on_change), hs.poll_interval)
        )
    return built
