"""The transition table: the single source of truth for code, docs and tests.

Every allowed change of a pair's state is one :class:`Edge` below, with who causes it
(passive = proven by an observation in sync; active = chosen by decide) and when; an edge
from ``None`` is an insert, where a pair enters the table. :data:`PAIRS` is the
:class:`~state_machine.machinery.Table` built from them (the hot slots' table is built the
same way, :mod:`state_machine.hot`). The ``transitions`` machine (:mod:`state_machine.machine`),
``docs/state-machine.md`` and the table-driven tests are all generated from :data:`EDGES`.
Predicates such as "in flight" or "terminal" are derived from the table, not kept by hand.
"""

from __future__ import annotations

from state_machine.events import Kind
from state_machine.machinery import Edge, Table
from state_machine.states import PairState

Q, R, P, RD = PairState.QUEUED, PairState.REQUESTED, PairState.PARTIAL, PairState.READY
PE, TO, D = PairState.PREEMPTED, PairState.TIMED_OUT, PairState.DELETED
ACTIVE, PASSIVE = Kind.ACTIVE, Kind.PASSIVE
#: Short for the table below (an ``Edge[PairState]`` each).
E = Edge

#: Where a pair decide wants starts (the active insert; an adopted pair enters READY).
INITIAL = Q

EDGES: tuple[Edge[PairState], ...] = (
    # Inserts. Decide wants more pairs than exist: the new pair waits for a launch slot
    # before anything is created in the cluster.
    E(None, Q, ACTIVE, "decide wants more pairs than exist"),
    # On the first step, a complete pair of an earlier listener instance (both pods
    # Running) is taken over as it stands: the observation proves READY, nothing is created.
    E(None, RD, PASSIVE, "adopted: both pods of an earlier instance's pair are seen Running"),
    # A launch slot is free (burst cap, per-step cap, fit estimate); both pods get created.
    E(Q, R, ACTIVE, "a launch slot is free; both pods are created"),
    # Demand fell before the pair was ever requested: nothing exists in the cluster yet.
    E(Q, D, ACTIVE, "no longer wanted before it was requested"),
    # Exactly one half is Running; the other is still Pending (usually waiting for a node).
    E(R, P, PASSIVE, "exactly one of the two pods is observed Running"),
    # Both halves Running at once (same scheduling pass, or a fast node).
    E(R, RD, PASSIVE, "both pods are observed Running"),
    # The second half started: the pair now backs one slot of advertised capacity.
    E(P, RD, PASSIVE, "both pods are observed Running"),
    # The Running half stopped counting (its node got cordoned/tainted) before the pair was ready.
    E(P, R, PASSIVE, "the Running pod stopped counting before the pair was ready"),
    # Never READY in time: ICE, NodePool limits, quota, taints. Pods are deleted.
    E(R, TO, ACTIVE, "not READY within placeholderReadyTimeout"),
    E(P, TO, ACTIVE, "not READY within placeholderReadyTimeout"),
    # A half was preempted by a real pod, evicted, deleted, ended, or its node was lost.
    E(RD, PE, PASSIVE, "a pod of the pair was preempted, evicted, deleted or ended"),
    E(P, PE, PASSIVE, "a pod was preempted, evicted, deleted, ended, or unseen 30 s on"),
    # A pod we had already seen vanished before the pair was ready (deleted behind our back),
    # or one was still not observed 30 s after the request (taken between two snapshots).
    E(R, PE, PASSIVE, "a pod vanished or ended before the pair was ready, or unseen 30 s on"),
    # Every pod the pair had was seen and is gone again before it was ready (preempted or
    # deleted behind our back): nothing survives to protect, so the pair is over at once.
    E(R, D, PASSIVE, "every pod it had vanished before the pair was ready"),
    E(P, D, PASSIVE, "every pod it had vanished before the pair was ready"),
    # Scale down (pending pairs go first, then READY), or a pod create failed.
    # Unblock: a half-placed pair's room completes other pairs (reconciler/unblock.py).
    E(R, D, ACTIVE, "scale down (pending first), unblock, or its pods could not be created"),
    E(P, D, ACTIVE, "scale down (pending first), or unblock: its room completes others"),
    E(RD, D, ACTIVE, "scale down (after every pending pair)"),
    # The surviving half is gone too (e.g. the workflow pod took the workflow placeholder).
    E(PE, D, PASSIVE, "the surviving pod is gone too"),
    # The survivor outlived its protection window: nobody came for it; free the capacity.
    # A lone runner half is not protected: a runner pod always precedes its workflow pod.
    E(PE, D, ACTIVE, "the surviving pod outlived survivorWindow, or is a lone runner half"),
    # Mend: pairs are wanted and the survivor's partner is gone; only the missing half is
    # created again (a fresh request: its own ready timeout), instead of a whole new pair.
    E(PE, R, ACTIVE, "pairs are wanted: the missing half is created again beside the survivor"),
    # Both pods of a timed-out pair are confirmed gone.
    E(TO, D, PASSIVE, "both pods are confirmed gone"),
)

ALL_STATES: tuple[PairState, ...] = tuple(PairState)
#: The pair table: targets, reachability and the checks a commit runs.
PAIRS = Table("pairs", "pair", PairState, EDGES)

#: For each state, the states it may move to.
TARGETS = PAIRS.targets
#: The one edge back from PREEMPTED: decide chooses it, a survivor never takes it by itself.
MEND = (PE, R)


def allowed(source: PairState, target: PairState) -> bool:
    return PAIRS.allowed(source, target)


def reachable_from(start: PairState, *, through_mend: bool = True) -> frozenset[PairState]:
    """States reachable from ``start`` (not including it unless on a cycle)."""
    return PAIRS.reachable_from(start, skipping=() if through_mend else (MEND,))


#: No way out: the record leaves the store once its event is published.
TERMINAL = PAIRS.terminal
#: Pods exist or are being created but the pair does not back capacity yet.
IN_FLIGHT = PAIRS.where(lambda s: RD in TARGETS[s] and s is not Q)
#: Pairs that count towards the desired number (can still become or are READY without being
#: mended; a survivor counts only once re-paired, reconciler/survivors.py).
LIVE = PAIRS.reaching(frozenset({RD}), skipping=(MEND,))
#: Pods were requested (may exist in the cluster) and must be cleaned up on the way out.
HAS_PODS = PAIRS.where(lambda s: s is not Q and s not in TERMINAL)
#: Never READY again, not even mended: a pair entering one of these gives its pods back, so
#: they no longer back capacity (the ledger stops counting them in the same step).
RELEASED = PAIRS.where(lambda s: s not in PAIRS.reaching(frozenset({RD})))
#: Pods that stay (and so keep their lease renewed): requested and not being released.
KEEPS_PODS = HAS_PODS - RELEASED
#: Moving to REQUESTED from here creates pods: the request of a new pair and the mend (a
#: PARTIAL pair moving back to REQUESTED already has both).
CREATES_PODS_FROM = frozenset((INITIAL, MEND[0]))
