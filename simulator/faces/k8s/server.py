"""A Kubernetes-API HTTP face over the simulated world's ObjectStore, on loopback.

It speaks the REST conventions the real clients use (the kubernetes Python client, kubectl,
the runner container hooks' @kubernetes/client-node). Routes are one table,
:data:`.routing.ROUTES`; each concern has its module:

- :mod:`.discovery` and :mod:`.openapi`: ``/api``, ``/apis``, ``/version``, ``/openapi/v3``
  (enough for ``kubectl apply`` with validation);
- :mod:`.resources`: list (``labelSelector``, ``fieldSelector``; ``limit``/``continue``
  ignored, which the API allows; pods as a Table for kubectl, :mod:`.table`), get, create
  (``generateName``; pods start ``Pending``), PUT, PATCH (merge, strategic-as-merge, JSON
  patch, server-side apply in :mod:`.apply`), DELETE (preconditions, grace periods);
  ``fieldValidation`` against :mod:`.schemas`; admission and validation in :mod:`.admission`;
- :mod:`.watch`: ``?watch=1`` streams, 410 for compacted versions, "Too large resource
  version" for future ones, watch-list (``sendInitialEvents``);
- :mod:`.authz`: bearer tokens mapped to ServiceAccounts (``tokens``), RBAC over the stored
  Roles and bindings, SelfSubjectAccessReview. Without ``tokens`` everything is allowed;
- errors as ``Status`` bodies (:mod:`.errors`).

Fault hooks for tests: :meth:`K8sFace.drop_watches` cuts every open watch connection
abruptly, :meth:`K8sFace.compact` drops the watch history (older versions get 410).
Every request is counted by verb and kind in :attr:`K8sFace.calls`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any

from reconciler.clock import SYSTEM_CLOCK, Clock
from simulator.engine.store import KINDS, Gone, KindInfo, ObjectStore
from simulator.faces.k8s import authz, discovery, openapi, watch
from simulator.faces.k8s.errors import ApiError, not_found_path
from simulator.faces.k8s.http import MAX_BODY, Handler, Server
from simulator.faces.k8s.requests import Request, Response, authorize_request
from simulator.faces.k8s.resources import Resources
from simulator.faces.k8s.routing import Resolved, resolve

log = logging.getLogger(__name__)

Obj = dict[str, Any]
#: Requests remembered in ``K8sFace.request_log``.
REQUEST_LOG = 100_000
MAX_WATCH_SECONDS = watch.MAX_WATCH_SECONDS


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
        clock: Clock = SYSTEM_CLOCK,
        tokens: Mapping[str, str] | None = None,
        fresh_timeout: float = 3.0,
    ) -> None:
        """``tokens`` maps bearer tokens to ``"<namespace>/<serviceaccount>"``: requests are
        then authenticated and authorized by RBAC (401 / 403); None allows everything.
        ``fresh_timeout`` is how long a watch-list from a future resourceVersion waits
        (upstream's ``blockTimeout``; a plain watch from one just stays silent)."""
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
        self.fresh_timeout = fresh_timeout
        self.clock = clock
        self.tokens: dict[str, authz.Identity] | None = (
            None if tokens is None else {t: authz.parse_identity(i) for t, i in tokens.items()}
        )
        self.calls: Counter[str] = Counter()
        #: The latest requests as (verb, kind, namespace, name), bounded, for tests/benchmarks.
        self.request_log: deque[tuple[str, str, str, str]] = deque(maxlen=REQUEST_LOG)
        self._calls_lock = threading.Lock()
        self.drop_generation = 0
        self.stopping = False
        self._watch_sockets: set[socket.socket] = set()
        self._sockets_lock = threading.Lock()
        self._watches_changed = threading.Condition(self._sockets_lock)
        self.resources = Resources(
            store,
            self.count,
            strict_priority_classes=strict_priority_classes,
            clock=clock,
        )
        self._handlers: dict[str, Callable[[Request], Response]] = {
            "version": self._version,
            "api_versions": lambda r: Response.json(discovery.api_versions(self.netloc)),
            "api_groups": lambda r: Response.json(discovery.api_group_list(self._groups())),
            "api_group": self._api_group,
            "resource_list": self._resource_list,
            "openapi_index": lambda r: Response.json(openapi.index(self._served())),
            "openapi_doc": self._openapi_doc,
            "access_review": self._access_review,
            "subject_access_review": self._subject_access_review,
            "list": lambda r: Response(200, self.resources.list(r.route_, r.query, r.accept)),
            "get": lambda r: Response(200, self.resources.get(r.route_, r.query, r.accept)),
            "create": lambda r: Response(201, self.resources.create(r.route_, r.body, r.query)),
            "replace": lambda r: Response(200, self.resources.replace(r.route_, r.body, r.query)),
            "patch": lambda r: Response(
                *self.resources.patch(r.route_, r.raw, r.body, r.content_type, r.query)
            ),
            "delete": lambda r: Response(200, self.resources.delete(r.route_, r.body, r.query)),
            "watch": self._watch,
        }
        self._server = Server((host, port), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://{self.netloc}"

    @property
    def netloc(self) -> str:
        host, port = self._server.server_address[:2]
        text = host.decode() if isinstance(host, bytes) else host
        return f"{text}:{port}"

    @property
    def strict_priority_classes(self) -> bool:
        return self.resources.strict_priority_classes

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
        self.stopping = True
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
            self.drop_generation += 1
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

    def register_watch(self, sock: socket.socket, add: bool) -> None:
        with self._watches_changed:
            if add:
                self._watch_sockets.add(sock)
            else:
                self._watch_sockets.discard(sock)
            self._watches_changed.notify_all()

    # --- accounting -----------------------------------------------------------------------

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

    # --- fixed routes ---------------------------------------------------------------------

    def _served(self) -> list[KindInfo]:
        return [k for k in KINDS.values() if k.group not in self.absent_groups]

    def _groups(self) -> set[tuple[str, str]]:
        groups = {(k.group, k.version) for k in self._served() if k.group}
        return groups | {("authorization.k8s.io", "v1")}

    def _version(self, request: Request) -> Response:
        return Response.json(
            {
                "major": "1",
                "minor": "32",
                "gitVersion": "v1.32.0-arc-sim",
                "platform": "linux/amd64",
            }
        )

    def _api_group(self, request: Request) -> Response:
        group = request.params["group"]
        versions = sorted({v for g, v in self._groups() if g == group})
        if not versions:
            raise not_found_path()
        return Response.json(discovery.api_group(group, versions[0]))

    def _resource_list(self, request: Request) -> Response:
        group = request.params.get("group", "")
        version = request.params["version"]
        if group == "authorization.k8s.io" and version == "v1":
            return Response.json(discovery.access_review_list())
        kinds = [k for k in self._served() if (k.group, k.version) == (group, version)]
        if not kinds:
            raise not_found_path()
        return Response.json(
            discovery.resource_list(f"{group}/{version}" if group else version, kinds)
        )

    def _openapi_doc(self, request: Request) -> Response:
        group = request.params.get("group", "")
        version = request.params["version"]
        kinds = [k for k in self._served() if (k.group, k.version) == (group, version)]
        if not kinds:
            raise not_found_path()
        return Response.json(openapi.group_version_doc(kinds))

    def _access_review(self, request: Request) -> Response:
        spec = (request.body or {}).get("spec") if isinstance(request.body, dict) else None
        if not isinstance(spec, dict) or bool(spec.get("resourceAttributes")) == bool(
            spec.get("nonResourceAttributes")
        ):
            raise ApiError(
                422,
                "Invalid",
                'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec: Invalid '
                "value: exactly one of nonResourceAttributes or resourceAttributes must be "
                "specified",
            )
        self.count("create", "SelfSubjectAccessReview")
        return Response(
            201, json.dumps(authz.review(self.store, request.identity, request.body)).encode()
        )

    def _subject_access_review(self, request: Request) -> Response:
        """What RBAC lets *another* subject do (``kubectl auth can-i --as``): only
        ServiceAccount users are modelled, as in :mod:`.authz`."""
        spec = (request.body or {}).get("spec") if isinstance(request.body, dict) else None
        if not isinstance(spec, dict) or not spec.get("resourceAttributes"):
            raise ApiError(
                422,
                "Invalid",
                'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: '
                "Required value (only resource requests are modelled)",
            )
        self.count("create", "SubjectAccessReview")
        return Response(201, json.dumps(authz.subject_review(self.store, request.body)).encode())

    def _watch(self, request: Request) -> Response:
        if request.watch_writer is None:
            raise ApiError(400, "BadRequest", "a watch needs a streaming connection")
        watch.stream(self, request.route_, request.query, request.watch_writer)
        return Response(200, b"")

    # --- dispatch -------------------------------------------------------------------------

    def handle(self, request: Request) -> Response:
        """Authenticate, resolve through the route table, authorize, run the handler."""
        if self.tokens is not None:
            request.identity = self.tokens.get(request.bearer_token or "")
            if request.identity is None:
                raise ApiError(401, "Unauthorized", "Unauthorized")
        resolved: Resolved = resolve(
            request.method, request.path, request.query, KINDS.values(), self.absent_groups
        )
        request.params = resolved.params
        request.route = resolved.route
        if request.identity is not None:
            authorize_request(self.store, request, resolved.handler)
        return self._handlers[resolved.handler](request)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        face = self

        class FaceHandler(Handler):
            pass

        FaceHandler.face = face
        return FaceHandler


__all__ = ["MAX_BODY", "MAX_WATCH_SECONDS", "K8sFace"]
