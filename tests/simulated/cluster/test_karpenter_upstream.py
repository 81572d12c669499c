"""Karpenter's provisioning triggers, batch windows and in-batch NodePool limits, and which pods
it provisions for, written from kubernetes-sigs/karpenter:

- pkg/controllers/provisioning/controller.go (the pod controller: Trigger + RequeueAfter 10 s
  while ``pod.IsProvisionable``),
- pkg/controllers/provisioning/batcher.go (a window per first trigger, idle 1 s, max 10 s, one
  extension per element and window),
- pkg/controllers/provisioning/scheduling/scheduler.go (``subtractMax`` /
  ``filterByRemainingResources``),
- pkg/utils/pod/scheduling.go (``IsProvisionable``: not owned by a DaemonSet or a Node).
"""

from __future__ import annotations

import itertools
from typing import Any

from simulator.cluster import ClusterSpec, NodePoolSpec
from simulator.engine.store import Obj
from tests.simulated.cluster.builders import (
    World,
    karpenter_world,
    latencies,
    pod,
    small_type,
    world,
)


def claims(w: World) -> list[dict[str, Any]]:
    return w.events("nodeclaim_created")


def record_batches(w: World) -> list[float]:
    """Times (s since start) at which the provisioner ran a batch."""
    times: list[float] = []
    run = w.cluster.provisioner.provision

    def recorded() -> int:
        times.append(round(w.loop.now() - w.loop.start, 3))
        return run()

    w.cluster.provisioner.provision = recorded  # type: ignore[method-assign]
    return times


def capped_world() -> World:
    """A pool no pod fits in (cpu limit 0): pods stay provisionable for ever."""
    return karpenter_world(instance_types=("small",), limits={"cpu": 0})


def test_a_waiting_pod_retriggers_the_provisioner_every_ten_seconds() -> None:
    w = capped_world()
    batches = record_batches(w)
    w.create(pod("job", cpu=1))  # Unschedulable at t = 0
    w.run(35)
    assert batches == [1.0, 11.0, 21.0, 31.0]
    assert claims(w) == []


def test_a_pod_that_stops_being_provisionable_stops_retriggering() -> None:
    w = capped_world()
    batches = record_batches(w)
    w.create(pod("job", cpu=1))
    w.run(15)
    w.store.delete("Pod", "arc-runners", "job")
    w.run(30)
    assert batches == [1.0, 11.0]


def test_a_repeat_trigger_of_the_same_pod_does_not_extend_the_window() -> None:
    w = capped_world()
    batches = record_batches(w)
    prov = w.cluster.provisioner
    for t in (0.0, 0.5, 0.9):
        w.loop.call_at(w.loop.start + t, prov.trigger, "same-uid")
    w.loop.call_at(w.loop.start + 5.0, prov.trigger, "a")
    w.loop.call_at(w.loop.start + 5.5, prov.trigger, "b")
    w.run(10)
    assert batches == [1.0, 6.5]  # a new element resets the idle timer, a repeat does not


def test_a_stream_of_waiting_pods_holds_the_window_open_to_its_ten_second_maximum() -> None:
    """New pods every 1.5 s would each close a window after 1 s idle; once the waiting pods
    re-trigger every 10 s at their own phases, the triggers come closer than 1 s apart and
    each window runs to the 10 s maximum."""
    w = capped_world()
    batches = record_batches(w)
    for i in range(30):
        w.loop.call_at(w.loop.start + i * 1.5, w.create, pod(f"p{i}", cpu=1))
    w.run(45)
    assert batches[:4] == [1.0, 2.5, 4.0, 5.5]  # before any requeue: 1 s idle closes them
    late = [t for t in batches if t >= 15]
    gaps = [b - a for a, b in itertools.pairwise(late)]
    assert gaps and all(g >= 10.0 for g in gaps), batches


def test_under_a_stream_of_waiting_pods_each_window_opens_as_the_last_one_closes() -> None:
    """batcher.go: the maximum timer starts when Wait receives a window's first trigger, and
    Wait clears its elements when it returns, so the pod that opened a window, re-triggering
    by its 10 s requeue at the very instant the window hits its 10 s maximum, opens the next
    window at once: windows close every 10.0 s. Treating that re-trigger as a repeat within
    the closing window made each window wait for the next trigger and drift (10.0, 20.5,
    30.7 s with a pod every 0.7 s), delaying every NodeClaim a little more each round."""
    w = capped_world()
    batches = record_batches(w)
    for i in range(64):  # a pod every 0.7 s: never 1 s idle
        w.loop.call_at(w.loop.start + i * 0.7, w.create, pod(f"p{i}", cpu=1))
    w.run(45)
    assert batches == [10.0, 20.0, 30.0, 40.0]


def test_a_capped_pool_reserves_each_new_claims_largest_option_and_fills_over_batches() -> None:
    """subtractMax: a new NodeClaim reserves the *largest* capacity among its instance-type
    options against the pool's remaining limit, so a pool capped at 12 cpu gets two claims
    (options 4 and 6 cpu, 6 reserved each) in the first batch although both launch the 4-cpu
    type; the third claim comes from a later batch, when the remaining limit is recomputed from
    what was actually launched (12 - 8 = 4 cpu: only the 4-cpu type fits)."""
    spec = ClusterSpec(
        instance_types=(
            small_type("small", cpu=4, memory="16Gi", price=0.2),
            small_type("medium", cpu=6, memory="24Gi", price=0.3),
        ),
        nodepools=(NodePoolSpec(name="default", limits={"cpu": 12}, consolidate_after=None),),
        latencies=latencies(pod_start=(1.0, 1.0), launch=(30.0, 30.0)),
    )
    w = world(spec)
    for i in range(4):
        w.create(pod(f"p{i}", cpu="3500m"))  # two never share a node of either type
    w.run(100)
    assert [(e["t"], e["instance_types"]) for e in claims(w)] == [
        (1.0, ["small", "medium"]),
        (1.0, ["small", "medium"]),
        (11.0, ["small"]),
    ]
    assert [e["instance_type"] for e in w.events("nodeclaim_launched")] == ["small"] * 3
    assert sum(1 for i in range(4) if w.phase(f"p{i}") == "Running") == 3


def owned(obj: Obj, api_version: str, kind: str) -> Obj:
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": api_version, "kind": kind, "name": "owner", "uid": "owner-uid"}
    ]
    return obj


def test_daemonset_and_mirror_pods_never_trigger_provisioning() -> None:
    w = karpenter_world()
    batches = record_batches(w)
    w.create(owned(pod("daemon", cpu=1), "apps/v1", "DaemonSet"))
    w.create(owned(pod("mirror", cpu=1), "v1", "Node"))
    w.run(30)
    assert w.condition("daemon", "PodScheduled")["reason"] == "Unschedulable"
    assert w.condition("mirror", "PodScheduled")["reason"] == "Unschedulable"
    assert batches == [] and claims(w) == []
    w.create(owned(pod("replica", cpu=1), "apps/v1", "ReplicaSet"))
    w.run(2)
    assert [e["pods"] for e in claims(w)] == [1]


def gated(obj: Obj) -> Obj:
    obj["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    return obj


def ungate(w: World, name: str) -> None:
    def change(obj: Obj) -> None:
        obj["spec"]["schedulingGates"] = []

    w.store.mutate("Pod", "arc-runners", name, change)


def test_a_gated_pod_is_neither_scheduled_nor_provisioned_until_its_gates_are_gone() -> None:
    w = karpenter_world()
    w.create(gated(pod("job", cpu=1)))
    w.run(30)
    cond = w.condition("job", "PodScheduled")
    assert (cond["status"], cond["reason"]) == ("False", "SchedulingGated")
    assert claims(w) == []
    ungate(w, "job")
    w.run(60)
    assert len(claims(w)) == 1
    assert w.phase("job") == "Running"


def test_a_batch_adds_each_pod_to_the_open_claim_holding_fewest_pods() -> None:
    """``add`` sorts the batch's new NodeClaims by pod count before each pod: four 0.5-cpu
    pods after four 4-cpu / 8Gi ones join the claim holding one big pod until it holds as
    many as the other, so neither claim outgrows the cheaper type's memory (three of each
    on one node is 27 GiB, more than its 26.7 GiB allocatable). First fit in creation order
    narrowed the first claim to the pricier type."""
    spec = ClusterSpec(
        instance_types=(
            small_type("lean", cpu=16, memory="32Gi", price=0.68, pods=234),
            small_type("roomy", cpu=16, memory="64Gi", price=0.768, pods=234),
        ),
        nodepools=(NodePoolSpec(name="default", consolidate_after=None),),
        latencies=latencies(pod_start=(1.0, 1.0), launch=(30.0, 30.0)),
    )
    w = world(spec)
    for i in range(4):
        w.create(pod(f"big{i}", cpu=4, memory="8Gi"))
    for i in range(4):
        w.create(pod(f"small{i}", cpu="500m", memory="1Gi"))
    w.run(100)
    assert sorted(e["pods"] for e in claims(w)) == [4, 4]
    assert [e["instance_type"] for e in w.events("nodeclaim_launched")] == ["lean", "lean"]
    assert all(w.phase(f"{kind}{i}") == "Running" for kind in ("big", "small") for i in range(4))
