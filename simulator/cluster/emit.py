"""A no-op-when-absent front for the world's EventLog, so call sites stay one line."""

from __future__ import annotations

from typing import Any

from simulator.engine.eventlog import EventLog


class Emitter:
    __slots__ = ("log",)

    def __init__(self, log: EventLog | None) -> None:
        self.log = log

    def __call__(self, type: str, **fields: Any) -> None:
        if self.log is not None:
            self.log.emit(type, **fields)
