"""The capacity-aware strategy's view of the simulated store, through production selectors.

- :class:`StorePlaceholderWriter`: the ``PlaceholderWriter`` port over the ObjectStore (the
  calls the production writer makes on the API server, counted).
- :class:`StoreCacheView`: the store seen through the production cache's watch targets and
  judged by its event rule, so ``build_snapshot`` reads the simulated world exactly as it
  reads a real one and the controller wakes on the same events.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence

from providers.kubernetes.observe.relevance import Facts, judge
from providers.kubernetes.observe.scale_set import ScaleSetTarget
from providers.kubernetes.pods import labels as L
from providers.kubernetes.pods.placeholders import PlaceholderPodBuilder, format_expiry
from providers.kubernetes.watch.targets import WatchTarget, default_targets
from reconciler.controller import Trigger
from reconciler.ports import PairSpec, PodRef
from simulator.engine.store import AlreadyExists, Conflict, Invalid, NotFound, Obj, ObjectStore
from simulator.workload.pods import (
    PodRouter,
)

log = logging.getLogger(__name__)


class StorePlaceholderWriter:
    """``reconciler.ports.PlaceholderWriter`` over the ObjectStore; counts its API writes.

    Idempotent like the Kubernetes writer: AlreadyExists on create and NotFound on delete are
    success; a pod already there (a mend's surviving half) or already gone (or replaced by a
    different uid) costs no call.
    """

    def __init__(self, store: ObjectStore, builder: PlaceholderPodBuilder) -> None:
        self.store = store
        self.builder = builder
        self.writes = 0
        self.pods_created = 0
        #: Creates the store refused as the API server would (422 Invalid).
        self.rejected = 0

    def create_pair(self, spec: PairSpec) -> None:
        for pod in self.builder.build_pods(spec):
            meta = pod["metadata"]
            if self.store.find("Pod", meta["namespace"], meta["name"]) is not None:
                continue
            self.writes += 1
            try:
                self.store.create(pod)
                self.pods_created += 1
            except AlreadyExists:
                pass
            except Invalid as exc:
                # As the Kubernetes writer: a 422 is logged and counted, never raised.
                self.rejected += 1
                log.warning("create pod %s/%s failed: 422 %s", meta["namespace"], meta["name"], exc)

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


class StoreCacheView:
    """The ObjectSource the reconciler reads: the store seen through the production cache's
    watch targets (``providers.kubernetes.watch.targets.default_targets``: the same kinds,
    namespaces and selectors), so ``build_snapshot`` reads the simulated world exactly as it
    reads a real one.

    Every store event of a watched object is judged by the production cache's own rule
    (``providers.kubernetes.observe.relevance.judge``) and reaches the driver as one
    :class:`~reconciler.controller.Trigger`: ``leading`` for a placeholder that started to
    count, ``lost`` for a pod that stopped backing capacity. The production cache keeps the
    previous object to judge against; the store mutates its objects in place, so this view
    keeps the previous *facts* instead.
    """

    def __init__(
        self,
        store: ObjectStore,
        router: PodRouter,
        target: ScaleSetTarget,
        on_trigger: Callable[[Trigger], None],
    ) -> None:
        self.store = store
        self.target = target
        self.on_trigger = on_trigger
        self._targets: dict[str, list[WatchTarget]] = {}
        for watched in default_targets(target):
            self._targets.setdefault(watched.kind, []).append(watched)
        #: Kinds watched whole (no namespace, no selector): the store's list is the cache's.
        self._unfiltered = {
            kind
            for kind, watched in self._targets.items()
            if all(not (w.namespace or w.label_selector or w.field_selector) for w in watched)
        }
        self._pods: dict[tuple[str, str], Obj] = {}
        self._facts: dict[tuple[str, str, str], Facts] = {}
        router.on_change(self._on_pod)
        others = tuple(kind for kind in self._targets if kind != "Pod")
        store.subscribe(self._on_object, kinds=others)

    def _selected(self, obj: Obj) -> bool:
        return any(watched.selects(obj) for watched in self._targets.get(obj["kind"], ()))

    def _on_pod(self, event_type: str, pod: Obj) -> None:
        if not self._selected(pod):
            return
        meta = pod["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        if event_type == "DELETED":
            self._pods.pop(key, None)
        else:
            self._pods[key] = pod
        self._judge("Pod", key, event_type, pod)

    def _on_object(self, event_type: str, obj: Obj) -> None:
        if not self._selected(obj):
            return
        meta = obj["metadata"]
        self._judge(obj["kind"], (meta.get("namespace", ""), meta["name"]), event_type, obj)

    def _judge(self, kind: str, key: tuple[str, str], event_type: str, obj: Obj) -> None:
        full_key = (kind, *key)
        verdict, after = judge(kind, event_type, self._facts.get(full_key), obj)
        if after is None:
            self._facts.pop(full_key, None)
        else:
            self._facts[full_key] = after
        # A loss or a rise wakes the driver even when the facts the decisions read did not
        # change (the judge's ``relevant``), as this view always has.
        if verdict.relevant or verdict.lost or verdict.rise:
            self.on_trigger(Trigger(leading=verdict.rise, lost=verdict.lost))

    def stale_for(self) -> float:
        """The store's view is never stale (a fault's copy of it may be)."""
        return 0.0

    def list(self, kind: str, namespace: str | None = None) -> list[Obj]:
        targets = self._targets.get(kind)
        if targets is None:
            return []  # not watched by the production cache (e.g. Events): it has none
        if kind == "Pod":
            if namespace is None:
                return list(self._pods.values())
            return [p for (ns, _), p in self._pods.items() if ns == namespace]
        objects = self.store.list(kind, namespace)
        if all(
            w.namespace is None and not w.label_selector and not w.field_selector for w in targets
        ):
            return objects
        return [obj for obj in objects if self._selected(obj)]
