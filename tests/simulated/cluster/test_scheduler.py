"""kube-scheduler in the simulated cluster: filters, messages, queue order, coalesced passes."""

from __future__ import annotations

from simulator.cluster import StaticNodeGroup, Taint
from tests.simulated.cluster.builders import NS, pod, small_type, static_world


def test_a_pod_that_fits_is_bound_and_started() -> None:
    w = static_world(nodes=1)
    w.create(pod("a", cpu=1))
    w.run(1)
    assert w.node_of("a") == "n-0"
    assert w.phase("a") == "Running"
    assert w.condition("a", "PodScheduled")["status"] == "True"
    assert w.condition("a", "Ready")["status"] == "True"


def test_insufficient_resources_mark_the_pod_unschedulable_with_the_real_message() -> None:
    w = static_world(nodes=2)  # 4 cores each, 3920m allocatable (EKS kube-reserved)
    w.create(pod("big", cpu=4))
    w.run(1)
    cond = w.condition("big", "PodScheduled")
    assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
    assert cond["message"].startswith("0/2 nodes are available: 2 Insufficient cpu.")
    assert w.node_of("big") is None


def test_node_selector_affinity_taints_and_cordon_filter_nodes() -> None:
    w = static_world(
        instance_types=(small_type(),),
        static_nodes=(
            StaticNodeGroup(name="plain", instance_type="box", labels={"disk": "hdd"}),
            StaticNodeGroup(
                name="gpu",
                instance_type="box",
                labels={"disk": "ssd"},
                taints=(Taint(key="nvidia.com/gpu", value="true"),),
            ),
        ),
    )
    w.create(pod("wants-ssd", node_selector={"disk": "ssd"}))
    w.create(
        pod(
            "wants-ssd-tolerates",
            node_selector={"disk": "ssd"},
            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}],
        )
    )
    w.create(
        pod(
            "not-hdd",
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "disk", "operator": "NotIn", "values": ["hdd"]}
                                ]
                            }
                        ]
                    }
                }
            },
            tolerations=[{"operator": "Exists"}],
        )
    )
    w.run(1)
    assert w.node_of("wants-ssd") is None
    assert w.condition("wants-ssd", "PodScheduled")["message"].startswith(
        "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint {nvidia.com/gpu: true}."
    )
    assert w.node_of("wants-ssd-tolerates") == "gpu-0"
    assert w.node_of("not-hdd") == "gpu-0"

    w.store.mutate("Node", None, "plain-0", lambda n: n["spec"].update(unschedulable=True))
    w.create(pod("anywhere"))
    w.run(1)
    assert w.node_of("anywhere") is None
    assert "1 node(s) were unschedulable" in w.condition("anywhere", "PodScheduled")["message"]


def test_pod_count_is_a_resource() -> None:
    w = static_world(nodes=1, instance_types=(small_type(pods=2),))
    for name in ("a", "b", "c"):
        w.create(pod(name, cpu="100m", memory="64Mi"))
    w.run(1)
    assert [w.node_of(n) for n in ("a", "b", "c")] == ["n-0", "n-0", None]
    assert "1 Too many pods" in w.condition("c", "PodScheduled")["message"]


def test_higher_priority_pending_pods_get_freed_space_first() -> None:
    w = static_world(nodes=1)
    w.create(pod("filler", cpu=3, priority=20))
    w.run(1)
    w.create(pod("low", cpu=2, priority=-10))  # created first ...
    w.create(pod("high", cpu=2, priority=10))  # ... but outranked (both never preempt)
    w.run(1)
    assert w.node_of("low") is None and w.node_of("high") is None
    w.cluster.finish_pod(NS, "filler")
    w.run(1)
    assert w.node_of("high") == "n-0"
    assert w.node_of("low") is None


def test_terminating_pods_hold_their_resources_until_removed() -> None:
    w = static_world(nodes=1)
    w.create(pod("old", cpu=3, grace=30))
    w.run(1)
    w.store.delete("Pod", NS, "old")  # graceful: 30 s
    w.create(pod("new", cpu=3))
    w.run(29)
    assert w.pod("old") is not None and w.node_of("new") is None
    w.run(1.5)
    assert w.pod("old") is None
    assert w.node_of("new") == "n-0"
    deleted = w.events("pod_deleted")
    assert deleted[-1]["pod"] == "old" and deleted[-1]["reason"] == "deleted"


def test_least_allocated_scoring_spreads_and_breaks_ties_by_node_name() -> None:
    w = static_world(nodes=3)
    for name in ("a", "b", "c", "d"):
        w.create(pod(name, cpu=1))
    w.run(1)
    assert [w.node_of(n) for n in ("a", "b", "c", "d")] == ["n-0", "n-1", "n-2", "n-0"]


def test_most_allocated_scoring_packs() -> None:
    w = static_world(nodes=3, scoring="MostAllocated")
    for name in ("a", "b", "c"):
        w.create(pod(name, cpu=1))
    w.run(1)
    assert {w.node_of(n) for n in ("a", "b", "c")} == {"n-0"}


def test_a_burst_at_one_instant_is_one_pass_and_unchanged_conditions_are_not_rewritten() -> None:
    w = static_world(nodes=1)
    for i in range(50):
        w.create(pod(f"p{i}", cpu=1))
    w.run(0.5)
    assert w.cluster.scheduler.passes == 1
    bound = [i for i in range(50) if w.node_of(f"p{i}")]
    assert bound == [0, 1, 2]  # 3920m allocatable
    rv = w.get("p10")["metadata"]["resourceVersion"]
    w.run(60)  # six periodic retries later
    assert w.cluster.scheduler.passes > 1
    assert w.get("p10")["metadata"]["resourceVersion"] == rv


def test_effective_requests_count_init_containers_and_sidecars() -> None:
    w = static_world(nodes=1)
    p = pod("init-heavy", cpu="500m")
    p["spec"]["initContainers"] = [
        {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
        {"name": "setup", "resources": {"requests": {"cpu": "3"}}},
    ]
    w.create(p)  # max(0.5 + 1, 3 + 1) = 4 cores: more than 3920m
    w.run(1)
    assert w.node_of("init-heavy") is None
