"""Routes of the Actions service's sessions: create, refresh, delete."""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

from simulator.faces.actions.state import (
    _CONFLICT_TYPE,
    FaceRequest,
    ScaleSetInfo,
    _SessionState,
)

if TYPE_CHECKING:  # the face imports this module
    from simulator.faces.actions.face import ActionsFace

log = logging.getLogger(__name__)


class SessionRoutes:
    """Session routes (mixed into the face's handler)."""

    face: ActionsFace

    def _scale_set(self, request: FaceRequest, params: dict[str, str]) -> ScaleSetInfo | None:
        if not self.face._admin_ok(self._bearer()):
            self._error(request, 401, "UnauthorizedException", "admin token invalid or expired")
            return None
        info = self.face.scale_sets.get(int(params["scale_set_id"]))
        if info is None:
            self._error(
                request,
                404,
                "GitHub.Actions.Runtime.WebApi.RunnerScaleSetNotFoundException",
                f"runner scale set {params['scale_set_id']} not found",
            )
        return info

    def _session_payload(self, info: ScaleSetInfo, state: _SessionState) -> dict[str, Any]:
        return {
            "sessionId": state.session_id,
            "ownerName": state.owner,
            "runnerScaleSet": {
                "id": info.id,
                "name": info.name,
                "runnerGroupId": info.runner_group_id,
                "runnerGroupName": info.runner_group_name,
                "labels": [{"type": "System", "name": label} for label in info.labels],
                "RunnerSetting": {"disableUpdate": info.disable_update},
            },
            "messageQueueUrl": f"{self.face.url}/broker/message?sessionId={state.session_id}",
            "messageQueueAccessToken": state.queue_token,
            "statistics": self.face.feed.statistics(info.id),
        }

    def _route_create_session(self, request: FaceRequest, params: dict[str, str]) -> None:
        info = self._scale_set(request, params)
        if info is None:
            return
        face = self.face
        payload = request.json()
        owner = payload.get("ownerName", "") if isinstance(payload, dict) else ""
        with face._lock:
            held = info.id in face._state.sessions or info.id in face._state.foreign_sessions
            if not held:
                state = _SessionState(info.id, str(uuid.uuid4()), owner, face._issue("mq-"))
                face._state.sessions[info.id] = state
        if held:
            self._error(
                request,
                409,
                _CONFLICT_TYPE,
                f"The actions runner scaleset {info.name} already has an active session.",
            )
            return
        self._json(request, 200, self._session_payload(info, state))

    def _own_session(
        self, request: FaceRequest, params: dict[str, str]
    ) -> tuple[ScaleSetInfo, _SessionState] | None:
        info = self._scale_set(request, params)
        if info is None:
            return None
        with self.face._lock:
            state = self.face._state.sessions.get(info.id)
        if state is None or state.session_id != params["session_id"]:
            self._error(
                request,
                404,
                "GitHub.Actions.Runtime.WebApi.RunnerScaleSetSessionNotFoundException",
                f"session {params['session_id']} not found",
            )
            return None
        return info, state

    def _route_refresh_session(self, request: FaceRequest, params: dict[str, str]) -> None:
        found = self._own_session(request, params)
        if found is None:
            return
        info, state = found
        with self.face._lock:
            state.queue_token = self.face._issue("mq-")
            state.queue_token_expired = False
        self._json(request, 200, self._session_payload(info, state))

    def _route_delete_session(self, request: FaceRequest, params: dict[str, str]) -> None:
        found = self._own_session(request, params)
        if found is None:
            return
        with self.face._lock:
            self.face._state.sessions.pop(found[0].id, None)
        self._answer(request, 204)
