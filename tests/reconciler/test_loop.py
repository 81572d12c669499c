"""The asyncio driver: synced guard, triggers from other threads, errors do not kill it."""

from __future__ import annotations

import asyncio
import threading

from reconciler.clock import SystemClock
from reconciler.fast_drop import DropGuard
from reconciler.loop import ReconcileLoop, Schedule
from reconciler.reconciler import Reconciler
from reconciler.settings import ReconcilerConfig
from reconciler.snapshot import ClusterSnapshot

from .builders import SCALE_SET, running_pair, snapshot
from .fakes import LatestSink


def test_no_step_before_caches_are_synced() -> None:
    rec = Reconciler(
        ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=1), clock=SystemClock()
    )
    loop = ReconcileLoop(rec, lambda: None, Schedule(interval=30), SystemClock())
    assert loop.run_once() is None
    assert rec.steps == 0 and len(rec.store) == 0


def test_run_steps_on_trigger_from_another_thread_and_survives_a_failing_step() -> None:
    sink = LatestSink()
    rec = Reconciler(
        ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=1), clock=SystemClock(), sink=sink
    )
    snapshots: list[ClusterSnapshot | Exception] = [
        snapshot(),
        RuntimeError("cache exploded"),
        snapshot(placeholders={"i0-1": running_pair("i0-1")}),
    ]
    errors: list[BaseException] = []

    def source() -> ClusterSnapshot | None:
        item = snapshots.pop(0) if len(snapshots) > 1 else snapshots[0]
        if isinstance(item, Exception):
            raise item
        return item

    async def scenario() -> None:
        stop = asyncio.Event()
        loop = ReconcileLoop(
            rec,
            source,
            Schedule(interval=3600, debounce=0.0, max_delay=0.0),
            SystemClock(),
            on_error=errors.append,
        )
        task = asyncio.create_task(loop.run(stop))
        for _ in range(3):
            await asyncio.sleep(0)  # let the loop reach its wait
            await asyncio.to_thread(lambda: None)
            threading.Thread(target=loop.trigger).start()
            for _ in range(200):  # bounded: wait until the triggered step happened
                await asyncio.sleep(0.005)
                if sink.value == 1:
                    break
        stop.set()
        await asyncio.wait_for(task, timeout=5)

    asyncio.run(scenario())
    assert [str(e) for e in errors] == ["cache exploded"]
    assert sink.value == 1
    assert rec.store.get("i0-1").state.value == "READY"


def test_a_lost_placeholder_lowers_capacity_between_steps_without_waiting_for_one() -> None:
    """Issue 13: a drop reaches the sink from a watch thread's poke, with no step due (the
    periodic interval is an hour and no trigger was made); a rise never takes this path."""
    sink = LatestSink()
    rec = Reconciler(
        ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=2), clock=SystemClock(), sink=sink
    )
    ready = {f"i0-{i}": running_pair(f"i0-{i}") for i in (1, 2)}
    rec.step(snapshot())
    rec.step(snapshot(placeholders=ready))
    assert sink.value == 2
    observed = [snapshot(placeholders={"i0-1": ready["i0-1"]})]  # i0-2 was preempted
    guard = DropGuard(rec, lambda: observed[0])

    async def scenario() -> None:
        stop = asyncio.Event()
        schedule = Schedule(interval=3600, debounce=0.0, max_delay=0.0)
        schedule.ran(SystemClock().now())  # the next periodic step is an hour away
        loop = ReconcileLoop(rec, lambda: None, schedule, SystemClock(), drop_guard=guard)
        task = asyncio.create_task(loop.run(stop))
        await asyncio.sleep(0)
        threading.Thread(target=loop.poke_drop).start()
        for _ in range(200):  # bounded
            await asyncio.sleep(0.005)
            if sink.value == 1:
                break
        observed[0] = snapshot(placeholders=ready)  # back up: only a full step may raise it
        loop.poke_drop()
        for _ in range(20):
            await asyncio.sleep(0.005)
        stop.set()
        await asyncio.wait_for(task, timeout=5)

    asyncio.run(scenario())
    assert sink.value == 1
    assert guard.drops == 1
    assert rec.steps == 2  # no step ran: the drop came from the guard alone
