"""The seven states of a placeholder pair and the five of a hot slot
(docs/design.md#state-machine, docs/design.md#hot-runners)."""

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


class HotState(StrEnum):
    """Where one hot slot stands (its table: state_machine/hot.py)."""

    WARMING = "WARMING"
    HOT = "HOT"
    TAKEN = "TAKEN"
    LOST = "LOST"
    RELEASED = "RELEASED"


class Role(StrEnum):
    """Which half of a pair a placeholder pod stands in for."""

    RUNNER = "runner"
    WORKFLOW = "workflow"


#: What each state means, for the generated docs (docs/state-machine.md).
DESCRIPTIONS: dict[PairState, str] = {
    PairState.QUEUED: (
        "Decide wants this pair but has not asked the cluster for it yet: the launch ramp "
        "(node-launch rate, NodePool headroom, safety valves) held it back. Nothing exists "
        "in Kubernetes. Leaves for REQUESTED when a launch slot frees up, or DELETED if demand "
        "falls first."
    ),
    PairState.REQUESTED: (
        "Both placeholder pods were created (the subscriber did it on entry) and neither is "
        "Running yet: usually waiting for Karpenter to bring a node. A pod that never shows up "
        "or never schedules is caught by placeholderReadyTimeout (-> TIMED_OUT)."
    ),
    PairState.PARTIAL: (
        "One half is Running, the other is not. This is the dangerous case the ledger guards "
        "against: a runner slot without a workflow slot is not capacity. Goes READY when the "
        "other half runs, back to REQUESTED if the running half's node stops accepting it."
    ),
    PairState.READY: (
        "Both halves are confirmed on usable nodes (Running; a half requesting only cpu and "
        "memory once bound, which kubelet admission cannot undo: confirmAtBinding): the pair "
        "backs one slot of "
        "X-ScaleSetMaxCapacity. Real runner and workflow pods preempt it through the "
        "priority ladder (-> PREEMPTED). A pair on a node that got cordoned or disrupted is "
        "retired and replaced."
    ),
    PairState.PREEMPTED: (
        "A half was preempted by a real pod, evicted, deleted or ended. The surviving half "
        "joins the survivor pool: a workflow half is reserved within survivorWindow for a "
        "runner pod still waiting to create its workflow pod; lone halves nobody waits for "
        "pair up with each other (re-paired, counted as pairs); the rest are mended while "
        "pairs are wanted (-> REQUESTED: only the missing half is created again) or released "
        "(a runner half at once, a workflow half after the window). When the survivor is gone "
        "too the pair is DELETED."
    ),
    PairState.TIMED_OUT: (
        "The pair was not READY within placeholderReadyTimeout of its first request: the cloud "
        "has no capacity (ICE), a NodePool limit or quota is hit, or taints keep it away. The "
        "reason carries the scheduler's message and Karpenter's InsufficientCapacity signals. "
        "Its pods are deleted; the pair is DELETED once both are confirmed gone."
    ),
    PairState.DELETED: (
        "Terminal. The record leaves the store as soon as its event is published; whatever pods "
        "remain are deleted by the subscriber (UID-preconditioned)."
    ),
}
