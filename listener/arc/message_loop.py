"""The listener loop (docs/protocol.md#listener-loop) with a capacity that changes at run time
(docs/design.md#capacity-cut).

**Start** (the session is already open):
1. Refuse a nil session id or a session without statistics.
2. Record the session's statistics; scale once from ``totalAssignedJobs``; record the result.

**Loop** (``last_message_id`` starts at 0 and is only ever set from a received message):
1. Long-poll GetMessage with ``last_message_id`` and the current capacity
   (``X-ScaleSetMaxCapacity``), raced against a capacity cut (below).
2. No message (202, or an empty 200): scale from the last known ``totalAssignedJobs``; nothing
   is recorded. A cut poll is not a 202: the poll is simply re-issued.
3. A message: ``last_message_id = messageId``; record its statistics; hand it to the handler.
   The handler (one task, messages in the order received): acquire all JobAvailable ids in
   one call; each JobStarted (record, then scaler); each JobCompleted (record, then scaler);
   scale from ``totalAssignedJobs`` and record the result; **then** ack (DELETE). A run that
   ends before the ack leaves the message to be redelivered to the next session (at least
   once, as actions/scaleset#113 and ARC #4668 do); every step is idempotent.
   The poll waits for the handler at most ``write_patience`` (2 s), so the usual order is exactly
   ARC's; a Kubernetes write stuck longer does not stop the conversation with GitHub: the gate is
   closed (advertise 0, fail-closed) and polling goes on, later messages queue behind it, and the
   gate reopens once the handler has caught up. The scaler's calls run on ``writes`` (the process's
   :class:`~providers.kubernetes.write.lane.WriteLane`, which never holds the exit). On cancellation
   the unit in hand gets ``stop_grace``, then is abandoned.
Any error ends :meth:`Listener.run` (ARC's process then exits 1 and is recreated).

**Capacity cut.** The header comes from :class:`~listener.arc.gate.CapacityGate`, the controller's
capacity sink. When the value drops below the header of the poll in flight (and ``cut_on_drop``;
likewise a rise with ``cut_on_rise``), it waits ``debounce`` seconds from the first change
(changes in that window are coalesced; a change that is undone in the window does nothing) and
then cuts: the in-flight GET is cancelled and re-issued with the new header.
This is safe because the service redelivers any message that was not acked, and because an answer
that arrived before the cancellation took effect is kept, not dropped.
"""

from __future__ import annotations

import asyncio
import logging
from asyncio import FIRST_COMPLETED
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from listener.arc.gate import CapacityGate
from listener.arc.loop_ports import (
    JobScaler,
    ListenerMetrics,
    MessageSource,
    NoopListenerMetrics,
    ThreadWrites,
    Writes,
)
from providers.actions.decode import DecodedMessage
from providers.actions.errors import MessageDecodeError
from providers.actions.models import JobAvailable, JobCompleted, JobStarted, Session, Statistics

log = logging.getLogger(__name__)


class ListenerError(Exception):
    """The listener cannot go on (bad session, protocol violation)."""


#: A message's Kubernetes work that takes longer than this is stuck: the poll goes on and the
#: header fails closed (0) until the handler has caught up (docs/design.md#ownership-and-shutdown).
WRITE_PATIENCE = 2.0
#: On cancellation, how long the message in hand may still take before it is abandoned (its
#: ack, not sent, makes the service redeliver it to the next session).
STOP_GRACE = 0.5
#: Messages received while the handler is stuck, before polling waits for it.
MAX_BACKLOG = 20
#: How long the exit waits for the session delete (the exit deadline is 4.5 s in all).
SESSION_CLOSE_TIMEOUT = 1.0


@dataclass(frozen=True, slots=True)
class _Work:
    """One unit for the handler: a message, or a scale from the last statistics (a 202)."""

    message: DecodedMessage | None
    assigned_jobs: int
    done: asyncio.Future[None]
    #: Record the desired count (the start's scale does; a 202's does not, as in ARC).
    record: bool


# --- the loop ---------------------------------------------------------------------------------


class Listener:
    """One run of the listener over an open session (see the module docstring)."""

    def __init__(
        self,
        source: MessageSource,
        scaler: JobScaler,
        gate: CapacityGate,
        metrics: ListenerMetrics | None = None,
        on_statistics: Callable[[Statistics], None] | None = None,
        *,
        writes: Writes | None = None,
        write_patience: float = WRITE_PATIENCE,
        stop_grace: float = STOP_GRACE,
    ) -> None:
        self.source = source
        self.scaler = scaler
        self.gate = gate
        self.metrics = metrics or NoopListenerMetrics()
        #: Every statistics the session and its messages carry (the ``statistics`` demand source).
        self.on_statistics = on_statistics
        self.writes: Writes = writes or ThreadWrites()
        self.write_patience = write_patience
        self.stop_grace = stop_grace
        self.last_message_id = 0
        self.latest: Statistics | None = None
        self.cuts = 0
        #: Times the handler was stuck past ``write_patience`` (the header failed closed).
        self.stuck = 0
        self._inbox: asyncio.Queue[_Work] = asyncio.Queue(MAX_BACKLOG)
        self._handler: asyncio.Task[None] | None = None
        self._busy = 0
        #: The unit the handler is working on (None: waiting for one).
        self._current: _Work | None = None

    async def run(self) -> None:
        """Runs until an error or cancellation (both end the run, as in ARC)."""
        session = self.source.session
        if session.is_nil:
            raise ListenerError("the message session has a nil session id")
        if session.statistics is None:
            raise ListenerError("the message session carries no statistics")
        self.gate.bind(asyncio.get_running_loop())
        self._inbox = asyncio.Queue(MAX_BACKLOG)
        self._handler = asyncio.create_task(self._handle_all(), name="listener-handler")
        try:
            self.latest = session.statistics
            self._observe(self.latest)
            await self._submit(None, self.latest.total_assigned_jobs, record=True)
            while True:
                try:
                    message = await self._next_message()
                except MessageDecodeError as exc:
                    if exc.message_id is None:
                        raise  # nothing to ack: fail as before (logged, exit 1)
                    await self._skip_undecodable(exc.message_id, exc)
                    continue
                if message is None:
                    if self._idle():
                        await self._submit(None, self.latest.total_assigned_jobs, record=False)
                    continue
                self.last_message_id = message.message_id
                self.latest = message.statistics
                self._observe(message.statistics)
                await self._submit(message, message.statistics.total_assigned_jobs, record=True)
        finally:
            await self._stop_handler()
            self.gate.unbind()

    # --- the poll side -----------------------------------------------------------------------

    async def _next_message(self) -> DecodedMessage | None:
        """One GetMessage, re-issued after every capacity cut until it answers."""
        while True:
            assigned = self.latest.total_assigned_jobs if self.latest is not None else None
            capacity = self.gate.begin_poll(assigned)
            poll = asyncio.ensure_future(self.source.get_message(self.last_message_id, capacity))
            cut = asyncio.ensure_future(self.gate.wait_cut())
            try:
                await asyncio.wait({poll, cut, self._handler_task}, return_when=FIRST_COMPLETED)
            except asyncio.CancelledError:
                poll.cancel()
                cut.cancel()
                raise
            finally:
                self.gate.end_poll()
            if self._handler_task.done() and not poll.done():
                poll.cancel()
                cut.cancel()
                self._raise_handler_failure()
            if poll.done():  # an answer wins over a simultaneous cut
                cut.cancel()
                return poll.result()
            direction = cut.result()
            poll.cancel()
            try:
                answer = await poll
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise  # we are being cancelled ourselves
                self.cuts += 1
                self.metrics.record_poll_cut(direction)
                log.info(
                    "capacity %s %d -> %d: cut the long poll short and re-poll",
                    direction,
                    capacity,
                    self.gate.value,
                )
                continue
            return answer  # it finished before the cancellation landed: keep it

    async def _skip_undecodable(self, message_id: int, exc: MessageDecodeError) -> None:
        """A poison message: log it with its id, count it, ack it and go on. Its jobs are
        not lost: GitHub's statistics (``totalAssignedJobs``) still count them, and the
        next message or the next scale-from-statistics brings the runners up."""
        log.error("message %d cannot be understood (%s); acking and skipping it", message_id, exc)
        self.metrics.record_undecodable_message()
        self.last_message_id = message_id
        await self.source.delete_message(message_id)

    async def _submit(
        self, message: DecodedMessage | None, assigned_jobs: int, *, record: bool
    ) -> None:
        """Hand one unit to the handler and wait for it at most ``write_patience``: the usual
        case stays in order (handled, then the next poll); a stuck write does not stop the
        conversation with GitHub, it closes the gate until the handler catches up."""
        work = _Work(message, assigned_jobs, asyncio.get_running_loop().create_future(), record)
        await self._until(asyncio.ensure_future(self._inbox.put(work)))
        if not await self._until(work.done, timeout=self.write_patience):
            self._on_stuck()

    async def _until(self, waited: asyncio.Future[Any], timeout: float | None = None) -> bool:
        """Wait for ``waited`` (True) or ``timeout`` (False); a failed handler raises."""
        handler = self._handler_task
        done, _ = await asyncio.wait(
            {waited, handler}, timeout=timeout, return_when=FIRST_COMPLETED
        )
        if waited in done:
            return True
        if handler in done:
            waited.cancel()
            self._raise_handler_failure()
        return False

    def _idle(self) -> bool:
        return self._busy == 0 and self._inbox.empty()

    @property
    def _handler_task(self) -> asyncio.Task[None]:
        if self._handler is None:
            raise RuntimeError("the handler runs only inside Listener.run()")
        return self._handler

    def _raise_handler_failure(self) -> None:
        self._handler_task.result()  # re-raises the error that ended the handler
        raise ListenerError("the message handler ended without an error")

    # --- the handler side ---------------------------------------------------------------------

    async def _handle_all(self) -> None:
        """Handle units one at a time, in the order received (any error ends the run)."""
        while True:
            work = await self._inbox.get()
            self._busy += 1
            self._current = work
            try:
                if work.message is not None:
                    await self._handle(work.message)
                else:
                    desired = await self._scale(work.assigned_jobs)
                    if work.record:
                        self.metrics.record_desired_runners(desired)
            finally:
                self._busy -= 1
                self._current = None
            # Only on success: a failure ends this task, which the poll side sees first.
            if not work.done.done():
                work.done.set_result(None)
            if self._idle():
                self._caught_up()

    async def _handle(self, message: DecodedMessage) -> None:
        """A message's effects, then its ack: at least once (docs/protocol.md#listener-loop).
        A run that ends before the ack leaves the message to be redelivered to the next
        session; every step is idempotent, so a replay changes nothing twice."""
        available = message.of_type(JobAvailable)
        if available:
            ids = [job.runner_request_id for job in available]
            acquired = await self.source.acquire_jobs(ids)
            log.info("acquired %d of %d available jobs: %s", len(acquired), len(ids), acquired)
        for started in message.of_type(JobStarted):
            self.metrics.record_job_started(started)
            await self.writes.run(self.scaler.handle_job_started, started)
        for completed in message.of_type(JobCompleted):
            self.metrics.record_job_completed(completed)
            self.scaler.handle_job_completed(completed)
        desired = await self._scale(message.statistics.total_assigned_jobs)
        self.metrics.record_desired_runners(desired)
        await self.source.delete_message(message.message_id)

    def _on_stuck(self) -> None:
        if self.gate.closed_for is None:
            self.stuck += 1
            reason = f"a Kubernetes write has taken over {self.write_patience:.0f}s"
            log.warning("%s: advertising 0 and polling on until it is done", reason)
            self.gate.close(reason)

    def _caught_up(self) -> None:
        if self.gate.closed_for is not None:
            log.info("the Kubernetes writes caught up: advertising capacity again")
            self.gate.reopen()

    async def _stop_handler(self) -> None:
        """Let the unit in hand finish within ``stop_grace`` (nothing after it starts), then
        abandon it: an unacked message is redelivered to the next session."""
        handler = self._handler
        if handler is None or handler.done():
            return
        grace = self.stop_grace
        # Units not started: their messages were not acked, the service redelivers them.
        self._drain_inbox()
        current = self._current
        if current is not None:
            log.info("stopping once the message in hand is handled (%.0fs at most)", grace)
            await asyncio.wait({current.done, handler}, timeout=grace, return_when=FIRST_COMPLETED)
        handler.cancel()
        await asyncio.gather(handler, return_exceptions=True)

    def _drain_inbox(self) -> list[_Work]:
        drained = []
        while not self._inbox.empty():
            drained.append(self._inbox.get_nowait())
        return drained

    def _observe(self, stats: Statistics) -> None:
        self.metrics.record_statistics(stats)
        if self.on_statistics is not None:
            self.on_statistics(stats)

    async def _scale(self, assigned_jobs: int) -> int:
        return await self.writes.run(self.scaler.handle_desired_runner_count, assigned_jobs)


class ClosableSession(MessageSource, Protocol):
    async def open(self) -> Session: ...

    async def close(self) -> None: ...


async def run_open_session(session: ClosableSession, listener: Listener) -> None:
    """Run the listener on an already open session; always delete the session on the way
    out (the process opens it before the capacity side starts: credentials proven first)."""
    try:
        await listener.run()
    finally:
        await close_session(session)


async def close_session(session: ClosableSession) -> None:
    """Delete the session, bounded: an Actions outage must not hold the exit (the session id
    stays in ``left_behind`` and the next process deletes it, docs/protocol.md#sessions)."""
    try:
        await asyncio.wait_for(session.close(), SESSION_CLOSE_TIMEOUT)
    except TimeoutError:
        log.warning(
            "the message session was not deleted within %.1fs; the next listener deletes it",
            SESSION_CLOSE_TIMEOUT,
        )


__all__ = [
    "ClosableSession",
    "JobScaler",
    "Listener",
    "ListenerError",
    "ListenerMetrics",
    "MessageSource",
    "NoopListenerMetrics",
    "close_session",
    "run_open_session",
]
