"""One request to the face, its response, and its RBAC check (the API server's filters)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from simulator.engine.store import ObjectStore
from simulator.faces.k8s import authz
from simulator.faces.k8s.errors import ApiError
from simulator.faces.k8s.routing import Route

_TRUE = {"1", "true", "True"}
#: Request verbs of each resource handler (``RequestInfo.Verb`` upstream).
_VERBS = {
    "list": "list",
    "watch": "watch",
    "get": "get",
    "create": "create",
    "replace": "update",
    "patch": "patch",
    "delete": "delete",
}


@dataclass
class Request:
    """A parsed HTTP request; ``identity``, ``params`` and ``route`` are filled in by the face."""

    method: str
    path: str
    query: Mapping[str, str]
    accept: str = ""
    content_type: str = ""
    raw: bytes = b""
    body: Any = None
    bearer_token: str | None = None
    identity: authz.Identity | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    route: Route | None = None
    watch_writer: Callable[[dict[str, Any] | None], None] | None = None

    def is_watch(self) -> bool:
        return self.method == "GET" and self.query.get("watch") in _TRUE

    @property
    def route_(self) -> Route:
        """The resource route (only resource handlers are called with one)."""
        if self.route is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return self.route


@dataclass(frozen=True)
class Response:
    code: int
    body: bytes

    @classmethod
    def json(cls, doc: Any, code: int = 200) -> Response:
        return cls(code, json.dumps(doc, separators=(",", ":")).encode())


def attributes(request: Request, handler: str) -> authz.Attributes:
    route = request.route
    if route is None:
        # Discovery, OpenAPI and access reviews: every authenticated user may use them
        # (upstream's system:discovery, system:public-info-viewer and system:basic-user).
        return authz.Attributes(verb=request.method.lower(), path=request.path)
    return authz.Attributes(
        verb=_VERBS[handler],  # an apply is a "patch" to RBAC, as upstream
        group=route.info.group,
        resource=route.info.plural,
        subresource=route.subresource or "",
        namespace=route.namespace or "",
        name=route.name or "",
    )


def authorize_request(store: ObjectStore, request: Request, handler: str) -> None:
    """403 with upstream's message when RBAC does not allow an identified request."""
    who = request.identity
    if who is None or request.route is None:
        return
    attrs = attributes(request, handler)
    if authz.authorize(store, who, attrs).allowed:
        return
    route = request.route
    subject = f'{route.resource} "{route.name}"' if route.name else route.resource
    raise ApiError(
        403,
        "Forbidden",
        f"{subject} is forbidden: {authz.forbidden_message(who, attrs)}",
        route.details(),
    )


def wants_dry_run(query: Mapping[str, str]) -> bool:
    """``?dryRun=All``: admit and validate, store nothing. Upstream accepts only ``All``."""
    value = query.get("dryRun")
    if value is None:
        return False
    if value != "All":
        raise ApiError(
            400,
            "BadRequest",
            f'dryRun: Unsupported value: "{value}": supported values: "All"',
        )
    return True
