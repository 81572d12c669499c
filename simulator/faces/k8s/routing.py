"""The face's routes, in one table, and the parsing of resource paths.

Every request resolves to one handler name of :data:`ROUTES`: first the fixed paths
(discovery, OpenAPI, access reviews), then resource paths
``/api/v1/[namespaces/{ns}/]{plural}[/{name}[/status]]`` and
``/apis/{group}/{version}/[namespaces/{ns}/]{plural}[/{name}[/status]]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from simulator.engine.store import KindInfo
from simulator.faces.k8s import discovery
from simulator.faces.k8s.errors import ApiError, not_found_path

_TRUE = {"1", "true", "True"}

#: (method, path pattern, handler). ``{x}`` matches one path segment; ``<collection>`` and
#: ``<object>`` are resource paths (a list of a kind / one named object, or its status).
ROUTES: tuple[tuple[str, str, str], ...] = (
    ("GET", "/version", "version"),
    ("GET", "/api", "api_versions"),
    ("GET", "/apis", "api_groups"),
    ("GET", "/apis/{group}", "api_group"),
    ("GET", "/api/{version}", "resource_list"),
    ("GET", "/apis/{group}/{version}", "resource_list"),
    ("GET", "/openapi/v3", "openapi_index"),
    ("GET", "/openapi/v3/api/{version}", "openapi_doc"),
    ("GET", "/openapi/v3/apis/{group}/{version}", "openapi_doc"),
    ("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "access_review"),
    ("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "subject_access_review"),
    ("GET", "<collection>?watch", "watch"),
    ("GET", "<collection>", "list"),
    ("POST", "<collection>", "create"),
    ("GET", "<object>", "get"),
    ("PUT", "<object>", "replace"),
    ("PATCH", "<object>", "patch"),
    ("DELETE", "<object>", "delete"),
)


@dataclass(frozen=True)
class Route:
    """A parsed resource path."""

    info: KindInfo
    namespace: str | None
    name: str | None
    subresource: str | None

    @property
    def resource(self) -> str:
        """``pods`` or ``ephemeralrunnersets.actions.github.com`` (as in API messages)."""
        group = self.info.group
        return f"{self.info.plural}.{group}" if group else self.info.plural

    def details(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.info.plural}
        if self.name:
            out["name"] = self.name
        if self.info.group:
            out["group"] = self.info.group
        return out


@dataclass(frozen=True)
class Resolved:
    handler: str
    params: Mapping[str, str]
    route: Route | None


def _match(pattern: str, parts: list[str]) -> dict[str, str] | None:
    want = [p for p in pattern.split("/") if p]
    if len(want) != len(parts):
        return None
    params: dict[str, str] = {}
    for w, got in zip(want, parts, strict=True):
        if w.startswith("{"):
            params[w[1:-1]] = got
        elif w != got:
            return None
    return params


def parse_resource(parts: list[str], kinds: Iterable[KindInfo], absent: frozenset[str]) -> Route:
    """A resource path's kind, namespace, name and subresource; 404 when not served."""
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise not_found_path()
    if group in absent or not rest:
        raise not_found_path()
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    info = next(
        (k for k in kinds if (k.group, k.version, k.plural) == (group, version, rest[0])), None
    )
    if info is None or len(rest) > 3:
        raise not_found_path()
    if namespace is not None and not info.namespaced:
        raise not_found_path()
    name = rest[1] if len(rest) >= 2 else None
    sub = rest[2] if len(rest) == 3 else None
    if sub is not None and (sub != "status" or info.kind not in discovery.STATUS_SUBRESOURCE):
        raise not_found_path()
    if name is not None and info.namespaced and namespace is None:
        raise not_found_path()
    return Route(info, namespace, name, sub)


def resolve(
    method: str,
    path: str,
    query: Mapping[str, str],
    kinds: Iterable[KindInfo],
    absent: frozenset[str],
) -> Resolved:
    """The handler for a request, from :data:`ROUTES` (404 / 405 like the API server)."""
    parts = [p for p in path.split("/") if p]
    fixed_path = False
    for verb, pattern, handler in ROUTES:
        if pattern.startswith("<"):
            continue
        params = _match(pattern, parts)
        if params is None:
            continue
        fixed_path = True
        if verb == method:
            return Resolved(handler, params, None)
    if fixed_path:
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on {path}")
    route = parse_resource(parts, kinds, absent)
    shape = "<collection>" if route.name is None else "<object>"
    if shape == "<collection>" and method == "GET" and query.get("watch") in _TRUE:
        shape = "<collection>?watch"
    for verb, pattern, handler in ROUTES:
        if verb == method and pattern == shape:
            return Resolved(handler, {}, route)
    raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on {path}")
