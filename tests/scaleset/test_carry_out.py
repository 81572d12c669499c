"""The one carry-out of an Output (scaleset/carry_out.py): what goes where, in which order,
and what the observers are told. Every driver calls it, so these are the listener's and the
simulator's effects alike."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from reconciler.capacity import CapacityLedger
from reconciler.controller import Output, ScalerTarget
from reconciler.ports import Command, DeleteOrphan, PodRef
from reconciler.reconciler import StepResult
from scaleset.carry_out import CarriedOut, Effects, carry_out
from state_machine.events import TransitionEvent

ORPHAN = DeleteOrphan(PodRef("ns", "old-pod"), "no pair owns it")
LEDGER = CapacityLedger(
    capacity=3,
    runner_side=4,
    workflow_side=3,
    max_runners=10,
    ready_pairs=2,
    real_runners_bound=0,
    real_workflows_bound=0,
    runner_placeholders=2,
    workflow_placeholders=2,
    starved_runners=0,
    idle_runners=0,
)


@dataclass
class Journal:
    """Every call any fake below received, in order."""

    calls: list[tuple[str, object]] = field(default_factory=list)


@dataclass
class Recorder:
    journal: Journal
    fails: bool = False

    def notify(self, events: Sequence[TransitionEvent], commands: Sequence[Command]) -> None:
        self.journal.calls.append(("notify", len(commands)))
        if self.fails:
            raise RuntimeError("the API said no")


@dataclass
class Gate:
    journal: Journal
    requested: int = 0
    live_max: int = 100

    @property
    def value(self) -> int:
        return max(0, min(self.requested, self.live_max))

    def advertise(self, capacity: int) -> None:
        self.journal.calls.append(("advertise", capacity))
        self.requested = capacity

    def set_live_max_runners(self, max_runners: int) -> None:
        self.journal.calls.append(("gate.live_max", max_runners))
        self.live_max = max_runners


@dataclass
class Scaler:
    journal: Journal

    def set_max_runners(self, max_runners: int) -> None:
        self.journal.calls.append(("scaler.max", max_runners))

    def set_hot_runners(self, hot_runners: int) -> None:
        self.journal.calls.append(("scaler.hot", hot_runners))

    def set_switched_off(self, switched_off: bool) -> None:
        self.journal.calls.append(("scaler.off", switched_off))


@dataclass
class Observer:
    journal: Journal
    seen: list[CarriedOut] = field(default_factory=list)

    def observe(self, step: CarriedOut) -> None:
        self.journal.calls.append(("observe", step.advertised))
        self.seen.append(step)


def step_output(*, switched_off: bool = False, max_runners: int = 10) -> Output:
    result = StepResult((), (ORPHAN,), LEDGER)
    return Output(3, result, scaler=ScalerTarget(switched_off, max_runners, 0))


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (
            step_output(),
            [
                ("notify", 1),
                ("advertise", 3),
                ("scaler.off", False),
                ("gate.live_max", 10),
                ("scaler.max", 10),
                ("scaler.hot", 0),
                ("observe", 3),
            ],
        ),
        (  # a drain: the live maxRunners caps what the gate holds, the observers see it
            step_output(max_runners=0),
            [
                ("notify", 1),
                ("advertise", 3),
                ("scaler.off", False),
                ("gate.live_max", 0),
                ("scaler.max", 0),
                ("scaler.hot", 0),
                ("observe", 0),
            ],
        ),
        (  # a drop check that saw ARC switch the set off: the scaler follows at once
            Output(0, scaler=ScalerTarget(switched_off=True)),
            [("advertise", 0), ("scaler.off", True), ("observe", 0)],
        ),
        (  # no snapshot read: nothing published, the scaler left as it is
            Output(),
            [("observe", 0)],
        ),
    ],
    ids=["step", "drain", "switched off in a drop check", "not synced"],
)
def test_an_output_goes_to_subscribers_gate_scaler_then_observers_in_that_order(
    output: Output, expected: list[tuple[str, object]]
) -> None:
    journal = Journal()
    effects = Effects(
        [Recorder(journal)],
        gate=Gate(journal),
        scaler=Scaler(journal),
        observers=[Observer(journal)],
    )
    carry_out(output, effects)
    assert journal.calls == expected


def test_a_failing_subscriber_is_counted_on_what_is_returned_and_the_rest_still_happens() -> None:
    """Regression: the errors were patched into the step's result afterwards, and the metrics
    read them back with getattr; now the carry-out counts them and says so to observers."""
    journal = Journal()
    observer = Observer(journal)
    effects = Effects(
        [Recorder(journal, fails=True), Recorder(journal)],
        gate=Gate(journal),
        observers=[observer],
    )
    carried = carry_out(step_output(), effects)
    assert carried.subscriber_errors == 1
    assert observer.seen == [carried]
    assert [name for name, _ in journal.calls] == [
        "notify",
        "notify",
        "advertise",
        "gate.live_max",
        "observe",
    ]


def test_without_gate_or_scaler_only_the_subscribers_act() -> None:
    """A second listener whose session is refused, or a unit-test engine."""
    journal = Journal()
    carried = carry_out(step_output(), Effects([Recorder(journal)]))
    assert journal.calls == [("notify", 1)]
    assert carried.advertised is None and carried.duration == 0.0
