"""The simulated kubelet: start latency, endings, deadlines, graceful removal, pinned pods."""

from __future__ import annotations

import pytest

from simulator.cluster import PodStateError
from tests.simulated.cluster.builders import NS, pod, static_world


def test_pods_start_after_a_seeded_latency_within_the_configured_range() -> None:
    w = static_world(nodes=2, latencies={"pod_start": (2.0, 5.0)})
    for i in range(6):
        w.create(pod(f"p{i}", cpu="100m"))
    w.run(1.9)
    assert all(w.phase(f"p{i}") == "Pending" for i in range(6))
    w.run(3.2)
    assert all(w.phase(f"p{i}") == "Running" for i in range(6))
    starts = [e["t"] for e in w.events("pod_running")]
    assert all(2.0 <= t <= 5.0 for t in starts) and len(set(starts)) > 1


def test_a_scheduler_bound_pod_sits_pending_on_its_node_until_the_kubelet_starts_it() -> None:
    """kubernetes/kubernetes pkg/kubelet/lifecycle/predicate.go: the kubelet admits a pod the
    scheduler bound by re-running the scheduler's fit (GeneralPredicates) against the pods it
    admitted. The simulated kubelet has no pods the scheduler does not count and no device
    plugins, so it never refuses a scheduler-bound pod: between binding and the start latency
    the pod is Pending with ``spec.nodeName`` set, which is what the listener's
    ``confirmAtBinding`` counts for cpu/memory placeholders (issue 31)."""
    w = static_world(nodes=1, latencies={"pod_start": (2.0, 5.0)})
    w.create(pod("ph", cpu="500m"))
    w.run(0.1)
    assert (w.node_of("ph"), w.phase("ph")) == ("n-0", "Pending")
    assert not w.events("pod_running")
    w.run(5.0)
    assert w.phase("ph") == "Running"
    assert [e["pod"] for e in w.events("pod_running")] == ["ph"]


def test_priority_admission_fills_priority_and_preemption_policy_from_the_class() -> None:
    w = static_world(nodes=1)
    w.create(pod("ph", priority=-10))
    w.create(pod("plain", priority=None))
    spec = w.get("ph")["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (-10, "Never")
    spec = w.get("plain")["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")


def test_a_finished_pod_releases_its_resources_at_once() -> None:
    w = static_world(nodes=1)
    w.create(pod("job", cpu=3))
    w.create(pod("next", cpu=3))
    w.run(1)
    assert w.node_of("next") is None
    assert w.cluster.finish_pod(NS, "job") is True
    assert w.phase("job") == "Succeeded"
    w.run(0.1)
    assert w.node_of("next") == "n-0"
    ended = w.events("pod_ended")[0]
    assert (ended["pod"], ended["phase"], ended["reason"]) == ("job", "Succeeded", "Completed")
    assert w.cluster.finish_pod(NS, "job") is False  # already ended
    assert w.cluster.finish_pod(NS, "nope") is False


def test_a_failed_finish_and_finishing_a_pod_that_never_started() -> None:
    w = static_world(nodes=1, latencies={"pod_start": (5.0, 5.0)})
    w.create(pod("job", cpu=1))
    w.run(1)
    with pytest.raises(PodStateError, match="never started"):
        w.cluster.finish_pod(NS, "job")
    w.run(5)
    w.cluster.finish_pod(NS, "job", succeeded=False)
    assert w.phase("job") == "Failed"
    w.store.delete("Pod", NS, "job")
    assert w.events("pod_deleted")[-1]["reason"] == "completed"


def test_active_deadline_fails_the_pod_at_start_plus_deadline() -> None:
    w = static_world(nodes=1)
    w.create(pod("ph", cpu=1, deadline=600))
    w.run(599.5)
    assert w.phase("ph") == "Running"
    w.run(1)
    assert w.phase("ph") == "Failed"
    assert w.get("ph")["status"]["reason"] == "DeadlineExceeded"
    w.store.delete("Pod", NS, "ph")
    assert w.events("pod_deleted")[-1]["reason"] == "deadline"


def test_graceful_deletion_uses_the_shorter_of_the_pod_and_request_grace() -> None:
    w = static_world(nodes=1)
    w.create(pod("a", cpu=1, grace=30))
    w.create(pod("b", cpu=1, grace=30))
    w.run(1)
    w.store.delete("Pod", NS, "a")
    w.store.delete("Pod", NS, "b", grace_period_seconds=5)
    w.run(4.9)
    assert w.pod("b") is not None
    w.run(0.2)
    assert w.pod("b") is None and w.pod("a") is not None
    w.run(25)
    assert w.pod("a") is None


def test_a_pinned_pod_that_does_not_fit_is_rejected_and_preempts_nothing() -> None:
    w = static_world(nodes=1)
    w.create(pod("ph-workflow", cpu=3, priority=10))
    w.run(1)
    # classic `kubernetes` container mode: the hook pins the workflow pod to the runner's node
    w.create(pod("workflow", cpu=2, priority=20, node_name="n-0"))
    w.run(1)
    status = w.get("workflow")["status"]
    assert status["phase"] == "Failed"
    assert status["reason"] == "OutOfcpu"
    assert status["message"].startswith("Pod was rejected: Node didn't have enough resource: cpu")
    assert w.phase("ph-workflow") == "Running"
    assert w.find_condition("ph-workflow", "DisruptionTarget") is None
    assert w.events("pod_disrupted") == []


def test_a_pinned_pod_that_fits_runs_without_the_scheduler() -> None:
    w = static_world(nodes=2)
    w.create(pod("workflow", cpu=2, node_name="n-1"))
    w.run(1)
    assert w.phase("workflow") == "Running" and w.node_of("workflow") == "n-1"
    assert w.cluster.scheduler.bindings == 0


def test_a_pod_pinned_to_a_missing_node_is_garbage_collected() -> None:
    w = static_world(nodes=1)
    w.create(pod("stray", node_name="gone"))
    w.run(1)
    assert w.pod("stray") is None
    assert w.events("pod_deleted")[-1]["reason"] == "node_lost"
