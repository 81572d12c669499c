"""``karpenter.sh/do-not-disrupt`` on pods: the value we write and how Karpenter reads it.

Karpenter (``pkg/utils/pod/scheduling.go``, ``IsDoNotDisruptActive``) reads the annotation of a
pod as follows, and the simulated world uses :func:`is_active` for the same rule:

1. Absent: not protected.
2. ``"true"``: protected (the node is not consolidated while the pod runs).
3. A Go duration (``"30m"``, ``"1h30m"``, ``"1800s"``), positive: protected while the pod's
   age (now - ``status.startTime``) is below it; with no start time yet, protected.
4. Anything else (``"false"``, ``"0s"``, garbage): not protected (Karpenter emits an event).

The listener writes ``"true"`` (``doNotDisrupt: true``) or ``"<seconds>s"``
(``doNotDisrupt: 30m``): a warm pair then stops pinning its node that long after the
placeholder started, so an idle warm node can be consolidated.
"""

from __future__ import annotations

import math
import re

#: Go's ``time.ParseDuration`` units (``µs`` in both spellings).
_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_GO_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration(value: str) -> float | None:
    """Seconds of a Go duration string (``time.ParseDuration``), None when it is not one.
    A sign is accepted as Go does; Karpenter then refuses non-positive values."""
    text = value.strip()
    sign = -1.0 if text.startswith("-") else 1.0
    text = text.lstrip("+-")
    if text == "0":
        return 0.0
    if not text:
        return None
    total, pos = 0.0, 0
    for match in _GO_DURATION.finditer(text):
        if match.start() != pos:
            return None
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    return sign * total if pos == len(text) and pos > 0 else None


def annotation_value(setting: bool | float) -> str | None:
    """What ``doNotDisrupt`` writes: None (false), ``"true"``, or ``"<seconds>s"``."""
    if setting is True:
        return "true"
    if setting is False:
        return None
    seconds = float(setting)
    return f"{int(seconds)}s" if seconds.is_integer() else f"{seconds:g}s"


def protected_until(value: str | None, started_at: float | None) -> float | None:
    """When the protection ends (rules in the module docstring): None = no protection at all,
    ``inf`` = until the pod ends (``"true"``, or a duration on a pod with no start time yet)."""
    if value is None:
        return None
    if value == "true":
        return math.inf
    duration = parse_go_duration(value)
    if duration is None or duration <= 0:
        return None
    if started_at is None:
        return math.inf
    return started_at + duration


def is_active(value: str | None, started_at: float | None, now: float) -> bool:
    """Karpenter's ``IsDoNotDisruptActive``: protected while the pod is younger than the
    duration (``now - startTime < duration``)."""
    until = protected_until(value, started_at)
    return until is not None and now < until


__all__ = ["annotation_value", "is_active", "parse_go_duration", "protected_until"]
