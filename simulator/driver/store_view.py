"""The capacity-aware strategy's view of the simulated store, through production selectors.

- :class:`StorePlaceholderWriter`: the ``PlaceholderWriter`` port over the ObjectStore (the
  calls the production writer makes on the API server, counted).
- :class:`StoreCacheView`: the store seen as the production ``KubeCache`` sees the cluster
  (the same kinds, label selectors and kept fields), so ``build_snapshot`` reads the simulated
  world exactly as it reads a real one; it wakes the driver on relevant changes and reports
  lost placeholders at once (the fast drop path).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from providers.kubernetes import labels as L
from providers.kubernetes.placeholders import PlaceholderPodBuilder, format_expiry
from providers.kubernetes.rises import raises_capacity
from providers.kubernetes.translate import ScaleSetTarget
from reconciler.ports import PairSpec, PodRef
from simulator.engine.store import AlreadyExists, Conflict, NotFound, Obj, ObjectStore
from simulator.workload.pods import (
    PodRouter,
)


class StorePlaceholderWriter:
    """``reconciler.ports.PlaceholderWriter`` over the ObjectStore; counts its API writes.

    Idempotent like the Kubernetes writer: AlreadyExists on create and NotFound on delete are
    success; a pod already gone (or replaced by a different uid) costs no call.
    """

    def __init__(self, store: ObjectStore, builder: PlaceholderPodBuilder) -> None:
        self.store = store
        self.builder = builder
        self.writes = 0
        self.pods_created = 0

    def create_pair(self, spec: PairSpec) -> None:
        for pod in self.builder.build(spec):
            self.writes += 1
            try:
                self.store.create(pod)
                self.pods_created += 1
            except AlreadyExists:
                pass

    def delete_pods(self, pods: Sequence[PodRef]) -> None:
        for ref in pods:
            current = self.store.find("Pod", ref.namespace, ref.name)
            if current is None:
                continue
            if ref.uid is not None and current["metadata"]["uid"] != ref.uid:
                continue
            self.writes += 1
            with contextlib.suppress(NotFound, Conflict):
                self.store.delete("Pod", ref.namespace, ref.name, uid=ref.uid)

    def renew_lease(self, pods: Sequence[PodRef], expires_at: float) -> None:
        text = format_expiry(expires_at)

        def change(obj: Obj) -> None:
            obj["metadata"].setdefault("annotations", {})[L.ANNOTATION_EXPIRES_AT] = text

        for ref in pods:
            self.writes += 1
            with contextlib.suppress(NotFound, Conflict):
                self.store.mutate("Pod", ref.namespace, ref.name, change, uid=ref.uid)


#: What the production cache holds (``providers.kubernetes.watch_targets.default_targets``).
CACHED_KINDS = frozenset(
    {
        "Pod",
        "Node",
        "EphemeralRunnerSet",
        "EphemeralRunner",
        "PriorityClass",
        "AutoscalingRunnerSet",
        "NodePool",
        "NodeClaim",
    }
)
#: Kinds besides pods whose changes can wake the loop (see :func:`_object_facts`).
WATCHED_KINDS = ("Node", "AutoscalingRunnerSet")


def _condition_status(obj: Obj, cond_type: str) -> str | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == cond_type:
            return str(cond.get("status"))
    return None


#: A placeholder just created: Pending, unbound. Its ADDED event is the reconciler's own
#: write coming back; sync has nothing to do with a Pending half, so it does not wake the loop.
_FRESH_PLACEHOLDER = (False, False, False, False, False)


def _pod_facts(pod: Obj) -> tuple[Any, ...]:
    """What decisions and the ledger read from a pod; a change of anything else cannot matter.

    Placeholders: bound, Running, terminating, DisruptionTarget, ended (sync's half
    classification). Real runner and workflow pods: bound, terminating, ended (a bound pod
    holds its slot whether Pending or Running); a new runner pod matters at once (it counts
    against maxRunners headroom), an unbound workflow pod does not.
    """
    meta = pod["metadata"]
    phase = (pod.get("status") or {}).get("phase")
    bound = bool((pod.get("spec") or {}).get("nodeName"))
    deleting = bool(meta.get("deletionTimestamp"))
    ended = phase in ("Succeeded", "Failed")
    if L.LABEL_SCALE_SET in (meta.get("labels") or {}):
        return (
            bound,
            phase == "Running",
            deleting,
            _condition_status(pod, "DisruptionTarget") == "True",
            ended,
        )
    return (bound, deleting, ended)


def _counts(facts: tuple[Any, ...] | None) -> bool:
    """The pod's facts say it backs capacity in the ledger: a placeholder bound, Running and
    not leaving; a real runner or workflow pod bound and not leaving (it holds its slot)."""
    if facts is None:
        return False
    if len(facts) == len(_FRESH_PLACEHOLDER):
        bound, running, deleting, disrupted, ended = facts
        return bool(bound and running and not (deleting or disrupted or ended))
    bound, deleting, ended = facts
    return bool(bound and not (deleting or ended))


def _object_facts(obj: Obj) -> tuple[Any, ...] | None:
    """What the reconciler's decisions read from other kinds; None: nothing.

    Nodes: readiness, cordon, taints. The AutoscalingRunnerSet: the live min/max runners.
    The EphemeralRunnerSet (the scaler patches it on every poll), EphemeralRunners (they only
    feed the idle-runner warning figure), NodeClaims (explanations only), NodePools (the fit
    estimate, refreshed on its own period) and PriorityClasses do not wake the loop.
    """
    kind = obj["kind"]
    if kind == "Node":
        spec = obj.get("spec") or {}
        return (
            _condition_status(obj, "Ready"),
            bool(spec.get("unschedulable")),
            repr(spec.get("taints")),
        )
    if kind == "AutoscalingRunnerSet":
        spec = obj.get("spec") or {}
        return (spec.get("maxRunners"), spec.get("minRunners"))
    return None


class StoreCacheView:
    """The ObjectSource the reconciler reads: the store seen through the production cache's
    label selectors (``providers.kubernetes.watch_targets.default_targets``).

    Pods: this scale set's placeholders (``arc-capacity.dev/scale-set=<ers>`` in the
    placeholder namespace), ARC runner pods (``actions-ephemeral-runner=True``) and workflow
    pods (``runner-pod`` label) of the runner namespace. The other cached kinds are read from
    the store as is; kinds the cache does not watch (Events) list empty, as in production.

    ``on_change`` (the loop's trigger) is called for *relevant* changes only: a watched
    object added or removed, or a change of a fact the reconciler reads (see
    :func:`_pod_facts`, :func:`_object_facts`). The production cache notifies on every watch
    event; the debounced schedule makes the two equivalent except that irrelevant events
    (chiefly the scaler's ERS patch on every poll) do not cause extra steps here.
    ``on_rise`` is called, as by the production cache, for a pod event that can raise
    capacity (:func:`providers.kubernetes.rises.raises_capacity`).
    """

    def __init__(
        self,
        store: ObjectStore,
        router: PodRouter,
        target: ScaleSetTarget,
        on_change: Callable[[], None],
        on_lost: Callable[[], None] | None = None,
        on_rise: Callable[[], None] | None = None,
    ) -> None:
        self.store = store
        self.target = target
        self.on_change = on_change
        #: Called when a pod that backed capacity stops backing it (fast drop path).
        self.on_lost = on_lost
        #: Called for a pod event that can raise capacity (providers/kubernetes/rises.py).
        self.on_rise = on_rise
        self._pods: dict[tuple[str, str], Obj] = {}
        self._facts: dict[tuple[str, str, str], tuple[Any, ...]] = {}
        router.on_change(self._on_pod)
        store.subscribe(self._on_object, kinds=WATCHED_KINDS)

    def _selected(self, pod: Obj) -> bool:
        meta = pod["metadata"]
        labels = meta.get("labels") or {}
        namespace = meta.get("namespace")
        if namespace == self.target.placeholder_namespace and (
            labels.get(L.LABEL_SCALE_SET) == self.target.ers_name
        ):
            return True
        return namespace == self.target.runner_namespace and (
            labels.get(L.LABEL_EPHEMERAL_RUNNER) == "True" or L.LABEL_WORKFLOW_RUNNER_POD in labels
        )

    def _on_pod(self, event_type: str, pod: Obj) -> None:
        if not self._selected(pod):
            return
        meta = pod["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        counted = _counts(self._facts.get(("Pod", *key)))
        if event_type == "DELETED":
            self._pods.pop(key, None)
            self._facts.pop(("Pod", *key), None)
            if counted and self.on_lost is not None:
                self.on_lost()
            self.on_change()
            return
        self._pods[key] = pod
        facts = _pod_facts(pod)
        if counted and not _counts(facts) and self.on_lost is not None:
            self.on_lost()
        if self.on_rise is not None and raises_capacity(event_type, pod, counted_before=counted):
            self.on_rise()
        if event_type == "ADDED" and (
            facts == _FRESH_PLACEHOLDER
            or (facts == (False, False, False) and L.LABEL_WORKFLOW_RUNNER_POD in meta["labels"])
        ):
            self._facts[("Pod", *key)] = facts  # see _FRESH_PLACEHOLDER / _pod_facts
            return
        self._changed(("Pod", *key), facts)

    def _on_object(self, event_type: str, obj: Obj) -> None:
        facts = _object_facts(obj)
        if facts is None:
            return
        meta = obj["metadata"]
        key = (obj["kind"], meta.get("namespace", ""), meta["name"])
        if event_type == "DELETED":
            self._facts.pop(key, None)
            self.on_change()
        else:
            self._changed(key, facts)

    def _changed(self, key: tuple[str, str, str], facts: tuple[Any, ...]) -> None:
        if self._facts.get(key) != facts:
            self._facts[key] = facts
            self.on_change()

    def list(self, kind: str, namespace: str | None = None) -> list[Obj]:
        if kind not in CACHED_KINDS:
            return []  # not watched by the production cache (e.g. Events): it has none
        if kind != "Pod":
            return self.store.list(kind, namespace)
        if namespace is None:
            return list(self._pods.values())
        return [p for (ns, _), p in self._pods.items() if ns == namespace]
