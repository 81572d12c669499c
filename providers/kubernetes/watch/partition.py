"""One watch target's slice of the watch cache (providers/kubernetes/watch/cache.py): the objects
its informer (providers/kubernetes/watch/informer.py) listed and watched, keyed by namespace and
name, with the target's sync and health state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.kubernetes.watch.targets import WatchTarget

Obj = dict[str, Any]


class Partition:
    """One watch target's objects and state, filled by its informer thread."""

    __slots__ = (
        "absent",
        "down_since",
        "objects",
        "resource_version",
        "synced",
        "target",
        "watch_events",
    )

    def __init__(self, target: WatchTarget) -> None:
        self.target = target
        self.objects: dict[tuple[str, str], Obj] = {}
        self.synced = False
        self.absent = False
        #: Last resourceVersion this target has seen (list, event or bookmark).
        self.resource_version = ""
        #: Monotonic time of the first failure since the API last answered (None = healthy).
        self.down_since: float | None = None
        #: Events (bookmarks included) the current or last watch delivered, even if it broke.
        self.watch_events = 0


def object_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


def objects_differ(old: Mapping[tuple[str, str], Obj], new: Mapping[tuple[str, str], Obj]) -> bool:
    """A relist changed the target: objects came, went, or changed resourceVersion."""
    if old.keys() != new.keys():
        return True
    return any(
        old[k]["metadata"].get("resourceVersion") != new[k]["metadata"].get("resourceVersion")
        for k in new
    )
