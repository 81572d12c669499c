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

    __slots__ = ("_compute", "_current", "_previous")

    def __init__(self, compute: Callable[[Mapping[str, Any]], T]) -> None:
        self._compute = compute
        #: uid -> (resourceVersion, value), for the objects asked for in this generation.
        self._current: dict[str, tuple[Any, T]] = {}
        self._previous: dict[str, tuple[Any, T]] = {}

    def __call__(self, obj: Mapping[str, Any]) -> T:
        try:
            meta = obj["metadata"]
            uid = meta["uid"]
            version = meta["resourceVersion"]
        except (KeyError, TypeError):
            return self._compute(obj)
        current = self._current
        entry = current.get(uid)
        if entry is not None and entry[0] == version:
            return entry[1]
        if not uid or version is None:
            return self._compute(obj)
        entry = self._previous.get(uid)
        if entry is not None and entry[0] == version:
            current[uid] = entry
            return entry[1]
        value = self._compute(obj)
        current[uid] = (version, value)
        return value

    def age(self) -> None:
        """End of a pass: entries not used since the previous call are dropped."""
        self._previous = self._current
        self._current = {}

    def __len__(self) -> int:
        return len(self._current.keys() | self._previous.keys())
