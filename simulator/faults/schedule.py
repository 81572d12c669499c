"""Putting a fault plan on the world's event loop (virtual time)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from simulator.engine.loop import EventLoop
from simulator.faults.plan import Fault, FaultKind, FaultPlan

# --- scheduling in virtual time -------------------------------------------------------------


class FaultHandler(Protocol):
    def start(self, fault: Fault) -> None: ...

    def end(self, fault: Fault) -> None: ...


class FaultScheduler:
    """Puts every fault of a plan on the loop: ``handler.start`` at ``start``, ``handler.end``
    at ``end`` (window faults with an end). Faults of a kind without a handler are recorded
    in :attr:`skipped` (so a report can say what was not applied, never silently)."""

    def __init__(
        self, loop: EventLoop, plan: FaultPlan, handlers: Mapping[FaultKind, FaultHandler]
    ) -> None:
        self.loop = loop
        self.plan = plan
        self.handlers = dict(handlers)
        self.applied: list[tuple[float, str, Fault]] = []
        self.skipped: list[Fault] = []

    def schedule(self) -> None:
        start = self.loop.start
        for fault in self.plan.faults:
            handler = self.handlers.get(fault.kind)
            if handler is None:
                self.skipped.append(fault)
                continue
            self.loop.call_at(start + fault.start, self._run, handler.start, fault, "start")
            if fault.end is not None:
                self.loop.call_at(start + fault.end, self._run, handler.end, fault, "end")

    def _run(self, call: Callable[[Fault], None], fault: Fault, what: str) -> None:
        self.applied.append((self.loop.now() - self.loop.start, what, fault))
        call(fault)


class Hook:
    """A :class:`FaultHandler` from two callables (``end`` optional)."""

    def __init__(
        self, start: Callable[[Fault], None], end: Callable[[Fault], None] | None = None
    ) -> None:
        self._start = start
        self._end = end

    def start(self, fault: Fault) -> None:
        self._start(fault)

    def end(self, fault: Fault) -> None:
        if self._end is not None:
            self._end(fault)
