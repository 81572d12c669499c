"""Transition events: the only thing subscribers react to."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from state_machine.states import PairState


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
