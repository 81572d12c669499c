"""`arc-capacity-listener status` renders what the listener's /debug/pairs serves."""

from __future__ import annotations

from listener.commands.status import render_status
from listener.observability.http import StatusBoard
from reconciler.capacity import CapacityLedger
from state_machine.events import Kind
from state_machine.states import PairState
from state_machine.store import Move, NewPair, PairStore


def test_status_shows_each_pair_and_the_ledger_from_the_debug_payload() -> None:
    store = PairStore("arc-runners")
    store.commit(
        [
            NewPair("abcde-1", "desired 1"),
            Move("abcde-1", PairState.REQUESTED, Kind.ACTIVE, "launch slot free"),
        ],
        at=10.0,
    )
    ledger = CapacityLedger(
        capacity=3,
        runner_side=3,
        workflow_side=4,
        max_runners=10,
        ready_pairs=2,
        real_runners_bound=1,
        real_workflows_bound=1,
        runner_placeholders=2,
        workflow_placeholders=3,
        starved_runners=0,
        idle_runners=0,
    )
    board = StatusBoard("arc-runners")
    board.publish(records=store.records(), ledger=ledger, at=40.0)
    text = render_status(board.payload())
    assert "capacity 3 = min(runner side 3, workflow side 4, maxRunners 10)" in text
    assert "abcde-1" in text and "REQUESTED" in text and "launch slot free" in text
    assert "?" not in text.splitlines()[-1]
