"""The informer half of the watch cache (providers/kubernetes/watch/cache.py): one thread per
watch target runs list-then-watch with the real ``kubernetes`` client and applies what it
reads to that target's partition (the numbered steps are in cache.py's module docstring).

:class:`Informers` is a mixin of :class:`~providers.kubernetes.watch.cache.KubeCache`: the cache
owns the partitions, the lock and the callbacks; these methods fill them.
"""

from __future__ import annotations

import json
import logging
import random
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import urllib3
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from providers.kubernetes.observe.relevance import NOTHING, Verdict, facts, judge
from providers.kubernetes.watch.backoff import SHORT_WATCH, START, Ending, after, backoff_delay
from providers.kubernetes.watch.partition import Obj, Partition, object_key, objects_differ
from providers.kubernetes.watch.slim import transform
from providers.kubernetes.watch.targets import WatchTarget, list_call
from reconciler.clock import Clock

log = logging.getLogger("providers.kubernetes.watch.cache")

MAX_PAGES = 1000
PAGE_SIZE = 500


class MalformedEventError(Exception):
    """A watch event whose object is not an API object (the informer relists)."""


class Informers:
    """The list+watch loop of every target (mixed into KubeCache, which sets these)."""

    api_client: client.ApiClient
    on_change: Callable[[str], None] | None
    on_event: Callable[[Verdict], None] | None
    watch_timeout: int
    connect_timeout: float
    request_timeout: float
    backoff_base: float
    backoff_cap: float
    absent_retry: float
    max_objects: int
    stats: Counter[str]
    _rng: random.Random
    _clock: Clock
    _lock: threading.RLock
    _synced_cond: threading.Condition
    _partitions: dict[str, Partition]
    _stop: threading.Event
    _watches: dict[str, watch.Watch]
    _tombstones: OrderedDict[tuple[str, str, str], str]

    _tombstone: Callable[[str, Mapping[str, Any]], None]

    def _backoff(self, failures: int) -> float:
        return backoff_delay(failures, self.backoff_base, self.backoff_cap, self._rng)

    def _run(self, partition: Partition) -> None:
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

    def _informer(self, partition: Partition) -> None:
        """List, then watch from the listed version; after each ending, client-go's reflector
        rules (providers/kubernetes/watch/backoff.py) say whether to wait and whether to relist."""
        target = partition.target
        call = self._opening(partition, list_call(self.api_client, target))
        plan = START
        while not self._stop.is_set():
            if plan.wait:
                self._stop.wait(self._backoff(plan.failures))
                if self._stop.is_set():
                    break
            with self._lock:
                listed = bool(partition.resource_version)
            ending = self._attempt(partition, call, relist=plan.relist or not listed)
            if ending is None:
                continue  # an optional kind that is absent: retried on its own timer
            plan = after(ending, plan)

    def _attempt(
        self, partition: Partition, call: Callable[..., Any], *, relist: bool
    ) -> Ending | None:
        """One list (when ``relist``) and one watch; how it ended."""
        target = partition.target
        try:
            if relist:
                self._list(partition, call)
        except ApiException as exc:
            if exc.status in (403, 404) and target.optional:
                self._mark_absent(partition, exc.status)
                self._stop.wait(self.absent_retry)
                return None
            self._count("error")
            self._mark_down(partition)
            log.warning("list %s: API error %s %s; retrying", target.key, exc.status, exc.reason)
            return Ending.LIST_FAILED
        except (urllib3.exceptions.HTTPError, OSError, ValueError, KeyError) as exc:
            self._count("reconnect")
            self._mark_down(partition)
            log.info("list %s: connection problem (%s); retrying", target.key, type(exc).__name__)
            return Ending.LIST_FAILED
        except Exception as exc:
            return self._crashed(partition, exc)
        with self._lock:
            rv = partition.resource_version
        started = self._clock.monotonic()
        try:
            self._watch(partition, call, rv)
        except ApiException as exc:
            if exc.status == 410:
                self._count("relist_410")
                log.info("watch %s: resourceVersion %s expired (410); relisting", target.key, rv)
                return Ending.EXPIRED
            self._count("error")
            self._mark_down(partition)
            log.warning("watch %s: API error %s %s; retrying", target.key, exc.status, exc.reason)
            return Ending.WATCH_FAILED
        except (urllib3.exceptions.HTTPError, OSError, ValueError, KeyError) as exc:
            if self._stop.is_set():
                return Ending.WORKED
            self._count("reconnect")
            self._mark_down(partition)
            worked = self._worked(started, partition.watch_events)
            log.info(
                "watch %s: connection problem (%s) after %d events; %s from %s",
                target.key,
                type(exc).__name__,
                partition.watch_events,
                "resuming at once" if worked else "backing off, then resuming",
                partition.resource_version or rv,
            )
            return Ending.WORKED if worked else Ending.WATCH_FAILED
        except Exception as exc:
            return self._crashed(partition, exc)
        return Ending.WORKED if self._worked(started, partition.watch_events) else Ending.SHORT

    def _worked(self, started: float, events: int) -> bool:
        """client-go's ``very short watch`` rule, inverted."""
        return events > 0 or self._clock.monotonic() - started >= SHORT_WATCH

    def _crashed(self, partition: Partition, exc: Exception) -> Ending:
        """Supervision: anything else (a malformed event, a bug) must not end the informer
        silently. Logged with context, counted, marked down (so the cache turns stale and the
        listener fails closed), then a fresh relist after back-off: the partition may be
        half-updated, so resuming the watch is not safe."""
        if self._stop.is_set():
            return Ending.WORKED
        self._count("crash")
        self._mark_down(partition)
        log.error(
            "informer %s failed (%s: %s); relisting after backoff",
            partition.target.key,
            type(exc).__name__,
            exc,
            exc_info=self.stats["crash"] == 1,
        )
        return Ending.LIST_FAILED

    def _opening(self, partition: Partition, call: Callable[..., Any]) -> Callable[..., Any]:
        """``call`` that marks the partition up as soon as the API answers a watch with 200
        (its headers, before any event): a re-opened quiet watch is whole at once, instead of
        at its first event or bookmark."""

        def opened(**kwargs: Any) -> Any:
            response = call(**kwargs)
            if kwargs.get("watch") and 200 <= int(getattr(response, "status", 200)) <= 299:
                self._mark_up(partition)
            return response

        return opened

    def _mark_up(self, partition: Partition) -> None:
        with self._synced_cond:
            was_down = partition.down_since is not None
            partition.down_since = None
            self._synced_cond.notify_all()
        if was_down:
            # The cache is whole again: wake the reconciler now, not at its next due step.
            self._notify(partition.target.kind)

    def _mark_down(self, partition: Partition) -> None:
        if partition.down_since is None:
            partition.down_since = self._clock.monotonic()

    def stale_for(self) -> float:
        """Seconds the longest-failing required watch has been unable to reach the API (0 when
        all answer). A quiet but healthy watch is not stale: only failures count."""
        now = self._clock.monotonic()
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

    def _list(self, partition: Partition, call: Callable[..., Any]) -> str:
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
                items[object_key(obj)] = obj
            meta = body.get("metadata") or {}
            rv = meta.get("resourceVersion") or rv
            cont = meta.get("continue")
            if not cont:
                break
        with self._synced_cond:
            changed = objects_differ(partition.objects, items) or partition.absent
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

    def _mark_absent(self, partition: Partition, status: int) -> None:
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

    def _watch(self, partition: Partition, call: Callable[..., Any], rv: str) -> None:
        """Stream from ``rv``: events and bookmarks move ``partition.resource_version`` and
        are counted in ``partition.watch_events``."""
        target = partition.target
        w = watch.Watch()
        partition.watch_events = 0
        with self._lock:
            self._watches[target.key] = w
        if self._stop.is_set():
            return
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
                partition.watch_events += 1
                partition.down_since = None  # the API answers again
                self._apply(partition, event)
                if self._stop.is_set():
                    w.stop()
                    break
        finally:
            with self._lock:
                self._watches.pop(target.key, None)

    def _apply(self, partition: Partition, event: Mapping[str, Any]) -> str | None:
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
        key = object_key(obj)
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
