"""How the live world's other threads reach it (simulator/faces/live_world.py): the Actions
service as the Actions face's ``JobFeed`` under the world's lock, and :class:`JobView`, one job
as tests and the status line read it."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from simulator.workload.actions import ActionsService
from simulator.workload.service_records import JobState


class LockedJobFeed:
    """The Actions service as the face's ``JobFeed``, each call under the world's lock."""

    def __init__(self, service: ActionsService, lock: threading.RLock) -> None:
        self.service = service
        self.lock = lock

    def poll(self, scale_set_id: int, max_capacity: int) -> list[dict[str, Any]]:
        with self.lock:
            return self.service.poll(scale_set_id, max_capacity)

    def statistics(self, scale_set_id: int) -> dict[str, int]:
        with self.lock:
            return self.service.statistics(scale_set_id)

    def acquire(self, scale_set_id: int, request_ids: Sequence[int]) -> list[int]:
        with self.lock:
            return self.service.acquire(scale_set_id, request_ids)


@dataclass(frozen=True, slots=True)
class JobView:
    """One job as the world sees it; times are seconds since the world started (None: not
    yet)."""

    request_id: int
    state: JobState
    queued_at: float
    assigned_at: float | None
    started_at: float | None
    finished_at: float | None
    reason: str | None
