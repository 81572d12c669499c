"""The asyncio driver: synced guard, triggers from other threads, errors do not kill it."""

from __future__ import annotations

import asyncio
import threading

from reconciler.clock import SystemClock
from reconciler.loop import LatestCapacity, ReconcileLoop, Schedule
from reconciler.reconciler import Reconciler
from reconciler.settings import ReconcilerConfig
from reconciler.snapshot import ClusterSnapshot

from .builders import SCALE_SET, running_pair, snapshot


def test_latest_capacity_wins_and_listeners_hear_changes_only() -> None:
    sink = LatestCapacity()
    heard: list[tuple[int, int]] = []
    sink.subscribe(lambda old, new: heard.append((old, new)))
    for value in (3, 3, 1, 5):
        sink.set_max_runners(value)
    assert sink.value == 5
    assert heard == [(0, 3), (3, 1), (1, 5)]


def test_no_step_before_caches_are_synced() -> None:
    rec = Reconciler(
        ReconcilerConfig(scale_set=SCALE_SET, proactive_capacity=1), clock=SystemClock()
    )
    loop = ReconcileLoop(rec, lambda: None, Schedule(interval=30), SystemClock())
    assert loop.run_once() is None
    assert rec.steps == 0 and len(rec.store) == 0


def test_run_steps_on_trigger_from_another_thread_and_survives_a_failing_step() -> None:
    sink = LatestCapacity()
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
