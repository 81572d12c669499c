"""Transition events: the only thing subscribers react to.

A pair's move is a :class:`TransitionEvent`, a hot slot's a :class:`HotTransitionEvent`; a step
publishes both in one sequence (:data:`AnyTransition`), and every subscriber sees both: one
log line each, counters, side effects.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from state_machine.states import HotState, PairState


class Kind(StrEnum):
    """Who causes a transition (docs/design.md#the-loop)."""

    #: Proven by an observation in sync (a pod became Running, a pod disappeared).
    PASSIVE = "passive"
    #: Chosen by decide (queue, request, time out, scale down).
    ACTIVE = "active"


@dataclass(frozen=True, slots=True)
class TransitionEvent:
    """One committed change of one pair. ``source is None`` for a new pair."""

    pair_id: str
    scale_set: str
    source: PairState | None
    target: PairState
    kind: Kind
    reason: str
    at: float
    version: int
    runner_pod: str
    workflow_pod: str

    def log_line(self) -> str:
        """The one line every transition is logged as."""
        source = self.source.value if self.source else "(new)"
        return (
            f"pair={self.pair_id} scale_set={self.scale_set} {source}->{self.target.value} "
            f"kind={self.kind.value} v={self.version} reason={self.reason!r}"
        )

    def log_fields(self) -> dict[str, str | int]:
        """The same facts as :meth:`log_line`, as structured fields (JSON keys, logfmt pairs)."""
        return {
            "pair": self.pair_id,
            "scale_set": self.scale_set,
            "from": self.source.value if self.source else "(new)",
            "to": self.target.value,
            "kind": self.kind.value,
            "v": self.version,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class HotTransitionEvent:
    """One committed change of one hot slot (state_machine/hot.py). ``source is None`` for a
    new or adopted slot. ``runner``: the idle runner paired with it after the move, if any;
    ``placeholder``: its workflow placeholder pod after the move."""

    slot_id: str
    scale_set: str
    source: HotState | None
    target: HotState
    kind: Kind
    reason: str
    at: float
    runner: str | None
    placeholder: str

    def log_line(self) -> str:
        """The one line every hot-slot transition is logged as."""
        source = self.source.value if self.source else "(new)"
        return (
            f"hot_slot={self.slot_id} scale_set={self.scale_set} {source}->{self.target.value} "
            f"kind={self.kind.value} runner={self.runner or '-'} reason={self.reason!r}"
        )

    def log_fields(self) -> dict[str, str | int]:
        """The same facts as :meth:`log_line`, as structured fields."""
        return {
            "hot_slot": self.slot_id,
            "scale_set": self.scale_set,
            "from": self.source.value if self.source else "(new)",
            "to": self.target.value,
            "kind": self.kind.value,
            "runner": self.runner or "-",
            "reason": self.reason,
        }


#: What one step publishes: pair and hot-slot transitions, in commit order.
AnyTransition = TransitionEvent | HotTransitionEvent
