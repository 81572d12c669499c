"""Both tables are specifications, checked by the same tests: the pairs' (state_machine/table.py)
and the hot slots' (state_machine/hot.py), built with one machinery (state_machine/machinery.py).

Every edge commits, with its kind; every other (source, target, kind), inserts included, is
refused and changes nothing; every state is reached, every state but the terminal ones has a
way out, and the terminal ones are reachable from everywhere. Each table's expected graph is
written out here independently, so a change to a table is made twice on purpose.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import pytest

from reconciler.hot_slots import HotMove, HotSlot, apply, enter, entered_event, moved_event
from state_machine.events import Kind
from state_machine.hot import HOT
from state_machine.machine import HotMachine, InvalidTransition, PairMachine, TableMachine
from state_machine.machinery import Table
from state_machine.states import HotState, PairState
from state_machine.store import Move, NewPair, PairStore
from state_machine.table import PAIRS

A, P = Kind.ACTIVE, Kind.PASSIVE
Q, R, PA, RD = PairState.QUEUED, PairState.REQUESTED, PairState.PARTIAL, PairState.READY
PE, TO, D = PairState.PREEMPTED, PairState.TIMED_OUT, PairState.DELETED
W, H, T, L, X = HotState.WARMING, HotState.HOT, HotState.TAKEN, HotState.LOST, HotState.RELEASED

PAIR_GRAPH = {
    (None, Q, A), (None, RD, P),  # decide wants a pair; a pair adopted as it stands
    (Q, R, A), (Q, D, A),
    (R, PA, P), (R, RD, P), (R, TO, A), (R, PE, P), (R, D, P), (R, D, A),
    (PA, RD, P), (PA, R, P), (PA, TO, A), (PA, PE, P), (PA, D, P), (PA, D, A),
    (RD, PE, P), (RD, D, A),
    (PE, D, P), (PE, D, A), (PE, R, A),
    (TO, D, P),
}  # fmt: skip
HOT_GRAPH = {
    (None, W, A), (None, W, P),  # decide wants a slot; a placeholder adopted at start
    (W, H, P), (W, T, P), (W, X, A),
    (H, T, P), (H, L, P), (H, W, P), (H, X, A),
    (L, W, A), (L, T, P), (L, X, A),
    (T, X, P), (T, X, A),
}  # fmt: skip


# --- how a record is put in a state and committed, per table ------------------------------

#: A valid path to each pair state (kinds as the table has them).
_PAIR_PATH: dict[PairState, list[tuple[PairState, Kind]]] = {
    Q: [],
    R: [(R, A)],
    PA: [(R, A), (PA, P)],
    RD: [(R, A), (RD, P)],
    PE: [(R, A), (RD, P), (PE, P)],
    TO: [(R, A), (TO, A)],
}


def _pair_store_in(state: PairState) -> PairStore:
    store = PairStore("ss")
    store.commit([NewPair("p", "setup")], at=0.0)
    for i, (target, kind) in enumerate(_PAIR_PATH[state], start=1):
        store.commit([Move("p", target, kind, "setup")], at=float(i))
    return store


def _pair_move(source: Any, target: Any, kind: Kind) -> tuple[Any, Any]:
    """Commit ``source -> target`` of ``kind``; (state after or None when gone, event's
    (source, target, kind)). On refusal, the store must be as it was."""
    store = _pair_store_in(source)
    before = store.get("p")
    try:
        [event] = store.commit([Move("p", target, kind, "under test")], at=100.0)
    except InvalidTransition:
        assert store.get("p") == before, "a refused move changed the store"
        raise
    after = store.get("p").state if "p" in store else None
    return after, (event.source, event.target, event.kind)


def _pair_insert(target: Any, kind: Kind) -> tuple[Any, Any]:
    store = PairStore("ss")
    try:
        [event] = store.commit([NewPair("p", "under test", target, kind)], at=1.0)
    except InvalidTransition:
        assert "p" not in store and len(store) == 0, "a refused insert changed the store"
        raise
    return store.get("p").state, (event.source, event.target, event.kind)


def _hot_move(source: Any, target: Any, kind: Kind) -> tuple[Any, Any]:
    slot = HotSlot("s1", source, "ph", "r1", 0.0, 0.0)
    move = HotMove("s1", target, kind, "under test", "r1")
    after = apply(slot, move, 100.0)
    event = moved_event("ss", slot, move, after, 100.0)
    return (after.state if after is not None else None), (event.source, event.target, event.kind)


def _hot_insert(target: Any, kind: Kind) -> tuple[Any, Any]:
    slot = enter("s1", "ph", kind, 1.0, target)
    event = entered_event("ss", slot, kind, "under test", 1.0)
    return slot.state, (event.source, event.target, event.kind)


@dataclass(frozen=True)
class Case:
    table: Table[Any]
    graph: set[tuple[Any, Any, Kind]]
    machine: Callable[[], TableMachine[Any]]
    move: Callable[[Any, Any, Kind], tuple[Any, Any]]
    insert: Callable[[Any, Kind], tuple[Any, Any]]

    def __str__(self) -> str:
        return self.table.name


PAIR_CASE = Case(PAIRS, PAIR_GRAPH, PairMachine, _pair_move, _pair_insert)
HOT_CASE = Case(HOT, HOT_GRAPH, HotMachine, _hot_move, _hot_insert)
CASES = [PAIR_CASE, HOT_CASE]


def _triples(case: Case) -> list[tuple[Case, Any, Any, Kind]]:
    sources: list[StrEnum | None] = [None, *case.table.states]
    return [(case, s, t, k) for s, t, k in itertools.product(sources, case.table.states, Kind)]


ALL_TRIPLES = [row for case in CASES for row in _triples(case)]


def _id(row: tuple[Case, Any, Any, Kind]) -> str:
    case, source, target, kind = row
    return f"{case}:{source.value if source else '(new)'}->{target.value}:{kind.value}"


@pytest.fixture(params=CASES, ids=str)
def case(request: pytest.FixtureRequest) -> Case:
    return request.param  # type: ignore[no-any-return]


# --- the tests -----------------------------------------------------------------------------


def test_the_table_is_exactly_the_specified_graph(case: Case) -> None:
    assert {(e.source, e.target, e.kind) for e in case.table.edges} == case.graph
    assert len(case.table.edges) == len(case.graph)  # no edge twice


def test_the_machine_of_record_is_built_from_exactly_the_table(case: Case) -> None:
    assert case.machine().edges() == case.graph


def test_every_state_is_entered_and_only_terminal_states_are_dead_ends(case: Case) -> None:
    """Adding a state breaks this test until its edges are specified."""
    table = case.table
    assert set(table.targets) == set(table.states)
    for state in table.states:
        assert any(e.target is state for e in table.edges), f"{state} is never entered"
        assert bool(table.targets[state]) is (state not in table.terminal)
    assert len(table.terminal) == 1


def test_every_edge_says_when_it_happens(case: Case) -> None:
    for edge in case.table.edges:
        assert edge.when and edge.when[0].islower(), edge


def test_the_terminal_state_is_reachable_from_every_state(case: Case) -> None:
    """Nothing can get stuck forever."""
    [end] = case.table.terminal
    for state in case.table.states:
        if state is not end:
            assert end in case.table.reachable_from(state), state


@pytest.mark.parametrize("row", ALL_TRIPLES, ids=[_id(r) for r in ALL_TRIPLES])
def test_every_edge_commits_with_its_kind_and_nothing_else_does(
    row: tuple[Case, Any, Any, Kind],
) -> None:
    """The commit (a pair store's, a hot slot's apply) takes exactly the table's edges: a
    move of the wrong kind along an existing edge is refused like a move off the table."""
    case, source, target, kind = row
    if source is not None and source in case.table.terminal:
        pytest.skip("no record stays in a terminal state to be moved")
    if case is HOT_CASE and source is target:
        pytest.skip("a hot move in the same state re-pairs the runner: not a transition")
    commit = (
        (lambda: case.insert(target, kind))
        if source is None
        else (lambda: case.move(source, target, kind))
    )
    if (source, target, kind) in case.graph:
        after, event = commit()
        assert event == (source, target, kind)
        assert after is (None if target in case.table.terminal else target)
    else:
        with pytest.raises(InvalidTransition, match=f"{kind.value} .*-> {target.value}"):
            commit()


@pytest.mark.parametrize("row", ALL_TRIPLES, ids=[_id(r) for r in ALL_TRIPLES])
def test_the_fast_check_agrees_with_firing_the_transitions_machine(
    row: tuple[Case, Any, Any, Kind],
) -> None:
    """The hot path validates with a set read back from the machine; the machine of record
    (firing its trigger) must give the same answer for every (source, target, kind)."""
    case, source, target, kind = row
    machine = case.machine()
    verdicts = []
    for validate in (machine.check, machine.fire, case.table.check):
        try:
            validate("x", source, target, kind)
            verdicts.append(True)
        except InvalidTransition:
            verdicts.append(False)
    assert verdicts == [(source, target, kind) in case.graph] * 3


def test_a_refused_move_names_the_record_the_kind_and_the_edge(case: Case) -> None:
    [end] = case.table.terminal
    with pytest.raises(InvalidTransition) as refused:
        case.table.check("id-1", end, end, Kind.ACTIVE)
    assert str(refused.value) == (
        f"{case.table.noun} id-1: active {end.value} -> {end.value} is not in the transition table"
    )


def test_a_table_that_reads_wrong_cannot_be_built() -> None:
    from state_machine.machinery import Edge

    with pytest.raises(ValueError, match="twice"):
        Table("t", "x", HotState, (*HOT.edges, HOT.edges[-1]))
    with pytest.raises(ValueError, match="no insert edge"):
        Table("t", "x", HotState, HOT.moves)
    with pytest.raises(ValueError, match="no edge reaches"):
        Table("t", "x", HotState, (Edge(None, W, A, "only"),))
