"""The versioned pair store.

The reconciler hands the store a batch of decisions (:class:`NewPair`, :class:`Move`) per
step. :meth:`PairStore.commit` validates the whole batch against the table first (edge and
kind: a passive move along an active-only edge is refused) and only then applies it, so an
invalid decision raises :class:`InvalidTransition` and changes nothing. Every applied change
yields one :class:`TransitionEvent`. DELETED records leave the store at the end of the commit
(their events carry everything subscribers need), so the store never grows with history.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from state_machine.events import Kind, TransitionEvent
from state_machine.machine import InvalidTransition, PairMachine
from state_machine.record import PairRecord
from state_machine.states import PairState, Role
from state_machine.table import INITIAL, TERMINAL


@dataclass(frozen=True, slots=True)
class NewPair:
    """Create a pair through an insert edge: QUEUED (decide wants it), or READY with kind
    PASSIVE (adopted from an earlier instance, both pods seen Running)."""

    pair_id: str
    reason: str
    target: PairState = INITIAL
    kind: Kind = Kind.ACTIVE


@dataclass(frozen=True, slots=True)
class Move:
    """Move an existing pair to ``target``."""

    pair_id: str
    target: PairState
    kind: Kind
    reason: str


@dataclass(frozen=True, slots=True)
class Observed:
    """Remember that halves of a pair were seen in the cluster. Not a transition: no state
    change, no version bump, no event (sync records it so a later disappearance is news)."""

    pair_id: str
    roles: frozenset[Role]


Change = NewPair | Move | Observed


class DuplicatePair(Exception):
    def __init__(self, pair_id: str) -> None:
        super().__init__(f"pair {pair_id} already exists")


class UnknownPair(Exception):
    def __init__(self, pair_id: str) -> None:
        super().__init__(f"pair {pair_id} is not in the store")


class PairStore:
    def __init__(self, scale_set: str, machine: PairMachine | None = None) -> None:
        self.scale_set = scale_set
        self._machine = machine or PairMachine()
        self._records: dict[str, PairRecord] = {}
        self._by_state: dict[PairState, dict[str, PairRecord]] = {s: {} for s in PairState}

    # --- reading -----------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, pair_id: object) -> bool:
        return pair_id in self._records

    def get(self, pair_id: str) -> PairRecord:
        try:
            return self._records[pair_id]
        except KeyError:
            raise UnknownPair(pair_id) from None

    def view(self) -> Mapping[str, PairRecord]:
        """Read-only live view by pair id (no copy)."""
        return MappingProxyType(self._records)

    def records(self) -> Iterator[PairRecord]:
        return iter(tuple(self._records.values()))

    def in_states(self, states: Iterable[PairState]) -> list[PairRecord]:
        return [r for s in states for r in self._by_state[s].values()]

    def count(self, states: Iterable[PairState]) -> int:
        return sum(len(self._by_state[s]) for s in states)

    def counts(self) -> dict[PairState, int]:
        return {s: len(self._by_state[s]) for s in PairState}

    # --- writing -----------------------------------------------------------------------

    def commit(
        self,
        changes: Sequence[Change],
        at: float,
        *,
        built: Mapping[str, PairRecord] | None = None,
    ) -> list[TransitionEvent]:
        """Validate the whole batch, then apply it; returns the events in batch order.

        ``built``: records the caller already derived from this store's records by applying
        a prefix of ``changes`` with the same ``observed``/``moved`` at ``at`` (the
        reconciler's view after sync, which decide reads). A move whose result is there
        (next version, same target, time and reason) takes that record instead of building
        it again: otherwise every pair sync moves is copied twice per step.
        """
        self._validate(changes)
        built = built or {}
        events: list[TransitionEvent] = []
        for change in changes:
            if isinstance(change, Observed):
                self._put(self._records[change.pair_id].observed(change.roles))
            else:
                events.append(self._apply(change, at, built))
        for event in events:
            if event.target in TERMINAL:
                self._drop(event.pair_id)
        return events

    def _validate(self, changes: Sequence[Change]) -> None:
        """Replay the batch on a scratch view of states; raise before anything changes."""
        view: dict[str, PairState | None] = {}
        for change in changes:
            current = view.get(change.pair_id, self._state_of(change.pair_id))
            if isinstance(change, NewPair):
                if current is not None:
                    raise DuplicatePair(change.pair_id)
                self._machine.check(change.pair_id, None, change.target, change.kind)
                view[change.pair_id] = change.target
                continue
            if current is None:
                raise UnknownPair(change.pair_id)
            if isinstance(change, Observed):
                continue
            self._machine.check(change.pair_id, current, change.target, change.kind)
            view[change.pair_id] = change.target

    def _state_of(self, pair_id: str) -> PairState | None:
        record = self._records.get(pair_id)
        return record.state if record else None

    def _apply(
        self, change: NewPair | Move, at: float, built: Mapping[str, PairRecord]
    ) -> TransitionEvent:
        if isinstance(change, NewPair):
            record = PairRecord.new(
                change.pair_id, self.scale_set, at, change.reason, change.target
            )
            self._put(record)
            return _event(record, None, change.kind)
        before = self._records[change.pair_id]
        after = built.get(change.pair_id)
        if after is None or not _is_move_of(after, before, change, at):
            after = before.moved(change.target, at, change.reason)
        del self._by_state[before.state][before.pair_id]
        self._put(after)
        return _event(after, before.state, change.kind)

    def _put(self, record: PairRecord) -> None:
        self._records[record.pair_id] = record
        self._by_state[record.state][record.pair_id] = record

    def _drop(self, pair_id: str) -> None:
        record = self._records.pop(pair_id, None)
        if record is not None:
            self._by_state[record.state].pop(pair_id, None)


def _is_move_of(after: PairRecord, before: PairRecord, move: Move, at: float) -> bool:
    """``after`` is what ``before.moved(move.target, at, move.reason)`` would build."""
    return (
        after.version == before.version + 1
        and after.state is move.target
        and after.since == at
        and after.reason == move.reason
        and after.seen == before.seen
    )


def _event(record: PairRecord, source: PairState | None, kind: Kind) -> TransitionEvent:
    return TransitionEvent(
        pair_id=record.pair_id,
        scale_set=record.scale_set,
        source=source,
        target=record.state,
        kind=kind,
        reason=record.reason,
        at=record.since,
        version=record.version,
        runner_pod=record.runner_pod,
        workflow_pod=record.workflow_pod,
    )


__all__ = [
    "Change",
    "DuplicatePair",
    "InvalidTransition",
    "Move",
    "NewPair",
    "Observed",
    "PairStore",
    "UnknownPair",
]
