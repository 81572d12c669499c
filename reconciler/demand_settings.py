"""The demand part of the ``capacityAware`` block: the HUD feed and the ``demand`` sources
(statistics, GitHub REST, an HTTP endpoint), and how their answers combine."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from reconciler.settings_types import Seconds, SettingsModel


class HudSettings(SettingsModel):
    """Where queued-job demand comes from (best effort; fails open to the floor)."""

    url: str | None = None
    #: Environment variable holding the ``x-hud-internal-bot`` token (never the token itself).
    token_env: str = "HUD_INTERNAL_BOT_TOKEN"
    timeout: Seconds = Field(default=5.0, gt=0, le=60)
    poll_interval: Seconds = Field(default=30.0, ge=1, le=3600)


DemandSourceName = Literal["statistics", "github", "hud", "http"]


class GitHubDemandSettings(SettingsModel):
    """GitHub REST polling of queued jobs, with the listener's own credentials (optional)."""

    #: ``owner/repo`` to look in; empty = the repository of a repository-scoped config URL.
    repositories: list[str] = Field(default_factory=list, max_length=50)
    poll_interval: Seconds = Field(default=60.0, ge=10, le=3600)
    timeout: Seconds = Field(default=10.0, gt=0, le=120)
    #: Stop polling (and use the floor) while fewer API calls than this are left in the
    #: rate-limit window: the credentials are shared with ARC and the runners' registration.
    rate_limit_reserve: int = Field(default=500, ge=0, le=100_000)
    #: At most this many workflow runs looked into per poll (bounds the calls per poll).
    max_runs: int = Field(default=30, ge=1, le=500)


class HttpDemandSettings(SettingsModel):
    """Any HTTP endpoint serving HUD's ``queued_jobs_aggregate`` JSON rows."""

    url: str | None = None
    #: Environment variable with a bearer token for the endpoint (optional; never the token).
    token_env: str = "DEMAND_HTTP_TOKEN"
    timeout: Seconds = Field(default=5.0, gt=0, le=60)
    poll_interval: Seconds = Field(default=30.0, ge=1, le=3600)


class DemandSettings(SettingsModel):
    """Which demand sources feed the reconciler, and how their answers are combined.

    ``sources`` in order of preference; None = ``[hud, statistics]`` when ``hud.url`` is set,
    else ``[statistics]``. ``combine: max`` (default, as the simulator's "both") takes the
    largest answer: each source undercounts in its own way; ``first`` the first source that
    answers. Only when every source fails does decide use the floor.
    """

    sources: list[DemandSourceName] | None = Field(default=None, min_length=1)
    combine: Literal["first", "max"] = "max"
    #: While no job message can bring statistics (every advertised slot taken, e.g. 0 at
    #: scale-to-zero), refresh the message session this often to read them (one PATCH per
    #: interval, only while blind and stale); 0 turns it off (statistics come with messages
    #: only, as in ARC). Without it a statistics-only listener at 0 never sees a new job.
    statistics_refresh: Seconds = Field(default=2.0, ge=0, le=3600)
    #: The same refresh while jobs are assigned to the scale set (a batch in flight, every
    #: slot taken): the next job is likely, and a second of blindness is a second of its
    #: wait (measured on the merge queue: docs/benchmarks.md). Idle scale sets keep
    #: ``statisticsRefresh``; 0 there turns both off.
    statistics_refresh_busy: Seconds = Field(default=1.0, ge=1, le=3600)
    github: GitHubDemandSettings = Field(default_factory=GitHubDemandSettings)
    http: HttpDemandSettings = Field(default_factory=HttpDemandSettings)

    @model_validator(mode="after")
    def _check_sources(self) -> DemandSettings:
        if 0 < self.statistics_refresh < 1:
            raise ValueError(
                "demand.statisticsRefresh must be 0 (off) or at least 1s "
                f"(got {self.statistics_refresh:g}s)"
            )
        if self.sources is not None and len(set(self.sources)) != len(self.sources):
            raise ValueError(f"demand.sources lists a source twice: {self.sources}")
        if self.sources is not None and "http" in self.sources and not self.http.url:
            raise ValueError("demand.sources has 'http' but demand.http.url is not set")
        for repo in self.github.repositories:
            owner, _, name = repo.partition("/")
            if not owner or not name or "/" in name:
                raise ValueError(f"demand.github.repositories: {repo!r} is not 'owner/repo'")
        return self

    def resolved_sources(self, hud_url: str | None) -> tuple[DemandSourceName, ...]:
        if self.sources is not None:
            return tuple(self.sources)
        return ("hud", "statistics") if hud_url else ("statistics",)
