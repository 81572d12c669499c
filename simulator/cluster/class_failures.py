"""Why a pod class cannot schedule (simulator/cluster/scheduler.py's memo): per-node reasons
with their running histogram, in kube-scheduler's FitError message format."""

from __future__ import annotations

from dataclasses import dataclass, field


class Reasons:
    """Per-node reasons plus their running histogram (kube-scheduler's message format)."""

    __slots__ = ("counts", "per_node")

    def __init__(self) -> None:
        self.per_node: dict[str, tuple[str, ...]] = {}
        self.counts: dict[str, int] = {}

    def update(self, reasons: dict[str, tuple[str, ...]]) -> None:
        per_node, counts = self.per_node, self.counts
        for name, new in reasons.items():
            for r in per_node.get(name, ()):
                counts[r] -= 1
            for r in new:
                counts[r] = counts.get(r, 0) + 1
            per_node[name] = new

    def text(self) -> str:
        """ "3 Insufficient cpu, 1 Too many pods" (sorted like kube-scheduler's FitError)."""
        return ", ".join(sorted(f"{v} {k}" for k, v in self.counts.items() if v))


@dataclass(eq=False, slots=True)
class ClassFailure:
    """Why a pod class cannot schedule, node by node, valid for one hard version.

    ``reasons`` (filters / fit) are current up to release number ``seen``, ``post``
    (preemption: no victims / not helpful) up to ``post_seen`` (-1: never evaluated on every
    node), and ``message`` - the condition message of a non-nominated pod - up to
    ``msg_seen``. A pod nominated elsewhere may refresh reasons and post (a failure on its own
    nominated node, where it sees more room, is a failure for its class too) but not the
    message (its "waiting for victims" text is its own).
    """

    version: int
    seen: int = -1
    reasons: Reasons = field(default_factory=Reasons)
    post_seen: int = -1
    post: Reasons = field(default_factory=Reasons)
    msg_seen: int = -1
    message: str = ""
