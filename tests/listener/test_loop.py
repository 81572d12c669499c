"""The listener loop: the order of operations (docs/protocol.md#listener-loop), and the capacity
cut (docs/design.md#capacity-cut).

The first half drives the loop with an in-memory message source (a real fake: a script of
answers, blocking like a long poll when it runs out). The second half runs the loop with the
real client against the loopback Actions face.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
from pydantic import SecretStr

from listener.arc.gate import CapacityGate
from listener.arc.message_loop import Listener, ListenerError
from providers.actions.auth import PatAuth
from providers.actions.client import ActionsClient
from providers.actions.config_url import parse_config_url
from providers.actions.decode import DecodedMessage
from providers.actions.models import (
    JobAssigned,
    JobAvailable,
    JobCompleted,
    JobMessage,
    JobStarted,
    RunnerScaleSetMessage,
    Session,
    Statistics,
)
from providers.actions.redact import SecretRegistry
from providers.actions.session import MessageSession
from simulator.faces.actions import ActionsFace, FaceRequest, ScriptedJobFeed
from tests.listener.arc_wiring import serve

T = TypeVar("T")
PAT = "ghp_loopTestPat0123456789"
SCALE_SET = 42


def run(coro: Coroutine[Any, Any, T], timeout: float = 20.0) -> T:
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def settle(rounds: int = 30) -> None:
    """Let every ready callback of the event loop run (no wall-clock waiting)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


def stats(assigned: int) -> Statistics:
    return Statistics(total_assigned_jobs=assigned)


def message(message_id: int, assigned: int, *jobs: JobMessage) -> DecodedMessage:
    outer = RunnerScaleSetMessage(
        message_id=message_id, message_type="RunnerScaleSetJobMessages", statistics=stats(assigned)
    )
    return DecodedMessage(outer, stats(assigned), tuple(jobs))


def available(request_id: int) -> JobAvailable:
    return JobAvailable(message_type="JobAvailable", runner_request_id=request_id)


def started(request_id: int) -> JobStarted:
    return JobStarted(
        message_type="JobStarted", runner_request_id=request_id, runner_name=f"r-{request_id}"
    )


def completed(request_id: int) -> JobCompleted:
    return JobCompleted(message_type="JobCompleted", runner_request_id=request_id, result="ok")


def session(assigned: int | None = 1, session_id: str | None = None) -> Session:
    return Session(
        session_id=session_id or "6a1e2f0c-4b7d-4f61-9a3e-2c5d8b9e0f11",
        statistics=None if assigned is None else stats(assigned),
    )


@dataclass
class Journal:
    """One ordered record of everything the loop did, across source, scaler and metrics."""

    entries: list[tuple[Any, ...]] = field(default_factory=list)

    def add(self, *entry: Any) -> None:
        self.entries.append(entry)

    def kinds(self) -> list[str]:
        return [e[0] for e in self.entries]


class ScriptedSource:
    """A message source playing a script: DecodedMessage, None (= 202) or an exception.
    When the script is exhausted, get_message blocks like an idle long poll."""

    def __init__(self, journal: Journal, script: list[Any], the_session: Session | None = None):
        self.journal = journal
        self.script = list(script)
        self._session = the_session or session()
        self.fail_delete: Exception | None = None
        self.fail_acquire: Exception | None = None
        self.idle = asyncio.Event()  # set when a poll blocks on an empty script

    @property
    def session(self) -> Session:
        return self._session

    async def get_message(self, last_message_id: int, max_capacity: int) -> DecodedMessage | None:
        self.journal.add("get", last_message_id, max_capacity)
        if not self.script:
            self.idle.set()
            try:
                await asyncio.Event().wait()  # blocks until cancelled
            finally:
                self.idle.clear()
        answer = self.script.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[no-any-return]

    async def delete_message(self, message_id: int) -> None:
        self.journal.add("delete", message_id)
        if self.fail_delete:
            raise self.fail_delete

    async def acquire_jobs(self, request_ids: list[int]) -> list[int]:
        self.journal.add("acquire", list(request_ids))
        if self.fail_acquire:
            raise self.fail_acquire
        return list(request_ids)


class RecordingScaler:
    def __init__(self, journal: Journal, fail_on: str = "") -> None:
        self.journal = journal
        self.fail_on = fail_on

    def handle_job_started(self, msg: JobStarted) -> None:
        self.journal.add("scaler.started", msg.runner_request_id)
        if self.fail_on == "started":
            raise RuntimeError("apiserver said 500")

    def handle_job_completed(self, msg: JobCompleted) -> None:
        self.journal.add("scaler.completed", msg.runner_request_id)

    def handle_desired_runner_count(self, count: int) -> int:
        self.journal.add("scaler.desired", count)
        if self.fail_on == "desired":
            raise RuntimeError("apiserver said 500")
        return count + 100  # distinguishable from the input


class RecordingMetrics:
    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    def record_statistics(self, stats: Statistics) -> None:
        self.journal.add("m.statistics", stats.total_assigned_jobs)

    def record_job_started(self, msg: JobStarted) -> None:
        self.journal.add("m.started", msg.runner_request_id)

    def record_job_completed(self, msg: JobCompleted) -> None:
        self.journal.add("m.completed", msg.runner_request_id)

    def record_desired_runners(self, n: int) -> None:
        self.journal.add("m.desired", n)

    def record_poll_cut(self, direction: str) -> None:
        self.journal.add("m.cut", direction)


def listener(
    script: list[Any],
    *,
    gate: CapacityGate | None = None,
    fail_on: str = "",
    the_session: Session | None = None,
) -> tuple[Listener, ScriptedSource, Journal]:
    journal = Journal()
    source = ScriptedSource(journal, script, the_session)
    loop = Listener(
        source,
        RecordingScaler(journal, fail_on),
        gate or CapacityGate(10),
        RecordingMetrics(journal),
    )
    return loop, source, journal


async def run_until_idle(loop: Listener, source: ScriptedSource) -> None:
    """Run the loop until it blocks on an empty script, then stop it."""
    task = asyncio.ensure_future(loop.run())
    idle = asyncio.ensure_future(source.idle.wait())
    done, _ = await asyncio.wait({task, idle}, return_when=asyncio.FIRST_COMPLETED)
    task.cancel()
    idle.cancel()
    if task in done:
        task.result()  # surface the error that ended the run
    with pytest.raises(asyncio.CancelledError):
        await task


# --- docs/protocol.md#listener-loop with an in-memory source --------------------------------------


class TestStart:
    def test_scales_once_from_the_session_statistics(self) -> None:
        loop, source, journal = listener([], the_session=session(assigned=3))
        run(run_until_idle(loop, source))
        assert journal.entries == [
            ("m.statistics", 3),
            ("scaler.desired", 3),
            ("m.desired", 103),
            ("get", 0, 10),
        ]

    def test_refuses_a_nil_session(self) -> None:
        loop, _, journal = listener(
            [], the_session=session(session_id="00000000-0000-0000-0000-000000000000")
        )
        with pytest.raises(ListenerError, match="nil session id"):
            run(loop.run())
        assert journal.entries == []

    def test_refuses_a_session_without_statistics(self) -> None:
        loop, _, _ = listener([], the_session=session(assigned=None))
        with pytest.raises(ListenerError, match="no statistics"):
            run(loop.run())


class TestOrderOfOperations:
    def test_a_message_is_acquired_started_completed_scaled_and_only_then_acked(self) -> None:
        """At least once (issue 34 item 4): the ack comes after the message's effects, so a
        run that ends half-way leaves the message for the next session."""
        msg = message(
            7,
            4,
            available(1),
            completed(5),
            JobAssigned(message_type="JobAssigned", runner_request_id=9),
            started(3),
            available(2),
            started(4),
        )
        loop, source, journal = listener([msg])
        run(run_until_idle(loop, source))
        assert journal.entries[3:] == [
            ("get", 0, 10),
            ("m.statistics", 4),
            ("acquire", [1, 2]),  # all JobAvailable ids in one call
            ("m.started", 3),
            ("scaler.started", 3),
            ("m.started", 4),
            ("scaler.started", 4),
            ("m.completed", 5),
            ("scaler.completed", 5),
            ("scaler.desired", 4),
            ("m.desired", 104),
            ("delete", 7),  # the ack, last
            ("get", 7, 10),  # lastMessageId = the received id
        ]

    def test_no_acquire_call_without_available_jobs(self) -> None:
        loop, source, journal = listener([message(7, 0, started(3))])
        run(run_until_idle(loop, source))
        assert "acquire" not in journal.kinds()

    def test_202_rescales_from_the_last_statistics_without_recording(self) -> None:
        loop, source, journal = listener([message(7, 4), None, None])
        run(run_until_idle(loop, source))
        assert journal.entries[-5:] == [
            ("get", 7, 10),
            ("scaler.desired", 4),
            ("get", 7, 10),  # a 202 does not move lastMessageId
            ("scaler.desired", 4),
            ("get", 7, 10),
        ]

    def test_the_capacity_header_is_read_fresh_on_every_poll(self) -> None:
        gate = CapacityGate(10, cut_on_drop=False)
        loop, source, journal = listener([None, None], gate=gate)
        gate.advertise(4)  # before the loop binds: just stored
        run(run_until_idle(loop, source))
        assert [e for e in journal.entries if e[0] == "get"] == [("get", 0, 4)] * 3


class TestErrorsEndTheRun:
    @pytest.mark.parametrize(
        ("where", "match"),
        [("delete", "ack failed"), ("acquire", "acquire failed")],
    )
    def test_queue_errors(self, where: str, match: str) -> None:
        loop, source, journal = listener([message(7, 1, available(1))])
        setattr(source, f"fail_{where}", RuntimeError(match))
        with pytest.raises(RuntimeError, match=match):
            run(loop.run())
        assert "get" not in journal.kinds()[4:]  # nothing after the failure

    def test_get_message_errors(self) -> None:
        loop, _, _ = listener([ValueError("garbage body")])
        with pytest.raises(ValueError, match="garbage body"):
            run(loop.run())

    @pytest.mark.parametrize("fail_on", ["started", "desired"])
    def test_scaler_errors(self, fail_on: str) -> None:
        loop, _, _ = listener([message(7, 1, started(3))], fail_on=fail_on)
        with pytest.raises(RuntimeError, match="apiserver said 500"):
            run(loop.run())


def test_cancellation_lets_the_message_in_hand_finish() -> None:
    loop, _, journal = listener([message(7, 1, started(3))])
    entered, gate = threading.Event(), threading.Event()

    class SlowScaler(RecordingScaler):
        def handle_job_started(self, msg: JobStarted) -> None:
            entered.set()
            gate.wait(5)  # released by the test once the cancellation is requested
            super().handle_job_started(msg)

    loop.scaler = SlowScaler(journal)

    async def story() -> None:
        task = asyncio.ensure_future(loop.run())
        assert await asyncio.to_thread(entered.wait, 5)
        task.cancel()
        await settle()
        gate.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(story())
    assert journal.entries[-4:] == [
        ("scaler.started", 3),
        ("scaler.desired", 1),
        ("m.desired", 101),
        ("delete", 7),  # acked once its effects are done
    ]


# --- the capacity gate -------------------------------------------------------------------------


class TestCapacityGate:
    def test_value_is_clamped_to_zero_and_the_live_max(self) -> None:
        gate = CapacityGate(5)
        assert gate.value == 5  # ARC's behaviour until the reconciler speaks
        gate.advertise(9)
        assert gate.value == 5
        gate.advertise(-3)
        assert gate.value == 0
        gate.advertise(3)
        gate.set_live_max_runners(0)  # a drain: 0 is a hard cap
        assert gate.value == 0
        gate.set_live_max_runners(8)
        assert gate.value == 3  # the requested value comes back

    def test_initial_value_can_be_given(self) -> None:
        assert CapacityGate(5, initial=0).value == 0

    def test_set_from_other_threads(self) -> None:
        gate = CapacityGate(1000)
        threads = [threading.Thread(target=gate.advertise, args=(n,)) for n in range(50)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert 0 <= gate.value < 50

    def test_a_negative_debounce_is_refused(self) -> None:
        with pytest.raises(ValueError, match="debounce"):
            CapacityGate(3, debounce=-1)


class TestCutWithAnIdlePoll:
    """The loop sits in an idle long poll (the script is empty) when capacity changes."""

    def cut_story(self, gate: CapacityGate, *changes: int) -> Journal:
        loop, source, journal = listener([], gate=gate)

        async def story() -> None:
            task = asyncio.ensure_future(loop.run())
            await source.idle.wait()
            for value in changes:
                threading.Thread(target=gate.advertise, args=(value,)).start()
            await asyncio.to_thread(lambda: None)  # the setter threads have run
            await settle()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        run(story())
        return journal

    def test_a_drop_cuts_the_poll_and_reissues_it_with_the_new_header(self) -> None:
        journal = self.cut_story(CapacityGate(10, debounce=0), 4)
        assert [e for e in journal.entries if e[0] in ("get", "m.cut")] == [
            ("get", 0, 10),
            ("m.cut", "drop"),
            ("get", 0, 4),
        ]
        assert journal.kinds().count("scaler.desired") == 1  # a cut is not a 202

    def test_a_rise_does_not_cut_by_default(self) -> None:
        journal = self.cut_story(CapacityGate(10, initial=2, debounce=0), 6)
        assert [e for e in journal.entries if e[0] == "get"] == [("get", 0, 2)]

    def test_a_rise_cuts_when_enabled(self) -> None:
        gate = CapacityGate(10, initial=2, debounce=0, cut_on_rise=True)
        journal = self.cut_story(gate, 6)
        assert ("m.cut", "rise") in journal.entries
        assert journal.entries[-1] == ("get", 0, 6)

    def test_with_the_feature_off_a_drop_does_not_cut(self) -> None:
        journal = self.cut_story(CapacityGate(10, debounce=0, cut_on_drop=False), 1)
        assert [e for e in journal.entries if e[0] == "get"] == [("get", 0, 10)]

    def test_an_unchanged_value_does_not_cut(self) -> None:
        journal = self.cut_story(CapacityGate(10, initial=5, debounce=0), 5)
        assert "m.cut" not in journal.kinds()

    def test_a_live_max_runners_drop_cuts_too(self) -> None:
        gate = CapacityGate(10, debounce=0)
        loop, source, journal = listener([], gate=gate)

        async def story() -> None:
            task = asyncio.ensure_future(loop.run())
            await source.idle.wait()
            await asyncio.to_thread(gate.set_live_max_runners, 0)
            await settle()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        run(story())
        assert journal.entries[-1] == ("get", 0, 0)

    def test_changes_within_the_debounce_window_are_coalesced(self) -> None:
        gate = CapacityGate(10, debounce=0.05)
        loop, source, journal = listener([], gate=gate)

        async def story() -> None:
            task = asyncio.ensure_future(loop.run())
            await source.idle.wait()
            for value in (8, 6, 3):
                gate.advertise(value)
            source.idle.clear()
            await source.idle.wait()  # the re-issued poll
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        run(story())
        assert [e for e in journal.entries if e[0] in ("get", "m.cut")] == [
            ("get", 0, 10),
            ("m.cut", "drop"),
            ("get", 0, 3),
        ]

    def test_a_drop_undone_within_the_window_does_nothing(self) -> None:
        gate = CapacityGate(10, debounce=0.05)
        loop, source, journal = listener([], gate=gate)

        async def story() -> None:
            task = asyncio.ensure_future(loop.run())
            await source.idle.wait()
            gate.advertise(2)
            await settle()
            gate.advertise(10)
            await settle()
            assert gate._timer is not None  # armed by the drop...
            fired = asyncio.get_running_loop().create_future()
            asyncio.get_running_loop().call_later(gate.cut_rule.debounce, fired.set_result, None)
            await fired  # a timer set after the gate's, with the same delay
            await settle()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        run(story())
        assert "m.cut" not in journal.kinds()  # ...and found nothing to do when it fired

    def test_an_answer_that_races_a_cut_is_kept(self) -> None:
        """The poll answered in the same loop iteration as the cut fired: keep the answer."""
        gate = CapacityGate(10, debounce=0)
        msg = message(7, 1, available(1))
        loop, source, journal = listener([], gate=gate)
        answered = asyncio.Event()

        async def racing_get(last: int, capacity: int) -> DecodedMessage | None:
            journal.add("get", last, capacity)
            if last == 0:
                gate.advertise(1)  # the cut fires on the next iteration...
                answered.set()
                return msg  # ...but the answer is already here
            source.idle.set()
            await asyncio.Event().wait()
            return None

        source.get_message = racing_get  # type: ignore[method-assign]

        async def story() -> None:
            task = asyncio.ensure_future(loop.run())
            await source.idle.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        run(story())
        assert ("delete", 7) in journal.entries
        assert ("acquire", [1]) in journal.entries


# --- against the loopback Actions face --------------------------------------------------------


class Recorder(RecordingScaler):
    """Scaler + metrics on one journal, thread-safe (the scaler runs in worker threads)."""

    def __init__(self) -> None:
        super().__init__(Journal())
        self.lock = threading.Lock()

    def add(self, *entry: Any) -> None:
        with self.lock:
            self.journal.entries.append(entry)

    def handle_job_started(self, msg: JobStarted) -> None:
        self.add("scaler.started", msg.runner_request_id)

    def handle_job_completed(self, msg: JobCompleted) -> None:
        self.add("scaler.completed", msg.runner_request_id)

    def handle_desired_runner_count(self, count: int) -> int:
        self.add("scaler.desired", count)
        return count

    def entries(self, kind: str) -> list[Any]:
        with self.lock:
            return [e[1] for e in self.journal.entries if e[0] == kind]


class CountingMetrics(RecordingMetrics):
    def __init__(self, recorder: Recorder) -> None:
        super().__init__(recorder.journal)
        self.recorder = recorder

    def record_poll_cut(self, direction: str) -> None:
        self.recorder.add("m.cut", direction)


@dataclass
class Harness:
    face: ActionsFace
    feed: ScriptedJobFeed
    gate: CapacityGate
    recorder: Recorder
    session: MessageSession
    listener: Listener

    async def start(self) -> asyncio.Task[None]:
        task = asyncio.ensure_future(serve(self.session, self.listener))
        first = await asyncio.to_thread(
            self.face.wait_for, lambda rs: any(r.route == "get_message" for r in rs), 5
        )
        assert first, "the listener never polled"
        return task

    async def stop(self, task: asyncio.Task[None]) -> None:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await self.session.client.aclose()

    def gets(self) -> list[FaceRequest]:
        return self.face.requests_to("get_message")


def harness(face: ActionsFace, feed: ScriptedJobFeed, gate: CapacityGate) -> Harness:
    client = ActionsClient(
        parse_config_url(face.configure_url(), env={}),
        PatAuth(SecretStr(PAT)),
        scale_set_id=SCALE_SET,
        registry=SecretRegistry(),
    )
    session_ = MessageSession(client, owner_name="listener-0")
    recorder = Recorder()
    loop = Listener(session_, recorder, gate, CountingMetrics(recorder))
    return Harness(face, feed, gate, recorder, session_, loop)


def test_jobs_flow_through_the_real_client_in_protocol_order() -> None:
    feed = ScriptedJobFeed()
    with ActionsFace(feed, pat=PAT, poll_window=5.0) as face:
        h = harness(face, feed, CapacityGate(10))

        async def story() -> None:
            task = await h.start()
            job = feed.add_job(SCALE_SET)
            assert await asyncio.to_thread(face.wait_until, lambda f: bool(f.acked()), 5)
            assert await asyncio.to_thread(
                face.wait_for, lambda rs: any(r.route == "acquire_jobs" for r in rs), 5
            )
            feed.start(job, "arc-runners-runner-1")
            feed.complete(job)
            assert await asyncio.to_thread(
                face.wait_until,
                lambda f: not f.unacked() and bool(h.recorder.entries("scaler.completed")),
                5,
            )
            await h.stop(task)

        run(story())
    routes = [r.route for r in face.requests if r.route != "get_message"]
    assert routes[:3] == ["registration_token", "runner_registration", "create_session"]
    acquire_then_ack = [r for r in routes if r in ("delete_message", "acquire_jobs")]
    assert acquire_then_ack[:2] == ["acquire_jobs", "delete_message"]  # ack after effects
    assert routes[-1] == "delete_session"  # the session is deleted on the way out
    assert h.recorder.entries("scaler.started") == [9001]
    assert h.recorder.entries("scaler.completed") == [9001]
    assert h.recorder.entries("scaler.desired")[:2] == [0, 1]


class TestCapacityCutOnTheWire:
    def test_a_drop_during_an_idle_poll_is_on_the_wire_within_1s(self) -> None:
        feed = ScriptedJobFeed()
        with ActionsFace(feed, pat=PAT, poll_window=30.0) as face:
            h = harness(face, feed, CapacityGate(10))  # default debounce (0.25 s)

            async def story() -> None:
                task = await h.start()
                changed_at = time.monotonic()
                threading.Thread(target=h.gate.advertise, args=(3,)).start()
                seen = await asyncio.to_thread(
                    face.wait_for, lambda rs: any(r.capacity == 3 for r in rs), 1.0
                )
                assert seen, "the new capacity was not on the wire within 1 s"
                first, second = h.gets()[:2]
                assert second.received_at - changed_at < 1.0
                assert first.capacity == 10 and second.capacity == 3
                assert h.gate.advertised == 3
                # the face notices the hang-up within one of its 50 ms polls
                assert await asyncio.to_thread(
                    face.wait_for, lambda rs: rs[3].outcome == "client-gone", 5
                )
                await h.stop(task)

            run(story())
        first = face.requests_to("get_message")[0]
        assert first.status is None  # it was cut, never answered
        assert h.recorder.entries("m.cut") == ["drop"]

    def test_with_the_feature_off_the_header_waits_for_the_poll_to_end(self) -> None:
        feed = ScriptedJobFeed()
        with ActionsFace(feed, pat=PAT, poll_window=0.4) as face:
            h = harness(face, feed, CapacityGate(10, cut_on_drop=False))

            async def story() -> None:
                task = await h.start()
                h.gate.advertise(3)
                assert await asyncio.to_thread(
                    face.wait_for, lambda rs: any(r.capacity == 3 for r in rs), 5
                )
                await h.stop(task)

            run(story())
        first, second = face.requests_to("get_message")[:2]
        assert (first.capacity, first.status, first.outcome) == (10, 202, "answered")
        assert first.answered_at is not None and first.answered_at <= second.received_at
        assert second.capacity == 3
        assert h.recorder.entries("m.cut") == []

    def test_a_message_in_flight_when_the_poll_is_cut_is_redelivered_once(self) -> None:
        feed = ScriptedJobFeed()
        with ActionsFace(feed, pat=PAT, poll_window=10.0, message_delay=0.5) as face:
            h = harness(face, feed, CapacityGate(10, debounce=0))

            async def story() -> None:
                task = await h.start()
                feed.add_job(SCALE_SET)
                # the face has packed the message and is about to answer...
                assert await asyncio.to_thread(face.wait_until, lambda f: bool(f.unacked()), 5)
                h.gate.advertise(2)  # ...when the capacity drops: cut
                assert await asyncio.to_thread(face.wait_until, lambda f: bool(f.acked()), 5)
                await h.stop(task)

            run(story())
        first, second = face.requests_to("get_message")[:2]
        assert first.outcome == "client-gone"  # the cut poll never delivered it
        assert second.capacity == 2 and second.status == 200
        assert face.delivered() == face.acked()  # delivered once, acked once
        assert h.recorder.entries("m.cut") == ["drop"]
        assert len(face.requests_to("acquire_jobs")) == 1

    def test_no_message_is_lost_or_handled_twice_across_many_cuts(self) -> None:
        feed = ScriptedJobFeed()
        jobs = 32  # two every fifth capacity change
        with ActionsFace(feed, pat=PAT, poll_window=2.0, message_delay=0.01) as face:
            gate = CapacityGate(10, debounce=0, cut_on_rise=True)
            h = harness(face, feed, gate)
            stop = threading.Event()

            def reconciler() -> None:  # flaps the capacity from its own thread, 80 times
                for n in range(80):
                    if stop.wait(0.012):
                        return
                    gate.advertise(3 + (n % 5))
                    if n % 5 == 0:
                        for _ in range(2):
                            feed.add_job(SCALE_SET)

            def runners() -> None:  # starts acquired jobs and completes started ones
                for _ in range(2000):
                    if stop.wait(0.01):
                        return
                    for request_id in feed.jobs_in("started"):
                        feed.complete(request_id)
                    for request_id in feed.jobs_in("acquired"):
                        feed.start(request_id, f"runner-{request_id}")

            async def story() -> None:
                task = await h.start()
                threads = [threading.Thread(target=f) for f in (reconciler, runners)]
                for thread in threads:
                    thread.start()
                done = await asyncio.to_thread(
                    face.wait_until,
                    lambda f: (
                        len(h.recorder.entries("scaler.completed")) >= jobs and not f.unacked()
                    ),
                    15,
                )
                stop.set()
                for thread in threads:
                    thread.join()
                assert done, "not every job completed and was acknowledged"
                await h.stop(task)

            run(story(), timeout=30)
        everyone = list(range(9001, 9001 + jobs))
        acquired = [i for r in face.requests_to("acquire_jobs") for i in r.json()]
        assert sorted(acquired) == everyone  # every JobAvailable handled exactly once
        assert sorted(h.recorder.entries("scaler.started")) == everyone
        assert sorted(h.recorder.entries("scaler.completed")) == everyone
        acked = face.acked()
        assert len(acked) == len(set(acked))  # each message handled (acked) once...
        assert set(acked) == set(face.delivered())  # ...and none that was sent got lost
        assert face.unacked() == []
        assert len(h.recorder.entries("m.cut")) > 10  # the cuts really happened
        # and many cuts landed while a message was on its way, which then came again
        cut_in_flight = [
            r for r in face.requests_to("get_message") if r.message_id and r.status is None
        ]
        assert len(cut_in_flight) > 5


def test_a_listener_wired_from_arcs_config_file_runs_against_the_face() -> None:
    from listener.arc.config import parse_listener_config
    from tests.listener.arc_wiring import listener_from_config

    class Writes:
        def __init__(self) -> None:
            self.sets: list[bytes] = []

        def patch_ephemeral_runner_set(self, namespace: str, name: str, body: bytes) -> None:
            self.sets.append(body)

        def patch_ephemeral_runner_status(self, namespace: str, name: str, body: bytes) -> None:
            pass

    feed = ScriptedJobFeed()
    writes = Writes()
    with ActionsFace(feed, pat=PAT, poll_window=5.0) as face:
        config = parse_listener_config(
            {
                "configure_url": face.configure_url(),
                "github_token": PAT,
                "ephemeral_runner_set_namespace": "arc-runners",
                "ephemeral_runner_set_name": "arc-runners-r6jw6",
                "max_runners": 6,
                "min_runners": 1,
                "runner_scale_set_id": SCALE_SET,
            }
        )
        session_, loop = listener_from_config(config, writes, owner_name="pod-x", debounce=0)

        async def story() -> None:
            task = asyncio.ensure_future(serve(session_, loop))
            assert await asyncio.to_thread(
                face.wait_for, lambda rs: any(r.route == "get_message" for r in rs), 5
            )
            loop.gate.advertise(2)
            assert await asyncio.to_thread(
                face.wait_for, lambda rs: any(r.capacity == 2 for r in rs), 5
            )
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await session_.client.aclose()

        run(story())
    assert face.capacity_history[:2] == [6, 2]  # config max_runners, then the reconciler's
    assert face.requests_to("create_session")[0].json()["ownerName"] == "pod-x"
    assert writes.sets[0] == b'{"spec":{"patchID":0,"replicas":1}}'  # min_runners + 0
    assert face.requests[-1].route == "delete_session"


def test_every_statistics_reach_the_statistics_demand_source_in_order() -> None:
    """The session's statistics, then each message's, go to ``on_statistics`` (the listener
    wires the ``statistics`` demand source there): the scale set's own queue at message speed."""
    journal = Journal()
    source = ScriptedSource(journal, [message(1, 2), message(2, 4)], session(assigned=1))
    seen: list[int] = []
    loop = Listener(
        source,
        RecordingScaler(journal),
        CapacityGate(10),
        RecordingMetrics(journal),
        on_statistics=lambda stats: seen.append(stats.total_assigned_jobs),
    )
    run(run_until_idle(loop, source))
    assert seen == [1, 2, 4]  # session, message 1, message 2


def test_the_statistics_demand_source_follows_the_services_available_jobs_on_the_wire() -> None:
    """Contract: the real client against the Actions face; the face's ``totalAvailableJobs``
    reaches the ``statistics`` demand source, and each change wakes the reconciler."""
    from providers.demand.statistics import StatisticsDemand

    feed = ScriptedJobFeed()
    wakes: list[int | None] = []
    with ActionsFace(feed, pat=PAT, poll_window=5.0) as face:
        h = harness(face, feed, CapacityGate(10))
        demand = StatisticsDemand(on_change=lambda: wakes.append(demand.current.queued_jobs))
        h.listener.on_statistics = demand.observe_statistics

        async def story() -> None:
            task = await h.start()
            feed.add_job(SCALE_SET)
            assert await asyncio.to_thread(face.wait_until, lambda f: bool(f.acked()), 5)
            await h.stop(task)

        run(story())
    assert wakes[0] == 0  # the session's statistics: nothing waiting
    assert 1 in wakes  # the job message: one job available for this scale set
    assert demand.current.source == "statistics" and demand.current.error is None


def test_cancellation_waits_for_the_unit_in_hand_not_for_the_whole_grace() -> None:
    """The stop grace is an upper bound: once the unit in hand is handled, the run ends.
    Prevents a shutdown that always spent the full grace (the handler task never ends by
    itself, so waiting for it instead of the unit waited out the timeout)."""
    loop, _, journal = listener([])
    loop.stop_grace = 600.0  # a wait this long would trip the bound below
    entered, release = threading.Event(), threading.Event()

    class SlowScaler(RecordingScaler):
        def handle_desired_runner_count(self, count: int) -> int:
            entered.set()
            release.wait(5)
            return super().handle_desired_runner_count(count)

    loop.scaler = SlowScaler(journal)

    async def story() -> None:
        task = asyncio.ensure_future(loop.run())
        assert await asyncio.to_thread(entered.wait, 5)
        task.cancel()
        await settle()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 10)

    run(story())
    assert journal.entries[-1] == ("m.desired", 101)
