"""The listener's asyncio driver of the controller: threads, wake-ups, errors, the clocks."""

from __future__ import annotations

import asyncio
import threading

from listener.arc.gate import CapacityGate
from listener.process.reconcile_loop import Observation, ReconcileLoop
from reconciler.clock import SystemClock
from reconciler.config import ReconcilerConfig
from reconciler.controller import CHANGED, ScaleSetController, Trigger
from reconciler.schedule import Timings
from reconciler.snapshot import ClusterSnapshot
from scaleset.carry_out import Effects
from tests.reconciler.builders import SCALE_SET, running_pair, snapshot


def gate() -> CapacityGate:
    """The listener's gate, advertising 0 until a step says otherwise."""
    return CapacityGate(100, initial=0)


def controller(
    proactive: int, *, interval: float = 3600.0, debounce: float = 0.0
) -> ScaleSetController:
    return ScaleSetController(
        ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=proactive),
        Timings(interval=interval, debounce=debounce, max_delay=debounce),
        instance="i0",
        started_at=0.0,
    )


def observe(full: object, cheap: object = None) -> Observation:
    def source(item: object) -> ClusterSnapshot | None:
        if isinstance(item, Exception):
            raise item
        return item() if callable(item) else item  # type: ignore[no-any-return]

    return Observation(lambda _now: source(full), lambda _now: source(cheap), lambda: 0.0)


async def until(predicate: object, rounds: int = 200) -> None:
    for _ in range(rounds):  # bounded
        await asyncio.sleep(0.005)
        if predicate():  # type: ignore[operator]
            return


def test_triggers_from_another_thread_run_steps_and_a_failing_read_does_not_kill_it() -> None:
    sink = gate()
    c = controller(proactive=1)
    reads: list[object] = [snapshot(), RuntimeError("cache exploded")]
    ready = snapshot(placeholders={"i0-1": running_pair("i0-1")})

    def full() -> ClusterSnapshot:
        item = reads.pop(0) if reads else ready
        if isinstance(item, Exception):
            raise item
        return item  # type: ignore[return-value]

    loop = ReconcileLoop(c, observe(full), Effects([], gate=sink), SystemClock())

    async def scenario() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(loop.run(stop))
        for _ in range(3):
            await until(lambda: False, rounds=2)
            threading.Thread(target=loop.trigger, args=(CHANGED,)).start()
            await until(lambda: sink.value == 1)
        stop.set()
        await asyncio.wait_for(task, timeout=5)

    asyncio.run(scenario())
    assert c.errors == 1  # the failed read, counted once
    assert sink.value == 1
    assert c.reconciler.store.get("i0-1").state.value == "READY"


def test_a_lost_placeholder_lowers_the_gate_between_steps_from_a_watch_thread() -> None:
    """A drop reaches the sink from an informer thread's event while no step is due (the
    periodic interval is an hour away); only the cheap snapshot is read."""
    sink = gate()
    c = controller(proactive=2, debounce=60.0)  # the debounced step is a minute away
    ready = {f"i0-{i}": running_pair(f"i0-{i}") for i in (1, 2)}
    c.step(0.0, snapshot(), stale_for=0.0)
    c.step(SystemClock().now(), snapshot(placeholders=ready), stale_for=0.0)
    steps = c.reconciler.steps
    one_left = snapshot(placeholders={"i0-1": ready["i0-1"]})
    loop = ReconcileLoop(
        c,
        observe(RuntimeError("no full step is due"), one_left),
        Effects([], gate=sink),
        SystemClock(),
    )

    async def scenario() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(loop.run(stop))
        await asyncio.sleep(0)
        threading.Thread(target=lambda: loop.trigger(Trigger(lost=True))).start()
        await until(lambda: sink.value == 1)
        stop.set()
        await asyncio.wait_for(task, timeout=5)

    asyncio.run(scenario())
    assert sink.value == 1 and c.drops == 1
    assert c.reconciler.steps == steps


def test_pair_timestamps_are_the_snapshots_wall_time_not_the_schedule_clock() -> None:
    """The schedule runs on the monotonic clock so a wall-clock jump cannot stall it; the
    pairs it creates carry the wall time of the snapshot that decided them."""

    class Monotonic:
        """Wall time far away; the schedule reads only ``monotonic()``."""

        def now(self) -> float:
            return 9_999_999_999.0

        def monotonic(self) -> float:
            return 5.0

    c = controller(proactive=1, interval=30.0)
    wall = 1_700_000_000.0
    loop = ReconcileLoop(c, observe(snapshot(now=wall)), Effects([], gate=gate()), Monotonic())
    loop.run_once()
    assert c.reconciler.store.get("i0-1").since == wall
    assert c.next_wake(5.0) == 35.0
