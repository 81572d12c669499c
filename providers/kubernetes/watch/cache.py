"""A watch-fed cache of the objects the reconciler reads (client-go informer style).

One thread per :class:`~providers.kubernetes.watch.targets.WatchTarget` (kind + namespace +
selectors) runs list-then-watch with the real ``kubernetes`` client:

1. LIST (paged, ``limit=500``) -> replace that target's partition, remember the list's
   ``resourceVersion``, mark the target synced.
2. WATCH from that version (``allowWatchBookmarks``, ``timeoutSeconds``), applying ADDED /
   MODIFIED / DELETED and moving the version forward on every event and BOOKMARK.
3. A watch that ends (server timeout) or breaks (connection dropped) is resumed from the
   last version: no relist, nothing lost. ``410 Gone`` (version compacted away) relists.
4. Errors back off ``0.5 s * 2^n`` capped at 30 s, with jitter (50-100 % of the step).
5. An *optional* target whose first LIST answers 404 (CRD not installed) or 403 (no RBAC)
   is marked absent (it counts as synced, its kind lists empty) and retried every
   ``absent_retry`` seconds, so installing Karpenter later is picked up.

The cache is an :class:`~providers.kubernetes.observe.scale_set.ObjectSource` (``list(kind,
namespace)``) and offers ``get``; :meth:`KubeCache.wait_synced` is the "no decision before
the first list of every required kind" guard; ``on_change(kind)`` is called (outside any
lock, from the informer thread) after every applied change: the reconcile loop's trigger.

Stored objects are API JSON dicts, replaced wholesale on change (never mutated), so a list
handed out stays consistent. Pods are slimmed on the way in
(:mod:`providers.kubernetes.watch.slim`), and ``managedFields`` are dropped from everything, as a
client-go transform would.

Bounded: one thread per target, paged lists (at most ``MAX_PAGES``), watch and request
timeouts on every call, ``max_objects`` per target, bounded backoff.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kubernetes import client, watch

from providers.kubernetes.observe.relevance import Verdict
from providers.kubernetes.watch.informer import Informers
from providers.kubernetes.watch.partition import Partition
from providers.kubernetes.watch.targets import RESOURCES, CacheError, WatchTarget
from reconciler.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)

Obj = dict[str, Any]
#: ``list[Obj]`` spelled outside the class, whose ``list`` method shadows the builtin.
ObjList = list[Obj]
StrList = list[str]
#: Deleted objects remembered for ``KubeCache.was_deleted``.
TOMBSTONES = 4096


class KubeCache(Informers):
    """Watch-fed, thread-safe object cache; an ObjectSource for ``build_snapshot``."""

    def __init__(
        self,
        api_client: client.ApiClient,
        targets: Sequence[WatchTarget],
        *,
        on_change: Callable[[str], None] | None = None,
        on_event: Callable[[Verdict], None] | None = None,
        watch_timeout: int = 300,
        connect_timeout: float = 5.0,
        request_timeout: float = 60.0,
        backoff_base: float = 0.5,
        backoff_cap: float = 30.0,
        absent_retry: float = 60.0,
        max_objects: int = 100_000,
        rng: random.Random | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        keys = [t.key for t in targets]
        if len(set(keys)) != len(keys):
            raise CacheError(
                f"duplicate watch targets: {sorted(k for k in keys if keys.count(k) > 1)}"
            )
        for t in targets:
            if t.kind not in RESOURCES:
                raise CacheError(f"unknown kind {t.kind!r}; known: {', '.join(RESOURCES)}")
        self.api_client = api_client
        pool = getattr(getattr(api_client, "configuration", None), "connection_pool_maxsize", None)
        if isinstance(pool, int) and pool < len(targets) + 4:
            # Every target holds a connection for its watch; a smaller pool makes urllib3
            # discard connections after each call (no keep-alive, "pool is full" warnings).
            log.warning(
                "kubernetes client connection_pool_maxsize=%d is below %d watch targets + "
                "writers; set Configuration.connection_pool_maxsize to at least %d",
                pool,
                len(targets),
                len(targets) + 8,
            )
        self.on_change = on_change
        #: Called after ``on_change`` with what the event means to the controller
        #: (providers/kubernetes/observe/relevance.py: a change decisions read, a rise, a loss).
        self.on_event = on_event
        self.watch_timeout = watch_timeout
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.absent_retry = absent_retry
        self.max_objects = max_objects
        self._rng = rng or random.Random()
        self._clock = clock
        # Re-entrant: wait_until's predicate may call list()/get() while holding it.
        self._lock = threading.RLock()
        self._synced_cond = threading.Condition(self._lock)
        self._partitions = {t.key: Partition(t) for t in targets}
        self._by_kind: dict[str, list[Partition]] = {}
        for p in self._partitions.values():
            self._by_kind.setdefault(p.target.kind, []).append(p)
        #: Recently deleted objects: (kind, namespace, name) -> uid, bounded (see was_deleted).
        self._tombstones: OrderedDict[tuple[str, str, str], str] = OrderedDict()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._watches: dict[str, watch.Watch] = {}
        #: API calls and recoveries, by name ("list", "watch", "relist_410", "reconnect"...).
        self.stats: Counter[str] = Counter()

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> KubeCache:
        for key, partition in self._partitions.items():
            thread = threading.Thread(
                target=self._run, args=(partition,), name=f"informer {key}", daemon=True
            )
            self._threads.append(thread)
            thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        with self._lock:
            watches = list(self._watches.values())
        for w in watches:
            w.stop()
        # One deadline for all threads (they are daemons: a watch blocked in a read until its
        # next event must not hold a SIGTERM'd process up for threads x timeout).
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> KubeCache:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- reading (ObjectSource) -----------------------------------------------------------

    def list(self, kind: str, namespace: str | None = None) -> ObjList:
        with self._lock:
            partitions = self._by_kind.get(kind, ())
            if len(partitions) == 1:
                objs: Iterable[Obj] = partitions[0].objects.values()
                if namespace:
                    objs = [o for o in objs if o["metadata"].get("namespace") == namespace]
                return list(objs)
            merged: dict[tuple[str, str], Obj] = {}
            for p in partitions:
                if namespace and p.target.namespace not in (None, namespace):
                    continue
                merged.update(p.objects)
            objs = merged.values()
            if namespace:
                return [o for o in objs if o["metadata"].get("namespace") == namespace]
            return list(objs)

    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        key = (namespace or "", name)
        with self._lock:
            for p in self._by_kind.get(kind, ()):
                obj = p.objects.get(key)
                if obj is not None:
                    return obj
        return None

    def count(self, kind: str) -> int:
        return len(self.list(kind))

    def was_deleted(self, kind: str, namespace: str | None, name: str, uid: str) -> bool:
        """The cache saw this very object (same uid) go away recently.

        Lets a writer tell "gone" from "not seen yet" for an object it just created (the
        create answer arrives before the watch event).
        """
        with self._lock:
            return self._tombstones.get((kind, namespace or "", name)) == uid

    def _tombstone(self, kind: str, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        uid = meta.get("uid")
        if not uid:
            return
        key = (kind, meta.get("namespace") or "", meta.get("name") or "")
        self._tombstones[key] = uid
        self._tombstones.move_to_end(key)
        while len(self._tombstones) > TOMBSTONES:
            self._tombstones.popitem(last=False)

    # --- sync state -----------------------------------------------------------------------

    def synced(self) -> dict[str, bool]:
        """Per target key: first list done (absent optional targets count as done)."""
        with self._lock:
            return {k: p.synced for k, p in self._partitions.items()}

    def absent(self) -> StrList:
        with self._lock:
            return [k for k, p in self._partitions.items() if p.absent]

    @property
    def has_synced(self) -> bool:
        with self._lock:
            return all(p.synced for p in self._partitions.values())

    def wait_synced(self, timeout: float) -> bool:
        """Block until every target has listed once (or ``timeout``); True when synced."""
        with self._synced_cond:
            return self._synced_cond.wait_for(
                lambda: all(p.synced for p in self._partitions.values()), timeout=timeout
            )

    def unsynced(self) -> StrList:
        with self._lock:
            return [k for k, p in self._partitions.items() if not p.synced]

    def resource_versions(self) -> dict[str, str]:
        """Per target key: the last resourceVersion seen (list, event or bookmark)."""
        with self._lock:
            return {k: p.resource_version for k, p in self._partitions.items()}

    def wait_until(self, predicate: Callable[[KubeCache], bool], timeout: float) -> bool:
        """Block until ``predicate(self)`` holds, re-checked after every change the cache
        applies (events, bookmarks, lists, errors); False after ``timeout`` seconds."""
        with self._synced_cond:
            return self._synced_cond.wait_for(lambda: predicate(self), timeout=timeout)
