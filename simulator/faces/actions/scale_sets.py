"""Routes ARC's controller calls through the scaleset client: runner groups, scale-set CRUD,
JIT runner registration and the runners it creates (get by id or name, remove).

The answers follow what the scaleset client decodes: lists are ``{"count", "value"}``; a scale
set or runner looked up by name that is absent is an empty list (the client reads it as "none",
not an error); by id it is a 404 whose ``typeName`` the client maps (``AgentNotFoundException``
becomes its runner-not-found error). A duplicate scale-set name in a group is a 400
``RunnerScaleSetExistsException``, a duplicate runner name a 409 ``AgentExistsException`` (the
controller then looks the runner up by name and removes it). Removing a runner that is not
registered answers 204: ARC removes every finished ephemeral runner, which the service has
usually dropped already, and expects success; a runner marked busy answers
``JobStillRunningException``.
"""

from __future__ import annotations

import base64
import json
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from simulator.faces.actions.jobs import wire_time
from simulator.faces.actions.state import (
    _AGENT_EXISTS_TYPE,
    _AGENT_NOT_FOUND_TYPE,
    _JOB_STILL_RUNNING_TYPE,
    _RUNNER_GROUP_NOT_FOUND_TYPE,
    _SCALE_SET_EXISTS_TYPE,
    _SCALE_SET_NOT_FOUND_TYPE,
    DEFAULT_RUNNER_GROUP_ID,
    FaceRequest,
    RunnerInfo,
    ScaleSetInfo,
)

if TYPE_CHECKING:  # the face imports this module
    from simulator.faces.actions.face import ActionsFace

log = logging.getLogger(__name__)


def runner_wire(runner: RunnerInfo) -> dict[str, Any]:
    """The runner reference the client decodes (GetRunner, list items, the JIT answer)."""
    return {"id": runner.id, "name": runner.name, "runnerScaleSetId": runner.scale_set_id}


class ScaleSetRoutes:
    """Controller routes (mixed into the face's handler)."""

    face: ActionsFace

    if TYPE_CHECKING:  # provided by the handler this is mixed into

        def _bearer(self, scheme: str = "Bearer") -> str: ...
        def _json(self, request: FaceRequest, status: int, payload: Any) -> None: ...
        def _error(
            self, request: FaceRequest, status: int, type_name: str, message: str
        ) -> None: ...
        def _answer(self, request: FaceRequest, status: int) -> None: ...

    # --- helpers ---

    def _admin(self, request: FaceRequest) -> bool:
        if self.face._admin_ok(self._bearer()):
            return True
        self._error(request, 401, "UnauthorizedException", "admin token invalid or expired")
        return False

    def _body_object(self, request: FaceRequest) -> dict[str, Any] | None:
        """The request body as a JSON object, or None after answering 400."""
        try:
            payload = request.json()
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            self._error(request, 400, "ArgumentException", "body must be a JSON object")
            return None
        return payload

    def _query(self, request: FaceRequest, name: str) -> str | None:
        values = request.query.get(name)
        return values[0] if values else None

    def _scale_set_wire(self, info: ScaleSetInfo) -> dict[str, Any]:
        return {
            "id": info.id,
            "name": info.name,
            "runnerGroupId": info.runner_group_id,
            "runnerGroupName": info.runner_group_name,
            "labels": [{"type": "System", "name": label} for label in info.labels],
            "RunnerSetting": {"disableUpdate": info.disable_update},
            "createdOn": wire_time(info.created_on),
            "runnerJitConfigUrl": (
                f"{self.face.url}/tenant/_apis/runtime/runnerscalesets/{info.id}/generatejitconfig"
            ),
            "statistics": self.face.feed.statistics(info.id),
        }

    def _known_scale_set(self, request: FaceRequest, params: dict[str, str]) -> ScaleSetInfo | None:
        """The scale set named by the path, or None after answering 404."""
        info = self.face.scale_sets.get(int(params["scale_set_id"]))
        if info is None:
            self._scale_set_not_found(request, params["scale_set_id"])
        return info

    def _scale_set_not_found(self, request: FaceRequest, scale_set_id: str) -> None:
        self._error(
            request,
            404,
            _SCALE_SET_NOT_FOUND_TYPE,
            f"No RunnerScaleSet found with identifier {scale_set_id}.",
        )

    def _group_id(self, request: FaceRequest, raw: object) -> int | None:
        """A known runner group id from a body value (absent or 0 = the default group), or
        None after answering."""
        if raw is None or raw == 0:
            return DEFAULT_RUNNER_GROUP_ID
        if type(raw) is not int:
            self._error(request, 400, "ArgumentException", "runnerGroupId must be an integer")
            return None
        if raw not in self.face.runner_groups:
            self._error(
                request,
                404,
                _RUNNER_GROUP_NOT_FOUND_TYPE,
                f"No runner group found with identifier {raw}.",
            )
            return None
        return raw

    def _labels(self, request: FaceRequest, raw: object) -> tuple[str, ...] | None:
        """Label names from a body ``labels`` list (each ``{"name": ...}``), or None after
        answering 400."""
        if not isinstance(raw, list):
            self._error(request, 400, "ArgumentException", "labels must be a list")
            return None
        names = [item.get("name") if isinstance(item, dict) else None for item in raw]
        if not all(isinstance(name, str) and name for name in names):
            self._error(request, 400, "ArgumentException", "every label needs a name")
            return None
        return tuple(str(name) for name in names)

    def _name_taken(self, name: str, group_id: int, except_id: int | None = None) -> bool:
        return any(
            info.name == name and info.runner_group_id == group_id and info.id != except_id
            for info in self.face.scale_sets.values()
        )

    def _scale_set_exists(self, request: FaceRequest, name: str) -> None:
        self._error(
            request,
            400,
            _SCALE_SET_EXISTS_TYPE,
            f"A runner scale set named {name} already exists in this runner group.",
        )

    # --- runner groups ---

    def _route_runner_groups(self, request: FaceRequest, params: dict[str, str]) -> None:
        if not self._admin(request):
            return
        wanted = self._query(request, "groupName")
        with self.face._lock:
            groups = sorted(self.face.runner_groups.items())
        value = [
            {
                "id": group_id,
                "name": name,
                "size": 0,
                "isDefaultGroup": group_id == DEFAULT_RUNNER_GROUP_ID,
            }
            for group_id, name in groups
            if wanted is None or name.casefold() == wanted.casefold()
        ]
        self._json(request, 200, {"count": len(value), "value": value})

    # --- scale sets ---

    def _route_find_scale_set(self, request: FaceRequest, params: dict[str, str]) -> None:
        if not self._admin(request):
            return
        raw_group = self._query(request, "runnerGroupId")
        if raw_group is not None and not raw_group.isdigit():
            self._error(request, 400, "ArgumentException", "runnerGroupId must be an integer")
            return
        name = self._query(request, "name")
        value = [
            self._scale_set_wire(info)
            for info in sorted(self.face.scale_sets.values(), key=lambda i: i.id)
            if (raw_group is None or info.runner_group_id == int(raw_group))
            and (name is None or info.name == name)
        ]
        self._json(request, 200, {"count": len(value), "value": value})

    def _route_create_scale_set(self, request: FaceRequest, params: dict[str, str]) -> None:
        if not self._admin(request):
            return
        payload = self._body_object(request)
        if payload is None:
            return
        name = payload.get("name")
        if not isinstance(name, str) or not name:
            self._error(request, 400, "ArgumentException", "a runner scale set needs a name")
            return
        group_id = self._group_id(request, payload.get("runnerGroupId"))
        if group_id is None:
            return
        labels = self._labels(request, payload.get("labels") or [{"name": name}])
        if labels is None:
            return
        setting = payload.get("RunnerSetting")
        disable_update = isinstance(setting, dict) and setting.get("disableUpdate") is True
        face = self.face
        with face._lock:
            taken = self._name_taken(name, group_id)
            if not taken:
                info = ScaleSetInfo(
                    id=face._state.next_scale_set_id,
                    name=name,
                    labels=labels,
                    runner_group_id=group_id,
                    runner_group_name=face.runner_groups[group_id],
                    disable_update=disable_update,
                    created_on=face.clock.now(),
                )
                face._state.next_scale_set_id += 1
                face.scale_sets = {**face.scale_sets, info.id: info}
        if taken:
            self._scale_set_exists(request, name)
            return
        log.debug("face: registered scale set %s (%d)", info.name, info.id)
        self._json(request, 200, self._scale_set_wire(info))

    def _route_get_scale_set(self, request: FaceRequest, params: dict[str, str]) -> None:
        if not self._admin(request):
            return
        info = self._known_scale_set(request, params)
        if info is not None:
            self._json(request, 200, self._scale_set_wire(info))

    def _route_update_scale_set(self, request: FaceRequest, params: dict[str, str]) -> None:
        """PATCH: fields the body carries replace the stored ones (the client omits empty
        fields; ``RunnerSetting`` is always sent, so only a present ``disableUpdate`` counts)."""
        if not self._admin(request):
            return
        payload = self._body_object(request)
        if payload is None:
            return
        name = payload.get("name")
        if name is not None and (not isinstance(name, str) or not name):
            self._error(request, 400, "ArgumentException", "name must be a non-empty string")
            return
        group_id = None
        if payload.get("runnerGroupId"):
            group_id = self._group_id(request, payload["runnerGroupId"])
            if group_id is None:
                return
        labels = None
        if payload.get("labels"):
            labels = self._labels(request, payload["labels"])
            if labels is None:
                return
        setting = payload.get("RunnerSetting")
        face = self.face
        taken = False
        with face._lock:
            info = face.scale_sets.get(int(params["scale_set_id"]))
            if info is None:
                updated = None
            else:
                changes: dict[str, Any] = {}
                if name is not None:
                    changes["name"] = name
                if group_id is not None:
                    changes["runner_group_id"] = group_id
                    changes["runner_group_name"] = face.runner_groups[group_id]
                if labels is not None:
                    changes["labels"] = labels
                if isinstance(setting, dict) and "disableUpdate" in setting:
                    changes["disable_update"] = setting["disableUpdate"] is True
                updated = replace(info, **changes)
                taken = self._name_taken(updated.name, updated.runner_group_id, info.id)
                if not taken:
                    face.scale_sets = {**face.scale_sets, info.id: updated}
        if updated is None:
            self._scale_set_not_found(request, params["scale_set_id"])
            return
        if taken:
            self._scale_set_exists(request, updated.name)
            return
        self._json(request, 200, self._scale_set_wire(updated))

    def _route_delete_scale_set(self, request: FaceRequest, params: dict[str, str]) -> None:
        """DELETE: the scale set goes with its session, undelivered messages and runners."""
        if not self._admin(request):
            return
        scale_set_id = int(params["scale_set_id"])
        face = self.face
        with face._lock:
            known = scale_set_id in face.scale_sets
            if known:
                face.scale_sets = {k: v for k, v in face.scale_sets.items() if k != scale_set_id}
                face._state.sessions.pop(scale_set_id, None)
                face._state.queues.pop(scale_set_id, None)
                gone = [
                    r.id for r in face._state.runners.values() if r.scale_set_id == scale_set_id
                ]
                for runner_id in gone:
                    face._state.runners.pop(runner_id)
                    face._state.busy_runners.discard(runner_id)
                face._changed.notify_all()
        if not known:
            self._scale_set_not_found(request, params["scale_set_id"])
            return
        self._answer(request, 204)

    # --- runners ---

    def _route_generate_jit_config(self, request: FaceRequest, params: dict[str, str]) -> None:
        if not self._admin(request):
            return
        info = self._known_scale_set(request, params)
        if info is None:
            return
        payload = self._body_object(request)
        if payload is None:
            return
        name = payload.get("name")
        work_folder = payload.get("workFolder") or "_work"
        if not isinstance(name, str) or not name or not isinstance(work_folder, str):
            self._error(request, 400, "ArgumentException", "a runner needs a name")
            return
        face = self.face
        with face._lock:
            taken = any(r.name == name for r in face._state.runners.values())
            if not taken:
                runner = RunnerInfo(face._state.next_runner_id, name, info.id)
                face._state.next_runner_id += 1
                face._state.runners[runner.id] = runner
                face._changed.notify_all()
        if taken:
            self._error(request, 409, _AGENT_EXISTS_TYPE, f"A runner named {name} already exists.")
            return
        # Opaque to ARC, which only stores it in the runner's secret; ours, so JSON.
        config = {
            "face": "actions-face/1",
            "runnerId": runner.id,
            "runnerName": runner.name,
            "scaleSetId": info.id,
            "workFolder": work_folder,
            "serviceUrl": f"{face.url}/tenant/",
        }
        encoded = base64.b64encode(json.dumps(config).encode()).decode()
        self._json(request, 200, {"runner": runner_wire(runner), "encodedJITConfig": encoded})

    def _route_find_runner(self, request: FaceRequest, params: dict[str, str]) -> None:
        if not self._admin(request):
            return
        name = self._query(request, "agentName")
        with self.face._lock:
            runners = sorted(self.face._state.runners.values(), key=lambda r: r.id)
        value = [runner_wire(r) for r in runners if name is None or r.name == name]
        self._json(request, 200, {"count": len(value), "value": value})

    def _route_get_runner(self, request: FaceRequest, params: dict[str, str]) -> None:
        if not self._admin(request):
            return
        with self.face._lock:
            runner = self.face._state.runners.get(int(params["runner_id"]))
        if runner is None:
            self._error(
                request,
                404,
                _AGENT_NOT_FOUND_TYPE,
                f"No agent found in pool with identifier {params['runner_id']}.",
            )
            return
        self._json(request, 200, runner_wire(runner))

    def _route_remove_runner(self, request: FaceRequest, params: dict[str, str]) -> None:
        if not self._admin(request):
            return
        runner_id = int(params["runner_id"])
        face = self.face
        with face._lock:
            busy = runner_id in face._state.busy_runners
            if not busy:
                face._state.runners.pop(runner_id, None)
                face._changed.notify_all()
        if busy:
            self._error(
                request,
                400,
                _JOB_STILL_RUNNING_TYPE,
                f"Runner {runner_id} is running a job and cannot be removed.",
            )
            return
        self._answer(request, 204)
