"""Parses reused while an object's (uid, resourceVersion) is unchanged: same answers, less work."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from providers.kubernetes.observe.scale_set import ScaleSetTarget
from providers.kubernetes.observe.translate import SnapshotMemo, build_snapshot
from providers.kubernetes.placement.fit import FitMemo, fit_estimate
from providers.kubernetes.placement.inputs import PlacementBounds
from providers.kubernetes.placement.packing import launch_facts
from providers.kubernetes.watch.memo import ObjectMemo
from reconciler.snapshot import Demand
from simulator.engine.store import ObjectStore
from tests.providers.kubernetes import objects as o

TARGET = ScaleSetTarget(
    ers_name=o.ERS, runner_namespace=o.NS, placeholder_namespace=o.NS, max_runners=10
)
RUNNER = {"cpu": Decimal("0.5"), "memory": Decimal(2**30)}
WORKFLOW = {"cpu": Decimal("1"), "memory": Decimal(2**30)}


def counting() -> tuple[ObjectMemo[str], list[str]]:
    calls: list[str] = []

    def compute(obj: Any) -> str:
        calls.append(obj["metadata"].get("name", "?"))
        return f"{obj['metadata'].get('name')}@{obj['metadata'].get('resourceVersion')}"

    return ObjectMemo(compute), calls


def obj(name: str, uid: str | None = "u1", rv: str | None = "1") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if uid is not None:
        meta["uid"] = uid
    if rv is not None:
        meta["resourceVersion"] = rv
    return {"metadata": meta}


@pytest.mark.parametrize(
    ("first", "second", "computed"),
    [
        (obj("a"), obj("a"), ["a"]),  # same version: parsed once
        (obj("a"), obj("a", rv="2"), ["a", "a"]),  # new version: parsed again
        (obj("a", uid=None), obj("a", uid=None), ["a", "a"]),  # no uid: never reused
        (obj("a", rv=None), obj("a", rv=None), ["a", "a"]),  # no resourceVersion: same
        (obj("a", uid=""), obj("a", uid=""), ["a", "a"]),  # empty uid: same
        (obj("a", uid="u1"), obj("b", uid="u2"), ["a", "b"]),  # another object
        ({"kind": "NoMeta"}, {"kind": "NoMeta"}, ["?", "?"]),
    ],
)
def test_a_value_is_reused_only_for_the_same_uid_and_resource_version(first, second, computed):
    memo, calls = counting()
    if "metadata" not in first:
        memo = ObjectMemo(lambda _obj: calls.append("?") or "x")
    memo(first)
    memo(second)
    assert calls == computed


def test_entries_not_asked_for_during_a_whole_generation_are_forgotten():
    memo, calls = counting()
    memo(obj("a", uid="u1"))
    memo(obj("b", uid="u2"))
    memo.age()
    memo(obj("a", uid="u1"))  # kept: used again in the next generation
    memo.age()
    assert len(memo) == 1
    memo(obj("a", uid="u1"))
    memo(obj("b", uid="u2"))  # forgotten after a generation unused: parsed again
    assert calls == ["a", "b", "b"]


def _store() -> ObjectStore:
    store = ObjectStore(lambda: o.T0)
    for item in (
        o.ers(),
        o.node("node-a", allocatable={"cpu": "8", "memory": "32Gi"}),
        o.node("node-b", allocatable={"cpu": "8", "memory": "32Gi"}),
        o.nodepool(limits={"cpu": "64", "memory": "256Gi"}, used={"cpu": "16"}),
        o.placeholder("p-1", "runner", node="node-a"),
        o.placeholder("p-1", "workflow", node="node-b"),
        o.placeholder("p-2", "runner", node="node-b"),
        o.ephemeral_runner("arc-runners-runner-a"),
        o.runner_pod("arc-runners-runner-a", node="node-a"),
        o.workflow_pod("arc-runners-runner-a", node="node-b"),
    ):
        store.create(item)
    return store


def _set(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(target: dict[str, Any]) -> None:
        node = target
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value

    return change


#: One change to the cluster at a time; each snapshot with the memo must equal one without.
CHANGES: list[tuple[str, str, str, Callable[[dict[str, Any]], None]]] = [
    ("Node", "", "node-b", _set(("spec", "unschedulable"), True)),
    ("Node", "", "node-b", _set(("spec", "unschedulable"), False)),
    ("Node", "", "node-a", _set(("spec", "taints"), [{"key": "x", "effect": "NoSchedule"}])),
    ("Pod", o.NS, f"{o.ERS}-ph-p-2-r", _set(("metadata", "deletionTimestamp"), o.T0_ISO)),
    ("Pod", o.NS, "arc-runners-runner-a", _set(("status", "phase"), "Succeeded")),
    ("EphemeralRunner", o.NS, "arc-runners-runner-a", _set(("status", "jobId"), "7")),
]


def test_snapshots_and_fit_estimates_with_a_memo_equal_fresh_ones_after_every_change():
    store = _store()
    memo, fit_memo = SnapshotMemo(), FitMemo()

    def both() -> None:
        fresh = build_snapshot(store, TARGET, now=o.T0, demand=Demand())
        reused = build_snapshot(store, TARGET, now=o.T0, demand=Demand(), memo=memo)
        assert (reused.placeholders, reused.runner_pods, reused.workflow_pods) == (
            fresh.placeholders,
            fresh.runner_pods,
            fresh.workflow_pods,
        )
        assert reused.idle_runners == fresh.idle_runners
        assert fit_estimate(store, TARGET, RUNNER, WORKFLOW, memo=fit_memo) == fit_estimate(
            store, TARGET, RUNNER, WORKFLOW
        )

    both()
    both()
    for kind, namespace, name, change in CHANGES:
        store.mutate(kind, namespace or None, name, change)
        both()
    assert len(memo.pods) > 0


def test_launch_facts_through_a_memo_equal_fresh_ones():
    claims = [
        {
            "metadata": {"uid": "c1", "resourceVersion": "1", "creationTimestamp": o.T0_ISO},
            "spec": {"resources": {"requests": {"cpu": "7"}}},
        },
        {
            "metadata": {"uid": "c2", "resourceVersion": "1", "creationTimestamp": o.T0_ISO},
            "status": {"conditions": [{"type": "Initialized", "status": "True"}]},
        },
    ]
    memo = PlacementBounds(None, TARGET, None)._claims
    for now in (o.T0 + 1, o.T0 + 61):
        fresh = launch_facts(claims, now=now, pair_cpu=Decimal("1.5"))
        assert launch_facts(claims, now=now, pair_cpu=Decimal("1.5"), facts=memo) == fresh
    assert fresh.launching == 1 and fresh.covered_pairs == 4
