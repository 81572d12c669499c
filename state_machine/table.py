"""The transition table: the single source of truth for code, docs and tests.

Every allowed change of a pair's state is one :class:`Edge` below, with who causes it
(passive = proven by an observation in sync; active = chosen by decide) and when. The
``transitions`` machine (:mod:`state_machine.machine`), ``docs/state-machine.md`` and the
table-driven tests are all generated from :data:`EDGES`. Predicates such as "in flight" or
"terminal" are derived from the table, not kept by hand.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from types import MappingProxyType

from state_machine.events import Kind
from state_machine.states import PairState

Q, R, P, RD = PairState.QUEUED, PairState.REQUESTED, PairState.PARTIAL, PairState.READY
PE, TO, D = PairState.PREEMPTED, PairState.TIMED_OUT, PairState.DELETED
ACTIVE, PASSIVE = Kind.ACTIVE, Kind.PASSIVE


@dataclass(frozen=True, slots=True)
class Edge:
    source: PairState
    target: PairState
    kind: Kind
    when: str


#: Where every pair starts: decide wants more pairs than exist.
INITIAL = Q

EDGES: tuple[Edge, ...] = (
    # A launch slot is free (burst cap, per-step cap, fit estimate); both pods get created.
    Edge(Q, R, ACTIVE, "a launch slot is free; both pods are created"),
    # Demand fell before the pair was ever requested: nothing exists in the cluster yet.
    Edge(Q, D, ACTIVE, "no longer wanted before it was requested"),
    # Exactly one half is Running; the other is still Pending (usually waiting for a node).
    Edge(R, P, PASSIVE, "exactly one of the two pods is observed Running"),
    # Both halves Running at once (same scheduling pass, or a fast node).
    Edge(R, RD, PASSIVE, "both pods are observed Running"),
    # The second half started: the pair now backs one slot of advertised capacity.
    Edge(P, RD, PASSIVE, "both pods are observed Running"),
    # The Running half stopped counting (its node got cordoned/tainted) before the pair was ready.
    Edge(P, R, PASSIVE, "the Running pod stopped counting before the pair was ready"),
    # Never READY in time: ICE, NodePool limits, quota, taints. Pods are deleted.
    Edge(R, TO, ACTIVE, "not READY within placeholderReadyTimeout"),
    Edge(P, TO, ACTIVE, "not READY within placeholderReadyTimeout"),
    # A half was preempted by a real pod, evicted, deleted, ended, or its node was lost.
    Edge(RD, PE, PASSIVE, "a pod of the pair was preempted, evicted, deleted or ended"),
    Edge(P, PE, PASSIVE, "a pod was preempted, evicted, deleted, ended, or unseen 30 s on"),
    # A pod we had already seen vanished before the pair was ready (deleted behind our back),
    # or one was still not observed 30 s after the request (taken between two snapshots).
    Edge(R, PE, PASSIVE, "a pod vanished or ended before the pair was ready, or unseen 30 s on"),
    # Every pod the pair had was seen and is gone again before it was ready (preempted or
    # deleted behind our back): nothing survives to protect, so the pair is over at once.
    Edge(R, D, PASSIVE, "every pod it had vanished before the pair was ready"),
    Edge(P, D, PASSIVE, "every pod it had vanished before the pair was ready"),
    # Scale down (pending pairs go first, then READY), or a pod create failed.
    # Unblock: a half-placed pair's room completes other pairs (reconciler/unblock.py).
    Edge(R, D, ACTIVE, "scale down (pending first), unblock, or its pods could not be created"),
    Edge(P, D, ACTIVE, "scale down (pending first), or unblock: its room completes others"),
    Edge(RD, D, ACTIVE, "scale down (after every pending pair)"),
    # The surviving half is gone too (e.g. the workflow pod took the workflow placeholder).
    Edge(PE, D, PASSIVE, "the surviving pod is gone too"),
    # The survivor outlived its protection window: nobody came for it; free the capacity.
    # A lone runner half is not protected: a runner pod always precedes its workflow pod.
    Edge(PE, D, ACTIVE, "the surviving pod outlived survivorWindow, or is a lone runner half"),
    # Mend: pairs are wanted and the survivor's partner is gone; only the missing half is
    # created again (a fresh request: its own ready timeout), instead of a whole new pair.
    Edge(PE, R, ACTIVE, "pairs are wanted: the missing half is created again beside the survivor"),
    # Both pods of a timed-out pair are confirmed gone.
    Edge(TO, D, PASSIVE, "both pods are confirmed gone"),
)

ALL_STATES: tuple[PairState, ...] = tuple(PairState)


def _targets() -> MappingProxyType[PairState, frozenset[PairState]]:
    out: dict[PairState, set[PairState]] = {s: set() for s in ALL_STATES}
    for edge in EDGES:
        out[edge.source].add(edge.target)
    return MappingProxyType({s: frozenset(t) for s, t in out.items()})


#: For each state, the states it may move to.
TARGETS = _targets()
#: The one edge back from PREEMPTED: decide chooses it, a survivor never takes it by itself.
MEND = (PE, R)


def allowed(source: PairState, target: PairState) -> bool:
    return target in TARGETS[source]


def reachable_from(start: PairState, *, through_mend: bool = True) -> frozenset[PairState]:
    """States reachable from ``start`` (not including it unless on a cycle)."""
    seen: set[PairState] = set()
    frontier: list[PairState] = [start]
    while frontier:
        source = frontier.pop()
        for nxt in TARGETS[source]:
            if not through_mend and (source, nxt) == MEND:
                continue
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    return frozenset(seen)


def _states_where(predicate_states: Iterable[PairState]) -> frozenset[PairState]:
    return frozenset(predicate_states)


#: No way out: the record leaves the store once its event is published.
TERMINAL = _states_where(s for s in ALL_STATES if not TARGETS[s])
#: Pods exist or are being created but the pair does not back capacity yet.
IN_FLIGHT = _states_where(s for s in ALL_STATES if RD in TARGETS[s] and s is not Q)
#: Pairs that count towards the desired number (can still become or are READY without being
#: mended; a survivor counts only once re-paired, reconciler/survivors.py).
LIVE = _states_where(
    s for s in ALL_STATES if s is RD or RD in reachable_from(s, through_mend=False)
)
#: Pods were requested (may exist in the cluster) and must be cleaned up on the way out.
HAS_PODS = _states_where(s for s in ALL_STATES if s is not Q and s not in TERMINAL)
#: Never READY again, not even mended: a pair entering one of these gives its pods back, so
#: they no longer back capacity (the ledger stops counting them in the same step).
RELEASED = _states_where(s for s in ALL_STATES if s is not RD and RD not in reachable_from(s))
#: Pods that stay (and so keep their lease renewed): requested and not being released.
KEEPS_PODS = HAS_PODS - RELEASED
#: Moving to REQUESTED from here creates pods: the request of a new pair and the mend (a
#: PARTIAL pair moving back to REQUESTED already has both).
CREATES_PODS_FROM = frozenset((INITIAL, MEND[0]))
