"""An in-memory Kubernetes object store with the API server's semantics that matter here.

Objects are plain dicts in API JSON form (``apiVersion``, ``kind``, ``metadata``, ``spec``,
``status``). The store assigns ``uid``, ``resourceVersion`` and ``creationTimestamp``;
honours uid / resourceVersion preconditions; deletes pods bound to a node and objects with
finalizers gracefully (``deletionTimestamp`` first, removal later); and keeps a bounded
history of watch events so an HTTP face can serve ``?watch=1&resourceVersion=N`` and answer
410 Gone when N has been compacted away.

Controllers of the simulated world subscribe to changes with plain callbacks (synchronous,
in commit order). Returned objects are the stored ones: treat them as read-only and change
them through :meth:`ObjectStore.mutate` / :meth:`ObjectStore.replace`.

Thread safety: every public method takes ``self.lock`` (re-entrant), so the real-time HTTP
faces and the world's driver thread can share one store.
"""

from __future__ import annotations

import builtins
import copy
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from simulator.engine.validation import pod_problems

Obj = dict[str, Any]
Key = tuple[str, str, str]  # (kind, namespace or "", name)


@dataclass(frozen=True)
class KindInfo:
    kind: str
    plural: str
    group: str  # "" for core
    version: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


_ARC = "actions.github.com"
_RBAC = "rbac.authorization.k8s.io"

#: Every kind the store keeps, one line each (other parts of the project add kinds here).
KINDS: dict[str, KindInfo] = {
    k.kind: k
    for k in (
        KindInfo("Pod", "pods", "", "v1", True),
        KindInfo("Node", "nodes", "", "v1", False),
        KindInfo("Event", "events", "", "v1", True),
        KindInfo("PriorityClass", "priorityclasses", "scheduling.k8s.io", "v1", False),
        KindInfo("AutoscalingRunnerSet", "autoscalingrunnersets", _ARC, "v1alpha1", True),
        KindInfo("EphemeralRunnerSet", "ephemeralrunnersets", _ARC, "v1alpha1", True),
        KindInfo("EphemeralRunner", "ephemeralrunners", _ARC, "v1alpha1", True),
        KindInfo("NodePool", "nodepools", "karpenter.sh", "v1", False),
        KindInfo("NodeClaim", "nodeclaims", "karpenter.sh", "v1", False),
        KindInfo("ServiceAccount", "serviceaccounts", "", "v1", True),
        KindInfo("Secret", "secrets", "", "v1", True),
        KindInfo("ConfigMap", "configmaps", "", "v1", True),
        KindInfo("Role", "roles", _RBAC, "v1", True),
        KindInfo("RoleBinding", "rolebindings", _RBAC, "v1", True),
        KindInfo("ClusterRole", "clusterroles", _RBAC, "v1", False),
        KindInfo("ClusterRoleBinding", "clusterrolebindings", _RBAC, "v1", False),
        KindInfo("Lease", "leases", "coordination.k8s.io", "v1", True),
        # Stored and served only (verify reads them); their admission plugins (LimitRanger,
        # ResourceQuota) are not modelled.
        KindInfo("LimitRange", "limitranges", "", "v1", True),
        KindInfo("ResourceQuota", "resourcequotas", "", "v1", True),
        KindInfo("PodDisruptionBudget", "poddisruptionbudgets", "policy", "v1", True),
        # prometheus-operator's CRDs: stored and served (the install's dry run; quickstart).
        KindInfo("PodMonitor", "podmonitors", "monitoring.coreos.com", "v1", True),
        KindInfo("PrometheusRule", "prometheusrules", "monitoring.coreos.com", "v1", True),
    )
}


class StoreError(Exception):
    """Base of API-like errors; ``code`` and ``reason`` follow metav1.Status."""

    code = 500
    reason = "InternalError"


class NotFound(StoreError):
    code = 404
    reason = "NotFound"


class AlreadyExists(StoreError):
    code = 409
    reason = "AlreadyExists"


class Conflict(StoreError):
    code = 409
    reason = "Conflict"


class Gone(StoreError):
    code = 410
    reason = "Expired"


class Invalid(StoreError):
    code = 422
    reason = "Invalid"


@dataclass(frozen=True)
class WatchEvent:
    resource_version: int
    type: str  # ADDED | MODIFIED | DELETED
    kind: str
    object: Obj  # a deep copy taken at commit time


Listener = Callable[[str, Obj], None]


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


class ObjectStore:
    def __init__(
        self,
        clock: Callable[[], float],
        *,
        history: int = 0,
        uid_prefix: str = "00000000",
    ) -> None:
        """``history`` > 0 keeps that many watch events (for an HTTP face); 0 keeps none."""
        self._clock = clock
        self._objects: dict[str, dict[tuple[str, str], Obj]] = {k: {} for k in KINDS}
        self._rv = 0
        self._uid_seq = 0
        self._uid_prefix = uid_prefix
        self._listeners: list[tuple[frozenset[str] | None, Listener]] = []
        self._history: deque[WatchEvent] = deque(maxlen=history or 1)
        self._keep_history = history > 0
        self._oldest_rv = 0
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        #: Write counters by verb, for the "API writes" figures.
        self.writes: dict[str, int] = {"create": 0, "update": 0, "patch": 0, "delete": 0}

    # --- reading -----------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        return self._rv

    def get(self, kind: str, namespace: str | None, name: str) -> Obj:
        with self.lock:
            obj = self._objects[kind].get((namespace or "", name))
            if obj is None:
                raise NotFound(f'{kind} "{name}" not found')
            return obj

    def find(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        with self.lock:
            return self._objects[kind].get((namespace or "", name))

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> list[Obj]:
        """Objects of a kind, optionally in one namespace and matching all ``labels``."""
        with self.lock:
            objs: Iterable[Obj] = self._objects[kind].values()
            if namespace:
                objs = (o for o in objs if o["metadata"].get("namespace") == namespace)
            if labels:
                items = tuple(labels.items())
                objs = (
                    o
                    for o in objs
                    if all(o["metadata"].get("labels", {}).get(k) == v for k, v in items)
                )
            return list(objs)

    def count(self, kind: str) -> int:
        return len(self._objects[kind])

    # --- writing -----------------------------------------------------------------------

    def create(self, obj: Obj) -> Obj:
        with self.lock:
            info = KINDS[obj["kind"]]
            meta = obj.setdefault("metadata", {})
            name = meta.get("name")
            if not name:
                raise Invalid(f"{info.kind}: metadata.name is required")
            ns = meta.get("namespace", "") if info.namespaced else ""
            if info.namespaced and not ns:
                raise Invalid(f"{info.kind} {name}: metadata.namespace is required")
            table = self._objects[info.kind]
            if (ns, name) in table:
                raise AlreadyExists(f'{info.kind} "{name}" already exists')
            if info.kind == "Pod":
                problems = pod_problems(obj)
                if problems:
                    raise Invalid(f'Pod "{name}" is invalid: ' + ", ".join(problems))
            self._uid_seq += 1
            obj.setdefault("apiVersion", info.api_version)
            meta["uid"] = f"{self._uid_prefix}-0000-4000-8000-{self._uid_seq:012x}"
            meta.setdefault("creationTimestamp", iso(self._clock()))
            meta.setdefault("labels", {})
            meta["generation"] = 1
            table[(ns, name)] = obj
            self.writes["create"] += 1
            self._commit("ADDED", obj)
            return obj

    def mutate(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        change: Callable[[Obj], None],
        *,
        verb: str = "patch",
        uid: str | None = None,
    ) -> Obj:
        """Apply ``change`` in place and publish MODIFIED (one resourceVersion bump)."""
        with self.lock:
            obj = self.get(kind, namespace, name)
            if uid is not None and obj["metadata"]["uid"] != uid:
                raise Conflict(f'{kind} "{name}": uid precondition failed')
            change(obj)
            self.writes[verb] += 1
            meta = obj["metadata"]
            released = meta.get("deletionTimestamp") and not meta.get("finalizers")
            if released and self._graceful(obj) is None:
                self._remove(kind, obj)
                return obj
            self._commit("MODIFIED", obj)
            return obj

    def replace(self, obj: Obj, *, resource_version: str | None = None) -> Obj:
        """PUT semantics with an optional optimistic-concurrency precondition."""
        with self.lock:
            meta = obj["metadata"]
            current = self.get(obj["kind"], meta.get("namespace"), meta["name"])
            if (
                resource_version is not None
                and resource_version != current["metadata"]["resourceVersion"]
            ):
                raise Conflict(f'{obj["kind"]} "{meta["name"]}": the object has been modified')
            for keep in ("uid", "creationTimestamp", "deletionTimestamp"):
                if keep in current["metadata"]:
                    meta[keep] = current["metadata"][keep]
            current.clear()
            current.update(obj)
            self.writes["update"] += 1
            self._commit("MODIFIED", current)
            return current

    def delete(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        grace_period_seconds: float | None = None,
    ) -> Obj:
        """DELETE semantics: graceful for bound pods and objects with finalizers."""
        with self.lock:
            obj = self.get(kind, namespace, name)
            meta = obj["metadata"]
            if uid is not None and meta["uid"] != uid:
                raise Conflict(
                    f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
                    f"{meta['uid']}"
                )
            self.writes["delete"] += 1
            grace = self._graceful(obj, grace_period_seconds)
            if meta.get("finalizers") or grace:
                if not meta.get("deletionTimestamp"):
                    meta["deletionTimestamp"] = iso(self._clock())
                    if grace is not None:
                        meta["deletionGracePeriodSeconds"] = int(grace)
                    self._commit("MODIFIED", obj)
                return obj
            self._remove(kind, obj)
            return obj

    def remove(self, kind: str, namespace: str | None, name: str) -> None:
        """Final removal (kubelet finished a graceful delete, finalizers cleared)."""
        with self.lock:
            obj = self._objects[kind].get((namespace or "", name))
            if obj is not None:
                self._remove(kind, obj)

    # --- watching ----------------------------------------------------------------------

    def subscribe(self, listener: Listener, kinds: Iterable[str] | None = None) -> None:
        """Call ``listener(event_type, obj)`` after every change (of ``kinds``)."""
        self._listeners.append((frozenset(kinds) if kinds else None, listener))

    def events_since(self, resource_version: int, kind: str) -> builtins.list[WatchEvent]:
        """Watch events after ``resource_version``; :class:`Gone` if compacted away."""
        with self.lock:
            if not self._keep_history:
                raise Gone("watch history is disabled in this store")
            if resource_version < self._oldest_rv:
                raise Gone(f"too old resource version: {resource_version} ({self._oldest_rv})")
            return [
                e for e in self._history if e.resource_version > resource_version and e.kind == kind
            ]

    def compact(self) -> None:
        """Drop all watch history (forces 410 Gone for older resourceVersions)."""
        with self.lock:
            self._history.clear()
            self._oldest_rv = self._rv

    # --- internals ---------------------------------------------------------------------

    def _graceful(self, obj: Obj, requested: float | None = None) -> float | None:
        """Grace period of a pod bound to a node (None: remove at once)."""
        if obj["kind"] != "Pod" or not obj.get("spec", {}).get("nodeName"):
            return None
        if obj.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            return None
        grace = requested
        if grace is None:
            grace = obj["spec"].get("terminationGracePeriodSeconds", 30)
        return grace if grace and grace > 0 else None

    def _remove(self, kind: str, obj: Obj) -> None:
        meta = obj["metadata"]
        namespace = meta.get("namespace", "") if KINDS[kind].namespaced else ""
        del self._objects[kind][(namespace, meta["name"])]
        self._commit("DELETED", obj)

    def _commit(self, event_type: str, obj: Obj) -> None:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        if self._keep_history:
            if len(self._history) == self._history.maxlen:
                self._oldest_rv = self._history[0].resource_version
            self._history.append(WatchEvent(self._rv, event_type, obj["kind"], copy.deepcopy(obj)))
            self.changed.notify_all()
        kind = obj["kind"]
        for kinds, listener in self._listeners:
            if kinds is None or kind in kinds:
                listener(event_type, obj)
