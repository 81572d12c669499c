"""Routes of the GitHub REST side: installation token, registration token, runner registration."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from simulator.faces.actions.jobs import wire_time
from simulator.faces.actions.state import FaceRequest

if TYPE_CHECKING:  # the face imports this module
    from simulator.faces.actions.face import ActionsFace

log = logging.getLogger(__name__)


class RestRoutes:
    """GitHub REST routes (mixed into the face's handler)."""

    face: ActionsFace

    def _route_installation_token(self, request: FaceRequest, params: dict[str, str]) -> None:
        face = self.face
        app = face.app
        if app is None or not face._app_jwt_ok(self._bearer()):
            self._json(request, 401, {"message": "A JSON web token could not be decoded"})
            return
        if params["installation_id"] != str(app.installation_id):
            self._json(request, 404, {"message": "Not Found"})
            return
        token = face._issue("ghs_")
        with face._lock:
            face._state.installation_tokens.add(token)
        self._json(request, 201, {"token": token, "expires_at": wire_time(face.clock.now() + 3600)})

    def _route_registration_token(self, request: FaceRequest, params: dict[str, str]) -> None:
        face = self.face
        bearer = self._bearer()
        with face._lock:
            known = bearer in face._state.installation_tokens or (
                face.pat is not None and bearer == face.pat
            )
        if not bearer or not known:
            self._json(request, 401, {"message": "Bad credentials"})
            return
        token = face._issue("REG")
        with face._lock:
            face._state.registration_tokens.add(token)
        self._json(request, 201, {"token": token, "expires_at": wire_time(face.clock.now() + 3600)})

    def _route_runner_registration(self, request: FaceRequest, params: dict[str, str]) -> None:
        face = self.face
        with face._lock:
            known = self._bearer("RemoteAuth") in face._state.registration_tokens
        if not known:
            self._json(request, 401, {"message": "Bad registration token"})
            return
        payload = request.json()
        if not isinstance(payload, dict) or payload.get("runner_event") != "register":
            self._json(request, 400, {"message": "expected {url, runner_event: register}"})
            return
        self._json(request, 200, {"url": f"{face.url}/tenant/", "token": face._admin_token()})
