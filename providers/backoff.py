"""Capped exponential back-off: the one rule every retry loop of the listener waits by.

Retry number ``n`` (0-based: the wait after the first failure is ``n = 0``) waits
``first * 2**n``, at most ``cap``. Doubling spreads retries out quickly while the other side
is down; the cap keeps a recovered peer from waiting long to be noticed. The wait is never
shorter than ``first`` (a cap below it is ignored), and the exponent stops growing once the
cap is reached, so a loop that fails for days never overflows a float.
"""

from __future__ import annotations

from dataclasses import dataclass

#: 2**64 exceeds any cap / first ratio in use; beyond it the wait is the cap anyway.
_MAX_EXPONENT = 64


@dataclass(frozen=True, slots=True)
class Backoff:
    """``first`` seconds, doubled per consecutive failure, at most ``cap`` seconds."""

    first: float
    cap: float

    def __post_init__(self) -> None:
        if self.first < 0 or self.cap < 0:
            raise ValueError(f"Backoff needs first >= 0 and cap >= 0 seconds, got {self}")

    def delay(self, retry: int) -> float:
        """The wait before retry number ``retry`` (0-based; a negative number counts as 0)."""
        exponent = min(max(retry, 0), _MAX_EXPONENT)
        return float(min(self.first * 2.0**exponent, max(self.cap, self.first)))


__all__ = ["Backoff"]
