"""The scaler's Kubernetes calls, sent like client-go sends them.

:class:`KubernetesScalerWriter` is the :class:`listener.arc.scaler.ScalerWriter` over the official
kubernetes client. Three things make it behave like ARC's client-go client rather than a
bare HTTP call, because a listener run that ends on one throttled PATCH restarts the pod (the
message it was handling is redelivered to the next session, docs/protocol.md#listener-loop):

1. **Client-side rate limit** (ARC 0.15, PR #4558): every request takes a token from one
   :class:`TokenBucket` of ``qps`` 50 and ``burst`` 100, as ``rest.Config{QPS: 50, Burst:
   100}`` does, or of the AutoscalingRunnerSet's ``spec.listenerConfig.scaler.{qps,burst}``
   when set (``listener.arc.config.scaler_rate_limit``). Before 0.15 the listener ran at
   client-go's default 5 / 10, which capped it at 5 JobStarted patches a second (issue
   #4554); we use 0.15's numbers for every ARC version because they only bound our own client.
2. **Retries** (:class:`RetryPolicy`): a 429 or a 5xx is retried after ``Retry-After`` when
   the answer carries one (capped), else after an exponential back-off; a connection that
   broke before any answer is retried the same way. Bounded in count and in total time; past
   either bound the error goes up and the run ends, which is what client-go does once its
   retries (10 by default) are spent. client-go retries a 5xx only when it carries
   Retry-After; we retry every 5xx because a merge patch of the same bytes is idempotent (the
   status patch carries a resourceVersion precondition when it sets the phase, so a repeat
   of an applied one meets a 409 and is re-read, never applied twice).
3. **Typed answers**: 404 :class:`RunnerNotFound`, 409 :class:`WriteConflict` (the caller
   re-reads), 403 on a read :class:`ReadForbidden` (a patch-only Role, as ARC 0.13/0.14 make).

4. **Never holding the process** (providers/kubernetes/write/lane.py): with a ``stop`` token every
   wait
   (back-off, ``Retry-After``, rate limit) ends when the listener stops (:class:`WriteStopped`),
   and with a ``fence`` every attempt is sent only while this process can still renew its
   Lease, with a timeout that ends before a successor could hold it (:class:`LeaseFenced`).

With ``exact_bytes=True`` (default) the client's ``ApiClient`` builds each request (URL, auth
incl. token refresh, TLS and proxy pool) and ARC's compact bytes go out on its connection
pool; with ``exact_bytes=False`` ``CustomObjectsApi`` is called with the decoded dict (same
document, ``json.dumps`` spacing) and the merge-patch content type forced.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import urllib3

from providers.backoff import Backoff
from providers.kubernetes.write.arc_wire import (
    GROUP,
    MERGE_PATCH,
    VERSION,
    PermanentWriteError,
    ReadForbidden,
    RunnerNotFound,
    ScalerError,
    WriteConflict,
)
from providers.kubernetes.write.lane import LeaseFence, StopToken
from reconciler.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)

#: ARC 0.15's listener client (PR #4558): ``conf.QPS = 50; conf.Burst = 100``.
LISTENER_QPS = 50.0
LISTENER_BURST = 100

Sleep = Callable[[float], None]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How long one write keeps trying (client-go: 10 retries, Retry-After honoured)."""

    max_retries: int = 10
    #: Back-off without Retry-After: base * 2**attempt, capped.
    backoff_base: float = 0.2
    backoff_cap: float = 10.0
    #: A Retry-After above this is waited as this (a broken server must not park us an hour).
    retry_after_cap: float = 30.0
    #: The whole call, waits included, gives up past this.
    deadline: float = 120.0

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.backoff_base < 0 or self.deadline <= 0:
            raise ValueError(f"invalid retry policy {self}")

    def wait(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.retry_after_cap)
        return Backoff(self.backoff_base, self.backoff_cap).delay(attempt)


class TokenBucket:
    """client-go's ``flowcontrol.NewTokenBucketRateLimiter(qps, burst)``: ``take`` blocks
    until a token is free. Thread-safe (the scaler runs in a worker thread)."""

    def __init__(
        self,
        qps: float = LISTENER_QPS,
        burst: int = LISTENER_BURST,
        *,
        clock: Clock = SYSTEM_CLOCK,
        sleep: Sleep = time.sleep,
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"need qps > 0 and burst >= 1, got qps={qps} burst={burst}")
        self.qps, self.burst = qps, burst
        self._clock, self._sleep = clock, sleep
        self._tokens = float(burst)
        self._at = clock.monotonic()
        self._lock = threading.Lock()
        self.waited = 0.0

    def take(self) -> None:
        with self._lock:
            now = self._clock.monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._at) * self.qps)
            self._at = now
            self._tokens -= 1.0
            debt = -self._tokens / self.qps if self._tokens < 0 else 0.0
        if debt > 0:
            self.waited += debt
            self._sleep(debt)


@dataclass(frozen=True, slots=True)
class Answer:
    status: int  # 0: no answer (the connection broke)
    headers: Mapping[str, str]
    data: bytes
    error: str = ""


class KubernetesScalerWriter:
    """See the module docstring."""

    def __init__(
        self,
        api: Any,
        *,
        exact_bytes: bool = True,
        timeout: float = 30.0,
        policy: RetryPolicy | None = None,
        limiter: TokenBucket | None = None,
        qps: float = LISTENER_QPS,
        burst: int = LISTENER_BURST,
        clock: Clock = SYSTEM_CLOCK,
        sleep: Sleep | None = None,
        stop: StopToken | None = None,
        fence: LeaseFence | None = None,
    ) -> None:
        """``sleep`` defaults to ``stop.sleep`` (every wait ends on a stop) or ``time.sleep``."""
        from kubernetes import client as k8s

        self._k8s = k8s
        self.custom = api if isinstance(api, k8s.CustomObjectsApi) else k8s.CustomObjectsApi(api)
        self.exact_bytes = exact_bytes
        self.timeout = timeout
        self.policy = policy or RetryPolicy()
        if sleep is None:
            sleep = stop.sleep if stop is not None else time.sleep
        self.limiter = limiter or TokenBucket(qps, burst, clock=clock, sleep=sleep)
        self._clock, self._sleep = clock, sleep
        self.stop = stop
        self.fence = fence
        #: Retries made, by HTTP status (0 = connection broke): what a storm cost.
        self.retries: dict[int, int] = {}

    # --- the ScalerWriter calls ----------------------------------------------------------

    def patch_ephemeral_runner_set(self, namespace: str, name: str, body: bytes) -> None:
        self._call("PATCH", "ephemeralrunnersets", namespace, name, body, status=False)

    def patch_ephemeral_runner_status(self, namespace: str, name: str, body: bytes) -> None:
        self._call("PATCH", "ephemeralrunners", namespace, name, body, status=True)

    def get_ephemeral_runner(self, namespace: str, name: str) -> dict[str, Any]:
        data = self._call("GET", "ephemeralrunners", namespace, name, b"", status=False)
        try:
            doc = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError):
            doc = None
        if not isinstance(doc, dict):
            raise ScalerError(f"GET ephemeralrunners {namespace}/{name}: not a JSON object")
        return doc

    # --- one call, retried ---------------------------------------------------------------

    def _call(
        self, method: str, plural: str, namespace: str, name: str, body: bytes, *, status: bool
    ) -> bytes:
        what = f"{method} {plural} {namespace}/{name}{'/status' if status else ''}"
        started = self._clock.monotonic()
        attempt = 0
        while True:
            self.limiter.take()
            timeout = self._attempt_timeout(what)
            answer = self._send(
                method, plural, namespace, name, body, status=status, timeout=timeout
            )
            if 200 <= answer.status <= 299:
                return answer.data
            _raise_final(answer, what, plural, namespace, name)
            wait = self.policy.wait(attempt, _retry_after(answer.headers))
            spent = self._clock.monotonic() - started
            if attempt >= self.policy.max_retries or spent + wait > self.policy.deadline:
                raise ScalerError(
                    f"{what}: {_describe(answer)}; gave up after {attempt + 1} attempts "
                    f"in {spent:.1f}s"
                )
            self.retries[answer.status] = self.retries.get(answer.status, 0) + 1
            log.warning("%s: %s; retrying in %.2fs", what, _describe(answer), wait)
            self._sleep(wait)
            attempt += 1

    def _attempt_timeout(self, what: str) -> float:
        """Checked right before each attempt: stopping, or fenced off the Lease, sends nothing."""
        if self.stop is not None:
            self.stop.check()
        if self.fence is None:
            return self.timeout
        return self.fence.timeout_for(self.timeout, what)

    def _send(
        self,
        method: str,
        plural: str,
        namespace: str,
        name: str,
        body: bytes,
        *,
        status: bool,
        timeout: float,
    ) -> Answer:
        try:
            if self.exact_bytes:
                return self._send_exact(
                    method, plural, namespace, name, body, status=status, timeout=timeout
                )
            return self._send_api(
                method, plural, namespace, name, body, status=status, timeout=timeout
            )
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            return Answer(0, {}, b"", error=type(exc).__name__)

    def _send_exact(
        self,
        method: str,
        plural: str,
        namespace: str,
        name: str,
        body: bytes,
        *,
        status: bool,
        timeout: float,
    ) -> Answer:
        api_client = self.custom.api_client
        path = "/apis/{group}/{version}/namespaces/{namespace}/{plural}/{name}"
        headers = {"Accept": "application/json"}
        if method == "PATCH":
            headers["Content-Type"] = MERGE_PATCH
        method, url, headers, _, _ = api_client.param_serialize(
            method=method,
            resource_path=path + ("/status" if status else ""),
            path_params={
                "group": GROUP,
                "version": VERSION,
                "namespace": namespace,
                "plural": plural,
                "name": name,
            },
            header_params=headers,
            auth_settings=["BearerToken"],
        )
        response = api_client.rest_client.pool_manager.request(
            method,
            url,
            body=body or None,
            headers=headers,
            timeout=urllib3.Timeout(total=timeout),
            preload_content=True,
            retries=False,
        )
        return Answer(response.status, dict(response.headers), response.data or b"")

    def _send_api(
        self,
        method: str,
        plural: str,
        namespace: str,
        name: str,
        body: bytes,
        *,
        status: bool,
        timeout: float,
    ) -> Answer:
        custom = self.custom
        try:
            if method == "GET":
                got = custom.get_namespaced_custom_object(
                    GROUP, VERSION, namespace, plural, name, _request_timeout=timeout
                )
                return Answer(200, {}, json.dumps(got).encode())
            call = (
                custom.patch_namespaced_custom_object_status
                if status
                else custom.patch_namespaced_custom_object
            )
            call(
                GROUP,
                VERSION,
                namespace,
                plural,
                name,
                json.loads(body),
                _content_type=MERGE_PATCH,
                _request_timeout=timeout,
            )
            return Answer(200, {}, b"")
        except self._k8s.exceptions.ApiException as exc:
            raw = exc.body if isinstance(exc.body, bytes) else str(exc.body or "").encode()
            return Answer(int(exc.status or 0), dict(exc.headers or {}), raw)


def _retryable(status: int) -> bool:
    return status == 0 or status == 429 or status >= 500


def _raise_final(answer: Answer, what: str, plural: str, namespace: str, name: str) -> None:
    """Raise the typed error of an answer that is not retried; return for one that is."""
    code = answer.status
    if _retryable(code):
        return
    if code == 404:
        raise RunnerNotFound(f"{plural} {namespace}/{name} not found")
    if code == 409:
        raise WriteConflict(f"{what}: {_describe(answer)}")
    if code == 403 and what.startswith("GET"):
        raise ReadForbidden(f"{what}: {_describe(answer)}")
    if 400 <= code <= 499:
        raise PermanentWriteError(f"{what}: {_describe(answer)}")
    raise ScalerError(f"{what}: {_describe(answer)}")


def _retry_after(headers: Mapping[str, str]) -> float | None:
    for key, value in headers.items():
        if key.lower() == "retry-after":
            try:
                return float(value)
            except ValueError:
                return None  # an HTTP date: fall back to the back-off
    return None


def _describe(answer: Answer) -> str:
    if answer.status == 0:
        return f"no answer ({answer.error})"
    return f"HTTP {answer.status} {_status_message(answer.data)}"


def _status_message(data: bytes | None) -> str:
    """The ``message`` of a Kubernetes Status body, or a short excerpt."""
    try:
        doc = json.loads(data or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("message"), str):
        return str(doc["message"])[:200]
    return (data or b"").decode("utf-8", "replace")[:200]


__all__ = [
    "LISTENER_BURST",
    "LISTENER_QPS",
    "KubernetesScalerWriter",
    "RetryPolicy",
    "TokenBucket",
]
