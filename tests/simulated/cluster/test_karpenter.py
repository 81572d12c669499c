"""Simulated Karpenter: who gets provisioned for, batching, limits, ICE, consolidation."""

from __future__ import annotations

from typing import Any

import pytest

from simulator.cluster import (
    ClusterSpec,
    IceWindow,
    NodeNotFound,
    NodePoolSpec,
    StaticNodeGroup,
    Taint,
)
from tests.simulated.cluster.builders import (
    NS,
    World,
    karpenter_world,
    latencies,
    pod,
    small_type,
    world,
)

# karpenter_world: types "small" (2 cpu, $0.1) and "large" (8 cpu, $0.4); a NodeClaim is
# Launched when its CreateFleet call returns (2 s after creation), its Node registers at
# creation + 30 s + 15 s and is Ready 5 s after that.


def claims(w: World) -> list[dict[str, Any]]:
    return w.events("nodeclaim_created")


def mixed_world(seed: int = 1, **pool: Any) -> World:
    """A static 4-core node ("sys-0") plus a Karpenter pool of "small" nodes."""
    pool.setdefault("instance_types", ("small",))
    spec = ClusterSpec(
        instance_types=(small_type("box"), small_type("small", cpu=2, memory="8Gi", price=0.1)),
        static_nodes=(StaticNodeGroup(name="sys", instance_type="box"),),
        nodepools=(NodePoolSpec(name="default", **pool),),
        latencies=latencies(pod_start=(1.0, 1.0), launch=(30.0, 30.0)),
    )
    return world(spec, seed=seed)


def hostname_not_in(*names: str) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "kubernetes.io/hostname",
                                "operator": "NotIn",
                                "values": list(names),
                            }
                        ]
                    }
                ]
            }
        }
    }


def test_an_unschedulable_pod_gets_a_node_through_the_nodeclaim_lifecycle() -> None:
    w = karpenter_world()
    w.create(pod("job", cpu=1))
    w.run(60)
    assert [(e["t"], e["instance_type"]) for e in claims(w)] == [(1.0, "small")]
    name = claims(w)[0]["nodeclaim"]
    # Launched when the CreateFleet call returns (2 s), the Node registers once booted.
    assert [e["t"] for e in w.events("nodeclaim_launched")] == [3.0]
    assert [e["t"] for e in w.events("node_added")] == [46.0]
    assert [e["t"] for e in w.events("node_ready")] == [51.0]
    assert w.node_of("job") == name and w.phase("job") == "Running"
    claim = w.store.get("NodeClaim", None, name)
    assert {c["type"]: c["status"] for c in claim["status"]["conditions"]} == {
        "Launched": "True",
        "Registered": "True",
        "Initialized": "True",
        "Ready": "True",
    }
    node = w.store.get("Node", None, name)
    assert node["metadata"]["labels"]["karpenter.sh/nodepool"] == "default"
    assert node["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "small"
    assert w.cluster.stats().nodes_launched == 1


def test_no_provisioning_for_a_pod_waiting_on_its_preemption() -> None:
    w = mixed_world(instance_types=("small", "box"))
    w.create(pod("ph-runner", cpu=3, priority=-10, grace=30))
    w.run(1)
    w.create(pod("runner", cpu=2, priority=0))
    w.run(25)
    assert w.get("runner")["status"]["nominatedNodeName"] == "sys-0"
    assert claims(w) == []
    w.run(10)
    assert w.node_of("runner") == "sys-0"
    assert claims(w) == []
    # the reconciler recreates the preempted placeholder: now Karpenter launches for it
    w.create(pod("ph-runner-2", cpu=3, priority=-10))  # sys-0 has 1920m left
    w.run(2)
    assert [e["pods"] for e in claims(w)] == [1]


def test_no_provisioning_for_pods_no_pool_can_serve() -> None:
    w = mixed_world(taints=(Taint(key="dedicated", value="ci"),))
    w.create(pod("filler", cpu=3, priority=20))
    w.create(pod("intolerant", cpu=1))
    w.create(
        pod(
            "elsewhere",
            cpu=1,
            node_selector={"topology.kubernetes.io/zone": "mars-1a"},
            tolerations=[{"key": "dedicated", "operator": "Exists"}],
        )
    )
    w.run(30)
    assert claims(w) == []
    w.create(pod("tolerant", cpu=1, tolerations=[{"key": "dedicated", "operator": "Exists"}]))
    w.run(2)
    assert len(claims(w)) == 1
    w.run(60)
    assert w.node_of("tolerant") == claims(w)[0]["nodeclaim"]
    assert w.node_of("intolerant") is None


def test_nodepool_limits_cap_what_is_launched_and_status_resources_follow() -> None:
    w = karpenter_world(instance_types=("small",), limits={"cpu": 4})
    for i in range(4):
        w.create(pod(f"p{i}", cpu="1500m"))  # one per small node (1930m allocatable)
    w.run(120)
    assert len(claims(w)) == 2
    assert sum(1 for i in range(4) if w.phase(f"p{i}") == "Running") == 2
    status = w.store.get("NodePool", None, "default")["status"]["resources"]
    assert (status["cpu"], status["nodes"]) == ("4", "2")
    w.run(300)  # nothing more, however long they wait
    assert len(claims(w)) == 2


def test_batching_waits_for_one_idle_second() -> None:
    w = karpenter_world()
    w.create(pod("a", cpu=1))
    w.run(0.5)
    w.create(pod("b", cpu=1))
    w.run(0.4)
    w.create(pod("c", cpu=1))
    w.run(5)
    assert [(e["t"], e["pods"]) for e in claims(w)] == [(1.9, 3)]


def test_batching_closes_a_busy_window_after_ten_seconds() -> None:
    w = karpenter_world(instance_types=("small",))
    for i in range(40):  # a pod every 0.5 s for 20 s: never 1 s idle
        w.loop.call_at(w.loop.start + i * 0.5, w.create, pod(f"p{i}", cpu="1500m"))
    w.run(25)
    times = sorted({e["t"] for e in claims(w)})
    assert times[0] == 10.0
    # p0..p19: p20, created at the very instant the window closes, is not marked
    # Unschedulable by the scheduler yet, so it goes to the next batch.
    assert sum(e["pods"] for e in claims(w) if e["t"] == 10.0) == 20
    assert times[1] == 20.0


def test_one_fleet_call_tries_every_offering_before_failing() -> None:
    """karpenter-provider-aws pkg/providers/instance/instance.go: CreateFleet gets every
    available (instance type, zone) of the capacity type as an override; an ICE'd override is
    a fleet error (and enters the 3 min unavailable-offerings cache) while the instance comes
    from the next one, in the same call. No NodeClaim fails."""
    spec = ClusterSpec(
        instance_types=(
            small_type("small", cpu=2, memory="8Gi", price=0.1),
            small_type("large", cpu=8, memory="32Gi", price=0.4),
        ),
        nodepools=(NodePoolSpec(name="default", zones=("us-east-1a",), consolidate_after=None),),
        ice_windows=(IceWindow(instance_type="small", start=0, end=1000),),
        latencies=latencies(pod_start=(1.0, 1.0), launch=(30.0, 30.0)),
    )
    w = world(spec)
    w.create(pod("first", cpu=1))
    w.run(90)
    assert [(e["t"], e["instance_types"]) for e in claims(w)] == [(1.0, ["small", "large"])]
    launched = w.events("nodeclaim_launched")
    assert [(e["t"], e["instance_type"]) for e in launched] == [(3.0, "large")]
    assert w.events("nodeclaim_failed") == []
    assert [e for e in w.store.list("Event") if e["reason"] == "InsufficientCapacityError"] == []
    assert w.node_of("first") == launched[0]["nodeclaim"]
    assert w.cluster.lifecycle.unavailable(("small", "us-east-1a", "on-demand"))

    # Within the blackout a new claim no longer lists the ICE'd type ...
    w.create(pod("second", cpu=1, affinity=hostname_not_in(w.node("first"))))
    w.run(60)  # t = 150
    assert claims(w)[1]["instance_types"] == ["large"]
    # ... after it (3 min after t = 3) the cheap type is a candidate again (and ICEs again).
    w.run(40)  # t = 190
    taken = [w.node("first"), w.node("second")]
    w.create(pod("third", cpu=1, affinity=hostname_not_in(*taken)))
    w.run(90)
    assert claims(w)[2]["instance_types"] == ["small", "large"]
    assert [e["instance_type"] for e in w.events("nodeclaim_launched")] == ["large"] * 3
    assert w.phase("third") == "Running"


def test_a_claim_whose_every_override_is_out_of_capacity_is_deleted_with_an_event() -> None:
    """karpenter pkg/controllers/nodeclaim/lifecycle/launch.go: on InsufficientCapacityError
    it publishes a Warning Event (reason InsufficientCapacityError) on the NodeClaim and
    deletes the NodeClaim; it never writes a Launched=False condition. The pod re-triggers
    the provisioner on its 10 s requeue; while the offering is cached unavailable no claim
    is made for it."""
    spec = ClusterSpec(
        instance_types=(small_type("small", cpu=2, memory="8Gi", price=0.1),),
        nodepools=(NodePoolSpec(name="default", zones=("us-east-1a",), consolidate_after=None),),
        ice_windows=(IceWindow(instance_type="small", start=0, end=1000),),
        latencies=latencies(pod_start=(1.0, 1.0), launch=(30.0, 30.0)),
    )
    w = world(spec)
    conditions: list[Any] = []
    w.store.subscribe(
        lambda _t, obj: conditions.extend((obj.get("status") or {}).get("conditions") or ()),
        ["NodeClaim"],
    )
    w.create(pod("job", cpu=1))
    w.run(3)
    failed = w.events("nodeclaim_failed")
    name = claims(w)[0]["nodeclaim"]
    assert [(e["t"], e["nodeclaim"], e["offerings"]) for e in failed] == [
        (3.0, name, ["small/us-east-1a/on-demand"])
    ]
    events = [e for e in w.store.list("Event") if e["reason"] == "InsufficientCapacityError"]
    assert [
        (e["type"], e["involvedObject"]["kind"], e["involvedObject"]["name"]) for e in events
    ] == [("Warning", "NodeClaim", name)]
    assert events[0]["message"].startswith(f"NodeClaim {name} event: ")
    assert not any(c.get("reason") == "InsufficientCapacityError" for c in conditions)
    assert w.store.get("NodeClaim", None, name)["metadata"].get("deletionTimestamp")
    w.run(1)
    assert w.store.find("NodeClaim", None, name) is None
    assert [e["t"] for e in w.events("nodeclaim_deleted")] == [4.0]

    w.run(175)  # t = 179: requeues at 10, 20, ... find only the cached offering
    assert len(claims(w)) == 1
    w.run(15)  # the cache entry expires at 183; the requeue at 190 opens a batch
    assert [e["t"] for e in claims(w)] == [1.0, 191.0]
    assert len(w.events("nodeclaim_failed")) == 2


def test_an_empty_node_is_removed_after_consolidate_after() -> None:
    w = karpenter_world(consolidate_after=120.0)
    w.create(pod("job", cpu=1))
    w.run(100)
    node = w.node_of("job")
    w.cluster.finish_pod(NS, "job")  # last pod event at t = 100
    w.run(119)
    assert node in w.nodes()
    w.run(40)  # decided at the first poll after t = 220, executed after 15 s validation
    assert node not in w.nodes()
    removed = w.events("node_removed")
    assert [(e["node"], e["reason"]) for e in removed] == [(node, "consolidated")]
    assert 220 <= removed[0]["t"] <= 250
    assert w.store.list("NodeClaim") == []
    assert w.events("pod_deleted")[-1]["reason"] == "completed"
    assert w.store.get("NodePool", None, "default")["status"]["resources"]["nodes"] == "0"


def test_a_node_that_gets_a_pod_during_validation_is_kept() -> None:
    w = karpenter_world(consolidate_after=30.0)
    w.create(pod("job", cpu=1))
    w.run(100)
    node = w.node_of("job")
    w.cluster.finish_pod(NS, "job")
    w.run(45)  # t = 145: decided at t = 140, to be re-checked at t = 155
    w.create(pod("late", cpu=1))
    w.run(60)
    assert node in w.nodes() and w.node_of("late") == node


@pytest.mark.parametrize("protected", [False, True])
def test_underutilized_consolidation_evicts_unless_a_pod_says_do_not_disrupt(
    protected: bool,
) -> None:
    w = mixed_world(consolidate_after=60.0)
    w.create(pod("filler", cpu="3500m", priority=20))
    annotations = {"karpenter.sh/do-not-disrupt": "true"} if protected else None
    w.create(pod("mover", cpu=1, annotations=annotations))
    w.run(100)
    node = w.node_of("mover")
    assert node is not None and node != "sys-0"
    w.cluster.finish_pod(NS, "filler")  # now "mover" would fit on sys-0
    w.run(500)
    if protected:
        assert node in w.nodes() and w.phase("mover") == "Running"
        assert w.events("pod_disrupted") == []
    else:
        assert node not in w.nodes()
        assert [(e["pod"], e["reason"]) for e in w.events("pod_disrupted")] == [
            ("mover", "consolidated")
        ]
        assert w.events("pod_deleted")[-1]["reason"] == "consolidated"
        assert w.events("node_disrupted")[0]["reason"] == "underutilized"


def test_consolidation_evicts_through_the_eviction_path_after_tainting_the_node() -> None:
    w = mixed_world(consolidate_after=60.0)
    w.create(pod("filler", cpu="3500m", priority=20))
    w.create(pod("mover", cpu=1, grace=30))
    w.run(100)
    node = w.node("mover")
    w.cluster.finish_pod(NS, "filler")
    for _ in range(60):
        w.run(5)
        if w.events("node_disrupted"):
            break
    taints = w.store.get("Node", None, node)["spec"]["taints"]
    assert {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"} in taints
    target = w.condition("mover", "DisruptionTarget")
    assert (target["status"], target["reason"]) == ("True", "EvictionByEvictionAPI")
    assert w.store.get("Node", None, node)["metadata"]["deletionTimestamp"]
    w.run(31)  # the evicted pod honours its grace period, then the node goes
    assert w.pod("mover") is None and node not in w.nodes()


def test_consolidation_prefers_nodes_with_lower_priority_pods() -> None:
    w = mixed_world(consolidate_after=60.0)
    w.create(pod("filler", cpu="3500m", priority=20))
    w.create(pod("runner", cpu=1, priority=0))
    w.create(pod("ph-runner", cpu=1, priority=-10))
    w.run(100)
    nodes = {w.node_of("runner"), w.node_of("ph-runner")}
    assert len(nodes) == 2 and "sys-0" not in nodes
    ph_node = w.node_of("ph-runner")
    w.cluster.finish_pod(NS, "filler")
    w.run(500)
    disrupted = w.events("node_disrupted")
    assert disrupted[0]["node"] == ph_node


def test_a_placeholders_only_node_is_consolidated_into_room_a_finished_pod_just_freed() -> None:
    """Karpenter treats a never-preempting, negative-priority placeholder like any pod
    (``IsReschedulable`` ignores priority; ``SimulateScheduling`` needs only that the
    candidate's pods fit elsewhere): the node holding it alone is deleted as soon as a pod
    frees room on another node, and the freed node - whose own consolidateAfter has not
    passed - is kept. This is the warm pool's churn (bench/launch_causes.py): the freed room
    is taken by the relocated placeholder, so the next refill needs a new node."""
    w = karpenter_world(consolidate_after=300.0)
    w.create(pod("job", cpu="1500m"))
    w.run(60)
    w.create(pod("ph-w", cpu="1500m", priority=-10))
    w.run(440)  # t = 500: the placeholder's node has had no pod event for over 300 s
    freed, ph_node = w.node("job"), w.node("ph-w")
    assert freed != ph_node
    w.cluster.finish_pod(NS, "job")
    w.run(24)  # decided at the first poll after t = 500, executed 15 s later
    assert ph_node in w.nodes()
    w.run(21)
    assert ph_node not in w.nodes() and freed in w.nodes()
    assert [(e["node"], e["reason"]) for e in w.events("node_disrupted")] == [
        (ph_node, "underutilized")
    ]
    assert [(e["pod"], e["reason"]) for e in w.events("pod_disrupted")] == [
        ("ph-w", "consolidated")
    ]


def test_losing_a_node_removes_its_pods_node_and_claim_and_capacity_comes_back() -> None:
    w = karpenter_world()
    w.create(pod("job", cpu=1))
    w.run(60)
    node = w.node("job")
    with pytest.raises(NodeNotFound):
        w.cluster.lose_node("nope")
    w.cluster.lose_node(node)
    assert w.pod("job") is None
    assert w.events("pod_deleted")[-1]["reason"] == "node_lost"
    assert [(e["node"], e["reason"]) for e in w.events("node_removed")] == [(node, "node_lost")]
    assert w.store.list("NodeClaim") == [] and w.nodes() == []
    w.create(pod("job", cpu=1))
    w.run(60)
    assert w.phase("job") == "Running" and w.node_of("job") != node


def test_the_default_spec_serves_gpu_workflows_from_the_gpu_pool() -> None:
    w = world(ClusterSpec.default())
    w.create(
        pod(
            "workflow",
            cpu=2,
            memory="8Gi",
            gpu=1,
            priority=20,
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}],
        )
    )
    w.create(pod("runner", cpu=1, priority=0))
    w.run(120)
    # the runner does not tolerate the system nodes' CriticalAddonsOnly taint, so it gets the
    # cheapest general-purpose node; the GPU pod the cheapest GPU node.
    by_pool = {e["nodepool"]: e["instance_type"] for e in claims(w)}
    assert by_pool == {"gpu": "g5.xlarge", "default": "m5.large"}
    assert w.phase("workflow") == "Running" and w.phase("runner") == "Running"


@pytest.mark.parametrize(
    ("value", "consolidated"),
    [("10m", False), ("2m", True), ("0s", True), ("forever", True), ("false", True)],
)
def test_a_do_not_disrupt_duration_protects_until_it_elapses_from_the_pod_start(
    value: str, consolidated: bool
) -> None:
    """Karpenter's IsDoNotDisruptActive: a positive Go duration protects while the pod is
    younger than it; an invalid or non-positive value protects nothing."""
    w = mixed_world(consolidate_after=60.0)
    w.create(pod("filler", cpu="3500m", priority=20))
    w.create(pod("mover", cpu=1, annotations={"karpenter.sh/do-not-disrupt": value}))
    w.run(100)
    node = w.node_of("mover")
    assert node is not None and node != "sys-0"
    w.cluster.finish_pod(NS, "filler")  # now "mover" would fit on sys-0
    w.run(400)  # t = 500: the mover started about 8 minutes ago
    assert (node not in w.nodes()) is consolidated


def test_a_do_not_disrupt_duration_ends_one_poll_after_it_elapses() -> None:
    """Boundary: the protection ends at start + duration, not at the next unrelated event."""
    w = mixed_world(consolidate_after=60.0)
    w.create(pod("filler", cpu="3500m", priority=20))
    w.create(pod("mover", cpu=1, annotations={"karpenter.sh/do-not-disrupt": "5m"}))
    w.run(100)
    node = w.node_of("mover")
    info = w.cluster.state.pod(NS, "mover")
    assert info is not None and info.bound_at is not None
    w.cluster.finish_pod(NS, "filler")
    w.run(info.bound_at + 300 - 1 - w.loop.now())  # one second before it ends
    assert node in w.nodes() and w.events("node_disrupted") == []
    w.run(120)  # next disruption polls (10 s) + validation (15 s) + eviction
    assert w.events("node_disrupted")[0]["reason"] == "underutilized"
