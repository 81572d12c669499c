"""The seven states of a placeholder pair (DESIGN §3, firm)."""

from __future__ import annotations

from enum import StrEnum


class PairState(StrEnum):
    """Where a pair of placeholder pods (runner half + workflow half) stands."""

    QUEUED = "QUEUED"
    REQUESTED = "REQUESTED"
    PARTIAL = "PARTIAL"
    READY = "READY"
    PREEMPTED = "PREEMPTED"
    TIMED_OUT = "TIMED_OUT"
    DELETED = "DELETED"


class Role(StrEnum):
    """Which half of a pair a placeholder pod stands in for."""

    RUNNER = "runner"
    WORKFLOW = "workflow"
