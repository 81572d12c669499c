"""The Actions face's routes (docs/protocol.md#sequence) and the mapping of a request to one."""

from __future__ import annotations

import logging
from collections.abc import Iterable

log = logging.getLogger(__name__)


#: Every route the face answers, in the order of docs/protocol.md#sequence (fault knobs name them).
ROUTES = (
    "installation_token",
    "registration_token",
    "runner_registration",
    "create_session",
    "refresh_session",
    "delete_session",
    "get_message",
    "delete_message",
    "acquire_jobs",
    # What ARC's controller calls (the scaleset client): runner groups, scale-set CRUD, runners.
    "runner_groups",
    "find_scale_set",
    "create_scale_set",
    "get_scale_set",
    "update_scale_set",
    "delete_scale_set",
    "generate_jit_config",
    "find_runner",
    "get_runner",
    "remove_runner",
)
_ROUTE_NAMES = frozenset(ROUTES)


def _route(method: str, path: str) -> tuple[str, dict[str, str]]:
    """Map a request to a route name and its path parameters ("unknown" when nothing fits)."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v3"]:
        rest = parts[2:]
        if (
            method == "POST"
            and len(rest) == 4
            and rest[:2] == ["app", "installations"]
            and rest[3] == "access_tokens"
        ):
            return "installation_token", {"installation_id": rest[2]}
        if method == "POST" and rest[-3:] == ["actions", "runners", "registration-token"]:
            return "registration_token", {"scope": "/".join(rest[:-3])}
        if method == "POST" and rest == ["actions", "runner-registration"]:
            return "runner_registration", {}
    controller = _controller_route(method, parts)
    if controller is not None:
        return controller
    if parts[:4] == ["tenant", "_apis", "runtime", "runnerscalesets"] and len(parts) >= 6:
        params = {"scale_set_id": parts[4]}
        if parts[5] == "sessions" and len(parts) == 6 and method == "POST":
            return "create_session", params
        if parts[5] == "sessions" and len(parts) == 7:
            params["session_id"] = parts[6]
            if method == "PATCH":
                return "refresh_session", params
            if method == "DELETE":
                return "delete_session", params
        if parts[5] == "acquirejobs" and len(parts) == 6 and method == "POST":
            return "acquire_jobs", params
    if parts[:2] == ["broker", "message"]:
        if method == "GET" and len(parts) == 2:
            return "get_message", {}
        if method == "DELETE" and len(parts) == 3:
            return "delete_message", {"message_id": parts[2]}
    return "unknown", {}


_ONE_SCALE_SET = {"GET": "get_scale_set", "PATCH": "update_scale_set", "DELETE": "delete_scale_set"}


def _controller_route(method: str, parts: list[str]) -> tuple[str, dict[str, str]] | None:
    """The controller's routes under the tenant (None when the request is none of them).

    Ids in the path must be digits: anything else falls through to "unknown" (404).
    """
    if parts == ["tenant", "_apis", "runtime", "runnergroups"] and method == "GET":
        return "runner_groups", {}
    if parts[:4] == ["tenant", "_apis", "runtime", "runnerscalesets"]:
        rest = parts[4:]
        if not rest:
            return {"GET": ("find_scale_set", {}), "POST": ("create_scale_set", {})}.get(method)
        if not rest[0].isdigit():
            return None
        params = {"scale_set_id": rest[0]}
        if len(rest) == 1:
            name = _ONE_SCALE_SET.get(method)
            return (name, params) if name else None
        if rest[1:] == ["generatejitconfig"] and method == "POST":
            return "generate_jit_config", params
        return None
    if parts[:4] == ["tenant", "_apis", "distributedtask", "pools"]:
        rest = parts[4:]
        if len(rest) < 2 or rest[1] != "agents" or not rest[0].isdigit():
            return None
        if len(rest) == 2 and method == "GET":
            return "find_runner", {}
        if len(rest) == 3 and rest[2].isdigit():
            name = {"GET": "get_runner", "DELETE": "remove_runner"}.get(method)
            return (name, {"runner_id": rest[2]}) if name else None
    return None


def _scrub_headers(raw: Iterable[tuple[str, str]]) -> dict[str, str]:
    headers = {}
    for name, value in raw:
        key = name.lower()
        if key in ("authorization", "proxy-authorization", "x-hud-internal-bot"):
            scheme = value.split(" ", 1)[0] if " " in value else ""
            value = f"{scheme} <redacted>".strip()
        headers[key] = value
    return headers
