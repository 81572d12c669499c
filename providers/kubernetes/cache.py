"""A watch-fed cache of the objects the reconciler reads (client-go informer style).

One thread per :class:`~providers.kubernetes.watch_targets.WatchTarget` (kind + namespace +
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

The cache is an :class:`~providers.kubernetes.translate.ObjectSource` (``list(kind,
namespace)``) and offers ``get``; :meth:`KubeCache.wait_synced` is the "no decision before
the first list of every required kind" guard; ``on_change(kind)`` is called (outside any
lock, from the informer thread) after every applied change: the reconcile loop's trigger.

Stored objects are API JSON dicts, replaced wholesale on change (never mutated), so a list
handed out stays consistent. Pods are slimmed on the way in (:mod:`providers.kubernetes.slim`), and
``managedFields`` are dropped from everything, as a client-go transform would.

Bounded: one thread per target, paged lists (at most ``MAX_PAGES``), watch and request
timeouts on every call, ``max_objects`` per target, bounded backoff.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import urllib3
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from providers.kubernetes.relevance import NOTHING, Verdict, facts, judge
from providers.kubernetes.slim import transform
from providers.kubernetes.watch_targets import RESOURCES, CacheError, WatchTarget, list_call

log = logging.getLogger(__name__)

Obj = dict[str, Any]
#: ``list[Obj]`` spelled outside the class, whose ``list`` method shadows the builtin.
ObjList = list[Obj]
StrList = list[str]
MAX_PAGES = 1000
PAGE_SIZE = 500
#: Deleted objects remembered for ``KubeCache.was_deleted``.
TOMBSTONES = 4096


class MalformedEventError(Exception):
    """A watch event whose object is not an API object (the informer relists)."""


# --- the store ----------------------------------------------------------------------------


class _Partition:
    __slots__ = ("absent", "down_since", "objects", "resource_version", "synced", "target")

    def __init__(self, target: WatchTarget) -> None:
        self.target = target
        self.objects: dict[tuple[str, str], Obj] = {}
        self.synced = False
        self.absent = False
        #: Last resourceVersion this target has seen (list, event or bookmark).
        self.resource_version = ""
        #: Monotonic time of the first failure since the API last answered (None = healthy).
        self.down_since: float | None = None


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


class KubeCache:
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
        monotonic: Callable[[], float] = time.monotonic,
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
        #: (providers/kubernetes/relevance.py: a change decisions read, a rise, a loss).
        self.on_event = on_event
        self.watch_timeout = watch_timeout
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.absent_retry = absent_retry
        self.max_objects = max_objects
        self._rng = rng or random.Random()
        self._monotonic = monotonic
        # Re-entrant: wait_until's predicate may call list()/get() while holding it.
        self._lock = threading.RLock()
        self._synced_cond = threading.Condition(self._lock)
        self._partitions = {t.key: _Partition(t) for t in targets}
        self._by_kind: dict[str, list[_Partition]] = {}
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

    # --- informer thread ------------------------------------------------------------------

    def _backoff(self, attempt: int) -> float:
        step = min(self.backoff_cap, self.backoff_base * (2 ** min(attempt, 30)))
        return step * (0.5 + 0.5 * self._rng.random())

    def _run(self, partition: _Partition) -> None:
        try:
            self._informer(partition)
        finally:
            # A thread that ends for any reason while the cache is running leaves a blind
            # spot: mark it down so stale_for() grows and the listener fails closed.
            if not self._stop.is_set():
                with self._synced_cond:
                    self._mark_down(partition)
                    self._synced_cond.notify_all()
                log.error("informer %s stopped unexpectedly", partition.target.key)

    def _informer(self, partition: _Partition) -> None:
        target = partition.target
        call = list_call(self.api_client, target)
        rv: str | None = None
        attempt = 0
        while not self._stop.is_set():
            try:
                if rv is None:
                    rv = self._list(partition, call)
                else:
                    # Resume from the last version applied (events and bookmarks move it
                    # forward even when the previous stream broke off with an exception).
                    with self._lock:
                        rv = partition.resource_version or rv
                started = self._monotonic()
                rv, events = self._watch(partition, call, rv)
                # A watch that ends at once with nothing in it (a misbehaving server) must not
                # turn this loop into a hot loop: treat it like an error for backoff purposes.
                if events == 0 and self._monotonic() - started < 1.0:
                    self._stop.wait(self._backoff(attempt))
                    attempt += 1
                else:
                    attempt = 0
            except ApiException as exc:
                if exc.status == 410:
                    self._count("relist_410")
                    log.info(
                        "watch %s: resourceVersion %s expired (410); relisting", target.key, rv
                    )
                    rv = None
                    # An immediate relist is what client-go does; back off only if 410s repeat.
                    if attempt:
                        self._stop.wait(self._backoff(attempt))
                    attempt += 1
                    continue
                if exc.status in (403, 404) and target.optional and rv is None:
                    self._mark_absent(partition, exc.status)
                    self._stop.wait(self.absent_retry)
                    continue
                self._count("error")
                self._mark_down(partition)
                log.warning(
                    "watch %s: API error %s %s; retrying", target.key, exc.status, exc.reason
                )
                self._stop.wait(self._backoff(attempt))
                attempt += 1
            except (urllib3.exceptions.HTTPError, OSError, ValueError, KeyError) as exc:
                if self._stop.is_set():
                    break
                self._count("reconnect")
                self._mark_down(partition)
                log.info(
                    "watch %s: connection problem (%s); resuming from %s",
                    target.key,
                    type(exc).__name__,
                    rv,
                )
                self._stop.wait(self._backoff(attempt))
                attempt += 1
            except Exception as exc:
                # Supervision: anything else (a malformed event, a bug) must not end the
                # informer silently. Logged with context, counted, marked down (so the cache
                # turns stale and the listener fails closed), then a fresh relist after backoff:
                # the partition may be half-updated, so resuming the watch is not safe.
                if self._stop.is_set():
                    break
                self._count("crash")
                self._mark_down(partition)
                log.error(
                    "informer %s failed (%s: %s); relisting after backoff",
                    target.key,
                    type(exc).__name__,
                    exc,
                    exc_info=self.stats["crash"] == 1,
                )
                rv = None
                self._stop.wait(self._backoff(attempt))
                attempt += 1

    def _mark_down(self, partition: _Partition) -> None:
        if partition.down_since is None:
            partition.down_since = self._monotonic()

    def stale_for(self) -> float:
        """Seconds the longest-failing required watch has been unable to reach the API (0 when
        all answer). A quiet but healthy watch is not stale: only failures count."""
        now = self._monotonic()
        with self._lock:
            downs = [
                p.down_since
                for p in self._partitions.values()
                if p.down_since is not None and not p.target.optional
            ]
        return max((now - d for d in downs), default=0.0)

    def _count(self, what: str) -> None:
        with self._synced_cond:
            self.stats[what] += 1
            self._synced_cond.notify_all()

    def _selectors(self, target: WatchTarget) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if target.label_selector:
            out["label_selector"] = target.label_selector
        if target.field_selector:
            out["field_selector"] = target.field_selector
        return out

    def _list(self, partition: _Partition, call: Callable[..., Any]) -> str:
        target = partition.target
        items: dict[tuple[str, str], Obj] = {}
        cont: str | None = None
        rv = ""
        for _ in range(MAX_PAGES):
            kwargs = self._selectors(target) | {
                "limit": PAGE_SIZE,
                "_preload_content": False,
                "_request_timeout": (self.connect_timeout, self.request_timeout),
            }
            if cont:
                kwargs["_continue"] = cont
            self._count("list")
            resp = call(**kwargs)
            try:
                body = json.loads(resp.data)
            finally:
                resp.release_conn()
            for raw in body.get("items") or ():
                if len(items) >= self.max_objects:
                    self._count("overflow")
                    break
                obj = transform(target.kind, raw)
                items[_key(obj)] = obj
            meta = body.get("metadata") or {}
            rv = meta.get("resourceVersion") or rv
            cont = meta.get("continue")
            if not cont:
                break
        with self._synced_cond:
            changed = _differs(partition.objects, items) or partition.absent
            for key in partition.objects.keys() - items.keys():
                self._tombstone(target.kind, partition.objects[key])  # deleted while away
            partition.objects = items
            partition.absent = False
            partition.synced = True
            partition.down_since = None
            partition.resource_version = rv
            self._synced_cond.notify_all()
        if changed:
            self._notify(target.kind)
        return rv

    def _mark_absent(self, partition: _Partition, status: int) -> None:
        with self._synced_cond:
            first = not partition.absent
            partition.absent = True
            partition.synced = True
            partition.objects = {}
            self._synced_cond.notify_all()
        if first:
            self._count("absent")
            log.warning(
                "optional %s is unavailable (HTTP %s: %s); continuing without it",
                partition.target.key,
                status,
                "CRD not installed" if status == 404 else "no RBAC to list it",
            )

    def _watch(self, partition: _Partition, call: Callable[..., Any], rv: str) -> tuple[str, int]:
        """Stream from ``rv``; returns the last version seen and how many events came."""
        target = partition.target
        w = watch.Watch()
        events = 0
        with self._lock:
            self._watches[target.key] = w
        if self._stop.is_set():
            return rv, events
        self._count("watch")
        try:
            stream: Iterator[Any] = w.stream(
                call,
                resource_version=rv,
                allow_watch_bookmarks=True,
                timeout_seconds=self.watch_timeout,
                _request_timeout=(self.connect_timeout, self.watch_timeout + 15),
                **self._selectors(target),
            )
            for event in stream:
                if not isinstance(event, dict):
                    continue  # an undecodable line: skip it, the next event carries on
                events += 1
                partition.down_since = None  # the API answers again
                rv = self._apply(partition, event) or rv
                if self._stop.is_set():
                    w.stop()
                    break
        finally:
            with self._lock:
                self._watches.pop(target.key, None)
        return rv, events

    def _apply(self, partition: _Partition, event: Mapping[str, Any]) -> str | None:
        kind = partition.target.kind
        etype = event.get("type")
        raw = event.get("raw_object") or event.get("object") or {}
        if not isinstance(raw, Mapping) or not isinstance(raw.get("metadata") or {}, Mapping):
            raise MalformedEventError(
                f"watch {partition.target.key}: {etype!r} event without an object"
            )
        new_rv = (raw.get("metadata") or {}).get("resourceVersion")
        if etype == "BOOKMARK":
            if new_rv:
                with self._synced_cond:
                    partition.resource_version = new_rv
                    self._synced_cond.notify_all()
            return new_rv
        if etype not in ("ADDED", "MODIFIED", "DELETED"):
            return None
        obj = transform(kind, raw)
        key = _key(obj)
        verdict = NOTHING
        with self._synced_cond:
            if self.on_event is not None:
                old = partition.objects.get(key)
                before = facts(kind, old) if old is not None else None
                verdict, _ = judge(kind, etype, before, obj)
            self._synced_cond.notify_all()
            if new_rv:
                partition.resource_version = new_rv
            if etype == "DELETED":
                partition.objects.pop(key, None)
                self._tombstone(kind, obj)
            elif key in partition.objects or len(partition.objects) < self.max_objects:
                partition.objects[key] = obj
            else:
                self.stats["overflow"] += 1
                log.error(
                    "cache %s is full (%d objects); ignoring %s",
                    partition.target.key,
                    self.max_objects,
                    key,
                )
        self._notify(kind)
        if verdict.relevant and self.on_event is not None:
            try:
                self.on_event(verdict)
            except Exception:
                log.exception("on_event callback failed")
        return new_rv

    def _notify(self, kind: str) -> None:
        if self.on_change is None:
            return
        try:
            self.on_change(kind)
        except Exception:
            log.exception("on_change callback failed for %s", kind)


def _differs(old: Mapping[tuple[str, str], Obj], new: Mapping[tuple[str, str], Obj]) -> bool:
    if old.keys() != new.keys():
        return True
    return any(
        old[k]["metadata"].get("resourceVersion") != new[k]["metadata"].get("resourceVersion")
        for k in new
    )
