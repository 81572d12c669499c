"""Hot slots inside the reconcile step (reconciler/hot_step.py, reconciler/reconciler.py): a slot
is advertised only while its runner is registered and idle and its workflow placeholder runs;
a job landing on it, a lost placeholder, a drain and a listener restart, step by step."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from reconciler.config import ReconcilerConfig
from reconciler.controller import ScaleSetController
from reconciler.ports import CreatePlaceholder, DeleteOrphan
from reconciler.reconciler import Reconciler, StepResult
from reconciler.schedule import Timings
from reconciler.snapshot import ClusterSnapshot, PlaceholderPod, PodPhase, RunnerPod
from reconciler.subscribers import LoggingSubscriber
from reconciler.warm_pool import WarmPoolPolicy
from state_machine.events import HotTransitionEvent, Kind
from state_machine.hot import HotState
from state_machine.states import Role

from .builders import NS, SCALE_SET, runner, workflow

S = HotState


class Engine:
    """The production engine (ScaleSetController) stepped at the times a test gives; reads the
    reconciler it drives (its hot keeper, store and warm window) and each step's result."""

    def __init__(self, config: ReconcilerConfig, *, instance: str) -> None:
        self.controller = ScaleSetController(
            config, Timings(interval=30.0), instance=instance, started_at=0.0
        )

    @property
    def reconciler(self) -> Reconciler:
        return self.controller.reconciler

    def step(self, snapshot: ClusterSnapshot, *, now: float) -> StepResult:
        output = self.controller.step(now, snapshot, stale_for=0.0)
        if output.error is not None:
            raise output.error
        assert output.result is not None  # a synced, fresh snapshot always steps
        return output.result


def config(reserve: int = 1, hot: int | str = 1) -> ReconcilerConfig:
    return ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=reserve, hot_runners=hot)  # type: ignore[arg-type]


def hot_pod(
    slot_id: str, name: str, *, running: bool = True, deleting: bool = False, instance: str = "i0"
) -> PlaceholderPod:
    return PlaceholderPod(
        name=name,
        namespace=NS,
        uid=f"uid-{name}",
        pair_id=slot_id,
        role=Role.WORKFLOW,
        phase=PodPhase.RUNNING if running else PodPhase.PENDING,
        node_name="node-a" if running else None,
        deleting=deleting,
        instance=instance,
    )


def world(
    now: float,
    *,
    hot: dict[str, PlaceholderPod] | None = None,
    runners: tuple[RunnerPod, ...] = (),
    idle: frozenset[str] = frozenset(),
    busy: frozenset[str] = frozenset(),
    max_runners: int = 10,
    workflows: tuple[str, ...] = (),
) -> ClusterSnapshot:
    return ClusterSnapshot(
        taken_at=now,
        max_runners=max_runners,
        runner_pods=runners,
        workflow_pods=tuple(workflow(r, node=None) for r in workflows),
        idle_runners=len(idle),
        hot_placeholders=hot or {},
        idle_runner_names=idle,
        busy_runner_names=busy,
    )


def created(result: StepResult) -> list[CreatePlaceholder]:
    return [c for c in result.commands if isinstance(c, CreatePlaceholder)]


def deleted(result: StepResult) -> list[str]:
    return [c.pod.name for c in result.commands if isinstance(c, DeleteOrphan)]


def hot_moves(result: StepResult) -> list[tuple[HotState | None, HotState, Kind, str]]:
    return [
        (e.source, e.target, e.kind, e.reason)
        for e in result.events
        if isinstance(e, HotTransitionEvent)
    ]


def slot_states(rec: Engine) -> list[HotState]:
    return [s.state for s in rec.reconciler.hot.slots.values()]


def confirmed_slot() -> tuple[Engine, PlaceholderPod]:
    """A reconciler with one HOT slot: runner r1 idle, its placeholder Running."""
    rec = Engine(config(), instance="i0")
    first = rec.step(world(0.0), now=0.0)
    (create,) = created(first)
    spec = create.spec
    assert spec.workflow_only and spec.pair_id.startswith("hot-")
    assert first.hot_runners == 1  # the scaler asks ARC for the slot's runner at once
    assert first.ledger.capacity == 0  # nothing confirmed yet
    pod = hot_pod(spec.pair_id, spec.workflow_pod)
    second = rec.step(
        world(5.0, hot={pod.name: pod}, runners=(runner("r1"),), idle=frozenset({"r1"})),
        now=5.0,
    )
    assert slot_states(rec) == [S.HOT]
    assert second.ledger.capacity == 1  # advertised like a READY pair
    assert second.hot is not None and second.hot.confirmed == 1
    return rec, pod


def test_the_whole_reserve_hot_requests_no_warm_pair() -> None:
    """hotRunners = the reserve: the pairs' step keeps 0 warm pairs, so one reserve budget."""
    rec, _ = confirmed_slot()
    assert list(rec.reconciler.store.records()) == []  # no pair was ever queued


def test_a_slot_is_not_advertised_while_its_runner_is_not_registered() -> None:
    rec = Engine(config(), instance="i0")
    (create,) = created(rec.step(world(0.0), now=0.0))
    pod = hot_pod(create.spec.pair_id, create.spec.workflow_pod)
    step = rec.step(world(5.0, hot={pod.name: pod}, runners=(runner("r1"),)), now=5.0)
    assert slot_states(rec) == [S.WARMING]
    # The runner pod is bound, the placeholder runs: the ledger's sides would both count one,
    # but a WARMING slot's placeholder is not on the workflow side.
    assert step.ledger.capacity == 0


def test_a_job_landing_on_a_hot_slot_keeps_its_placeholder_for_the_workflow_pod() -> None:
    """The runner took a job: TAKEN. Its placeholder stays on the workflow side (the job's
    workflow pod preempts it), and a new slot is opened at once to keep the reserve."""
    rec, pod = confirmed_slot()
    step = rec.step(
        world(10.0, hot={pod.name: pod}, runners=(runner("r1"),), busy=frozenset({"r1"})),
        now=10.0,
    )
    assert sorted(slot_states(rec)) == sorted([S.TAKEN, S.WARMING])
    assert len(created(step)) == 1  # the refill's placeholder
    assert step.hot_runners == 1  # one idle runner kept on top of the (now busy) r1
    assert step.ledger.capacity == 1  # r1 + the placeholder held for its workflow pod
    # The workflow pod preempted the placeholder: the slot is over.
    after = rec.step(
        world(15.0, runners=(runner("r1"),), busy=frozenset({"r1"}), workflows=("r1",)),
        now=15.0,
    )
    assert slot_states(rec) == [S.WARMING]
    assert after.ledger.capacity == 0  # r1's workflow pod is not bound yet


def test_a_lost_placeholder_stops_the_slot_being_advertised_in_the_same_step() -> None:
    """ICE, preemption or eviction of the placeholder: LOST, capacity drops with that very
    snapshot (the drop check reads the same ledger), and the slot is mended."""
    rec, pod = confirmed_slot()
    lost = replace(pod, deleting=True)
    snap = world(10.0, hot={pod.name: lost}, runners=(runner("r1"),), idle=frozenset({"r1"}))
    drop = rec.controller.check_drop(10.0, snap, stale_for=0.0)  # before any step
    assert drop.capacity == 0
    step = rec.step(snap, now=10.0)
    assert step.ledger.capacity == 0
    assert slot_states(rec) == [S.WARMING]  # LOST, then mended in the same step
    (mend,) = created(step)
    assert mend.spec.workflow_pod != pod.name  # a new placeholder beside the idle runner


def test_drain_releases_every_slot_and_the_scaler_keeps_no_idle_runner() -> None:
    rec, pod = confirmed_slot()
    step = rec.step(
        world(
            10.0, hot={pod.name: pod}, runners=(runner("r1"),), idle=frozenset({"r1"}),
            max_runners=0,
        ),
        now=10.0,
    )  # fmt: skip
    assert slot_states(rec) == []
    assert step.hot_runners == 0
    assert deleted(step) == [pod.name]
    assert step.ledger.capacity == 0


def test_max_runners_lowered_below_the_jobs_releases_the_slot() -> None:
    rec, pod = confirmed_slot()
    busy = tuple(runner(f"b{i}") for i in range(3))
    step = rec.step(
        world(10.0, hot={pod.name: pod}, runners=(*busy, runner("r1")), idle=frozenset({"r1"}),
              max_runners=3),
        now=10.0,
    )  # fmt: skip
    assert slot_states(rec) == [] and step.hot_runners == 0


def test_a_restarted_listener_adopts_hot_placeholders_and_confirms_them_again() -> None:
    """A new listener instance finds the previous one's hot placeholder: it becomes a WARMING
    slot that pairs with the idle runner in the same step, so nothing is deleted or
    created again and the slot is advertised at once."""
    old = hot_pod("hot-old-1", f"{SCALE_SET}-ph-hot-old-1-w", instance="old")
    rec = Engine(config(), instance="i1")
    step = rec.step(
        world(0.0, hot={old.name: old}, runners=(runner("r1"),), idle=frozenset({"r1"})),
        now=0.0,
    )
    assert slot_states(rec) == [S.HOT]
    assert created(step) == [] and deleted(step) == []
    assert step.ledger.capacity == 1
    # It enters through the table's adoption edge (passive), then the observation moves it.
    assert hot_moves(step) == [
        (None, S.WARMING, Kind.PASSIVE, f"adopted placeholder {old.name} from instance old"),
        (S.WARMING, S.HOT, Kind.PASSIVE, "runner r1 registered and idle, placeholder Running"),
    ]


def test_every_hot_move_is_a_transition_event_logged_once_with_its_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A hot slot's moves are published like a pair's: one event per state change after the
    pairs' events, one log line each from the same subscriber, with the reason. A runner
    pairing that changes no state is not a transition."""
    rec, pod = confirmed_slot()
    taken = rec.step(
        world(10.0, hot={pod.name: pod}, runners=(runner("r1"),), busy=frozenset({"r1"})),
        now=10.0,
    )
    assert hot_moves(taken) == [
        (S.HOT, S.TAKEN, Kind.PASSIVE, "runner r1 took a job"),
        (None, S.WARMING, Kind.ACTIVE, "wanted"),  # the refill keeps the reserve
    ]
    caplog.set_level(logging.INFO, logger="reconciler.transitions")
    LoggingSubscriber().notify(taken.events, ())
    lines = [r.getMessage() for r in caplog.records if r.name == "reconciler.transitions"]
    assert len(lines) == len(taken.events)
    assert lines[0].startswith("transition hot_slot=hot-i0-1 scale_set=")
    assert "HOT->TAKEN kind=passive runner=r1 reason='runner r1 took a job'" in lines[0]


def test_a_hot_placeholder_no_slot_holds_is_deleted_after_the_first_step() -> None:
    rec, pod = confirmed_slot()
    stray = hot_pod("hot-x-9", f"{SCALE_SET}-ph-hot-x-9-w")
    step = rec.step(
        world(10.0, hot={pod.name: pod, stray.name: stray}, runners=(runner("r1"),),
              idle=frozenset({"r1"})),
        now=10.0,
    )  # fmt: skip
    assert deleted(step) == [stray.name]
    assert step.ledger.capacity == 1  # the stray never counted


def test_without_hot_runners_nothing_changes() -> None:
    rec = Engine(config(reserve=1, hot=0), instance="i0")
    step = rec.step(world(0.0), now=0.0)
    assert step.hot is None and step.hot_runners == 0 and created(step) == []


def test_auto_counts_hot_refills_and_not_the_idle_runners_it_keeps() -> None:
    """With ``proactiveCapacity: auto`` the hot slots are the estimated reserve. Regression: an
    idle hot runner is an alive runner pod without a bound workflow pod, so it counted as a
    *starting* runner; the pool then sized itself by its own idle runners and never shrank.
    Counted instead: a slot's placeholder requested -> HOT as a refill (W), a job landing on
    a slot as a slot taken."""
    policy = WarmPoolPolicy(auto=True, minimum=1, maximum=20)  # at least one slot
    rec = Engine(replace(config(reserve=1, hot="auto"), warm_pool=policy), instance="i0")
    (create,) = created(rec.step(world(0.0), now=0.0))
    pod = hot_pod(create.spec.pair_id, create.spec.workflow_pod)
    idle = world(8.0, hot={pod.name: pod}, runners=(runner("r1"),), idle=frozenset({"r1"}))
    rec.step(idle, now=8.0)
    assert slot_states(rec) == [S.HOT]
    rec.step(replace(idle, taken_at=60.0), now=60.0)  # r1 idle for a minute
    seen = rec.reconciler.warm_window.observation(60.0)
    assert seen.starting == 0  # r1 waits for a job: it holds no job's slot
    assert seen.ready_seconds == (8.0,)  # requested at 0, HOT at 8
    rec.step(
        world(70.0, hot={pod.name: pod}, runners=(runner("r1"),), busy=frozenset({"r1"})),
        now=70.0,
    )
    assert rec.reconciler.warm_window.observation(70.0).taken == 1


def test_the_hot_runners_in_the_scalers_target_are_not_taken_for_assigned_jobs() -> None:
    """Regression: the ERS replicas (the snapshot's assigned jobs) include the idle runners
    the last step had the scaler keep for hot slots; read as jobs, each looked like a job
    about to take a warm pair, and the step asked for a pair more per hot runner."""
    pairs: list[int] = []
    for assigned in (0, 1):  # the ERS replicas without, then with, the hot runner
        rec = Engine(config(reserve=2, hot=1), instance="i0")
        assert rec.step(world(0.0), now=0.0).hot_runners == 1
        rec.step(replace(world(5.0), assigned_jobs=assigned), now=5.0)
        pairs.append(len(list(rec.reconciler.store.records())))
    assert pairs == [1, 1]  # the reserve's one warm pair (the other is the hot slot), no more


@pytest.mark.parametrize(
    ("how", "preempted", "expected"),
    [
        # The job's workflow pod found free room: both placeholders still run. Slot B is
        # confirmed (1) and r1 busy (1).
        ("into free room", False, 2),
        # It preempted the other slot's placeholder (pairing is by runner name, the scheduler
        # picks victims by node): B is lost, only r1's job holds a slot.
        ("preempting the other slot's placeholder", True, 1),
    ],
)
def test_a_taken_slot_is_not_counted_once_its_jobs_workflow_pod_holds_a_slot(
    how: str, preempted: bool, expected: int
) -> None:
    """Regression (issue 43): after a restart both hot slots were adopted and confirmed, and a
    job landed on one. Its TAKEN placeholder stayed on the workflow side after the job's
    workflow pod was bound, so the job was counted twice (its bound workflow pod and the
    placeholder held for it) and, with the refill runner on the runner side, one slot more
    than was reserved was advertised. The table's TAKEN -> RELEASED edge (the job's workflow
    pod is bound) was never taken: only a gone placeholder released the slot."""
    p1 = hot_pod("hot-old-1", f"{SCALE_SET}-ph-hot-old-1-w", instance="old")
    p2 = hot_pod("hot-old-2", f"{SCALE_SET}-ph-hot-old-2-w", instance="old")
    rec = Engine(config(reserve=2, hot=2), instance="i1")
    pods = {p1.name: p1, p2.name: p2}
    r1, r2, r3 = runner("r1"), runner("r2"), runner("r3")
    adopted = rec.step(
        world(0.0, hot=pods, runners=(r1, r2), idle=frozenset({"r1", "r2"})), now=0.0
    )
    assert slot_states(rec) == [S.HOT, S.HOT] and adopted.ledger.capacity == 2
    taken = rec.step(
        world(1.0, hot=pods, runners=(r1, r2), idle=frozenset({"r2"}), busy=frozenset({"r1"})),
        now=1.0,
    )
    assert sorted(slot_states(rec)) == sorted([S.TAKEN, S.HOT, S.WARMING])
    assert taken.ledger.capacity == 2  # B, and r1 with the placeholder held for its job
    (a,) = (s for s in rec.reconciler.hot.slots.values() if s.state is S.TAKEN)
    other = p2.name if a.placeholder == p1.name else p1.name
    if preempted:
        pods = {**pods, other: replace(pods[other], deleting=True)}
    # The refill runner r3 registered (its slot's placeholder still Pending); r1's workflow
    # pod is bound.
    snap = replace(
        world(2.0, hot=pods, runners=(r1, r2, r3), idle=frozenset({"r2", "r3"}),
              busy=frozenset({"r1"})),
        workflow_pods=(workflow("r1"),),
    )  # fmt: skip
    assert rec.controller.check_drop(2.0, snap, stale_for=0.0).capacity in (None, expected)
    step = rec.step(snap, now=2.0)
    assert step.ledger.capacity == expected, how
    assert a.slot_id not in rec.reconciler.hot.slots  # TAKEN -> RELEASED: the job holds its room
    assert a.placeholder in deleted(step)
