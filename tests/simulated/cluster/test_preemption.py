"""Preemption in the simulated kube-scheduler at the priorities of the ladder
(docs/design.md#priority-ladder): runner placeholder -10, a priority-0 pod, workflow placeholder 10,
workflow 20. (The product's arc-runner class now sits at 20 beside arc-workflow; these tests pin
Kubernetes semantics.)"""

from __future__ import annotations

from typing import Any

from tests.simulated.cluster.builders import NS, World, pod, static_world


def disrupted(w: World) -> list[str]:
    return [e["pod"] for e in w.events("pod_disrupted")]


def test_a_runner_preempts_a_runner_placeholder_but_not_a_workflow_placeholder() -> None:
    w = static_world(nodes=2)
    w.create(pod("ph-runner", cpu=3, priority=-10))
    w.create(pod("ph-workflow", cpu=3, priority=10))
    w.run(1)
    assert {w.node_of("ph-runner"), w.node_of("ph-workflow")} == {"n-0", "n-1"}

    w.create(pod("runner", cpu=2, priority=0))
    w.run(1)
    assert w.pod("ph-runner") is None  # grace 0: gone at once
    assert w.phase("ph-workflow") == "Running"
    assert w.node_of("runner") is not None
    assert disrupted(w) == ["ph-runner"]
    assert w.events("pod_deleted")[0]["reason"] == "preempted"


def test_a_runner_cannot_preempt_the_workflow_placeholder_and_stays_unschedulable() -> None:
    w = static_world(nodes=1)
    w.create(pod("ph-workflow", cpu=3, priority=10))
    w.run(1)
    w.create(pod("runner", cpu=2, priority=0))
    w.run(30)
    assert w.phase("ph-workflow") == "Running"
    assert w.node_of("runner") is None
    cond = w.condition("runner", "PodScheduled")
    assert cond["reason"] == "Unschedulable"
    assert "No preemption victims found for incoming pod" in cond["message"]
    assert "nominatedNodeName" not in w.get("runner")["status"]


def test_a_workflow_pod_preempts_the_workflow_placeholder() -> None:
    w = static_world(nodes=1)
    w.create(pod("ph-workflow", cpu=3, priority=10))
    w.run(1)
    w.create(pod("workflow", cpu=2, priority=20))
    w.run(1)
    assert w.pod("ph-workflow") is None
    assert w.node_of("workflow") == "n-0"
    assert disrupted(w) == ["ph-workflow"]


def test_preemption_policy_never_never_preempts_but_can_be_preempted() -> None:
    w = static_world(nodes=1)
    w.create(pod("ph-runner", cpu=3, priority=-10))
    w.run(1)
    never = pod("ph-workflow", cpu=2, priority=10)  # arc-placeholder-workflow: Never
    w.create(never)
    w.run(30)
    assert w.get("ph-workflow")["spec"]["preemptionPolicy"] == "Never"
    assert w.node_of("ph-workflow") is None
    assert w.phase("ph-runner") == "Running"
    assert (
        "not eligible due to preemptionPolicy=Never"
        in w.condition("ph-workflow", "PodScheduled")["message"]
    )

    w.cluster.finish_pod(NS, "ph-runner")
    w.run(1)
    assert w.node_of("ph-workflow") == "n-0"
    w.create(pod("workflow", cpu=2, priority=20))
    w.run(1)
    assert w.pod("ph-workflow") is None
    assert w.node_of("workflow") == "n-0"


def test_victims_keep_their_resources_for_their_grace_period() -> None:
    w = static_world(nodes=1)
    w.create(pod("victim", cpu=3, priority=-10, grace=30))
    w.run(1)
    w.create(pod("runner", cpu=2, priority=0))
    w.run(0.5)
    assert w.get("victim")["metadata"]["deletionTimestamp"]
    target = w.condition("victim", "DisruptionTarget")
    assert (target["status"], target["reason"]) == ("True", "PreemptionByScheduler")
    assert w.get("runner")["status"]["nominatedNodeName"] == "n-0"
    assert w.node_of("runner") is None

    w.run(29)  # 29.5 s after the preemption: still terminating, still holding 3 cores
    assert w.pod("victim") is not None
    assert w.node_of("runner") is None
    w.run(1)
    assert w.pod("victim") is None
    assert w.node_of("runner") == "n-0"
    bound = w.events("pod_bound")[-1]
    assert bound["pod"] == "runner" and bound["t"] == 31.0


def test_a_nominated_preemptor_does_not_preempt_again_while_its_victims_terminate() -> None:
    w = static_world(nodes=2)
    w.create(pod("ph-a", cpu=3, priority=-10, grace=60))
    w.create(pod("ph-b", cpu=3, priority=-10, grace=60))
    w.run(1)
    w.create(pod("runner", cpu=2, priority=0))
    w.run(59)  # several scheduler retries while the first victim terminates
    assert len(disrupted(w)) == 1
    first = disrupted(w)[0]
    other = "ph-b" if first == "ph-a" else "ph-a"
    assert w.get(other)["metadata"].get("deletionTimestamp") is None
    assert w.node_of("runner") is None
    assert (
        "terminating pod on the nominated node" in w.condition("runner", "PodScheduled")["message"]
    )
    w.run(2)
    assert w.node_of("runner") == w.events("pod_nominated")[0]["node"]
    assert w.phase(other) == "Running"


def test_a_lower_priority_pod_cannot_take_the_space_a_preemptor_waits_for() -> None:
    w = static_world(nodes=1)
    w.create(pod("keeper", cpu=1, priority=20))
    w.create(pod("victim", cpu=2, priority=-10, grace=10))
    w.run(1)
    w.create(pod("runner", cpu="2500m", priority=0))
    w.run(1)
    assert w.get("runner")["status"]["nominatedNodeName"] == "n-0"
    w.create(pod("sneaky", cpu="500m", priority=-10))  # 920m free now, but reserved
    w.run(20)
    assert w.node_of("runner") == "n-0"
    assert w.node_of("sneaky") is None


def test_the_minimal_victim_set_reprieves_what_is_not_needed() -> None:
    w = static_world(nodes=1)
    w.create(pod("ph-1", cpu=1, priority=-10))
    w.create(pod("ph-2", cpu=1, priority=-10))
    w.create(pod("ph-wf", cpu=1, priority=10))
    w.run(1)  # 3000m of 3920m used
    w.create(pod("runner", cpu="1500m", priority=0))  # needs 580m more: one victim
    w.run(1)
    assert len(disrupted(w)) == 1
    assert disrupted(w)[0] in ("ph-1", "ph-2")
    assert w.phase("ph-wf") == "Running"
    assert w.node_of("runner") == "n-0"


def test_node_choice_prefers_lower_victim_priority_then_fewer_victims() -> None:
    w = static_world(nodes=3)
    # n-0: one -10 pod and a 10 pod; n-1: two -10 pods; n-2: one 10 pod
    w.create(pod("keep-0", cpu=2, priority=20, node_name="n-0"))
    w.create(pod("a", cpu=1, priority=-10, node_name="n-0"))
    w.create(pod("b1", cpu="1500m", priority=-10, node_name="n-1"))
    w.create(pod("b2", cpu="1500m", priority=-10, node_name="n-1"))
    w.create(pod("c", cpu=3, priority=10, node_name="n-2"))
    w.run(1)
    # 2.5 cores: n-0 is no candidate (920m free + a's 1000m < 2500m), n-1 needs both -10
    # pods, n-2 needs the 10 pod. Lowest highest-victim priority wins: n-1 (-10 < 10).
    w.create(pod("runner", cpu="2500m", priority=20))
    w.run(1)
    assert sorted(disrupted(w)) == ["b1", "b2"]
    assert w.node_of("runner") == "n-1"

    w2 = static_world(nodes=2)
    w2.create(pod("x1", cpu=1, priority=-10, node_name="n-0"))
    w2.create(pod("x2", cpu=1, priority=-10, node_name="n-0"))
    w2.create(pod("x3", cpu=1, priority=-10, node_name="n-0"))
    w2.create(pod("y", cpu=3, priority=-10, node_name="n-1"))
    w2.run(1)
    # Same highest victim priority; n-0 needs 2 victims, n-1 one: fewer victims wins
    # (kube-scheduler offsets each priority by MaxInt32+1 before summing).
    w2.create(pod("runner", cpu=2, priority=0))
    w2.run(1)
    assert disrupted(w2) == ["y"]
    assert w2.node_of("runner") == "n-1"


def test_a_nominated_pod_is_not_held_back_by_a_pod_terminating_for_another_reason() -> None:
    """kube-scheduler defaultpreemption PodEligibleToPreemptOthers: only a lower-priority pod
    *terminating by preemption* (DisruptionTarget reason PreemptionByScheduler) on the
    nominated node makes the preemptor wait; one its owner deleted does not."""
    w = static_world(nodes=2)
    w.create(pod("leaving", cpu=3, priority=10, grace=60, node_name="n-0"))
    w.create(pod("ph", cpu=3, priority=-10, node_name="n-1"))
    w.run(1)
    w.store.delete("Pod", NS, "leaving")  # its owner deletes it: 60 s of grace, no DisruptionTarget
    workflow = pod("workflow", cpu=2, priority=20)
    workflow["status"] = {"nominatedNodeName": "n-0"}  # left over from an earlier preemption
    w.create(workflow)
    w.run(1)
    assert disrupted(w) == ["ph"]
    assert w.node_of("workflow") == "n-1"
    assert w.pod("leaving") is not None  # still terminating on n-0


def test_a_preemptor_whose_nominated_node_was_cordoned_preempts_elsewhere() -> None:
    """The same function: a nominated node that now fails the pod's filters as
    UnschedulableAndUnresolvable (here: cordoned) no longer holds the preemptor back."""
    w = static_world(nodes=2)
    w.create(pod("ph-a", cpu=3, priority=-10, grace=120, node_name="n-0"))
    w.create(pod("ph-b", cpu=3, priority=-10, grace=0, node_name="n-1"))
    w.run(1)
    w.create(pod("runner", cpu=2, priority=0))
    w.run(1)
    assert w.get("runner")["status"]["nominatedNodeName"] == "n-0"  # tie: node name order
    assert disrupted(w) == ["ph-a"]  # 120 s of grace: the runner waits on n-0

    def cordon(obj: dict[str, Any]) -> None:
        obj["spec"]["unschedulable"] = True

    w.store.mutate("Node", None, "n-0", cordon)
    w.run(11)  # the next retry
    assert disrupted(w) == ["ph-a", "ph-b"]
    assert w.node_of("runner") == "n-1"
