"""Queued-job demand from PyTorch's HUD (``hud.pytorch.org``), best effort, failing open.

The endpoint and row shape are HUD's ``queued_jobs_aggregate`` ClickHouse query as served by
``GET https://hud.pytorch.org/api/clickhouse/queued_jobs_aggregate?parameters=<JSON>``
(pytorch/test-infra ``torchci/clickhouse_queries/queued_jobs_aggregate``; the same call a Go
capacity monitor in that ecosystem makes). Authentication is the ``x-hud-internal-bot`` header
(HUD's ``checkAuthWithApiToken``). The answer is a JSON array of rows::

    {"runner_label": "linux.2xlarge", "org": "pytorch", "repo": "pytorch",
     "num_queued_jobs": 10, "min_queue_time_minutes": 3, "max_queue_time_minutes": 41}

``num_queued_jobs`` may also arrive as a digit string ("10"): ClickHouse quotes 64-bit
integers in JSON unless told otherwise, and ``COUNT(*)`` is a UInt64.

Demand for a scale set = the sum of ``num_queued_jobs`` over rows whose ``runner_label`` is one
of the scale set's labels (taken from the scale set at start-up). The labels are also sent in
``parameters.runnerLabels`` so a newer server can filter; we filter locally regardless.

Failures never become 0 or "unlimited": a timeout, a non-200, a body that is not a JSON
array of rows, a wrong type, or an absurd count (negative, > 10**6) makes
:class:`HudDemandSource` report ``Demand(queued_jobs=None, error=...)``, on which the reconciler
falls back to its configured floor (docs/design.md#demand-sources). An outage is logged once when it
starts and once when it ends, not on every poll.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Protocol

import httpx
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    SecretStr,
    StrictInt,
    ValidationError,
)

from providers.actions.redact import REGISTRY, SecretRegistry
from providers.demand.polling import DemandFetchError, PolledDemand
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.demand_settings import HudSettings

log = logging.getLogger(__name__)

DEFAULT_HUD_URL = "https://hud.pytorch.org/api/clickhouse/queued_jobs_aggregate"
TOKEN_HEADER = "x-hud-internal-bot"
#: Counts beyond this are treated as a broken source, not as demand.
MAX_PLAUSIBLE_QUEUED = 1_000_000
MAX_RESPONSE_BYTES = 10 * 1024 * 1024


class HudError(DemandFetchError):
    """The HUD answer is unusable. ``kind``: timeout, connect, http or decode."""

    def __init__(self, kind: str, reason: str) -> None:
        self.reason = reason
        super().__init__(f"HUD {kind} error: {reason}", kind=kind)


def _clickhouse_uint64(value: Any) -> Any:
    """ClickHouse quotes 64-bit integers in JSON by default (``COUNT(*)`` is UInt64), so a
    string of decimal digits is an integer here; any other string stays a type error."""
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        return int(value)
    return value


_INTEGER = re.compile(r"-?[0-9]{1,20}")


class QueuedJobsForRunner(BaseModel):
    """One row of ``queued_jobs_aggregate``; strict types, extra columns ignored."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    runner_label: str
    org: str = ""
    repo: str = ""
    num_queued_jobs: Annotated[StrictInt, BeforeValidator(_clickhouse_uint64)]
    min_queue_time_minutes: float | None = None
    max_queue_time_minutes: float | None = None


@dataclass(frozen=True, slots=True)
class HudQuery:
    """The ``parameters`` of the query (HUD's defaults: 30 min threshold, pytorch orgs)."""

    orgs: tuple[str, ...] = ()
    repo: str = ""
    queued_threshold_minutes: int = 0
    max_age_days: int = 3

    def parameters(self, labels: Sequence[str]) -> str:
        return json.dumps(
            {
                "queuedThresholdMinutes": self.queued_threshold_minutes,
                "maxAgeDays": self.max_age_days,
                "orgs": list(self.orgs),
                "repo": self.repo,
                "runnerLabels": list(labels),
            },
            separators=(",", ":"),
        )


def token_from_env(name: str, env: Mapping[str, str]) -> SecretStr | None:
    """The ``x-hud-internal-bot`` token from environment variable ``name`` (None if unset)."""
    value = env.get(name, "").strip()
    return SecretStr(value) if value else None


class HudClient:
    """One GET per call; raises :class:`HudError` for anything but a plausible answer."""

    def __init__(
        self,
        url: str = DEFAULT_HUD_URL,
        *,
        token: SecretStr | None,
        timeout: float = 5.0,
        query: HudQuery | None = None,
        http: httpx.AsyncClient | None = None,
        registry: SecretRegistry = REGISTRY,
        token_env: str | None = None,
    ) -> None:
        """``token_env``: the environment variable the token was read from
        (``capacityAware.hud.tokenEnv``), named by the warning when it is unset."""
        if timeout <= 0:
            raise ValueError(f"HUD timeout must be > 0 seconds, got {timeout}")
        self.url = url
        self.timeout = timeout
        self.query = query or HudQuery()
        self._token = token
        self._owns_http = http is None
        self.http = http or httpx.AsyncClient(timeout=httpx.Timeout(timeout), trust_env=True)
        if token is not None:
            registry.add(token)
        else:
            source = f"${token_env} is unset or empty" if token_env else "none given"
            log.warning(
                "no HUD token (%s; capacityAware.hud.tokenEnv names the variable, sent as "
                "the %s header): HUD will likely refuse the query",
                source,
                TOKEN_HEADER,
            )

    @classmethod
    def from_settings(
        cls,
        settings: HudSettings,
        *,
        env: Mapping[str, str],
        query: HudQuery | None = None,
    ) -> HudClient | None:
        """A client for the ``capacityAware.hud`` block (None when no URL is configured);
        the token is read from the environment variable the block names."""
        if not settings.url:
            return None
        token = token_from_env(settings.token_env, env)
        return cls(
            settings.url,
            token=token,
            timeout=settings.timeout,
            query=query,
            token_env=settings.token_env,
        )

    async def aclose(self) -> None:
        if self._owns_http:
            await self.http.aclose()

    async def queued_rows(self, labels: Sequence[str]) -> list[QueuedJobsForRunner]:
        headers = {"Accept": "application/json"}
        if self._token is not None:
            headers[TOKEN_HEADER] = self._token.get_secret_value()
        params = {"parameters": self.query.parameters(labels)}
        try:
            async with asyncio.timeout(self.timeout):  # a total bound, not per read
                raw = await self._get(params, headers)
        except TimeoutError:
            raise HudError("timeout", f"no answer within {self.timeout:g} s") from None
        except httpx.TimeoutException:
            raise HudError("timeout", f"no answer within {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise HudError("connect", f"{type(exc).__name__}: {exc}"[:200]) from None
        return parse_rows(raw)

    async def queued_jobs(self, labels: Sequence[str]) -> int:
        """Sum of ``num_queued_jobs`` over rows for ``labels``."""
        return sum_for_labels(await self.queued_rows(labels), labels)

    async def _get(self, params: dict[str, str], headers: dict[str, str]) -> bytes:
        async with self.http.stream("GET", self.url, params=params, headers=headers) as response:
            if response.status_code != 200:
                raise HudError("http", f"HUD answered HTTP {response.status_code}")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_RESPONSE_BYTES:
                    raise HudError("decode", f"answer larger than {MAX_RESPONSE_BYTES} bytes")
            return bytes(body)


def parse_rows(raw: bytes) -> list[QueuedJobsForRunner]:
    """Decode and check a ``queued_jobs_aggregate`` answer (see the module docstring)."""
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HudError("decode", f"answer is not JSON ({exc})"[:200]) from None
    if not isinstance(data, list):
        raise HudError("decode", f"expected a JSON array of rows, got {type(data).__name__}")
    rows = []
    for index, item in enumerate(data):
        try:
            row = QueuedJobsForRunner.model_validate(item)
        except ValidationError as exc:
            first = exc.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(p) for p in first["loc"]) or "<row>"
            raise HudError("decode", f"row {index}: {where}: {first['msg']}") from None
        if not 0 <= row.num_queued_jobs <= MAX_PLAUSIBLE_QUEUED:
            raise HudError(
                "decode",
                f"row {index} ({row.runner_label[:60]!r}): num_queued_jobs "
                f"{row.num_queued_jobs} is outside 0..{MAX_PLAUSIBLE_QUEUED}",
            )
        rows.append(row)
    return rows


#: Carried by every self-hosted job: a row of it says nothing about which scale set is wanted.
GENERIC_LABELS = frozenset({"self-hosted"})


def sum_for_labels(rows: Sequence[QueuedJobsForRunner], labels: Sequence[str]) -> int:
    """Queued jobs of the rows whose label is one of the scale set's.

    A scale set may carry several labels (ARC 0.14, PR #4408): the name plus
    ``scaleSetLabels``. Labels match as GitHub routes ``runs-on``, case-insensitively;
    ``self-hosted`` rows are never counted (every self-hosted job has that label). Limit, on
    purpose: a row label several scale sets share (``linux``) is counted by each of them,
    an over-estimate (fail open), since a row does not say which set will take its jobs."""
    wanted = {label.lower() for label in labels} - GENERIC_LABELS
    total = sum(row.num_queued_jobs for row in rows if row.runner_label.lower() in wanted)
    if total > MAX_PLAUSIBLE_QUEUED:
        raise HudError("decode", f"{total} queued jobs for {sorted(wanted)} is not plausible")
    return total


class HudObserver(Protocol):
    """Metrics hook (``listener.observability.metrics`` implements it)."""

    def record_hud_request(self, duration: float, *, error_kind: str | None = None) -> None: ...


class HudDemandSource(PolledDemand):
    """The latest HUD demand for one scale set (:class:`PolledDemand` around
    :meth:`HudClient.queued_jobs`): fails open to the configured floor, logs an outage once,
    wakes the reconciler when the answer changes."""

    def __init__(
        self,
        client: HudClient,
        labels: Sequence[str],
        *,
        observer: HudObserver | None = None,
        clock: Clock = SYSTEM_CLOCK,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        if not labels:
            raise ValueError("the scale set has no labels to look up in HUD")
        self.client = client
        self.labels = tuple(labels)
        self.observer = observer
        super().__init__(
            "hud",
            self._queued_jobs,
            on_change=on_change,
            observe=self._observed if observer is not None else None,
            clock=clock,
            label="HUD",
            detail=f" for {list(self.labels)}",
            logger=log,
        )

    async def _queued_jobs(self) -> int:
        return await self.client.queued_jobs(self.labels)

    def _observed(self, duration: float, error_kind: str | None) -> None:
        if self.observer is not None:
            self.observer.record_hud_request(duration, error_kind=error_kind)


def scale_set_labels(scale_set: Any) -> tuple[str, ...]:
    """Labels of a ``RunnerScaleSet`` (session.runner_scale_set); its name when it has none."""
    names = getattr(scale_set, "label_names", None)
    return tuple(names) if names else ()


__all__ = [
    "DEFAULT_HUD_URL",
    "MAX_PLAUSIBLE_QUEUED",
    "TOKEN_HEADER",
    "HudClient",
    "HudDemandSource",
    "HudError",
    "HudObserver",
    "HudQuery",
    "QueuedJobsForRunner",
    "parse_rows",
    "scale_set_labels",
    "sum_for_labels",
    "token_from_env",
]
