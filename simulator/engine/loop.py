"""A deterministic discrete-event engine in virtual time.

Callbacks run in (time, sequence) order, so two runs with the same seed and inputs make the
same calls in the same order. Virtual time is epoch seconds (the world starts at a fixed
epoch) so the production code's clock arithmetic works unchanged.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any

#: 2026-01-05T00:00:00Z: a Monday, so "a day" scenarios start at midnight.
DEFAULT_EPOCH = 1_767_571_200.0


class _Entry:
    """One scheduled callback; ordered by (at, seq) (the heap's only comparison)."""

    __slots__ = ("args", "at", "cancelled", "fn", "seq")

    def __init__(self, at: float, seq: int, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.at = at
        self.seq = seq
        self.fn = fn
        self.args = args
        self.cancelled = False

    def __lt__(self, other: _Entry) -> bool:
        # seq is unique, so this is the (at, seq) tuple order without building tuples.
        return self.at < other.at or (self.at == other.at and self.seq < other.seq)


class Timer:
    """Handle of a scheduled callback; ``cancel()`` makes it a no-op."""

    __slots__ = ("_entry",)

    def __init__(self, entry: _Entry) -> None:
        self._entry = entry

    @property
    def at(self) -> float:
        return self._entry.at

    @property
    def active(self) -> bool:
        return not self._entry.cancelled

    def cancel(self) -> None:
        self._entry.cancelled = True


class EventLoop:
    """Virtual clock + ordered queue of callbacks. Implements the ``Clock`` protocol."""

    def __init__(self, start: float = DEFAULT_EPOCH) -> None:
        self._now = start
        self.start = start
        self._queue: list[_Entry] = []
        self._seq = itertools.count()
        self.steps = 0

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        """Virtual time never goes back, so it is the monotonic reading too."""
        return self._now

    @property
    def elapsed(self) -> float:
        return self._now - self.start

    def call_at(self, at: float, fn: Callable[..., Any], *args: Any) -> Timer:
        entry = _Entry(max(at, self._now), next(self._seq), fn, args)
        heapq.heappush(self._queue, entry)
        return Timer(entry)

    def call_later(self, delay: float, fn: Callable[..., Any], *args: Any) -> Timer:
        return self.call_at(self._now + max(0.0, delay), fn, *args)

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> Timer:
        return self.call_at(self._now, fn, *args)

    def next_at(self) -> float | None:
        while self._queue and self._queue[0].cancelled:
            heapq.heappop(self._queue)
        return self._queue[0].at if self._queue else None

    def run_until(self, until: float) -> None:
        """Run every callback due at or before ``until``; then the clock reads ``until``."""
        queue = self._queue
        while queue:
            entry = queue[0]
            if entry.at > until:
                break
            heapq.heappop(queue)
            if entry.cancelled:
                continue
            self._now = entry.at
            self.steps += 1
            entry.fn(*entry.args)
        self._now = max(self._now, until)

    def run_for(self, seconds: float) -> None:
        self.run_until(self._now + seconds)
