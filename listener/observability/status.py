"""The status board's feed: after each carried-out step, the pair table and the ledger go to
the :class:`~listener.observability.http.StatusBoard` that ``/debug/pairs`` serves."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from listener.observability.http import StatusBoard
from reconciler.clock import Clock
from scaleset.carry_out import CarriedOut
from state_machine.record import PairRecord


class StatusSubscriber:
    """A step observer (scaleset/carry_out.py): publishes the store's records and the step's
    ledger, at wall time, after every step (nothing outside a step: no new ledger)."""

    def __init__(
        self, board: StatusBoard, records: Callable[[], Iterable[PairRecord]], clock: Clock
    ) -> None:
        self.board = board
        self.records = records
        self.clock = clock

    def observe(self, step: CarriedOut) -> None:
        ledger = step.output.ledger
        if ledger is None:
            return
        self.board.publish(records=self.records(), ledger=ledger, at=self.clock.now())
