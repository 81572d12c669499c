"""Drive a simulated world in real time, so real clients can talk to its HTTP faces.

A background thread advances the world's :class:`EventLoop` to
``start + speed x (wall time elapsed)`` every ``tick`` seconds, holding the store's lock while
it does, so HTTP faces serving the same store from other threads always see a consistent
cluster. ``speed`` > 1 compresses time (Karpenter's 40 s launch becomes 4 s at speed 10).

Also provides :meth:`RealTimeDriver.wall_clock`: a ``Clock`` that reads virtual time, for
components that run in the test process and must agree with the world.
"""

from __future__ import annotations

import threading

from reconciler.clock import SYSTEM_CLOCK, Clock
from simulator.engine.loop import EventLoop


class RealTimeDriver:
    def __init__(
        self,
        loop: EventLoop,
        lock: threading.RLock,
        *,
        speed: float = 1.0,
        tick: float = 0.02,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if speed <= 0:
            raise ValueError(f"speed must be > 0, got {speed}")
        self.loop = loop
        self.lock = lock
        self.speed = speed
        self.tick = tick
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._wall_start = 0.0
        self._virtual_start = 0.0
        self.error: BaseException | None = None

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("driver already started")
        self._wall_start = self._clock.monotonic()
        self._virtual_start = self.loop.now()
        self._thread = threading.Thread(target=self._run, name="sim-realtime", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def target_time(self) -> float:
        return self._virtual_start + (self._clock.monotonic() - self._wall_start) * self.speed

    def now(self) -> float:
        """Virtual time as a Clock (for in-process components that share the world)."""
        return self.loop.now()

    def monotonic(self) -> float:
        return self.loop.monotonic()

    def _run(self) -> None:
        while not self._stop.wait(self.tick):
            try:
                with self.lock:
                    self.loop.run_until(self.target_time())
            except BaseException as exc:  # surfaced to the test through .error
                self.error = exc
                return
