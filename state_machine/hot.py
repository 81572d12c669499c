"""Hot slots (``capacityAware.hotRunners``): a registered idle runner paired with a workflow
placeholder that holds its workflow pod's room (docs/design.md#hot-runners).

A hot slot is not a placeholder pair: its runner half is a real runner that ARC creates
because the scaler's EphemeralRunnerSet target counts the slot (assigned jobs + hot slots,
within maxRunners, as ARC's ``minRunners`` does), and only its workflow half is a placeholder
the reconciler creates. So it has its own small table, built with the same machinery as
the pairs' (:mod:`state_machine.machinery`): every edge says who causes it (passive = proven
by an observation, active = chosen by decide) and when; the generated docs/state-machine.md
and the table-driven tests come from :data:`HOT_EDGES`, and the sets
("confirmed", "live", ...) are derived from it.

Only a slot in HOT is confirmed: its runner is registered, idle and paired with it, *and* its
workflow placeholder is Running. Confirmed slots are advertised like READY pairs.
"""

from __future__ import annotations

from state_machine.events import Kind
from state_machine.machinery import Edge, InvalidTransition, Table
from state_machine.states import HotState as HotState  # the table's states, re-exported

W, H, T, L, X = HotState.WARMING, HotState.HOT, HotState.TAKEN, HotState.LOST, HotState.RELEASED
ACTIVE, PASSIVE = Kind.ACTIVE, Kind.PASSIVE
#: The hot table's edges are ``Edge[HotState]`` (the name reads better in the table).
HotEdge = Edge
#: A move the hot-slot table does not allow (the same error as the pairs').
InvalidHotMove = InvalidTransition

#: Where every hot slot starts: decide wants more hot slots than exist.
HOT_INITIAL = W

HOT_EDGES: tuple[Edge[HotState], ...] = (
    # Inserts. Decide wants more hot slots than exist (within the reserve and maxRunners):
    # its workflow placeholder is created.
    HotEdge(
        None,
        W,
        ACTIVE,
        "decide wants more hot slots than exist (within the reserve and maxRunners); its "
        "workflow placeholder is created",
    ),
    # On the first step, a hot placeholder an earlier listener instance left is taken over as
    # a slot that waits for an idle runner again: a restart neither drops nor duplicates it.
    HotEdge(None, W, PASSIVE, "adopted: an earlier instance's hot placeholder is found at start"),
    # Both conditions hold in one snapshot: an idle registered runner of this scale set that no
    # other slot holds is paired with the slot, and the slot's workflow placeholder is Running.
    HotEdge(W, H, PASSIVE, "a registered idle runner is paired with it and its placeholder runs"),
    # The paired runner was handed a job before the placeholder ran (idle runners take jobs
    # whatever is advertised): the placeholder now waits for that job's workflow pod.
    HotEdge(W, T, PASSIVE, "its paired runner took a job before the slot was confirmed"),
    # Never confirmed in time (no node for the placeholder, no runner registered) or no longer
    # wanted (reserve shrank, maxRunners lowered or 0): the placeholder is deleted.
    HotEdge(W, X, ACTIVE, "not HOT within placeholderReadyTimeout, or no longer wanted"),
    # JobStarted: the EphemeralRunner has a jobId, or its workflow pod exists. The job's
    # workflow pod preempts this slot's placeholder (arc-workflow 20 > placeholder 10).
    HotEdge(H, T, PASSIVE, "its runner took a job (jobId on the runner, or its workflow pod)"),
    # ICE, preemption, eviction, a node cordoned or disrupted: the runner is still idle and
    # can still be handed a job, but its workflow pod's room is no longer held. Not advertised
    # from the snapshot that shows it (the drop guard publishes the lower value at once).
    HotEdge(H, L, PASSIVE, "its workflow placeholder was lost (preempted, evicted, ended, node)"),
    # ARC deleted the idle runner (scale-down, patchID 0), its pod was lost, or it
    # deregistered: the placeholder stays and waits for another idle runner.
    HotEdge(H, W, PASSIVE, "its runner is gone or no longer registered and idle"),
    # Reserve shrank, maxRunners lowered or 0 (drain): the placeholder is deleted and the
    # scaler's target drops by one, so ARC may scale the idle runner down.
    HotEdge(H, X, ACTIVE, "no longer wanted (reserve shrank, maxRunners lowered or 0)"),
    # Mend: still wanted; a new workflow placeholder is created beside the idle runner.
    HotEdge(L, W, ACTIVE, "still wanted: a new workflow placeholder is created"),
    # The runner took a job while its room was lost: the placeholder (if any) is left to it.
    HotEdge(L, T, PASSIVE, "its runner took a job while the slot was lost"),
    # Reserve shrank, maxRunners lowered or 0 while the slot was lost: nothing to mend.
    HotEdge(L, X, ACTIVE, "no longer wanted"),
    # The job's workflow pod took the placeholder's room (preempted it) or is bound: done.
    HotEdge(T, X, PASSIVE, "the placeholder is gone or the job's workflow pod is bound"),
    # Nobody came for the placeholder within survivorWindow (the job was cancelled): free it.
    HotEdge(T, X, ACTIVE, "the placeholder outlived survivorWindow"),
)

ALL_HOT_STATES: tuple[HotState, ...] = tuple(HotState)
#: The hot-slot table: targets, reachability and the checks a move is applied with.
HOT = Table("hot slots", "hot slot", HotState, HOT_EDGES)

#: For each state, the states it may move to.
HOT_TARGETS = HOT.targets


def hot_allowed(source: HotState, target: HotState) -> bool:
    return HOT.allowed(source, target)


def hot_edge(source: HotState | None, target: HotState, kind: Kind) -> Edge[HotState]:
    """The one edge of that kind between two states; :class:`InvalidHotMove` if none."""
    return HOT.edge(source, target, kind)


def hot_reachable_from(start: HotState) -> frozenset[HotState]:
    """States reachable from ``start`` (not including it unless on a cycle)."""
    return HOT.reachable_from(start)


#: No way out.
HOT_TERMINAL = HOT.terminal
#: Advertised like READY pairs (kept by hand: a single state, pinned by a test).
HOT_CONFIRMED = frozenset({H})
#: Counted by the scaler's target (ARC keeps an idle runner for each): the slots that are, or
#: can still become, confirmed.
HOT_LIVE = HOT.reaching(HOT_CONFIRMED)
#: A workflow placeholder may exist and must be deleted on the way out.
HOT_HAS_PLACEHOLDER = HOT.where(lambda s: s not in HOT_TERMINAL)


#: What each state means, for the generated docs (docs/state-machine.md).
HOT_DESCRIPTIONS: dict[HotState, str] = {
    HotState.WARMING: (
        "Decide wants this hot slot: its workflow placeholder is created (a CreatePlaceholder "
        "command the subscriber carries out) and the scaler's EphemeralRunnerSet target counts "
        "it, so ARC keeps a "
        "runner for it. Not advertised until an idle registered runner is paired with it and "
        "the placeholder is Running. Timed out by placeholderReadyTimeout like a pair."
    ),
    HotState.HOT: (
        "Confirmed: its runner is registered and idle, and its workflow placeholder is Running "
        "on a usable node. Advertised like a READY pair. A job handed to the runner starts with "
        "no pod start (the runner's own long poll to the broker); the hook's workflow pod then "
        "preempts the placeholder."
    ),
    HotState.TAKEN: (
        "The runner took a job. The placeholder holds the room until the job's workflow pod "
        "preempts it (or binds elsewhere); then the slot is RELEASED. Bounded by "
        "survivorWindow. Decide opens a new slot to keep the reserve."
    ),
    HotState.LOST: (
        "The workflow placeholder was lost (ICE, preemption, eviction, node cordoned or "
        "disrupted) while the runner is idle. Not advertised from that snapshot on. Mended "
        "(-> WARMING, a new placeholder) while the slot is wanted, released otherwise."
    ),
    HotState.RELEASED: (
        "Terminal. The record leaves the store; its placeholder, if still there, is deleted "
        "(UID-preconditioned). The idle runner is not deleted by us: the scaler's target no "
        "longer counts it, and ARC's ERS controller scales idle runners down (patchID 0)."
    ),
}
