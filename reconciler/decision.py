"""What decide reads (:class:`DecideInput`) and what it produces (:class:`Decision`).

Shared by decide's steps (``reconciler/decide.py``), the sweep (``reconciler/sweep.py``) and
the ramp (``reconciler/ramp.py``); nothing here decides anything.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from reconciler.config import ReconcilerConfig
from reconciler.ports import Command, PodRef
from reconciler.snapshot import ClusterSnapshot, PlaceholderPod
from reconciler.survivors import Survivors
from state_machine.events import Kind
from state_machine.record import PairRecord
from state_machine.states import PairState
from state_machine.store import Change, Move, NewPair

S = PairState


@dataclass(frozen=True, slots=True)
class DecideInput:
    """Everything decide reads, explicitly."""

    pairs: Mapping[str, PairRecord]  # state after sync
    snapshot: ClusterSnapshot
    config: ReconcilerConfig
    now: float
    instance: str
    first_step: bool


@dataclass(slots=True)
class Decision:
    changes: list[Change] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)
    #: The state each pair will be in once ``changes`` apply (pairs deleted are dropped).
    states: dict[str, PairState] = field(default_factory=dict)
    #: Why QUEUED pairs were left waiting this step (see ``reconciler/ramp.py``'s
    #: ``LaunchBudget``; "unblocking": held for a step while stuck runner halves take freed
    #: room), or None.
    launch_limited_by: str | None = None
    #: The lone halves of PREEMPTED pairs, as retire_survivors found them.
    survivors: Survivors = field(default_factory=Survivors)
    #: Pairs released this step so their room completes others (``unblock``).
    unblocked: int = 0
    #: Pairs in flight (as sync left them) with a half still waiting for a node: they take
    #: free allocatable before any pair requested now (resize's groups, the ramp).
    unbound_in_flight: int = 0

    def move(self, record: PairRecord, target: PairState, reason: str) -> None:
        self.changes.append(Move(record.pair_id, target, Kind.ACTIVE, reason))
        self.states[record.pair_id] = target

    def add(self, pair_id: str, reason: str) -> None:
        self.changes.append(NewPair(pair_id, reason))
        self.states[pair_id] = S.QUEUED

    def in_states(self, *states: PairState) -> list[str]:
        return [pid for pid, s in self.states.items() if s in states]


def records_in(inp: DecideInput, *states: PairState) -> Iterator[PairRecord]:
    for record in inp.pairs.values():
        if record.state in states:
            yield record


def pod_ref(pod: PlaceholderPod) -> PodRef:
    return PodRef(pod.namespace, pod.name, pod.uid)
