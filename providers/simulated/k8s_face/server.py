"""A Kubernetes-API HTTP face over the simulated world's ObjectStore, on loopback.

It speaks the REST conventions the real clients use (the kubernetes Python client, kubectl):

- discovery: ``/api``, ``/api/v1``, ``/apis``, ``/apis/{g}``, ``/apis/{g}/{v}``, ``/version``;
- core ``/api/v1/[namespaces/{ns}/]{plural}[/{name}[/status]]`` and groups
  ``/apis/{g}/{v}/[namespaces/{ns}/]{plural}[/{name}[/status]]`` for every kind of
  :data:`providers.simulated.store.KINDS` (pods, nodes, events, PriorityClasses, ARC and
  Karpenter custom resources); groups can be hidden to act as "CRD not installed";
- GET list with ``labelSelector`` (equality and set-based) and ``fieldSelector``,
  ``metadata.resourceVersion`` on lists; ``limit``/``continue`` are ignored (all items are
  returned, which the API allows) and a list is always served from the latest state;
- ``?watch=1``: a chunked stream of JSON lines ``{"type", "object"}`` (ADDED / MODIFIED /
  DELETED, BOOKMARK with ``allowWatchBookmarks``); ``resourceVersion`` resumes after that
  version, unset or ``"0"`` starts with synthetic ADDED events for the current state;
  ``timeoutSeconds`` ends the stream cleanly; a compacted version gets one ERROR event
  carrying a Status with code 410 (as the API server does). With a label selector, an object
  that stops matching is sent as DELETED and one that starts matching as ADDED;
- POST (create; ``generateName``; pods start ``Pending``; status of objects with a status
  subresource is dropped; priority admission fills ``spec.priority`` and
  ``spec.preemptionPolicy`` from the PriorityClass and refuses unknown classes with 403),
  PUT (replace, ``metadata.resourceVersion`` precondition), PATCH (merge patch;
  strategic-merge applied as merge patch, see :mod:`.patching`; JSON patch; a
  ``metadata.resourceVersion`` in a merge patch is a precondition; the main resource cannot
  change status and ``/status`` changes only status), DELETE (``preconditions.uid`` /
  ``resourceVersion``, ``gracePeriodSeconds`` from the body or the query);
- errors as ``Status`` bodies (``kind: Status``, ``status: Failure``, message, reason,
  details, code).

Fault hooks for tests: :meth:`K8sFace.drop_watches` cuts every open watch connection
abruptly, :meth:`K8sFace.compact` drops the watch history (older versions get 410).
Every request is counted by verb and kind in :attr:`K8sFace.calls`.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import random
import socket
import string
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from providers.simulated.k8s_face import discovery
from providers.simulated.k8s_face.patching import PatchError, json_patch, merge_patch
from providers.simulated.k8s_face.selectors import FieldSelector, LabelSelector, SelectorError
from providers.simulated.store import KINDS, Gone, KindInfo, ObjectStore, StoreError, WatchEvent

log = logging.getLogger(__name__)

Obj = dict[str, Any]
_TRUE = {"1", "true", "True"}
_BUILTIN_GROUPS = {"", "scheduling.k8s.io"}
#: Longest a single watch may stay open, whatever the client asks.
MAX_WATCH_SECONDS = 1800.0
#: Most bytes accepted in a request body.
MAX_BODY = 8 * 1024 * 1024
#: Requests remembered in ``K8sFace.request_log``.
REQUEST_LOG = 100_000


class ApiError(Exception):
    """An error answered as a metav1.Status body."""

    def __init__(self, code: int, reason: str, message: str, details: Obj | None = None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}

    def status(self) -> Obj:
        body: Obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def _not_found_path() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource")


class _Route:
    """A parsed resource path."""

    __slots__ = ("info", "name", "namespace", "subresource")

    def __init__(self, info: KindInfo, namespace: str | None, name: str | None, sub: str | None):
        self.info = info
        self.namespace = namespace
        self.name = name
        self.subresource = sub

    @property
    def resource(self) -> str:
        """``pods`` or ``ephemeralrunnersets.actions.github.com`` (as in API messages)."""
        group = self.info.group
        return f"{self.info.plural}.{group}" if group else self.info.plural

    def details(self) -> Obj:
        out: Obj = {"kind": self.info.plural}
        if self.name:
            out["name"] = self.name
        if self.info.group:
            out["group"] = self.info.group
        return out


class K8sFace:
    """Serves an ObjectStore as a Kubernetes API on ``127.0.0.1`` (port 0 = ephemeral)."""

    def __init__(
        self,
        store: ObjectStore,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        absent_groups: Iterable[str] = (),
        bookmark_interval: float = 5.0,
        strict_priority_classes: bool = True,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        try:
            store.events_since(store.resource_version, "Pod")
        except Gone:
            raise ValueError(
                "K8sFace needs an ObjectStore that keeps watch history: create it with "
                "ObjectStore(clock, history=N), N > 0 (e.g. 10000)"
            ) from None
        self.store = store
        self.absent_groups = frozenset(absent_groups)
        self.bookmark_interval = bookmark_interval
        self.strict_priority_classes = strict_priority_classes
        self.monotonic = monotonic
        self.calls: Counter[str] = Counter()
        #: The latest requests as (verb, kind, namespace, name), bounded, for tests/benchmarks.
        self.request_log: deque[tuple[str, str, str, str]] = deque(maxlen=REQUEST_LOG)
        self._calls_lock = threading.Lock()
        self._drop_generation = 0
        self._stopping = False
        self._watch_sockets: set[socket.socket] = set()
        self._sockets_lock = threading.Lock()
        self._watches_changed = threading.Condition(self._sockets_lock)
        self._rng = random.Random(0)
        self._by_path: dict[tuple[str, str, str], KindInfo] = {
            (k.group, k.version, k.plural): k for k in KINDS.values()
        }
        self._server = _Server((host, port), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        text = host.decode() if isinstance(host, bytes) else host
        return f"http://{text}:{port}"

    def start(self) -> K8sFace:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="k8s-face",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping = True
        self.drop_watches()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> K8sFace:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- fault hooks ----------------------------------------------------------------------

    def drop_watches(self) -> int:
        """Cut every open watch connection abruptly (no final chunk); returns how many."""
        with self._sockets_lock:
            self._drop_generation += 1
            sockets = list(self._watch_sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        with self.store.changed:
            self.store.changed.notify_all()
        return len(sockets)

    def compact(self) -> None:
        """Forget watch history: resuming from any earlier resourceVersion answers 410."""
        self.store.compact()

    def open_watches(self) -> int:
        with self._sockets_lock:
            return len(self._watch_sockets)

    def wait_watches(self, count: int, timeout: float) -> bool:
        """Block until at least ``count`` watch streams are open; False after ``timeout``."""
        with self._watches_changed:
            return self._watches_changed.wait_for(
                lambda: len(self._watch_sockets) >= count, timeout=timeout
            )

    def count(self, verb: str, kind: str, namespace: str | None = None, name: str = "") -> None:
        with self._calls_lock:
            self.calls[f"{verb} {kind}"] += 1
            self.request_log.append((verb, kind, namespace or "", name))

    def calls_by_verb(self) -> dict[str, int]:
        out: Counter[str] = Counter()
        with self._calls_lock:
            for key, n in self.calls.items():
                out[key.split(" ", 1)[0]] += n
        return dict(out)

    # --- routing --------------------------------------------------------------------------

    def route(self, path: str) -> _Route | Obj:
        """A resource route, or a discovery document for discovery paths."""
        parts = [p for p in path.split("/") if p]
        if parts == ["api"]:
            return discovery.api_versions(self.url.removeprefix("http://"))
        if parts == ["apis"]:
            groups = {
                (k.group, k.version)
                for k in KINDS.values()
                if k.group and k.group not in self.absent_groups
            }
            return discovery.api_group_list(groups)
        if parts == ["version"]:
            return {
                "major": "1",
                "minor": "32",
                "gitVersion": "v1.32.0-arc-sim",
                "platform": "linux/amd64",
            }
        if len(parts) >= 2 and parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        elif len(parts) >= 2 and parts[0] == "apis":
            group, rest = parts[1], parts[3:]
            if group in self.absent_groups:
                raise _not_found_path()
            if len(parts) == 2:
                versions = {k.version for k in KINDS.values() if k.group == group}
                if not versions:
                    raise _not_found_path()
                return discovery.api_group(group, sorted(versions)[0])
            version = parts[2]
        else:
            raise _not_found_path()
        if not rest:
            kinds = [k for k in KINDS.values() if k.group == group and k.version == version]
            if not kinds:
                raise _not_found_path()
            gv = f"{group}/{version}" if group else version
            return discovery.resource_list(gv, kinds)
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        info = self._by_path.get((group, version, rest[0]))
        if info is None or len(rest) > 3:
            raise _not_found_path()
        if namespace is not None and not info.namespaced:
            raise _not_found_path()
        name = rest[1] if len(rest) >= 2 else None
        sub = rest[2] if len(rest) == 3 else None
        if sub is not None and (sub != "status" or info.kind not in discovery.STATUS_SUBRESOURCE):
            raise _not_found_path()
        if name is not None and info.namespaced and namespace is None:
            raise _not_found_path()
        return _Route(info, namespace, name, sub)

    # --- serialization --------------------------------------------------------------------

    @staticmethod
    def list_item(info: KindInfo, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        """Items of built-in lists carry no kind/apiVersion; custom resources keep them."""
        if info.group in _BUILTIN_GROUPS:
            return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
        return obj

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        face = self

        class Handler(_Handler):
            pass

        Handler.face = face
        return Handler

    # --- verbs (called by the handler; all store access under the store lock) ------------

    def do_list(self, route: _Route, query: Mapping[str, str]) -> bytes:
        info = route.info
        labels = LabelSelector.parse(query.get("labelSelector"))
        fields = FieldSelector.parse(query.get("fieldSelector"), kind=info.kind)
        self.count("list", info.kind, route.namespace)
        with self.store.lock:
            items = [
                self.list_item(info, o)
                for o in self.store.list(info.kind, route.namespace)
                if labels.matches(o) and fields.matches(o)
            ]
            body = {
                "kind": f"{info.kind}List",
                "apiVersion": info.api_version,
                "metadata": {"resourceVersion": str(self.store.resource_version)},
                "items": items,
            }
            return json.dumps(body, separators=(",", ":")).encode()

    def do_get(self, route: _Route) -> bytes:
        self.count("get", route.info.kind, route.namespace, route.name or "")
        with self.store.lock:
            obj = self._get(route)
            return json.dumps(obj, separators=(",", ":")).encode()

    def _get(self, route: _Route) -> Obj:
        try:
            return self.store.get(route.info.kind, route.namespace, route.name or "")
        except StoreError:
            raise ApiError(
                404, "NotFound", f'{route.resource} "{route.name}" not found', route.details()
            ) from None

    def do_create(self, route: _Route, body: Any) -> bytes:
        info = route.info
        if route.name is not None:
            raise ApiError(405, "MethodNotAllowed", "POST is only allowed on collections")
        obj = self._object_body(route, body)
        meta = obj["metadata"]
        self.count("create", info.kind, route.namespace, str(meta.get("name") or ""))
        if not meta.get("name") and meta.get("generateName"):
            suffix = "".join(
                self._rng.choice(string.ascii_lowercase + string.digits) for _ in range(5)
            )
            meta["name"] = f"{meta['generateName']}{suffix}"
        if not meta.get("name"):
            raise ApiError(
                422,
                "Invalid",
                f"{info.kind} is invalid: metadata.name: Required value",
                {"kind": info.plural},
            )
        for field in ("resourceVersion", "uid", "deletionTimestamp", "creationTimestamp"):
            meta.pop(field, None)
        if info.kind == "Pod":
            obj["status"] = {"phase": "Pending"}
        elif info.kind in discovery.STATUS_SUBRESOURCE:
            obj.pop("status", None)
        with self.store.lock:
            if info.kind == "Pod":
                self._admit_priority(obj)
            try:
                created = self.store.create(obj)
            except StoreError as exc:
                raise self._store_error(exc, route, meta["name"]) from None
            return json.dumps(created, separators=(",", ":")).encode()

    def _admit_priority(self, pod: Obj) -> None:
        spec = pod.setdefault("spec", {})
        name = spec.get("priorityClassName")
        if not name:
            return
        pc = self.store.find("PriorityClass", None, name)
        if pc is None:
            if self.strict_priority_classes:
                raise ApiError(
                    403,
                    "Forbidden",
                    f'pods "{pod["metadata"]["name"]}" is forbidden: no PriorityClass with name '
                    f"{name} was found",
                    {"name": pod["metadata"]["name"], "kind": "pods"},
                )
            return
        spec["priority"] = int(pc.get("value", 0))
        spec["preemptionPolicy"] = pc.get("preemptionPolicy") or "PreemptLowerPriority"

    def _object_body(self, route: _Route, body: Any) -> Obj:
        info = route.info
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", f"the body must be a {info.kind} object")
        obj = copy.deepcopy(body)
        obj["kind"] = info.kind
        obj["apiVersion"] = info.api_version
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "BadRequest", "metadata must be an object")
        if info.namespaced:
            given = meta.get("namespace")
            if given and given != route.namespace:
                raise ApiError(
                    400,
                    "BadRequest",
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request",
                )
            meta["namespace"] = route.namespace
        else:
            meta.pop("namespace", None)
        return obj

    def do_replace(self, route: _Route, body: Any) -> bytes:
        info = route.info
        self.count("update", info.kind, route.namespace, route.name or "")
        obj = self._object_body(route, body)
        if obj["metadata"].get("name") != route.name:
            raise ApiError(400, "BadRequest", "the name of the object does not match the URL")
        rv = obj["metadata"].get("resourceVersion") or None
        with self.store.lock:
            current = self._get(route)
            if rv is not None and rv != current["metadata"].get("resourceVersion"):
                raise self._conflict(route)
            if route.subresource == "status":
                final = copy.deepcopy(current)
                final["status"] = obj.get("status")
            else:
                final = obj
                if info.kind in discovery.STATUS_SUBRESOURCE and "status" in current:
                    final["status"] = copy.deepcopy(current["status"])
            return self._commit(route, current, final, verb="update")

    def do_patch(self, route: _Route, body: Any, content_type: str) -> bytes:
        info = route.info
        self.count("patch", info.kind, route.namespace, route.name or "")
        kind = content_type.split(";")[0].strip()
        with self.store.lock:
            current = self._get(route)
            try:
                if kind == "application/json-patch+json":
                    patched = json_patch(current, body)
                elif kind in (
                    "application/merge-patch+json",
                    "application/strategic-merge-patch+json",
                ):
                    if not isinstance(body, dict):
                        raise PatchError("a merge patch must be a JSON object")
                    rv = (body.get("metadata") or {}).get("resourceVersion")
                    if rv is not None and rv != current["metadata"].get("resourceVersion"):
                        raise self._conflict(route)
                    patched = merge_patch(current, body)
                else:
                    raise ApiError(
                        415,
                        "UnsupportedMediaType",
                        f"the body of the request was in an unknown format - "
                        f"accepted media types include: application/json-patch+json, "
                        f"application/merge-patch+json, "
                        f"application/strategic-merge-patch+json (got {kind!r})",
                    )
            except PatchError as exc:
                raise ApiError(
                    422 if "test failed" in str(exc) else 400,
                    "Invalid" if "test failed" in str(exc) else "BadRequest",
                    str(exc),
                ) from None
            if not isinstance(patched, dict):
                raise ApiError(400, "BadRequest", "the patched object is not an object")
            if route.subresource == "status":
                final = copy.deepcopy(current)
                final["status"] = patched.get("status")
            else:
                final = patched
                if info.kind in discovery.STATUS_SUBRESOURCE:
                    final["status"] = copy.deepcopy(current.get("status"))
                    if final["status"] is None:
                        final.pop("status")
            return self._commit(route, current, final, verb="patch")

    def _commit(self, route: _Route, current: Obj, final: Obj, *, verb: str) -> bytes:
        """Write ``final`` over ``current`` keeping identity fields; one MODIFIED event."""
        meta = final.setdefault("metadata", {})
        for key in (
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "resourceVersion",
            "generation",
        ):
            if key in current["metadata"]:
                meta[key] = current["metadata"][key]
            else:
                meta.pop(key, None)
        final["kind"], final["apiVersion"] = current["kind"], current["apiVersion"]
        if final.get("spec") != current.get("spec"):
            meta["generation"] = int(current["metadata"].get("generation", 1)) + 1
        snapshot = copy.deepcopy(final)

        def change(obj: Obj) -> None:
            obj.clear()
            obj.update(snapshot)

        try:
            obj = self.store.mutate(
                route.info.kind, route.namespace, route.name or "", change, verb=verb
            )
        except StoreError as exc:
            raise self._store_error(exc, route, route.name or "") from None
        return json.dumps(obj, separators=(",", ":")).encode()

    def do_delete(self, route: _Route, body: Any, query: Mapping[str, str]) -> bytes:
        info = route.info
        self.count("delete", info.kind, route.namespace, route.name or "")
        if route.name is None or route.subresource is not None:
            raise ApiError(405, "MethodNotAllowed", "DELETE of collections is not supported here")
        options = body if isinstance(body, dict) else {}
        pre = options.get("preconditions") or {}
        grace = options.get("gracePeriodSeconds")
        if grace is None and "gracePeriodSeconds" in query:
            try:
                grace = int(query["gracePeriodSeconds"])
            except ValueError:
                raise ApiError(400, "BadRequest", "gracePeriodSeconds must be an integer") from None
        with self.store.lock:
            current = self._get(route)
            rv = pre.get("resourceVersion")
            if rv is not None and rv != current["metadata"].get("resourceVersion"):
                raise ApiError(
                    409,
                    "Conflict",
                    f"Precondition failed: ResourceVersion in precondition: {rv}, "
                    f"ResourceVersion in object meta: {current['metadata'].get('resourceVersion')}",
                    route.details(),
                )
            try:
                obj = self.store.delete(
                    info.kind,
                    route.namespace,
                    route.name,
                    uid=pre.get("uid"),
                    grace_period_seconds=grace,
                )
            except StoreError as exc:
                raise self._store_error(exc, route, route.name) from None
            return json.dumps(obj, separators=(",", ":")).encode()

    def _conflict(self, route: _Route) -> ApiError:
        return ApiError(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {route.resource} "{route.name}": the object has '
            "been modified; please apply your changes to the latest version and try again",
            route.details(),
        )

    def _store_error(self, exc: StoreError, route: _Route, name: str) -> ApiError:
        details = route.details() | {"name": name}
        if exc.reason == "NotFound":
            return ApiError(404, "NotFound", f'{route.resource} "{name}" not found', details)
        if exc.reason == "AlreadyExists":
            return ApiError(
                409, "AlreadyExists", f'{route.resource} "{name}" already exists', details
            )
        return ApiError(exc.code, exc.reason, str(exc), details)

    # --- watch ----------------------------------------------------------------------------

    def watch_events(
        self,
        route: _Route,
        query: Mapping[str, str],
        write: Callable[[Obj | None], None],
    ) -> None:
        """Stream watch events through ``write`` until timeout, drop or stop.

        ``write(None)`` sends the response headers: done as soon as the request is known to
        be valid, as the API server does, so an idle watch is an open 200 stream."""
        info = route.info
        labels = LabelSelector.parse(query.get("labelSelector"))
        fields = FieldSelector.parse(query.get("fieldSelector"), kind=info.kind)
        bookmarks = query.get("allowWatchBookmarks") in _TRUE
        try:
            timeout = float(query.get("timeoutSeconds") or MAX_WATCH_SECONDS)
        except ValueError:
            raise ApiError(400, "BadRequest", "timeoutSeconds must be a number") from None
        deadline = self.monotonic() + min(max(timeout, 0.0), MAX_WATCH_SECONDS)
        generation = self._drop_generation
        self.count("watch", info.kind, route.namespace)

        def selected(obj: Mapping[str, Any]) -> bool:
            ns = route.namespace
            return (
                (ns is None or obj["metadata"].get("namespace") == ns)
                and labels.matches(obj)
                and fields.matches(obj)
            )

        def key(obj: Mapping[str, Any]) -> tuple[str, str]:
            return obj["metadata"].get("namespace", ""), obj["metadata"]["name"]

        start = query.get("resourceVersion") or ""
        seen: set[tuple[str, str]] = set()
        pending: list[Obj] = []
        with self.store.lock:
            current = [o for o in self.store.list(info.kind, route.namespace) if selected(o)]
            if start in ("", "0"):
                seen.update(key(o) for o in current)
                rv = self.store.resource_version
                pending = [{"type": "ADDED", "object": copy.deepcopy(o)} for o in current]
            else:
                try:
                    rv = int(start)
                except ValueError:
                    raise ApiError(
                        400, "BadRequest", f"invalid resourceVersion {start!r}"
                    ) from None
                try:
                    # (typed loosely: the store's own ``list`` method shadows the builtin)
                    later: Sequence[WatchEvent] = self.store.events_since(rv, info.kind)
                except Gone as exc:
                    write(self._gone_event(exc))
                    return
                # What the client holds at ``rv``: objects unchanged since then that match
                # now, plus every object whose first later event is not ADDED (it existed
                # at rv; assumed to have matched, so leaving the selector sends DELETED,
                # which a client ignores for an object it does not hold).
                first: dict[tuple[str, str], str] = {}
                for change in later:
                    first.setdefault(key(change.object), change.type)
                seen.update(key(o) for o in current if key(o) not in first)
                seen.update(k for k, t in first.items() if t != "ADDED")
        write(None)
        last_bookmark = self.monotonic()
        while True:
            for out in pending:
                write(out)
            pending = []
            if self._stopping or generation != self._drop_generation:
                raise ConnectionAbortedError("watch dropped")
            now = self.monotonic()
            if now >= deadline:
                return
            if bookmarks and now - last_bookmark >= self.bookmark_interval:
                write(
                    {
                        "type": "BOOKMARK",
                        "object": {
                            "kind": info.kind,
                            "apiVersion": info.api_version,
                            "metadata": {"resourceVersion": str(rv)},
                        },
                    }
                )
                last_bookmark = now
            with self.store.changed:
                try:
                    events: Sequence[WatchEvent] = self.store.events_since(rv, info.kind)
                except Gone as exc:
                    pending = [self._gone_event(exc)]
                    events = []
                if not events and not pending:
                    # Nothing of this kind up to now: a bookmark may say so.
                    rv = self.store.resource_version
                    wait = deadline - now
                    if bookmarks:
                        wait = min(wait, self.bookmark_interval - (now - last_bookmark))
                    self.store.changed.wait(max(0.0, min(wait, 1.0)))
                    continue
                rv = self.store.resource_version
            if pending:  # 410 while streaming: report it and end the watch
                write(pending[0])
                return
            for event in events:
                obj = event.object
                k = key(obj)
                if selected(obj):
                    if event.type == "DELETED":
                        seen.discard(k)
                        pending.append({"type": "DELETED", "object": obj})
                    else:
                        kind = "MODIFIED" if k in seen else "ADDED"
                        seen.add(k)
                        pending.append({"type": kind, "object": obj})
                elif k in seen:
                    seen.discard(k)
                    pending.append({"type": "DELETED", "object": obj})

    @staticmethod
    def _gone_event(exc: Exception) -> Obj:
        return {"type": "ERROR", "object": ApiError(410, "Expired", str(exc)).status()}

    def register_watch(self, sock: socket.socket, add: bool) -> None:
        with self._watches_changed:
            if add:
                self._watch_sockets.add(sock)
            else:
                self._watch_sockets.discard(sock)
            self._watches_changed.notify_all()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog (5) overflows when a dozen informers connect at once and the
    # kernel drops SYNs, which clients retry only after a second.
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client closing its keep-alive connection is routine; anything else is logged.
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
            return
        log.exception("k8s-face: error while serving %s", client_address)


class _Handler(BaseHTTPRequestHandler):
    face: K8sFace
    protocol_version = "HTTP/1.1"
    server_version = "arc-sim-apiserver/1"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("k8s-face %s", format % args)

    # --- plumbing -------------------------------------------------------------------------

    def _send(self, code: int, data: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, err: ApiError) -> None:
        self._send(err.code, json.dumps(err.status()).encode())

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ApiError(413, "RequestEntityTooLarge", f"request body over {MAX_BODY} bytes")
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ApiError(400, "BadRequest", f"the request body is not JSON: {exc}") from None

    def _dispatch(self, method: str) -> None:
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        face = self.face
        try:
            body = self._body() if method in ("POST", "PUT", "PATCH", "DELETE") else None
            route = face.route(parts.path)
            if not isinstance(route, _Route):
                if method != "GET":
                    raise ApiError(405, "MethodNotAllowed", "discovery is read-only")
                self._send(200, json.dumps(route).encode())
                return
            if method == "GET":
                if route.name is None:
                    if query.get("watch") in _TRUE:
                        self._watch(route, query)
                        return
                    self._send(200, face.do_list(route, query))
                else:
                    self._send(200, face.do_get(route))
            elif method == "POST":
                self._send(201, face.do_create(route, body))
            elif method == "PUT":
                self._send(200, face.do_replace(route, body))
            elif method == "PATCH":
                if route.name is None:
                    raise ApiError(405, "MethodNotAllowed", "PATCH needs an object name")
                self._send(200, face.do_patch(route, body, self.headers.get("Content-Type", "")))
            elif method == "DELETE":
                self._send(200, face.do_delete(route, body, query))
        except ApiError as err:
            self._error(err)
        except SelectorError as err:
            self._error(ApiError(400, "BadRequest", str(err)))
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True

    def _watch(self, route: _Route, query: Mapping[str, str]) -> None:
        face = self.face
        headers_sent = False

        def write(event: Obj | None) -> None:
            nonlocal headers_sent
            if not headers_sent:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                headers_sent = True
            if event is None:
                return
            line = json.dumps(event, separators=(",", ":")).encode() + b"\n"
            self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
            self.wfile.flush()

        face.register_watch(self.connection, True)
        try:
            try:
                face.watch_events(route, query, write)
            except ApiError as err:
                if headers_sent:
                    raise ConnectionAbortedError(err.message) from None
                self._error(err)
                return
            if not headers_sent:
                write(None)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            self.close_connection = True
        except (ConnectionAbortedError, OSError):
            # Dropped on purpose (fault hook / stop) or by the client: no final chunk.
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
        finally:
            face.register_watch(self.connection, False)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")
