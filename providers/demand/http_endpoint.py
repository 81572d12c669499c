"""Demand from any HTTP endpoint that serves HUD's ``queued_jobs_aggregate`` JSON shape.

For teams that already count queued jobs somewhere (a webhook consumer, a metrics exporter):
serve a JSON array of rows ``{"runner_label": "...", "num_queued_jobs": N}`` and point
``capacityAware.demand.http.url`` at it. Parsing and plausibility checks are HUD's
(:func:`providers.hud.client.parse_rows`); demand = the sum over rows whose ``runner_label`` is
one of the scale set's labels. An optional bearer token is read from the environment variable
``demand.http.tokenEnv``. ETags are honoured (``If-None-Match``; a 304 reuses the last count).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import httpx
from pydantic import SecretStr

from providers.actions.redact import REGISTRY
from providers.demand.polling import DemandFetchError
from providers.hud.client import MAX_RESPONSE_BYTES, HudError, parse_rows, sum_for_labels

NAME = "http"


class HttpEndpointClient:
    """One GET per call; the count for ``labels`` or :class:`DemandFetchError`."""

    def __init__(
        self,
        url: str,
        labels: Sequence[str],
        *,
        token: SecretStr | None = None,
        timeout: float = 5.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        if not labels:
            raise ValueError("the scale set has no labels to look up")
        self.url = url
        self.labels = tuple(labels)
        self.timeout = timeout
        self._token = token
        if token is not None:
            REGISTRY.add(token)
        self._owns_http = http is None
        self.http = http or httpx.AsyncClient(timeout=httpx.Timeout(timeout), trust_env=True)
        self._etag: str | None = None
        self._last: int | None = None

    async def aclose(self) -> None:
        if self._owns_http:
            await self.http.aclose()

    async def queued_jobs(self) -> int:
        headers = {"Accept": "application/json"}
        if self._token is not None:
            headers["Authorization"] = f"Bearer {self._token.get_secret_value()}"
        if self._etag and self._last is not None:
            headers["If-None-Match"] = self._etag
        try:
            async with asyncio.timeout(self.timeout):
                status, etag, body = await self._get(headers)
        except (TimeoutError, httpx.TimeoutException):
            raise DemandFetchError(f"{self.url}: no answer within {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise DemandFetchError(f"{self.url}: {type(exc).__name__}: {exc}"[:200]) from None
        if status == 304 and self._last is not None:
            return self._last
        if status != 200:
            raise DemandFetchError(f"{self.url} answered HTTP {status}")
        try:
            total = sum_for_labels(parse_rows(body), self.labels)
        except HudError as exc:
            raise DemandFetchError(f"{self.url}: {exc.reason}") from None
        self._etag, self._last = etag, total
        return total

    async def _get(self, headers: dict[str, str]) -> tuple[int, str | None, bytes]:
        async with self.http.stream("GET", self.url, headers=headers) as response:
            body = bytearray()
            if response.status_code == 200:
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_RESPONSE_BYTES:
                        raise DemandFetchError(
                            f"{self.url}: answer larger than {MAX_RESPONSE_BYTES} bytes"
                        )
            return response.status_code, response.headers.get("etag"), bytes(body)
