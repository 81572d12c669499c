"""Where the scaler's Kubernetes writes run, so that none of them can hold the process.

Three rules (docs/design.md#ownership-and-shutdown):

1. **One daemon thread** (:class:`WriteLane`) runs the writes in order. The asyncio side awaits
   a future; cancelling that await never waits for the thread, and the interpreter does not
   join a daemon thread at exit, so a write stuck in a socket cannot delay the exit (a
   ``asyncio.to_thread`` worker is joined by ``asyncio.run`` and again at interpreter exit).
2. **Every wait checks a stop token** (:class:`StopToken`): the retry back-off, a
   ``Retry-After`` and the client-side rate limit wait on it, so ``stop()`` ends a retrying
   write at its next wait instead of after its 120 s budget.
3. **Every attempt is fenced on the Lease**
(:class:`~providers.kubernetes.lease.election.LeaseFence`,
   applied by the writer): a request is sent only while the Lease can still be renewed by us,
   with a timeout that ends before the earliest moment a successor could hold it. A write
   from a process that lost the Lease is never sent, so it cannot land after the API returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from providers.kubernetes.lease.fence import LeaseFence, LeaseFenced
from providers.kubernetes.write.arc_wire import ScalerError

log = logging.getLogger(__name__)

_T = TypeVar("_T")


class WriteStopped(ScalerError):
    """The process is stopping: the write was abandoned at one of its waits."""


class StopToken:
    """A ``threading.Event`` the writes wait on instead of ``time.sleep``."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    @property
    def is_set(self) -> bool:
        return self._event.is_set()

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``; raise :class:`WriteStopped` if the token is set first (or was)."""
        if self._event.wait(max(seconds, 0.0)):
            raise WriteStopped("the listener is stopping: write abandoned")

    def check(self) -> None:
        if self._event.is_set():
            raise WriteStopped("the listener is stopping: write not sent")


class WriteLane:
    """One daemon thread running blocking Kubernetes calls in submission order."""

    def __init__(self, name: str = "kube-writes") -> None:
        self.stop_token = StopToken()
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._started = False
        #: Calls submitted and not finished yet (a stuck write shows here).
        self.in_flight = 0

    async def run(self, call: Callable[..., _T], *args: Any) -> _T:
        """Run ``call(*args)`` on the lane; cancelling this await does not wait for it."""
        if self.stop_token.is_set:
            raise WriteStopped("the listener is stopping: write not queued")
        if not self._started:
            self._started = True
            self._thread.start()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self.in_flight += 1
        self._jobs.put(_Job(call, args, future, loop))
        try:
            return await future  # type: ignore[no-any-return]
        finally:
            self.in_flight -= 1

    def stop(self) -> None:
        """Stop taking work; the call in progress ends at its next wait (the thread is a
        daemon, so nothing waits for it either way)."""
        self.stop_token.set()
        self._jobs.put(None)

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            job.run(self.stop_token)


@dataclass(frozen=True, slots=True)
class _Job:
    call: Callable[..., Any]
    args: tuple[Any, ...]
    future: asyncio.Future[Any]
    loop: asyncio.AbstractEventLoop

    def run(self, token: StopToken) -> None:
        if self.future.cancelled():
            return  # its caller is gone (a stop): nothing to do
        try:
            token.check()
            result = self.call(*self.args)
        except BaseException as exc:  # handed to the awaiting side, never lost in this thread
            self._resolve(exc, None)
        else:
            self._resolve(None, result)

    def _resolve(self, error: BaseException | None, result: Any) -> None:
        def guarded() -> None:
            if self.future.done():
                return
            if error is not None:
                self.future.set_exception(error)
            else:
                self.future.set_result(result)

        # RuntimeError: the event loop closed meanwhile (the process is exiting)
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(guarded)


__all__ = ["LeaseFence", "LeaseFenced", "StopToken", "WriteLane", "WriteStopped"]
