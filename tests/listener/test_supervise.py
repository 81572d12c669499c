"""Supervision of background tasks (issue 10, failure 3): nothing dies silently."""

from __future__ import annotations

import asyncio
import logging

import pytest

from listener.process.supervise import Backoff, supervised

NO_WAIT = Backoff(first=0.0, cap=0.0)


def test_a_failing_task_is_logged_counted_and_restarted_until_stop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    failures: list[str] = []
    runs = 0
    stop = asyncio.Event()

    async def task() -> None:
        nonlocal runs
        runs += 1
        if runs <= 3:
            raise ValueError(f"boom {runs}")
        stop.set()

    caplog.set_level(logging.ERROR, logger="listener.process.supervise")
    asyncio.run(
        asyncio.wait_for(
            supervised("hud", task, stop, on_failure=failures.append, backoff=NO_WAIT), 5
        )
    )
    assert runs == 4
    assert failures == ["hud", "hud", "hud"]
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 3 and all(
        "background task hud failed (ValueError" in m for m in messages
    )
    # The traceback only once: a task failing in a loop must not flood the log.
    assert [bool(r.exc_info) for r in caplog.records] == [True, False, False]


def test_a_task_that_returns_before_stop_is_restarted_and_counted() -> None:
    failures: list[str] = []
    runs = 0
    stop = asyncio.Event()

    async def task() -> None:
        nonlocal runs
        runs += 1
        if runs == 2:
            stop.set()

    asyncio.run(
        asyncio.wait_for(
            supervised("reconcile", task, stop, on_failure=failures.append, backoff=NO_WAIT), 5
        )
    )
    assert (runs, failures) == (2, ["reconcile"])


def test_cancellation_is_never_swallowed() -> None:
    async def main() -> None:
        started = asyncio.Event()

        async def task() -> None:
            started.set()
            await asyncio.Event().wait()

        running = asyncio.create_task(supervised("hud", task, asyncio.Event()))
        await started.wait()
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running

    asyncio.run(asyncio.wait_for(main(), 5))


def test_backoff_doubles_up_to_its_cap() -> None:
    policy = Backoff(first=1.0, cap=30.0)
    assert [policy.delay(n) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]
