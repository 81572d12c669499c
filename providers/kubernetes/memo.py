"""Reuse what was derived from an API object while the object has not changed.

The API server gives every object a ``uid`` and bumps its ``resourceVersion`` on every write,
and neither the watch cache nor the simulated store changes an object without a new
``resourceVersion``; so anything computed from the object alone (its effective requests, a
parsed placeholder, a node's taints) is still valid while ``(uid, resourceVersion)`` is. A
snapshot is rebuilt every few seconds from a cluster where most objects did not change since
the last one: :class:`ObjectMemo` lets the translation parse each object version once.

One memo per caller and per derivation (the ``compute`` function must be the same for every
call on one memo): two independent stores may hand out the same uid. Objects without a uid or a
resourceVersion (hand-written test dicts) are computed every time. Memory is bounded by
generations: :meth:`ObjectMemo.age`, called once per full pass over the objects, forgets every
entry not asked for since the previous call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class ObjectMemo(Generic[T]):
    """``compute(obj)`` memoised by the object's ``(uid, resourceVersion)`` (see module doc)."""

    __slots__ = ("_compute", "_current", "_previous", "hits", "misses")

    def __init__(self, compute: Callable[[Mapping[str, Any]], T]) -> None:
        self._compute = compute
        self._current: dict[tuple[str, str], T] = {}
        self._previous: dict[tuple[str, str], T] = {}
        self.hits = 0
        self.misses = 0

    def __call__(self, obj: Mapping[str, Any]) -> T:
        meta = obj.get("metadata") or {}
        uid = meta.get("uid")
        version = meta.get("resourceVersion")
        if not uid or version is None:
            self.misses += 1
            return self._compute(obj)
        key = (uid, str(version))
        current = self._current
        if key in current:
            self.hits += 1
            return current[key]
        if key in self._previous:
            self.hits += 1
            value = current[key] = self._previous[key]
            return value
        self.misses += 1
        value = current[key] = self._compute(obj)
        return value

    def age(self) -> None:
        """End of a pass: entries not used since the previous call are dropped."""
        self._previous = self._current
        self._current = {}

    def __len__(self) -> int:
        return len(self._current.keys() | self._previous.keys())
