"""kube-scheduler's own preemption test tables, ported to our scheduler (our code, their cases).

From kubernetes/kubernetes pkg/scheduler/framework/plugins/defaultpreemption/
default_preemption_test.go:

- ``TestDryRunPreemption`` (SelectVictimsOnNode): which pods on a node become victims - every
  lower-priority pod is removed, then they are reprieved most important first (higher
  priority, then earlier start) while the preemptor still fits. Ported: the cases that use
  only NodeResourcesFit (no PDBs, inter-pod affinity, topology spread or fake filters, which
  we do not model). Each expected candidate node is checked in a world of its own, so the
  victims on *every* candidate are seen, not only on the node finally picked.
- ``TestSelectBestCandidate`` (pickOneNodeForPreemption): which candidate node is picked -
  lowest highest-victim priority, lowest sum of (MaxInt32+1-offset) victim priorities, fewest
  victims, latest earliest-start among the highest-priority victims. All its cases are
  resource-only and ported; where upstream accepts any of several nodes we pin the first by
  name (our deterministic tie-break).

Upstream nodes have 500m cpu and 500 bytes of memory; requests are small 100m/100, medium
200m/200, large 300m/300, very large 500m/500; StartTime(epochTimeN) becomes a pod bound
N seconds into the world.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from simulator.cluster import ClusterSpec
from simulator.cluster.claims import node_object
from simulator.cluster.quantity import Resources
from simulator.engine.store import Obj
from tests.simulated.cluster.builders import World, pod, small_type, world

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL, MEDIUM, LARGE, VERY_LARGE = 100, 200, 300, 500  # millicores; memory the same in bytes
NODE = Resources(cpu=500, memory=500, gpu=0, pods=32)


@dataclass(frozen=True)
class P:
    """A pod of a table: name, node, priority, request size and StartTime(epochTimeN)."""

    name: str
    node: str
    priority: int
    size: int = 0
    start: int = 0


def table_world(nodes: list[str], pods: list[P]) -> World:
    w = world(ClusterSpec(instance_types=(small_type(),)))
    for name in nodes:
        w.create(node_object(name, {}, (), NODE, NODE, ready=True, provider_id=f"fake://{name}"))
    for p in pods:
        obj = table_pod(p.name, p.priority, p.size, p.node)
        w.loop.call_at(w.loop.start + p.start, w.create, obj)
    w.run(7)  # every StartTime has passed
    return w


def table_pod(name: str, priority: int, size: int, node: str | None = None) -> Obj:
    obj = pod(name, cpu=f"{size}m", memory=str(size), priority=None, grace=30, node_name=node)
    obj["spec"]["priority"] = priority
    if not size:  # st.MakePod() without Req(): no requests at all
        obj["spec"]["containers"][0]["resources"] = {}
    return obj


def preempt(w: World, priority: int, size: int) -> tuple[str | None, set[str]]:
    """Create the preemptor; return its nominated node and the pods it disrupted."""
    w.create(table_pod("p", priority, size))
    w.run(1)
    status = w.get("p").get("status") or {}
    victims = {e["pod"] for e in w.events("pod_disrupted")}
    return status.get("nominatedNodeName"), victims


# --- TestDryRunPreemption ---------------------------------------------------------------------

DRY_RUN = [
    (
        "a pod that fits on both nodes when lower priority pods are preempted",
        (HIGH, LARGE),
        [P("p1", "node1", MID, LARGE), P("p2", "node2", MID, LARGE)],
        {"node1": {"p1"}, "node2": {"p2"}},
    ),
    (
        "a pod that would fit on the nodes, but other pods running are higher priority, "
        "no preemption would happen",
        (LOW, LARGE),
        [P("p1", "node1", MID, LARGE), P("p2", "node2", MID, LARGE)],
        {},
    ),
    (
        "medium priority pod is preempted, but lower priority one stays as it is small",
        (HIGH, LARGE),
        [
            P("p1.1", "node1", LOW, SMALL),
            P("p1.2", "node1", MID, LARGE),
            P("p2", "node2", MID, LARGE),
        ],
        {"node1": {"p1.2"}, "node2": {"p2"}},
    ),
    (
        "mixed priority pods are preempted",
        (HIGH, LARGE),
        [
            P("p1.1", "node1", MID, SMALL),
            P("p1.2", "node1", LOW, SMALL),
            P("p1.3", "node1", MID, MEDIUM),
            P("p1.4", "node1", HIGH, SMALL),
            P("p2", "node2", HIGH, LARGE),
        ],
        {"node1": {"p1.2", "p1.3"}},
    ),
    (
        "mixed priority pods are preempted, pick later StartTime one when priorities are equal",
        (HIGH, LARGE),
        [
            P("p1.1", "node1", LOW, SMALL, start=5),
            P("p1.2", "node1", LOW, SMALL, start=4),
            P("p1.3", "node1", MID, MEDIUM, start=3),
            P("p1.4", "node1", HIGH, SMALL, start=2),
            P("p2", "node2", HIGH, LARGE, start=1),
        ],
        {"node1": {"p1.1", "p1.3"}},
    ),
]


@pytest.mark.parametrize(
    ("preemptor", "pods", "candidates"),
    [case[1:] for case in DRY_RUN],
    ids=[case[0] for case in DRY_RUN],
)
def test_select_victims_on_node(
    preemptor: tuple[int, int], pods: list[P], candidates: dict[str, set[str]]
) -> None:
    for node in sorted({p.node for p in pods}):
        w = table_world([node], [p for p in pods if p.node == node])
        nominated, victims = preempt(w, *preemptor)
        if node in candidates:
            assert (nominated, victims) == (node, candidates[node])
        else:
            assert (nominated, victims) == (None, set())
            cond = w.condition("p", "PodScheduled")
            assert "No preemption victims found for incoming pod" in cond["message"]


# --- TestSelectBestCandidate ------------------------------------------------------------------

BEST = [
    (
        "a pod that fits on both nodes when lower priority pods are preempted",
        ["node1", "node2"],
        (HIGH, LARGE),
        [P("p1", "node1", MID, LARGE), P("p2", "node2", MID, LARGE)],
        "node1",  # upstream: node1 or node2; we break ties by node name
    ),
    (
        "node with min highest priority pod is picked",
        ["node1", "node2", "node3"],
        (HIGH, VERY_LARGE),
        [
            P("p1.1", "node1", MID, MEDIUM),
            P("p1.2", "node1", MID, LARGE),
            P("p2.1", "node2", MID, MEDIUM),
            P("p2.2", "node2", LOW, MEDIUM),
            P("p3.1", "node3", LOW, MEDIUM),
            P("p3.2", "node3", LOW, MEDIUM),
        ],
        "node3",
    ),
    (
        "when highest priorities are the same, minimum sum of priorities is picked",
        ["node1", "node2", "node3"],
        (HIGH, VERY_LARGE),
        [
            P("p1.1", "node1", MID, MEDIUM),
            P("p1.2", "node1", MID, LARGE),
            P("p2.1", "node2", MID, LARGE),
            P("p2.2", "node2", LOW, MEDIUM),
            P("p3.1", "node3", MID, MEDIUM),
            P("p3.2", "node3", MID, MEDIUM),
        ],
        "node2",
    ),
    (
        "when highest priority and sum are the same, minimum number of pods is picked",
        ["node1", "node2", "node3"],
        (HIGH, VERY_LARGE),
        [
            P("p1.1", "node1", MID, SMALL),
            P("p1.2", "node1", NEG, SMALL),
            P("p1.3", "node1", MID, SMALL),
            P("p1.4", "node1", NEG, SMALL),
            P("p2.1", "node2", MID, LARGE),
            P("p2.2", "node2", NEG, MEDIUM),
            P("p3.1", "node3", MID, MEDIUM),
            P("p3.2", "node3", NEG, SMALL),
            P("p3.3", "node3", LOW, SMALL),
        ],
        "node2",
    ),
    (
        "sum of adjusted priorities is considered",
        ["node1", "node2", "node3"],
        (HIGH, VERY_LARGE),
        [
            P("p1.1", "node1", MID, SMALL),
            P("p1.2", "node1", NEG, SMALL),
            P("p1.3", "node1", NEG, SMALL),
            P("p2.1", "node2", MID, LARGE),
            P("p2.2", "node2", NEG, MEDIUM),
            P("p3.1", "node3", MID, MEDIUM),
            P("p3.2", "node3", NEG, SMALL),
            P("p3.3", "node3", LOW, SMALL),
        ],
        "node2",
    ),
    (
        "non-overlapping lowest high priority, sum priorities, and number of pods",
        ["node1", "node2", "node3", "node4"],
        (VERY_HIGH, VERY_LARGE),
        [
            P("p1.1", "node1", MID, SMALL),
            P("p1.2", "node1", LOW, SMALL),
            P("p1.3", "node1", LOW, SMALL),
            P("p2.1", "node2", HIGH, LARGE),
            P("p3.1", "node3", MID, MEDIUM),
            P("p3.2", "node3", LOW, SMALL),
            P("p3.3", "node3", LOW, SMALL),
            P("p3.4", "node3", LOW, MEDIUM),
            P("p4.1", "node4", MID, MEDIUM),
            P("p4.2", "node4", MID, SMALL),
            P("p4.3", "node4", MID, SMALL),
            P("p4.4", "node4", NEG, SMALL),
        ],
        "node1",
    ),
    (
        "same priority, same number of victims, different start time for each node's pod",
        ["node1", "node2", "node3"],
        (HIGH, VERY_LARGE),
        [
            P("p1.1", "node1", MID, MEDIUM, start=2),
            P("p1.2", "node1", MID, MEDIUM, start=2),
            P("p2.1", "node2", MID, MEDIUM, start=3),
            P("p2.2", "node2", MID, MEDIUM, start=3),
            P("p3.1", "node3", MID, MEDIUM, start=1),
            P("p3.2", "node3", MID, MEDIUM, start=1),
        ],
        "node2",
    ),
    (
        "same priority, same number of victims, different start time for all pods",
        ["node1", "node2", "node3"],
        (HIGH, VERY_LARGE),
        [
            P("p1.1", "node1", MID, MEDIUM, start=4),
            P("p1.2", "node1", MID, MEDIUM, start=2),
            P("p2.1", "node2", MID, MEDIUM, start=5),
            P("p2.2", "node2", MID, MEDIUM, start=1),
            P("p3.1", "node3", MID, MEDIUM, start=3),
            P("p3.2", "node3", MID, MEDIUM, start=6),
        ],
        "node3",
    ),
    (
        "different priority, same number of victims, different start time for all pods",
        ["node1", "node2", "node3"],
        (HIGH, VERY_LARGE),
        [
            P("p1.1", "node1", LOW, MEDIUM, start=4),
            P("p1.2", "node1", MID, MEDIUM, start=2),
            P("p2.1", "node2", MID, MEDIUM, start=6),
            P("p2.2", "node2", LOW, MEDIUM, start=1),
            P("p3.1", "node3", LOW, MEDIUM, start=3),
            P("p3.2", "node3", MID, MEDIUM, start=5),
        ],
        "node2",
    ),
]


@pytest.mark.parametrize(
    ("nodes", "preemptor", "pods", "expected"),
    [case[1:] for case in BEST],
    ids=[case[0] for case in BEST],
)
def test_pick_one_node_for_preemption(
    nodes: list[str], preemptor: tuple[int, int], pods: list[P], expected: str
) -> None:
    w = table_world(nodes, pods)
    nominated, victims = preempt(w, *preemptor)
    assert nominated == expected
    assert victims and {p.node for p in pods if p.name in victims} == {expected}
    for v in victims:
        target = w.condition(v, "DisruptionTarget")
        assert (target["status"], target["reason"]) == ("True", "PreemptionByScheduler")
    assert w.node_of("p") is None  # it waits for its victims' 30 s of grace
