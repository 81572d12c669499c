"""Queued jobs from GitHub's REST API, with the listener's own credentials (optional source).

Per poll, for each configured repository (default: the config URL's repository):

1. ``GET /repos/{o}/{r}/actions/runs?status=queued`` and ``...?status=in_progress`` (a run with
   one job running can have others queued), newest first, at most ``maxRuns`` runs in all;
2. ``GET /repos/{o}/{r}/actions/runs/{id}/jobs`` for each of those runs;
3. demand = jobs with ``status == "queued"`` whose labels match the scale set: every label of
   the job except ``self-hosted`` is one of the scale set's labels (case-insensitive), and at
   least one is.

Every GET sends ``If-None-Match`` with the ETag of the last answer for that URL; a 304 reuses
it (GitHub does not count a 304 against the primary rate limit). The ``x-ratelimit-remaining``
/ ``x-ratelimit-reset`` headers of every answer are kept: below ``rateLimitReserve`` calls left
the source stops calling until the window resets (the credentials are shared with ARC), and a
403/429 rate-limit answer pauses it until ``retry-after`` / the reset. While paused or failing
it reports an error and decide uses the other sources or the floor.

Credentials: a PAT is used as is; a GitHub App mints an installation token with the App JWT
(``POST /app/installations/{id}/access_tokens``), cached until 5 minutes before it expires.
The App needs read access to Actions on the repositories.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
from pydantic import SecretStr

from providers.actions.auth import AppAuth, Credentials, PatAuth, mint_app_jwt
from providers.actions.errors import AuthError
from providers.actions.redact import REGISTRY
from providers.demand.polling import DemandFetchError
from reconciler.clock import SYSTEM_CLOCK, Clock

NAME = "github"
API_VERSION = "2022-11-28"
#: Run statuses whose jobs can still be queued.
RUN_STATUSES = ("queued", "in_progress")
PAGE_SIZE = 100
TOKEN_REFRESH_MARGIN = 300.0

TokenProvider = Callable[[], Awaitable[SecretStr]]


def job_matches(job_labels: Sequence[str], scale_set_labels: Sequence[str]) -> bool:
    """Pure: would this job be routed to the scale set (see the module docstring)?"""
    wanted = {label.lower() for label in scale_set_labels}
    labels = {label.lower() for label in job_labels} - {"self-hosted"}
    return bool(labels) and labels <= wanted


def count_queued(jobs: Sequence[Any], scale_set_labels: Sequence[str]) -> int:
    """Pure: queued jobs of a ``jobs`` array that match the scale set."""
    total = 0
    for job in jobs:
        if not isinstance(job, dict) or job.get("status") != "queued":
            continue
        labels = job.get("labels")
        if isinstance(labels, list) and job_matches([str(x) for x in labels], scale_set_labels):
            total += 1
    return total


@dataclass(frozen=True, slots=True)
class RateLimit:
    remaining: int | None = None
    reset_at: float | None = None

    @classmethod
    def from_headers(cls, headers: httpx.Headers) -> RateLimit:
        return cls(
            _int(headers.get("x-ratelimit-remaining")), _float(headers.get("x-ratelimit-reset"))
        )


class GitHubQueuedJobs:
    """The fetch function of the ``github`` source (wrap it in ``PolledDemand``)."""

    def __init__(
        self,
        api_base: str,
        repositories: Sequence[str],
        labels: Sequence[str],
        token: TokenProvider,
        *,
        http: httpx.AsyncClient,
        timeout: float = 10.0,
        rate_limit_reserve: int = 500,
        max_runs: int = 30,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if not repositories:
            raise ValueError(
                "demand source 'github' needs capacityAware.demand.github.repositories "
                "(owner/repo) when the config URL is not a repository URL"
            )
        if not labels:
            raise ValueError("the scale set has no labels to match jobs against")
        self.api_base = api_base.rstrip("/")
        self.repositories = tuple(repositories)
        self.labels = tuple(labels)
        self._token = token
        self.http = http
        self.timeout = timeout
        self.reserve = rate_limit_reserve
        self.max_runs = max_runs
        self._clock = clock
        self._cache: dict[str, tuple[str, Any]] = {}
        self.rate = RateLimit()
        self._paused_until = 0.0
        #: Requests sent and 304 answers, for tests and benchmarks.
        self.requests = 0
        self.not_modified = 0

    async def __call__(self) -> int:
        try:
            async with asyncio.timeout(self.timeout):
                return await self._poll()
        except TimeoutError:
            raise DemandFetchError(f"GitHub API: no answer within {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise DemandFetchError(f"GitHub API: {type(exc).__name__}: {exc}"[:200]) from None

    async def _poll(self) -> int:
        self._check_budget()
        total = 0
        for repo in self.repositories:
            runs = await self._runs(repo)
            for run_id in runs[: self.max_runs]:
                body = await self._get(f"/repos/{repo}/actions/runs/{run_id}/jobs")
                jobs = body.get("jobs") if isinstance(body, dict) else None
                if not isinstance(jobs, list):
                    raise DemandFetchError(f"GitHub API: run {run_id} of {repo}: no 'jobs' array")
                total += count_queued(jobs, self.labels)
        return total

    async def _runs(self, repo: str) -> list[int]:
        ids: list[int] = []
        for status in RUN_STATUSES:
            body = await self._get(
                f"/repos/{repo}/actions/runs?status={status}&per_page={PAGE_SIZE}"
            )
            runs = body.get("workflow_runs") if isinstance(body, dict) else None
            if not isinstance(runs, list):
                raise DemandFetchError(f"GitHub API: {repo}: no 'workflow_runs' array")
            ids += [r["id"] for r in runs if isinstance(r, dict) and isinstance(r.get("id"), int)]
        return ids

    def _check_budget(self) -> None:
        now = self._clock.now()
        if now < self._paused_until:
            raise DemandFetchError(
                f"GitHub API rate limit: paused for {self._paused_until - now:.0f} s more"
            )
        rate = self.rate
        if rate.remaining is not None and rate.remaining < self.reserve:
            if rate.reset_at is not None and now >= rate.reset_at:
                return  # a new window: try again
            self._paused_until = rate.reset_at or now + 60.0
            raise DemandFetchError(
                f"GitHub API rate limit: {rate.remaining} calls left, below the reserve of "
                f"{self.reserve}; paused until the window resets"
            )

    async def _get(self, path: str) -> Any:
        url = self.api_base + path
        token = await self._token()
        headers = {
            "Accept": "application/vnd.github+json",
            "Authorization": f"Bearer {token.get_secret_value()}",
            "X-GitHub-Api-Version": API_VERSION,
        }
        cached = self._cache.get(url)
        if cached is not None:
            headers["If-None-Match"] = cached[0]
        self.requests += 1
        response = await self.http.get(url, headers=headers)
        self.rate = RateLimit.from_headers(response.headers)
        if response.status_code == 304 and cached is not None:
            self.not_modified += 1
            return cached[1]
        if response.status_code in (403, 429) and self._rate_limited(response):
            raise DemandFetchError(f"GitHub API rate limit (HTTP {response.status_code}) on {path}")
        if response.status_code != 200:
            raise DemandFetchError(f"GitHub API answered HTTP {response.status_code} for {path}")
        try:
            body = response.json()
        except ValueError:
            raise DemandFetchError(f"GitHub API: {path}: answer is not JSON") from None
        etag = response.headers.get("etag")
        if etag:
            self._cache[url] = (etag, body)
        return body

    def _rate_limited(self, response: httpx.Response) -> bool:
        retry_after = _float(response.headers.get("retry-after"))
        now = self._clock.now()
        if retry_after is not None:
            self._paused_until = now + retry_after
            return True
        if self.rate.remaining == 0:
            self._paused_until = self.rate.reset_at or now + 60.0
            return True
        return False


class InstallationToken:
    """A GitHub App installation token, minted with the App JWT and cached until near expiry."""

    def __init__(
        self,
        auth: AppAuth,
        api_base: str,
        http: httpx.AsyncClient,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.auth = auth
        self.url = f"{api_base.rstrip('/')}/app/installations/{auth.installation_id}/access_tokens"
        self.http = http
        self._clock = clock
        self._token: SecretStr | None = None
        self._expires_at = 0.0

    async def __call__(self) -> SecretStr:
        if self._token is not None and self._clock.now() < self._expires_at - TOKEN_REFRESH_MARGIN:
            return self._token
        try:
            app_jwt = mint_app_jwt(self.auth, now=self._clock.now())
        except AuthError as exc:
            raise DemandFetchError(str(exc)) from None
        response = await self.http.post(
            self.url,
            headers={
                "Accept": "application/vnd.github+json",
                "Authorization": f"Bearer {app_jwt}",
                "X-GitHub-Api-Version": API_VERSION,
            },
        )
        if response.status_code != 201:
            raise DemandFetchError(f"GitHub App installation token: HTTP {response.status_code}")
        body = response.json()
        token = SecretStr(str(body.get("token", "")))
        REGISTRY.add(token)
        self._token = token
        self._expires_at = _iso_epoch(body.get("expires_at")) or self._clock.now() + 3600.0
        return token


def token_provider(
    credentials: Credentials, api_base: str, http: httpx.AsyncClient
) -> TokenProvider:
    """The listener's own credentials as a bearer-token provider for the REST API."""
    if isinstance(credentials, PatAuth):
        pat = credentials.token

        async def constant() -> SecretStr:
            return pat

        return constant
    return InstallationToken(credentials, api_base, http)


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _iso_epoch(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
