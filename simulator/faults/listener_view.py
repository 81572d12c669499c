"""Virtual-time faults of what the listener sees: clock, API errors, stale cache, HUD demand."""

from __future__ import annotations

import contextlib
import copy
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from reconciler.clock import Clock
from reconciler.ports import PairSpec, PlaceholderWriter, PodRef
from reconciler.snapshot import Demand
from simulator.engine.loop import EventLoop
from simulator.engine.store import Obj
from simulator.faults.plan import Fault, FaultKind

# --- virtual-time hooks: the listener's view -------------------------------------------------


class SkewClock:
    """A Clock whose wall time reads ``base.now() + offset``; ``jump`` moves the offset (NTP
    step, VM resume). Its monotonic reading is the base's: a wall-clock step does not move it."""

    def __init__(self, base: Clock) -> None:
        self._base = base
        self.offset = 0.0

    def now(self) -> float:
        return self._base.now() + self.offset

    def monotonic(self) -> float:
        return self._base.monotonic()

    def jump(self, seconds: float) -> None:
        self.offset += seconds


class SimulatedApiError(Exception):
    """What the Kubernetes writer raises for an injected API fault (status as the API's)."""

    def __init__(self, status: int, reason: str) -> None:
        self.status = status
        self.reason = reason
        super().__init__(f"injected Kubernetes API fault: HTTP {status} {reason}")


class ApiFaultGate:
    """The Kubernetes API's health as seen by the listener's writes, in virtual time.

    ``check()`` raises :class:`SimulatedApiError` while a 5xx / 429 / timeout window is active
    (for the ``ratio`` of calls, drawn from ``rng``); ``delay()`` is the extra latency of an
    active ``k8s_slow`` window.
    """

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.active: list[Fault] = []
        self.failed = 0

    def start(self, fault: Fault) -> None:
        self.active.append(fault)

    def end(self, fault: Fault) -> None:
        with contextlib.suppress(ValueError):
            self.active.remove(fault)

    def check(self) -> None:
        for fault in self.active:
            if fault.kind is FaultKind.K8S_SLOW or self.rng.random() >= fault.params.ratio:
                continue
            self.failed += 1
            if fault.kind is FaultKind.K8S_5XX:
                raise SimulatedApiError(fault.params.status or 503, "ServiceUnavailable")
            if fault.kind is FaultKind.K8S_429:
                raise SimulatedApiError(429, "TooManyRequests")
            if fault.kind is FaultKind.K8S_TIMEOUT:
                raise SimulatedApiError(504, "Timeout")

    def delay(self) -> float:
        return sum(f.params.delay or 1.0 for f in self.active if f.kind is FaultKind.K8S_SLOW)


class FaultyWriter:
    """A :class:`PlaceholderWriter` whose calls go through an :class:`ApiFaultGate`.

    Like :class:`providers.kubernetes.write.writer.KubernetesPlaceholderWriter`, a failed call is
    counted (:attr:`failed`) and dropped, never raised: the subscriber goes on with the other
    pairs and the next snapshot shows what did not happen. While the API is slow the call
    lands after the delay. Granularity is one writer call (a pair's two creates fail
    together), coarser than the real writer's per-pod calls.
    """

    def __init__(self, inner: PlaceholderWriter, gate: ApiFaultGate, loop: EventLoop) -> None:
        self.inner = inner
        self.gate = gate
        self.loop = loop
        self.failed = 0

    def _call(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            self.gate.check()
        except SimulatedApiError:
            self.failed += 1
            return
        delay = self.gate.delay()
        if delay > 0:
            self.loop.call_later(delay, fn, *args)
        else:
            fn(*args)

    def create_pair(self, spec: PairSpec) -> None:
        self._call(self.inner.create_pair, spec)

    def delete_pods(self, pods: Sequence[PodRef]) -> None:
        self._call(self.inner.delete_pods, list(pods))

    def renew_lease(self, pods: Sequence[PodRef], expires_at: float) -> None:
        self._call(self.inner.renew_lease, list(pods), expires_at)


class ObjectSource(Protocol):
    def list(self, kind: str, namespace: str | None = None) -> Iterable[Obj]: ...


class StaleSource:
    """An ObjectSource that can go stale: what a watch-fed cache holds while its watches are
    down (dropped, or answering 410 until the relist). ``freeze()`` keeps a deep copy of what
    the inner source shows; ``thaw()`` goes live again (the relist)."""

    def __init__(self, inner: ObjectSource, clock: Clock | None = None) -> None:
        self.inner = inner
        self._frozen: dict[tuple[str, str | None], list[Obj]] | None = None
        self._depth = 0
        self._clock = clock
        self._since: float | None = None

    def stale_for(self) -> float:
        """Like ``KubeCache.stale_for``: seconds since the watches stopped answering."""
        if self._since is None or self._clock is None:
            return 0.0
        return self._clock.monotonic() - self._since

    @property
    def stale(self) -> bool:
        return self._frozen is not None

    def freeze(self, fault: Fault | None = None) -> None:
        self._depth += 1
        if self._frozen is None:
            self._frozen = {}
            self._since = self._clock.monotonic() if self._clock is not None else None

    def thaw(self, fault: Fault | None = None) -> None:
        self._depth = max(0, self._depth - 1)
        if self._depth == 0:
            self._frozen = None
            self._since = None

    def list(self, kind: str, namespace: str | None = None) -> list[Obj]:
        frozen = self._frozen
        if frozen is None:
            return list(self.inner.list(kind, namespace))
        key = (kind, namespace)
        if key not in frozen:
            # First read of this kind since the freeze: what the cache held at that moment
            # is (to within one event) what the store held at the first read.
            frozen[key] = copy.deepcopy(list(self.inner.list(kind, namespace)))
        return frozen[key]


class DemandFaults:
    """HUD faults in virtual time, as the production HUD poller reports them.

    ``hud_down``/``hud_malformed``/``hud_absurd``: ``Demand(None, error)`` (HudClient rejects
    them: see the HTTP fault tests); ``hud_slow``: the answer is late, so the previous demand
    stays in force.
    """

    def __init__(self) -> None:
        self.active: list[Fault] = []
        self._last: Demand | None = None

    def start(self, fault: Fault) -> None:
        self.active.append(fault)

    def end(self, fault: Fault) -> None:
        with contextlib.suppress(ValueError):
            self.active.remove(fault)

    def filter(self, demand: Demand) -> Demand:
        kinds = {f.kind for f in self.active}
        for kind, error in (
            (FaultKind.HUD_DOWN, "HUD http error: HUD answered HTTP 503"),
            (FaultKind.HUD_MALFORMED, "HUD decode error: answer is not JSON"),
            (FaultKind.HUD_ABSURD, "HUD decode error: num_queued_jobs outside 0..1000000"),
        ):
            if kind in kinds:
                return Demand(queued_jobs=None, error=error)
        if FaultKind.HUD_SLOW in kinds and self._last is not None:
            return self._last
        self._last = demand
        return demand
