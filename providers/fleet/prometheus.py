"""Read the fleet view from a Prometheus-compatible query API (``GET /api/v1/query``).

Two instant queries per read, both over the recording rules shipped in
config/monitoring/fleet-rules.yaml:

1. ``{__name__=~"fleet_cluster:arc_capacity_.+", fleet="<fleet>"}``: every per-cluster row.
2. ``timestamp(fleet_cluster:arc_capacity_trouble:max{fleet="<fleet>"})``: when each
   cluster's row was last evaluated (an instant query's own timestamp is the query time, not
   the sample's, so the age needs ``timestamp()``).

Each query makes at most ``1 + retries`` attempts of at most ``timeout`` seconds each, with a
short capped back-off between them; any failure is a :class:`FleetReadError` with a reason
(never a credential), and the caller keeps no view (the listener acts alone).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping

import httpx
from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError

from providers.actions.redact import REGISTRY
from providers.backoff import Backoff
from reconciler.fleet import ClusterRow

#: The recorded series names (config/monitoring/fleet-rules.yaml) and the row field of each.
ROW_FIELDS: Mapping[str, str] = {
    "fleet_cluster:arc_capacity_free_slots:sum": "free_slots",
    "fleet_cluster:arc_capacity_pairs_in_flight:sum": "in_flight",
    "fleet_cluster:arc_capacity_queued_jobs:max": "queued",
    "fleet_cluster:arc_capacity_trouble:max": "trouble",
}
TROUBLE = "fleet_cluster:arc_capacity_trouble:max"
#: Answers larger than this are refused (a view of a few clusters is a few KB).
MAX_RESPONSE_BYTES = 1 << 20
RETRY = Backoff(first=0.2, cap=1.0)


class FleetReadError(Exception):
    """The view could not be read; ``str()`` says why, ``kind`` is a bounded label value."""

    def __init__(self, reason: str, *, kind: str) -> None:
        super().__init__(reason)
        self.kind = kind


class _Sample(BaseModel):
    model_config = ConfigDict(extra="ignore")
    metric: dict[str, str]
    value: tuple[float, str]


class _Data(BaseModel):
    model_config = ConfigDict(extra="ignore")
    resultType: str
    result: list[_Sample]


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")
    status: str
    data: _Data | None = None
    error: str | None = None


def row_query(fleet: str) -> str:
    return '{__name__=~"fleet_cluster:arc_capacity_.+", fleet="' + fleet + '"}'


def age_query(fleet: str) -> str:
    return f'timestamp({TROUBLE}{{fleet="{fleet}"}})'


def parse_answer(body: bytes) -> list[_Sample]:
    """The samples of an instant-vector answer, or :class:`FleetReadError` (``decode``)."""
    try:
        answer = _Answer.model_validate_json(body)
    except ValidationError as exc:
        raise FleetReadError(
            f"not a query API answer: {exc.errors()[0]['msg']}", kind="decode"
        ) from None
    if answer.status != "success" or answer.data is None:
        raise FleetReadError(f"query failed: {answer.error or answer.status}", kind="query")
    if answer.data.resultType != "vector":
        raise FleetReadError(f"expected a vector, got {answer.data.resultType}", kind="decode")
    return answer.data.result


def rows_of(values: list[_Sample], stamps: list[_Sample]) -> tuple[ClusterRow, ...]:
    """One row per ``cluster`` label value; a series without one is ignored. Where a store
    returns a cluster twice (HA replicas without deduplication) the newest stamp wins, and
    each field takes the larger value (trouble from either replica counts)."""
    sampled: dict[str, float] = {}
    for s in stamps:
        cluster = s.metric.get("cluster")
        stamp = _number(s.value[1])
        if cluster and stamp is not None:
            sampled[cluster] = max(sampled.get(cluster, 0.0), stamp)
    fields: dict[str, dict[str, float]] = {}
    for s in values:
        cluster = s.metric.get("cluster")
        field = ROW_FIELDS.get(s.metric.get("__name__", ""))
        number = _number(s.value[1])
        if not cluster or field is None or number is None:
            continue
        row = fields.setdefault(cluster, {})
        row[field] = max(row.get(field, number), number)
    return tuple(
        ClusterRow(cluster=c, sampled_at=sampled[c], **fields.get(c, {})) for c in sorted(sampled)
    )


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


class PrometheusFleetReader:
    """Reads one fleet's rows; ``http`` is injected by tests (loopback) or built here."""

    def __init__(
        self,
        url: str,
        fleet: str,
        *,
        timeout: float,
        retries: int,
        token: SecretStr | None = None,
        tenant: str | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.endpoint = url.rstrip("/") + "/api/v1/query"
        self.fleet = fleet
        self.timeout = timeout
        self.retries = retries
        self._headers = {"Accept": "application/json"}
        if token is not None:
            REGISTRY.add(token)
            self._headers["Authorization"] = f"Bearer {token.get_secret_value()}"
        if tenant:
            self._headers["X-Scope-OrgID"] = tenant
        self._owns_http = http is None
        self.http = http or httpx.AsyncClient(timeout=httpx.Timeout(timeout), trust_env=True)

    async def aclose(self) -> None:
        if self._owns_http:
            await self.http.aclose()

    async def read(self) -> tuple[ClusterRow, ...]:
        values = await self._query(row_query(self.fleet))
        stamps = await self._query(age_query(self.fleet))
        return rows_of(values, stamps)

    async def _query(self, query: str) -> list[_Sample]:
        last: FleetReadError | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                await asyncio.sleep(RETRY.delay(attempt - 1))
            try:
                return parse_answer(await self._get(query))
            except FleetReadError as exc:
                last = exc
                if exc.kind in ("decode", "query"):  # the same answer again: no retry
                    break
        if last is None:  # unreachable: the loop runs at least once
            raise FleetReadError("no attempt made", kind="other")
        raise last

    async def _get(self, query: str) -> bytes:
        try:
            answer = await asyncio.wait_for(
                self.http.get(self.endpoint, params={"query": query}, headers=self._headers),
                timeout=self.timeout,
            )
        except (TimeoutError, httpx.TimeoutException):
            raise FleetReadError(f"no answer within {self.timeout:g}s", kind="timeout") from None
        except httpx.HTTPError as exc:
            raise FleetReadError(f"{type(exc).__name__}: {exc}", kind="connect") from None
        if len(answer.content) > MAX_RESPONSE_BYTES:
            raise FleetReadError(f"answer over {MAX_RESPONSE_BYTES} bytes", kind="decode")
        if answer.status_code >= 400 and answer.status_code not in (400, 422):  # 4xx: an error body
            raise FleetReadError(f"HTTP {answer.status_code}", kind="http")
        return bytes(answer.content)
