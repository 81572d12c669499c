"""Routes of the Actions service's message queue: get and delete messages, acquire jobs."""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any

from simulator.faces.actions.state import (
    MAX_JOBS_PER_MESSAGE,
    FaceRequest,
    _SessionState,
    _Stored,
)

if TYPE_CHECKING:  # the face imports this module
    from simulator.faces.actions.face import ActionsFace

log = logging.getLogger(__name__)


class QueueRoutes:
    """Message-queue routes (mixed into the face's handler)."""

    face: ActionsFace

    def _queue_session(self, request: FaceRequest) -> _SessionState | None:
        session_id = (request.query.get("sessionId") or [""])[0]
        token = self._bearer()
        with self.face._lock:
            state = next(
                (s for s in self.face._state.sessions.values() if s.session_id == session_id),
                None,
            )
            valid = (
                state is not None and token == state.queue_token and not (state.queue_token_expired)
            )
        if not valid:
            self._error(request, 401, "UnauthorizedException", "queue token invalid or expired")
            return None
        return state

    def _route_get_message(self, request: FaceRequest, params: dict[str, str]) -> None:
        state = self._queue_session(request)
        if state is None:
            return
        capacity = request.capacity
        if capacity is None or capacity < 0:
            self._error(request, 400, "ArgumentException", "X-ScaleSetMaxCapacity is required")
            return
        last = int((request.query.get("lastMessageId") or ["0"])[0] or 0)
        face = self.face
        deadline = time.monotonic() + face.poll_window
        for _ in range(int(face.poll_window / face.poll_interval) + 2):  # bounded long poll
            stored = self._first_unacked(state.scale_set_id, last)
            if stored is None:
                self._pack(state.scale_set_id, face.feed.poll(state.scale_set_id, capacity))
                stored = self._first_unacked(state.scale_set_id, last)
            if stored is not None:
                request.message_id = stored.message_id
                if face.message_delay:
                    face._closing.wait(face.message_delay)
                if self._client_gone():
                    face._finish(request, None, "client-gone")
                    self.close_connection = True
                    return
                with face._lock:
                    face._delivered.append(stored.message_id)
                self._answer(request, 200, stored.payload)
                if request.outcome == "client-gone":
                    with face._lock:
                        face._delivered.reverse()
                        face._delivered.remove(stored.message_id)
                        face._delivered.reverse()
                return
            if face._closing.is_set():
                face._finish(request, None, "face-closed")
                self.close_connection = True
                return
            if time.monotonic() >= deadline:
                break
            if self._client_gone():
                face._finish(request, None, "client-gone")
                self.close_connection = True
                return
            face._closing.wait(min(face.poll_interval, max(0.0, deadline - time.monotonic())))
        self._answer(request, 202)

    def _first_unacked(self, scale_set_id: int, last: int) -> _Stored | None:
        with self.face._lock:
            queue = self.face._state.queues.get(scale_set_id, [])
            return next((m for m in queue if m.message_id > last), None)

    def _pack(self, scale_set_id: int, jobs: list[dict[str, Any]]) -> None:
        if not jobs:
            return
        face = self.face
        with face._lock:
            for start in range(0, len(jobs), MAX_JOBS_PER_MESSAGE):
                chunk = jobs[start : start + MAX_JOBS_PER_MESSAGE]
                message_id = face._state.next_message_id
                face._state.next_message_id += 1
                outer = {
                    "messageId": message_id,
                    "messageType": "RunnerScaleSetJobMessages",
                    "statistics": face.feed.statistics(scale_set_id),
                    "body": json.dumps(chunk),
                }
                face._state.queues.setdefault(scale_set_id, []).append(
                    _Stored(message_id, json.dumps(outer).encode())
                )
            face._changed.notify_all()

    def _route_delete_message(self, request: FaceRequest, params: dict[str, str]) -> None:
        state = self._queue_session(request)
        if state is None:
            return
        message_id = int(params["message_id"])
        with self.face._changed:
            queue = self.face._state.queues.get(state.scale_set_id, [])
            self.face._state.queues[state.scale_set_id] = [
                m for m in queue if m.message_id != message_id
            ]
            self.face._changed.notify_all()
        self._answer(request, 204)

    def _route_acquire_jobs(self, request: FaceRequest, params: dict[str, str]) -> None:
        scale_set_id = int(params["scale_set_id"])
        token = self._bearer()
        with self.face._lock:
            state = self.face._state.sessions.get(scale_set_id)
            valid = (
                state is not None and token == state.queue_token and not (state.queue_token_expired)
            )
        if not valid:
            self._error(request, 401, "UnauthorizedException", "queue token invalid or expired")
            return
        ids = request.json()
        if not isinstance(ids, list) or not all(type(i) is int for i in ids):
            self._error(request, 400, "ArgumentException", "body must be a JSON array of ints")
            return
        acquired = self.face.feed.acquire(scale_set_id, ids)
        self._json(request, 200, {"count": len(acquired), "value": acquired})
