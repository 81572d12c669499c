"""``?watch=1``: the watch stream of one kind, as the API server's watch cache serves it.

- ``resourceVersion`` unset or ``"0"``: synthetic ADDED events for the current state, then
  changes; ``N``: the changes after N; N compacted away: one ERROR event with a 410 Status;
- N newer than the store, plain watch: the stream opens and stays silent (no events, no
  bookmarks) until the store passes N, then sends the changes after N; with nothing past N
  it ends at ``timeoutSeconds`` like any watch. The watch cache serves it an empty interval
  (``watch_cache.go`` ``getAllEventsSinceLocked``) and its watcher drops every event not
  newer than N (``cache_watcher.go`` ``process``); only the watch-list form waits for
  freshness (``cacher.go`` ``waitUntilWatchCacheFreshAndForceAllEvents``);
- ``sendInitialEvents=true`` (watch-list) needs ``allowWatchBookmarks=true`` and
  ``resourceVersionMatch=NotOlderThan`` (422 otherwise); it sends the state at least as new
  as N as ADDED events, then a BOOKMARK annotated ``k8s.io/initial-events-end: "true"``;
  with N newer than the store it waits up to 3 s (``fresh_timeout``, upstream's
  ``blockTimeout``) for the store to reach N, then fails with an ERROR event carrying
  ``NewTooLargeResourceVersionError`` (504 Timeout, cause ``ResourceVersionTooLarge``,
  ``retryAfterSeconds`` 1);
- BOOKMARK events every ``bookmark_interval`` with ``allowWatchBookmarks``; ``timeoutSeconds``
  ends the stream cleanly; with a label selector, an object that stops matching is sent as
  DELETED and one that starts matching as ADDED.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from simulator.engine.store import Gone, WatchEvent
from simulator.faces.k8s.errors import ApiError, invalid
from simulator.faces.k8s.routing import Route
from simulator.faces.k8s.selectors import FieldSelector, LabelSelector

if TYPE_CHECKING:
    from simulator.faces.k8s.server import K8sFace

Obj = dict[str, Any]
Write = Callable[[Obj | None], None]
_TRUE = {"1", "true", "True"}
#: Longest a single watch may stay open, whatever the client asks.
MAX_WATCH_SECONDS = 1800.0
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def gone_event(exc: Exception) -> Obj:
    return {"type": "ERROR", "object": ApiError(410, "Expired", str(exc)).status()}


def too_large_event(wanted: int, current: int) -> Obj:
    err = ApiError(
        504,
        "Timeout",
        f"Timeout: Too large resource version: {wanted}, current: {current}",
        {
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
    )
    return {"type": "ERROR", "object": err.status()}


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    return obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def _watch_list_checks(query: Mapping[str, str]) -> bool:
    """True for a watch-list request; 422 when its required companions are missing."""
    if "sendInitialEvents" not in query:
        return False
    causes = []
    if query.get("resourceVersionMatch") != "NotOlderThan":
        causes.append(
            (
                "resourceVersionMatch",
                "FieldValueForbidden",
                "Forbidden: sendInitialEvents requires setting resourceVersionMatch to "
                "NotOlderThan",
            )
        )
    send = query.get("sendInitialEvents") in _TRUE
    if send and query.get("allowWatchBookmarks") not in _TRUE:
        causes.append(
            (
                "allowWatchBookmarks",
                "FieldValueForbidden",
                "Forbidden: allowWatchBookmarks must be set to true when "
                "sendInitialEvents is set to true",
            )
        )
    if causes:
        raise invalid("ListOptions", "", causes, "meta.k8s.io")
    return send


def stream(face: K8sFace, route: Route, query: Mapping[str, str], write: Write) -> None:
    """Stream watch events through ``write`` until timeout, drop or stop.

    ``write(None)`` sends the response headers: done as soon as the request is known to
    be valid, as the API server does, so an idle watch is an open 200 stream."""
    info = route.info
    store = face.store
    labels = LabelSelector.parse(query.get("labelSelector"))
    fields = FieldSelector.parse(query.get("fieldSelector"), kind=info.kind)
    bookmarks = query.get("allowWatchBookmarks") in _TRUE
    watch_list = _watch_list_checks(query)
    try:
        timeout = float(query.get("timeoutSeconds") or MAX_WATCH_SECONDS)
    except ValueError:
        raise ApiError(400, "BadRequest", "timeoutSeconds must be a number") from None
    start = query.get("resourceVersion") or ""
    try:
        wanted = int(start) if start else 0
    except ValueError:
        raise ApiError(400, "BadRequest", f"invalid resourceVersion {start!r}") from None
    deadline = face.clock.monotonic() + min(max(timeout, 0.0), MAX_WATCH_SECONDS)
    generation = face.drop_generation
    face.count("watch", info.kind, route.namespace)

    def selected(obj: Mapping[str, Any]) -> bool:
        ns = route.namespace
        return (
            (ns is None or obj["metadata"].get("namespace") == ns)
            and labels.matches(obj)
            and fields.matches(obj)
        )

    if watch_list and wanted > store.resource_version:
        with store.changed:
            store.changed.wait_for(
                lambda: store.resource_version >= wanted, timeout=face.fresh_timeout
            )
            current_rv = store.resource_version
        if current_rv < wanted:
            write(None)
            write(too_large_event(wanted, current_rv))
            return
    seen: set[tuple[str, str]] = set()
    pending: list[Obj] = []
    with store.lock:
        current = [o for o in store.list(info.kind, route.namespace) if selected(o)]
        if wanted > store.resource_version:
            # A plain watch from the future: the client holds at least the current state;
            # _follow sends nothing until the store passes ``wanted``.
            seen.update(_key(o) for o in current)
            rv = wanted
        elif start in ("", "0") or watch_list:
            seen.update(_key(o) for o in current)
            rv = store.resource_version
            pending = [{"type": "ADDED", "object": copy.deepcopy(o)} for o in current]
            if watch_list:
                pending.append(_bookmark(info.kind, info.api_version, rv, initial_end=True))
        else:
            rv = wanted
            try:
                # (typed loosely: the store's own ``list`` method shadows the builtin)
                later: Sequence[WatchEvent] = store.events_since(rv, info.kind)
            except Gone as exc:
                write(None)
                write(gone_event(exc))
                return
            # What the client holds at ``rv``: objects unchanged since then that match
            # now, plus every object whose first later event is not ADDED (it existed
            # at rv; assumed to have matched, so leaving the selector sends DELETED,
            # which a client ignores for an object it does not hold).
            first: dict[tuple[str, str], str] = {}
            for change in later:
                first.setdefault(_key(change.object), change.type)
            seen.update(_key(o) for o in current if _key(o) not in first)
            seen.update(k for k, t in first.items() if t != "ADDED")
    write(None)
    _follow(face, route, write, deadline, generation, bookmarks, rv, seen, pending, selected)


def _bookmark(kind: str, api_version: str, rv: int, *, initial_end: bool = False) -> Obj:
    meta: Obj = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    return {
        "type": "BOOKMARK",
        "object": {"kind": kind, "apiVersion": api_version, "metadata": meta},
    }


def _follow(
    face: K8sFace,
    route: Route,
    write: Write,
    deadline: float,
    generation: int,
    bookmarks: bool,
    rv: int,
    seen: set[tuple[str, str]],
    pending: list[Obj],
    selected: Callable[[Mapping[str, Any]], bool],
) -> None:
    info = route.info
    store = face.store
    last_bookmark = face.clock.monotonic()
    while True:
        for out in pending:
            write(out)
        pending = []
        if face.stopping or generation != face.drop_generation:
            raise ConnectionAbortedError("watch dropped")
        now = face.clock.monotonic()
        if now >= deadline:
            return
        # A bookmark never goes back before the watch's resourceVersion (the watcher drops
        # those, cache_watcher.go), so a watch from the future gets none until the store
        # has passed it.
        bookmarking = bookmarks and rv <= store.resource_version
        if bookmarking and now - last_bookmark >= face.bookmark_interval:
            write(_bookmark(info.kind, info.api_version, rv))
            last_bookmark = now
        with store.changed:
            try:
                events: Sequence[WatchEvent] = store.events_since(rv, info.kind)
            except Gone as exc:
                write(gone_event(exc))  # 410 while streaming: report it and end the watch
                return
            if not events:
                # Nothing of this kind up to now: a bookmark may say so (never below the
                # resourceVersion a watch from the future started at).
                rv = max(rv, store.resource_version)
                wait = deadline - now
                if bookmarking:
                    wait = min(wait, face.bookmark_interval - (now - last_bookmark))
                store.changed.wait(max(0.0, min(wait, 1.0)))
                continue
            rv = store.resource_version
        for event in events:
            obj = event.object
            k = _key(obj)
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
