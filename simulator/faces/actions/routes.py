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


def _scrub_headers(raw: Iterable[tuple[str, str]]) -> dict[str, str]:
    headers = {}
    for name, value in raw:
        key = name.lower()
        if key in ("authorization", "proxy-authorization", "x-hud-internal-bot"):
            scheme = value.split(" ", 1)[0] if " " in value else ""
            value = f"{scheme} <redacted>".strip()
        headers[key] = value
    return headers
