"""What ARC's listener loop (listener/arc/message_loop.py) is handed: its metrics hooks, the
message session, the scaler and where the scaler's blocking calls run. What a step's output
sets on that same scaler between patches is a port of the shared runtime
(scaleset/ports.py ``ScalerControls``), which :class:`listener.arc.scaler.Scaler` implements."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from providers.actions.decode import DecodedMessage
from providers.actions.models import JobCompleted, JobStarted, Session, Statistics

_T = TypeVar("_T")


class ListenerMetrics(Protocol):
    """Hooks of ARC's listener metrics (docs/protocol.md#metrics) plus capacity cuts."""

    def record_statistics(self, stats: Statistics) -> None: ...

    def record_job_started(self, msg: JobStarted) -> None: ...

    def record_job_completed(self, msg: JobCompleted) -> None: ...

    def record_desired_runners(self, n: int) -> None: ...

    def record_poll_cut(self, direction: str) -> None:
        """``direction`` is ``"drop"`` or ``"rise"``."""
        ...

    def record_undecodable_message(self) -> None: ...


class NoopListenerMetrics:
    def record_statistics(self, stats: Statistics) -> None:
        pass

    def record_job_started(self, msg: JobStarted) -> None:
        pass

    def record_job_completed(self, msg: JobCompleted) -> None:
        pass

    def record_desired_runners(self, n: int) -> None:
        pass

    def record_poll_cut(self, direction: str) -> None:
        pass

    def record_undecodable_message(self) -> None:
        pass


class MessageSource(Protocol):
    """What the loop needs from a message session
    (:class:`providers.actions.session.MessageSession`)."""

    @property
    def session(self) -> Session: ...

    async def get_message(
        self, last_message_id: int, max_capacity: int
    ) -> DecodedMessage | None: ...

    async def delete_message(self, message_id: int) -> None: ...

    async def acquire_jobs(self, request_ids: list[int]) -> list[int]: ...


class JobScaler(Protocol):
    """ARC's scaler (:class:`listener.arc.scaler.Scaler`); blocking, run on the write lane."""

    def handle_job_started(self, msg: JobStarted) -> None: ...

    def handle_job_completed(self, msg: JobCompleted) -> None: ...

    def handle_desired_runner_count(self, count: int) -> int: ...


class Writes(Protocol):
    """Where the scaler's blocking calls run
    (:class:`providers.kubernetes.write.lane.WriteLane`)."""

    async def run(self, call: Callable[..., _T], *args: Any) -> _T: ...


class ThreadWrites:
    """A worker thread per call (``asyncio.to_thread``): for tests and tools; the process
    uses :class:`~providers.kubernetes.write.lane.WriteLane`, which never holds the exit."""

    async def run(self, call: Callable[..., _T], *args: Any) -> _T:
        return await asyncio.to_thread(call, *args)
