"""The listener process under faults: a kill switch inside a step, a second listener, and the
driver's cache view looked up late (the driver creates it when it starts)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from reconciler.ports import PairSpec, PlaceholderWriter, PodRef
from simulator.engine.loop import EventLoop
from simulator.engine.store import Obj


class KillSignal(BaseException):
    """The listener process dies here. A BaseException, like SIGKILL ending a process: the
    reconciler's own ``except Exception`` (a failing subscriber is logged, not fatal) must not
    swallow it."""


class KillSwitch:
    """Counts placeholder writes and raises :class:`KillSignal` at the armed one."""

    def __init__(self, inner: PlaceholderWriter) -> None:
        self.inner = inner
        self.armed_at: int | None = None
        self.writes = 0

    def arm(self, after_writes: int) -> None:
        self.writes = 0
        self.armed_at = after_writes

    def _tick(self) -> None:
        if self.armed_at is not None and self.writes >= self.armed_at:
            self.armed_at = None
            raise KillSignal(f"killed after {self.writes} writes")
        self.writes += 1

    def create_pair(self, spec: PairSpec) -> None:
        self._tick()
        self.inner.create_pair(spec)

    def delete_pods(self, pods: Sequence[PodRef]) -> None:
        self._tick()
        self.inner.delete_pods(pods)

    def renew_lease(self, pods: Sequence[PodRef], expires_at: float) -> None:
        self._tick()
        self.inner.renew_lease(pods, expires_at)


def loop_elapsed(loop: EventLoop) -> float:
    return loop.now() - loop.start


class _LateSource:
    """The driver's cache view, looked up at each call (it is created in ``driver.start``)."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver

    def list(self, kind: str, namespace: str | None = None) -> Iterable[Obj]:
        source = self.driver.source
        if source is None:
            raise RuntimeError("the driver has not started")
        return source.list(kind, namespace)  # type: ignore[no-any-return]


class _SecondListener:
    """A second listener process on the same store: its own scale-set controller stepping
    every interval; its session is refused (409), so the capacity it would publish goes
    nowhere, but its subscribers write placeholders."""

    def __init__(
        self, driver: Any, controller: Any, subscribers: list[Any], *, interval: float
    ) -> None:
        self.driver = driver
        self.controller = controller
        self.subscribers = subscribers
        self.interval = interval
        self._timer: Any = None

    @property
    def steps(self) -> int:
        return int(self.controller.steps)

    @property
    def errors(self) -> int:
        return int(self.controller.errors)

    def start(self) -> None:
        self._timer = self.driver.ctx.loop.call_soon(self._step)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def _step(self) -> None:
        from providers.kubernetes.observe.translate import build_snapshot
        from scaleset.carry_out import Effects, carry_out

        loop = self.driver.ctx.loop
        snapshot = build_snapshot(
            self.driver.source, self.driver.target, now=loop.now(), demand=self.driver.demand
        )
        output = self.controller.step(loop.now(), snapshot, stale_for=0.0)
        # Its session was refused: no gate and no scaler follow it, only its subscribers.
        carry_out(output, Effects(self.subscribers))
        self._timer = loop.call_later(self.interval, self._step)
