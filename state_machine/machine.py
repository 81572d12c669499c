"""The table, enforced by the ``transitions`` library.

One shared :class:`transitions.Machine` validates every change against :data:`EDGES`. It
drives a single reusable cursor model instead of one model per pair: ``add_model`` per pair
costs ~0.2 ms and ~7.5 KB and grows superlinearly (docs/design.md#state-machine). The hot path
validates with a set lookup over the edges read back from the machine; it runs only for pairs whose
state really changes.
"""

from __future__ import annotations

from transitions import Machine, MachineError

from state_machine.states import PairState
from state_machine.table import EDGES, INITIAL


class InvalidTransition(Exception):
    """A change the table does not allow; nothing was changed."""

    def __init__(self, pair_id: str, source: PairState | None, target: PairState) -> None:
        self.pair_id, self.source, self.target = pair_id, source, target
        shown = source.value if source else "(new)"
        super().__init__(
            f"pair {pair_id}: {shown} -> {target.value} is not in the transition table"
        )


def trigger_name(target: PairState) -> str:
    return f"to_{target.value.lower()}"


class _Cursor:
    """The model the machine moves; ``state`` is set to a pair's state before each check."""

    state: str


class PairMachine:
    """Validates (source, target) pairs by firing the table's trigger on a cursor."""

    def __init__(self) -> None:
        self._cursor = _Cursor()
        self._machine = Machine(
            model=self._cursor,
            states=[s.value for s in PairState],
            transitions=[
                {
                    "trigger": trigger_name(e.target),
                    "source": e.source.value,
                    "dest": e.target.value,
                }
                for e in EDGES
            ],
            initial=INITIAL.value,
            auto_transitions=False,
            send_event=False,
        )
        # Kept as PairState pairs (converted once here) so a check looks up the states it is
        # given as they are, without reading ``.value`` twice per change.
        self._edges: frozenset[tuple[PairState, PairState]] = frozenset(
            (PairState(source), PairState(transition.dest))
            for event in self._machine.events.values()
            for source, transitions in event.transitions.items()
            for transition in transitions
            if transition.dest is not None
        )

    def check(self, pair_id: str, source: PairState, target: PairState) -> None:
        """Raise :class:`InvalidTransition` unless the table has ``source -> target``.

        A set lookup over the edges the machine itself was built with (read back from it,
        so the ``transitions`` machine stays the machine of record): firing a trigger on the
        cursor costs ~13 us per change, the lookup well under one.
        """
        if (source, target) not in self._edges:
            raise InvalidTransition(pair_id, source, target)

    def fire(self, pair_id: str, source: PairState, target: PairState) -> None:
        """Validate by firing the machine's trigger (the slow, authoritative path; tests
        check that it agrees with :meth:`check` on every pair of states)."""
        self._machine.set_state(source.value, model=self._cursor)
        try:
            fired = self._cursor.trigger(trigger_name(target))  # type: ignore[attr-defined]
        except (MachineError, AttributeError):
            raise InvalidTransition(pair_id, source, target) from None
        if not fired or self._cursor.state != target.value:
            raise InvalidTransition(pair_id, source, target)
