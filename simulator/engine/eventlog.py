"""The simulated world's JSON-lines event log (docs/design.md#simulator, output contract).

Every line is one JSON object with ``t`` (virtual seconds since the run started, rounded to
milliseconds), ``type``, ``strategy`` and the ids it concerns. Keys keep insertion order and
floats are rounded, so the same seed gives a byte-identical log. Outcomes must be
recomputable from this log alone (see ``simulator.measurement.checker``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

from reconciler.clock import Clock


class EventLog:
    def __init__(self, strategy: str, clock: Clock, start: float, *, keep: bool = True) -> None:
        """``keep=False``: count events by type only (a sweep that reads results, not lines)."""
        self.strategy = strategy
        self._clock = clock
        self._start = start
        self._lines: list[str] = []
        self.counts: dict[str, int] = {}
        self.keep = keep

    def emit(self, type: str, **fields: Any) -> None:
        if not self.keep:
            self.counts[type] = self.counts.get(type, 0) + 1
            return
        record: dict[str, Any] = {
            "t": round(self._clock.now() - self._start, 3),
            "type": type,
            "strategy": self.strategy,
        }
        record.update(fields)
        self._lines.append(json.dumps(record, separators=(",", ":")))
        self.counts[type] = self.counts.get(type, 0) + 1

    def __len__(self) -> int:
        return len(self._lines)

    def lines(self) -> Iterator[str]:
        return iter(self._lines)

    def write(self, out: IO[str]) -> None:
        for line in self._lines:
            out.write(line)
            out.write("\n")
