"""Nodes as placement sees them: taints and tolerations (k8s.io/api/core/v1
``Toleration.ToleratesTaint``), readiness, cordons, and whether a node blocks a pod."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from providers.kubernetes.observe.object_fields import condition_of
from providers.kubernetes.pods import labels as L

Obj = Mapping[str, Any]

_BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


def matches_selector(labels: Mapping[str, str], node_selector: Mapping[str, str]) -> bool:
    """``spec.nodeSelector`` semantics: the labels carry every key with exactly its value."""
    return all(labels.get(k) == v for k, v in node_selector.items())


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Kubernetes semantics: effect empty = all effects; empty key + Exists = all keys."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if key and key != taint.get("key"):
        return False
    if operator == "Exists":
        return True
    if operator == "Equal":
        # An empty key is only valid with Exists; the API rejects it, so do not match.
        return bool(key) and (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def untolerated_taints(
    taints: Iterable[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """NoSchedule/NoExecute taints none of the tolerations tolerate."""
    return [
        t
        for t in taints
        if t.get("effect") in _BLOCKING_EFFECTS
        and not any(tolerates(tol, t) for tol in tolerations)
    ]


def node_ready(node: Obj) -> bool:
    cond = condition_of(node, "Ready")
    return cond is not None and cond.get("status") == "True"


@dataclass(frozen=True, slots=True)
class NodeState:
    """What placement checks need from a node, computed once per snapshot."""

    #: Cordoned, not Ready or marked ``karpenter.sh/disrupted``: blocked whatever tolerations.
    hard_blocked: bool
    #: Its NoSchedule / NoExecute taints (blocking unless tolerated).
    taints: tuple[Mapping[str, Any], ...] = ()

    def blocks(self, tolerations: Sequence[Mapping[str, Any]]) -> bool:
        if self.hard_blocked:
            return True
        return bool(self.taints) and bool(untolerated_taints(self.taints, tolerations))


def node_state(node: Obj) -> NodeState:
    spec = node.get("spec") or {}
    taints = spec.get("taints") or ()
    hard = (
        bool(spec.get("unschedulable"))
        or not node_ready(node)
        or any(t.get("key") == L.TAINT_KARPENTER_DISRUPTED for t in taints)
    )
    return NodeState(hard, tuple(t for t in taints if t.get("effect") in _BLOCKING_EFFECTS))


def node_states(nodes: Iterable[Obj]) -> dict[str, NodeState]:
    return {(n.get("metadata") or {}).get("name", ""): node_state(n) for n in nodes}


class LazyNodeStates(Mapping[str, NodeState]):
    """:func:`node_states` computed only for the nodes asked about (those holding
    placeholders), not for every node of a large cluster on every snapshot."""

    def __init__(self, nodes: Iterable[Obj], memo: Callable[[Obj], NodeState] = node_state) -> None:
        self._nodes = nodes
        self._index: dict[str, Obj] | None = None
        self._states: dict[str, NodeState] = {}
        self._node_state = memo

    def _by_name(self) -> dict[str, Obj]:
        if self._index is None:
            self._index = {(n.get("metadata") or {}).get("name", ""): n for n in self._nodes}
        return self._index

    def __getitem__(self, name: str) -> NodeState:
        state = self._states.get(name)
        if state is None:
            state = self._states[name] = self._node_state(self._by_name()[name])
        return state

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name())

    def __len__(self) -> int:
        return len(self._by_name())
