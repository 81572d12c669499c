"""The pair record: one placeholder pair as the store keeps it (immutable; replaced per change)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from state_machine.states import PairState, Role
from state_machine.table import MEND

#: Recent transitions kept per record (status history is bounded, unlike Ray's).
HISTORY_LIMIT = 12
#: Scale set names are cut so pod names stay within the 63-character DNS label limit.
SCALE_SET_NAME_LIMIT = 40


def pod_names(scale_set: str, pair_id: str) -> tuple[str, str]:
    """Names of the runner and workflow placeholder pods of a pair."""
    base = f"{scale_set[:SCALE_SET_NAME_LIMIT].rstrip('-.')}-ph-{pair_id}"
    return f"{base}-r", f"{base}-w"


#: Hot slot ids start with this (their placeholders carry it as the pair label), so the
#: snapshot keeps them apart from pairs (docs/design.md#hot-runners).
HOT_PREFIX = "hot-"


def hot_placeholder_name(scale_set: str, slot_id: str) -> str:
    """Name of a hot slot's workflow placeholder pod (a new ``slot_id`` suffix per mend)."""
    return f"{scale_set[:SCALE_SET_NAME_LIMIT].rstrip('-.')}-ph-{slot_id}-w"


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    state: PairState
    at: float
    reason: str


@dataclass(frozen=True, slots=True)
class PairRecord:
    pair_id: str
    scale_set: str
    state: PairState
    version: int
    runner_pod: str
    workflow_pod: str
    reason: str
    #: When the pair last entered its current state.
    since: float
    #: First time the pair entered each state it has been in (timeouts measure from these,
    #: so a PARTIAL <-> REQUESTED flap cannot postpone TIMED_OUT forever).
    first_entered: Mapping[PairState, float] = field(default_factory=lambda: MappingProxyType({}))
    history: tuple[HistoryEntry, ...] = ()
    #: Halves observed in the cluster at least once (Pending or beyond). A half that was seen
    #: and is missing now is gone, not "not in the cache yet".
    seen: frozenset[Role] = frozenset()

    @classmethod
    def new(
        cls,
        pair_id: str,
        scale_set: str,
        at: float,
        reason: str,
        state: PairState = PairState.QUEUED,
    ) -> PairRecord:
        """A record entering the table in ``state`` (an insert edge: QUEUED when decide wants
        it, READY when adopted)."""
        runner_pod, workflow_pod = pod_names(scale_set, pair_id)
        return cls(
            pair_id=pair_id,
            scale_set=scale_set,
            state=state,
            version=1,
            runner_pod=runner_pod,
            workflow_pod=workflow_pod,
            reason=reason,
            since=at,
            first_entered=MappingProxyType({state: at}),
            history=(HistoryEntry(state, at, reason),),
        )

    def moved(self, target: PairState, at: float, reason: str) -> PairRecord:
        """A copy in ``target`` (validation is the machine's job, not the record's).

        Built with the constructor, not ``dataclasses.replace`` (which re-reads every field
        by name: ~4x the cost, and a churn step moves every changed pair twice). The
        ``first_entered`` mapping is immutable, so it is shared unless ``target`` is new.
        """
        first, seen = self.first_entered, self.seen
        if (self.state, target) == MEND:
            # A mend is a fresh request: its own ready timeout, and the half it creates is
            # not "seen, then gone" before it was ever created.
            fresh: dict[PairState, float] = {
                s: t for s, t in first.items() if s is not PairState.PARTIAL
            }
            fresh[PairState.REQUESTED] = at
            first = MappingProxyType(fresh)
            seen = frozenset()
        elif target not in first:
            first = MappingProxyType({**first, target: at})
        return PairRecord(
            pair_id=self.pair_id,
            scale_set=self.scale_set,
            state=target,
            version=self.version + 1,
            runner_pod=self.runner_pod,
            workflow_pod=self.workflow_pod,
            reason=reason,
            since=at,
            first_entered=first,
            history=(*self.history, HistoryEntry(target, at, reason))[-HISTORY_LIMIT:],
            seen=seen,
        )

    def observed(self, roles: frozenset[Role]) -> PairRecord:
        """A copy that remembers ``roles`` as seen (an observation, not a transition)."""
        return PairRecord(
            pair_id=self.pair_id,
            scale_set=self.scale_set,
            state=self.state,
            version=self.version,
            runner_pod=self.runner_pod,
            workflow_pod=self.workflow_pod,
            reason=self.reason,
            since=self.since,
            first_entered=self.first_entered,
            history=self.history,
            seen=self.seen | roles,
        )

    def entered(self, state: PairState) -> float | None:
        return self.first_entered.get(state)
