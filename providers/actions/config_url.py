"""The ``configure_url`` of a scale set: its scope, whether it is GitHub-hosted, and its API URLs.

Rules of docs/protocol.md#config-url and docs/protocol.md#authentication:
1. Leading/trailing ``/`` are trimmed from the whole string, then it is parsed as a URL.
2. The path (slashes trimmed) has 1 segment (organization), or 2 segments: ``enterprises/<e>``
   (enterprise, case-insensitive) or ``<owner>/<repo>`` (repository). Anything else is invalid.
3. Hosted when the host is ``github.com``, ``www.github.com``, ``github.localhost`` or ends with
   ``.ghe.com`` (data residency), unless ``GITHUB_ACTIONS_FORCE_GHES`` is present in the
   environment. Otherwise GHES.
4. REST API base: hosted ``{scheme}://api.{host}`` (``www.github.com`` -> ``api.github.com``),
   GHES ``{scheme}://{host}/api/v3``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

FORCE_GHES_ENV = "GITHUB_ACTIONS_FORCE_GHES"
_HOSTED_HOSTS = frozenset({"github.com", "www.github.com", "github.localhost"})


class ConfigUrlError(ValueError):
    """``configure_url`` is not a GitHub enterprise, organization or repository URL."""


class Scope(enum.Enum):
    ENTERPRISE = "enterprise"
    ORGANIZATION = "organization"
    REPOSITORY = "repository"


@dataclass(frozen=True, slots=True)
class GitHubConfig:
    """A parsed ``configure_url`` (the trimmed string is what runner-registration receives)."""

    configure_url: str
    scheme: str
    #: ``host[:port]`` as written in the URL.
    host: str
    scope: Scope
    enterprise: str = ""
    organization: str = ""
    repository: str = ""
    is_hosted: bool = True

    @property
    def api_base(self) -> str:
        if self.is_hosted:
            host = self.host
            if host.lower().startswith("www.github.com"):
                host = host[len("www.") :]
            return f"{self.scheme}://api.{host}"
        return f"{self.scheme}://{self.host}/api/v3"

    @property
    def registration_token_path(self) -> str:
        if self.scope is Scope.ENTERPRISE:
            return f"/enterprises/{self.enterprise}/actions/runners/registration-token"
        if self.scope is Scope.REPOSITORY:
            repo = f"{self.organization}/{self.repository}"
            return f"/repos/{repo}/actions/runners/registration-token"
        return f"/orgs/{self.organization}/actions/runners/registration-token"

    @property
    def registration_token_url(self) -> str:
        return self.api_base + self.registration_token_path

    @property
    def runner_registration_url(self) -> str:
        return self.api_base + "/actions/runner-registration"

    def installation_token_url(self, installation_id: int) -> str:
        return f"{self.api_base}/app/installations/{installation_id}/access_tokens"


def parse_config_url(url: str, *, env: Mapping[str, str]) -> GitHubConfig:
    """Parse a ``configure_url``; raises :class:`ConfigUrlError` naming what is wrong.
    ``env``: the process's environment (``GITHUB_ACTIONS_FORCE_GHES``)."""
    trimmed = url.strip().strip("/")
    shown = _without_userinfo(trimmed)[:100]
    if "@" in trimmed.partition("://")[2].partition("/")[0]:
        # Refused, not stripped: a secret in a URL ends up in logs, metrics labels and
        # proxies' access logs. The message does not repeat it.
        raise ConfigUrlError(
            f"configure_url {shown!r} must not contain credentials (user:password@host); "
            "put the PAT in github_token (or use GitHub App credentials)"
        )
    try:
        parts = urlsplit(trimmed)
        parts.port  # noqa: B018 - parses the port now, so a bad one is our error, not later
    except ValueError as exc:  # e.g. "Invalid IPv6 URL" for "https://[x/org"
        raise ConfigUrlError(
            f"configure_url {shown!r} is not a valid URL ({exc}), e.g. https://github.com/my-org"
        ) from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigUrlError(
            f"configure_url {shown!r} is not an http(s) URL with a host, "
            "e.g. https://github.com/my-org"
        )
    segments = parts.path.strip("/").split("/") if parts.path.strip("/") else []
    scope: Scope
    enterprise = organization = repository = ""
    if len(segments) == 1 and segments[0]:
        scope, organization = Scope.ORGANIZATION, segments[0]
    elif len(segments) == 2 and all(segments) and segments[0].lower() == "enterprises":
        scope, enterprise = Scope.ENTERPRISE, segments[1]
    elif len(segments) == 2 and all(segments):
        scope, organization, repository = Scope.REPOSITORY, segments[0], segments[1]
    else:
        raise ConfigUrlError(
            f"configure_url {shown!r} should point to an enterprise, org, or repository "
            "(https://<host>/enterprises/<e>, https://<host>/<org> or https://<host>/<owner>/<repo>)"
        )
    hostname = (parts.hostname or "").lower()
    hosted = (hostname in _HOSTED_HOSTS or hostname.endswith(".ghe.com")) and (
        FORCE_GHES_ENV not in env
    )
    return GitHubConfig(
        configure_url=trimmed,
        scheme=parts.scheme,
        host=parts.netloc.rpartition("@")[2],  # never carry userinfo into API URLs
        scope=scope,
        enterprise=enterprise,
        organization=organization,
        repository=repository,
        is_hosted=hosted,
    )


def _without_userinfo(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, path = rest.partition("/")
    return f"{scheme}://{authority.rpartition('@')[2]}{slash}{path}"


__all__ = ["FORCE_GHES_ENV", "ConfigUrlError", "GitHubConfig", "Scope", "parse_config_url"]
