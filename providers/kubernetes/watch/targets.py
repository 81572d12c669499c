"""What the cache lists and watches: the API resources it knows, the list+watch targets of one
scale set (label-selected), and the real client's list call for a target."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from providers.kubernetes.observe.scale_set import ScaleSetTarget
from providers.kubernetes.pods import labels as L

Obj = dict[str, Any]


@dataclass(frozen=True)
class Resource:
    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool


RESOURCES: dict[str, Resource] = {
    r.kind: r
    for r in (
        Resource("Pod", "", "v1", "pods", True),
        Resource("Node", "", "v1", "nodes", False),
        Resource("Event", "", "v1", "events", True),
        Resource("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", False),
        Resource("ConfigMap", "", "v1", "configmaps", True),
        Resource("AutoscalingRunnerSet", L.ARC_GROUP, L.ARC_VERSION, "autoscalingrunnersets", True),
        Resource("EphemeralRunnerSet", L.ARC_GROUP, L.ARC_VERSION, "ephemeralrunnersets", True),
        Resource("EphemeralRunner", L.ARC_GROUP, L.ARC_VERSION, "ephemeralrunners", True),
        Resource("NodePool", L.KARPENTER_GROUP, L.KARPENTER_VERSION, "nodepools", False),
        Resource("NodeClaim", L.KARPENTER_GROUP, L.KARPENTER_VERSION, "nodeclaims", False),
    )
}


class CacheError(RuntimeError):
    """The cache was asked for something it cannot do (unknown kind, bad target)."""


@dataclass(frozen=True)
class WatchTarget:
    """One list+watch stream: a kind, optionally in one namespace, optionally selected."""

    kind: str
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    #: Tolerated when the API answers 404/403 on the first list (CRD absent, no RBAC).
    optional: bool = False

    def selects(self, obj: Mapping[str, Any]) -> bool:
        """Whether a LIST of this target returns ``obj``: its namespace, label selector
        (``k=v``, ``k==v``, ``k!=v``, ``k``, ``!k`` terms) and ``metadata.name`` /
        ``metadata.namespace`` field selector, as the API server matches them. Used where the
        objects are in process (the simulated world's view of its store)."""
        meta = obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        labels = meta.get("labels") or {}
        return all(_label_term(term, labels) for term in _terms(self.label_selector)) and all(
            _field_term(term, meta) for term in _terms(self.field_selector)
        )

    @property
    def key(self) -> str:
        parts = [self.kind, self.namespace or "*"]
        if self.label_selector:
            parts.append(f"l:{self.label_selector}")
        if self.field_selector:
            parts.append(f"f:{self.field_selector}")
        return "/".join(parts)


def _terms(selector: str | None) -> list[str]:
    return [term.strip() for term in (selector or "").split(",") if term.strip()]


def _label_term(term: str, labels: Mapping[str, str]) -> bool:
    for op in ("!=", "==", "="):
        if op in term:
            key, value = (part.strip() for part in term.split(op, 1))
            return (labels.get(key) != value) if op == "!=" else (labels.get(key) == value)
    if term.startswith("!"):
        return term[1:].strip() not in labels
    if any(c in term for c in " ()"):
        raise CacheError(f"label selector term {term!r}: set-based terms are not supported here")
    return term in labels


def _field_term(term: str, meta: Mapping[str, Any]) -> bool:
    field_name, sep, value = term.partition("=")
    fields = {"metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace")}
    if not sep or field_name.strip() not in fields:
        raise CacheError(
            f"field selector term {term!r}: only metadata.name/namespace= is supported"
        )
    return fields[field_name.strip()] == value.lstrip("=").strip()


def default_targets(target: ScaleSetTarget) -> list[WatchTarget]:
    """What the reconciler of one scale set needs to see (docs/design.md#architecture),
    label-selected.

    Runner pods and workflow pods are selected by ARC's labels (``actions-ephemeral-runner``,
    ``runner-pod``) so unrelated pods of the namespace are never held in memory.
    AutoscalingRunnerSet (live maxRunners) and Karpenter kinds are optional. So are the runner
    namespace's ConfigMaps, read for the hook template only (without them, or without RBAC to
    list them, workflow placeholders are placed like the runner pod).
    """
    ns, ph_ns = target.runner_namespace, target.placeholder_namespace
    return [
        WatchTarget("Pod", ph_ns, f"{L.LABEL_SCALE_SET}={target.ers_name}"),
        WatchTarget("Pod", ns, f"{L.LABEL_EPHEMERAL_RUNNER}=True"),
        WatchTarget("Pod", ns, L.LABEL_WORKFLOW_RUNNER_POD),
        WatchTarget("Node"),
        WatchTarget("EphemeralRunnerSet", ns, field_selector=f"metadata.name={target.ers_name}"),
        WatchTarget("EphemeralRunner", ns),
        WatchTarget("PriorityClass"),
        WatchTarget("AutoscalingRunnerSet", ns, optional=True),
        WatchTarget("ConfigMap", ns, optional=True),
        WatchTarget("NodePool", optional=True),
        WatchTarget("NodeClaim", optional=True),
    ]


def list_call(api: client.ApiClient, target: WatchTarget) -> Callable[..., Any]:
    """The real client's list function for a target, with its positional args bound.

    The returned plain function has no return annotation or docstring, so
    ``kubernetes.watch.Watch`` leaves event objects as dicts (no model deserialization)
    while still turning ERROR events into ``ApiException`` (which ``deserialize=False``
    would not do in kubernetes 37).
    """
    res = RESOURCES.get(target.kind)
    if res is None:
        raise CacheError(f"unknown kind {target.kind!r}; known: {', '.join(RESOURCES)}")
    ns = target.namespace if res.namespaced else None
    core = client.CoreV1Api(api)
    func: Callable[..., Any]
    args: tuple[Any, ...] = ()
    if target.kind == "Pod":
        func, args = (
            (core.list_namespaced_pod, (ns,)) if ns else (core.list_pod_for_all_namespaces, ())
        )
    elif target.kind == "Event":
        func, args = (
            (core.list_namespaced_event, (ns,)) if ns else (core.list_event_for_all_namespaces, ())
        )
    elif target.kind == "ConfigMap":
        func, args = (
            (core.list_namespaced_config_map, (ns,))
            if ns
            else (core.list_config_map_for_all_namespaces, ())
        )
    elif target.kind == "Node":
        func = core.list_node
    elif target.kind == "PriorityClass":
        func = client.SchedulingV1Api(api).list_priority_class
    else:
        custom = client.CustomObjectsApi(api)
        if ns:
            func, args = (
                custom.list_namespaced_custom_object,
                (res.group, res.version, ns, res.plural),
            )
        else:
            func, args = custom.list_cluster_custom_object, (res.group, res.version, res.plural)

    def call(**kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return call
