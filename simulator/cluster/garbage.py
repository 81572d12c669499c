"""The garbage collector of kube-controller-manager, for owner deletion (background policy).

Upstream (``pkg/controller/garbagecollector``): when an owner is deleted, every dependent whose
``ownerReferences`` all point at objects that no longer exist is deleted too; the collector
matches owners by **uid**, and a namespaced dependent's owner must live in the dependent's own
namespace (a cross-namespace owner reference resolves to nothing). Deletion is asynchronous:
dependents go a little after their owner (:data:`DELAY`), through the normal DELETE path (a
bound pod gets its grace period).

Modelled: background cascading deletion when an owner is deleted. Not modelled: foreground
deletion (``blockOwnerDeletion`` / the ``foregroundDeletion`` finalizer), orphan propagation,
and the collector's start-up scan for dependents whose owners never existed (that would
change the batch simulations, whose ARC objects carry owner references the simulator
writes without every owner being stored).

Only the live world (:mod:`simulator.faces.live_world`) starts one, so batch simulations are
unchanged.
"""

from __future__ import annotations

import contextlib
from typing import Any

from simulator.engine.loop import EventLoop
from simulator.engine.store import KINDS, NotFound, ObjectStore

Obj = dict[str, Any]
#: Seconds between an owner's deletion and its dependents' (the collector's reaction time).
DELAY = 0.2


class GarbageCollector:
    """Deletes the dependents of a deleted owner (see module doc)."""

    def __init__(self, loop: EventLoop, store: ObjectStore, *, delay: float = DELAY) -> None:
        self.loop = loop
        self.store = store
        self.delay = delay
        self.collected = 0

    def start(self) -> GarbageCollector:
        self.store.subscribe(self._changed)
        return self

    def _changed(self, event_type: str, obj: Obj) -> None:
        if event_type != "DELETED":
            return
        uid = obj["metadata"].get("uid")
        if uid:
            self.loop.call_at(self.loop.now() + self.delay, self._collect, uid)

    def _collect(self, owner_uid: str) -> None:
        with self.store.lock:
            for kind, info in KINDS.items():
                for dependent in list(self.store.list(kind)):
                    meta = dependent["metadata"]
                    refs = meta.get("ownerReferences") or ()
                    if meta.get("deletionTimestamp") or not any(
                        r.get("uid") == owner_uid for r in refs
                    ):
                        continue
                    namespace = meta.get("namespace") if info.namespaced else None
                    if any(self._exists(r, namespace) for r in refs):
                        continue  # another owner still holds it
                    with contextlib.suppress(NotFound):
                        self.store.delete(kind, namespace, meta["name"])
                        self.collected += 1

    def _exists(self, ref: Obj, namespace: str | None) -> bool:
        """Is the owner of ``ref`` stored (by uid, in the dependent's namespace if namespaced)?"""
        kind = ref.get("kind", "")
        info = KINDS.get(kind)
        if info is None:
            return False
        owner = self.store.find(kind, namespace if info.namespaced else None, ref.get("name", ""))
        return owner is not None and owner["metadata"].get("uid") == ref.get("uid")
