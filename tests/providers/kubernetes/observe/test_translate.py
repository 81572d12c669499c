"""Translation from Kubernetes objects to the ClusterSnapshot (plain dicts and the sim store)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.kubernetes.observe.nodes import node_state, tolerates
from providers.kubernetes.observe.scale_set import ScaleSetTarget, live_limits
from providers.kubernetes.observe.signals import capacity_signals_from
from providers.kubernetes.observe.translate import build_snapshot
from providers.kubernetes.placement.fit import fit_estimate
from providers.kubernetes.pods.labels import LABEL_SCALE_SET
from reconciler.snapshot import Demand, PodPhase
from simulator.engine.store import ObjectStore
from state_machine.states import Role
from tests.providers.kubernetes import objects as o

TARGET = ScaleSetTarget(
    ers_name=o.ERS, runner_namespace=o.NS, placeholder_namespace=o.NS, max_runners=10
)


def snap(source: o.DictSource, target: ScaleSetTarget = TARGET):
    return build_snapshot(source, target, now=o.T0, demand=Demand(queued_jobs=3))


def test_an_empty_cluster_gives_the_configured_limit_and_nothing_else():
    s = snap(o.DictSource(o.ers()))
    assert (s.max_runners, s.taken_at) == (10, o.T0)
    assert not s.placeholders and not s.runner_pods and not s.workflow_pods
    assert s.demand.queued_jobs == 3


def test_live_max_runners_from_the_autoscaling_runner_set_wins_including_zero():
    s = snap(o.DictSource(o.ers(), o.ars(max_runners=0, min_runners=0)))
    assert s.max_runners == 0
    s = snap(o.DictSource(o.ers(), o.ars(min_runners=2)))
    assert s.max_runners == 10


def test_live_limits_read_min_runners_from_the_autoscaling_runner_set():
    """The start-up check warns about minRunners > 0 (idle runners take jobs unchecked); it
    must see the live AutoscalingRunnerSet value, not only the listener config's."""
    source = o.DictSource(o.ers(), o.ars(min_runners=2))
    assert live_limits(source, TARGET, o.ers()) == (10, 2)
    assert live_limits(o.DictSource(o.ers()), TARGET, o.ers()) == (10, 0)


def test_placeholders_are_grouped_into_pairs_by_labels():
    src = o.DictSource(
        o.ers(),
        o.node("node-a"),
        o.placeholder("abcde-1", "runner", expires_at="1700000900.5"),
        o.placeholder(
            "abcde-1",
            "workflow",
            phase="Pending",
            node=None,
            conditions=[
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/3 nodes are available",
                }
            ],
        ),
        o.placeholder("abcde-2", "runner", expires_at="soon"),
        o.placeholder("zzzzz-9", "runner", scale_set="other-set"),
    )
    s = snap(src)
    assert set(s.placeholders) == {"abcde-1", "abcde-2"}
    pair = s.placeholders["abcde-1"]
    assert pair.runner is not None and pair.workflow is not None
    assert pair.runner.role is Role.RUNNER and pair.runner.counts
    assert pair.runner.expires_at == 1700000900.5
    assert pair.runner.created_at == o.T0 and pair.runner.instance == o.INSTANCE
    assert pair.workflow.phase is PodPhase.PENDING and pair.workflow.node_name is None
    assert pair.workflow.unschedulable_message == "0/3 nodes are available"
    assert s.placeholders["abcde-2"].runner.expires_at is None  # unparsable annotation
    assert s.placeholders["abcde-2"].workflow is None


def test_placeholder_facts_deleting_disruption_and_node_state():
    src = o.DictSource(
        o.ers(),
        o.node("node-a"),
        o.node("cordoned", unschedulable=True),
        o.node("notready", ready=False),
        o.node("disrupted", taints=[{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]),
        o.placeholder("p-1", "runner", deleting=True),
        o.placeholder(
            "p-1",
            "workflow",
            conditions=[
                {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
            ],
        ),
        o.placeholder("p-2", "runner", node="cordoned"),
        o.placeholder("p-2", "workflow", node="notready"),
        o.placeholder("p-3", "runner", node="disrupted"),
        o.placeholder("p-3", "workflow", node="vanished"),
    )
    s = snap(src)
    p1, p2, p3 = (s.placeholders[k] for k in ("p-1", "p-2", "p-3"))
    assert p1.runner.deleting and p1.runner.lost
    assert p1.workflow.disruption_target and not p1.workflow.counts
    assert p2.runner.node_blocked and p2.workflow.node_blocked
    assert p3.runner.node_blocked and p3.workflow.node_blocked  # disrupted; node gone
    assert not p1.workflow.node_blocked


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        (
            {"key": "ci", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
            {"key": "ci", "value": "true", "effect": "NoSchedule"},
            True,
        ),
        (
            {"key": "ci", "value": "true"},
            {"key": "ci", "value": "true", "effect": "NoExecute"},
            True,
        ),
        (
            {"key": "ci", "operator": "Equal", "value": "false"},
            {"key": "ci", "value": "true", "effect": "NoSchedule"},
            False,
        ),
        (
            {"key": "ci", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "ci", "value": "whatever", "effect": "NoSchedule"},
            True,
        ),
        (
            {"key": "ci", "operator": "Exists", "effect": "NoExecute"},
            {"key": "ci", "effect": "NoSchedule"},
            False,
        ),
        ({"operator": "Exists"}, {"key": "anything", "effect": "NoExecute"}, True),
        ({"operator": "Equal", "value": ""}, {"key": "anything", "effect": "NoExecute"}, False),
        ({"key": "other", "operator": "Exists"}, {"key": "ci", "effect": "NoSchedule"}, False),
    ],
)
def test_toleration_matching_follows_kubernetes(toleration, taint, expected):
    assert tolerates(toleration, taint) is expected


def test_only_untolerated_noschedule_or_noexecute_taints_block_a_node():
    gpu = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    soft = {"key": "soft", "effect": "PreferNoSchedule"}
    tainted = o.node("gpu-1", taints=[gpu, soft])
    assert node_state(tainted).blocks([])
    assert not node_state(tainted).blocks([{"key": "nvidia.com/gpu", "operator": "Exists"}])
    assert not node_state(o.node("plain", taints=[soft])).blocks([])


def test_runner_pods_by_owner_or_by_label_and_workflow_pods_by_runner_label():
    src = o.DictSource(
        o.ers(),
        o.ephemeral_runner("arc-runners-runner-a"),
        o.ephemeral_runner("arc-runners-runner-b", job_id="42"),
        o.ephemeral_runner("other-runner-x", owner="other-set"),
        o.runner_pod("arc-runners-runner-a", by_label=False),  # owner only
        o.runner_pod("arc-runners-runner-b", by_owner=False, phase="Pending", node=None),
        o.runner_pod("arc-runners-runner-c", deleting=True),  # label only, terminating
        o.pod(
            "other-runner-x",
            owners=[{"kind": "EphemeralRunner", "name": "other-runner-x"}],
            labels={
                "actions-ephemeral-runner": "True",
                "actions.github.com/scale-set-name": "other",
            },
        ),
        o.workflow_pod("arc-runners-runner-a"),
        o.workflow_pod("arc-runners-runner-a", suffix="-step-abc12"),
        o.workflow_pod("arc-runners-runner-b", node=None, phase="Pending"),
        o.workflow_pod("other-runner-x"),
        o.pod(
            "arc-runners-runner-a-workflow",
            namespace="elsewhere",
            labels={"runner-pod": "arc-runners-runner-a"},
        ),
    )
    s = snap(src)
    runners = {r.name: r for r in s.runner_pods}
    assert set(runners) == {"arc-runners-runner-a", "arc-runners-runner-b", "arc-runners-runner-c"}
    assert runners["arc-runners-runner-a"].holds_slot
    assert runners["arc-runners-runner-b"].alive and not runners["arc-runners-runner-b"].holds_slot
    assert runners["arc-runners-runner-c"].deleting and not runners["arc-runners-runner-c"].alive
    assert [(w.name, w.runner_pod, w.holds_slot) for w in s.workflow_pods] == [
        ("arc-runners-runner-a-workflow", "arc-runners-runner-a", True),
        ("arc-runners-runner-b-workflow", "arc-runners-runner-b", False),
    ]
    assert s.idle_runners == 1  # runner-a: Running, no job; runner-b has a job


@pytest.mark.parametrize(
    ("status", "idle"),
    [
        ({"phase": "Running", "ready": True}, True),  # ARC 0.13/0.14: phase from the pod
        ({"phase": "Pending", "ready": True, "runnerId": 7}, True),  # 0.15: online, no job
        ({"phase": "Running", "ready": True, "jobId": "j"}, False),  # 0.15 after JobStarted
        ({"phase": "Pending", "ready": True, "jobId": "j"}, False),  # a listener without phase
        ({"phase": "Pending", "ready": False}, False),  # not online yet
        ({"phase": "Succeeded", "ready": True}, False),
        ({"phase": "Failed", "ready": True}, False),
        ({"phase": "Outdated", "ready": True}, False),
        ({"phase": "Running", "ready": True, "deleting": True}, False),
    ],
)
def test_idle_runners_are_online_without_a_job_in_every_arc_version(status, idle):
    """Prevents a 0.15 regression: idle runners stay Pending there, and were counted as 0."""
    runner = o.ephemeral_runner("arc-runners-runner-a")
    if status.pop("deleting", False):
        runner["metadata"]["deletionTimestamp"] = "2026-05-01T10:00:00Z"
    runner["status"] = status
    assert snap(o.DictSource(o.ers(), runner)).idle_runners == int(idle)


def test_placeholders_in_a_separate_namespace_are_found_there_only():
    target = ScaleSetTarget(
        ers_name=o.ERS,
        runner_namespace=o.NS,
        placeholder_namespace="arc-placeholders",
        max_runners=5,
    )
    src = o.DictSource(
        o.ers(),
        o.node("node-a"),
        o.placeholder("p-1", "runner", namespace="arc-placeholders"),
        o.placeholder("p-2", "runner"),
    )
    s = snap(src, target)
    assert set(s.placeholders) == {"p-1"}


def test_the_simulated_object_store_is_an_object_source():
    store = ObjectStore(lambda: o.T0)
    for obj in (
        o.ers(),
        o.node("node-a"),
        o.placeholder("p-1", "runner"),
        o.placeholder("p-1", "workflow"),
        o.runner_pod("arc-runners-runner-a"),
    ):
        store.create(obj)
    s = build_snapshot(store, TARGET, now=o.T0, demand=Demand())
    assert s.placeholders["p-1"].runner.uid.startswith("00000000-")
    assert s.placeholders["p-1"].runner.counts and s.placeholders["p-1"].workflow.counts
    assert [r.name for r in s.runner_pods] == ["arc-runners-runner-a"]


def ice_event(name: str, claim: str, at: str, reason: str = "InsufficientCapacityError") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "reason": reason,
        "type": "Warning",
        "lastTimestamp": at,
        "involvedObject": {"kind": "NodeClaim", "name": claim},
        "message": f"NodeClaim {claim} event: creating instance, insufficient capacity, "
        "with fleet error(s), InsufficientInstanceCapacity: We currently do not have "
        "sufficient g5.xlarge capacity in the Availability Zone you requested (us-east-1a).",
    }


def test_capacity_signals_are_recent_insufficient_capacity_events_newest_first():
    """Karpenter's only ICE trace is a Warning Event InsufficientCapacityError on the NodeClaim,
    which it deletes at once (kubernetes-sigs/karpenter
    pkg/controllers/nodeclaim/lifecycle/launch.go, events.go)."""
    source = o.DictSource(
        ice_event("e-recent", "runners-abc", "2023-11-14T22:10:00Z"),
        ice_event("e-newer", "runners-def", "2023-11-14T22:12:00Z"),
        ice_event("e-old", "runners-old", "2023-11-14T21:00:00Z"),
        ice_event("e-other", "runners-xyz", "2023-11-14T22:12:00Z", reason="Launched"),
    )
    signals = capacity_signals_from(source, now=o.T0)
    assert [s.split(":")[0] for s in signals] == [
        "InsufficientCapacityError nodeclaim/runners-def",
        "InsufficientCapacityError nodeclaim/runners-abc",
    ]
    assert "g5.xlarge" in signals[0]


RUNNER = {"cpu": Decimal("0.5"), "memory": Decimal(2**30)}
WORKFLOW = {"cpu": Decimal(1), "memory": Decimal(2 * 2**30)}


def test_fit_estimate_is_none_without_karpenter():
    assert fit_estimate(o.DictSource(o.node("n")), TARGET, RUNNER, WORKFLOW) is None


def test_fit_estimate_packs_free_allocatable_then_nodepool_headroom():
    src = o.DictSource(
        o.nodepool(limits={"cpu": "10", "memory": "64Gi"}, used={"cpu": "4", "memory": "16Gi"}),
        o.node("node-a", allocatable={"cpu": "4", "memory": "16Gi"}),
        o.node("cordoned", unschedulable=True, allocatable={"cpu": "64", "memory": "256Gi"}),
        o.pod("busy", node="node-a", phase="Running", requests={"cpu": "1", "memory": "1Gi"}),
        o.pod("waiting", requests={"cpu": "1500m", "memory": "1Gi"}),  # pending
        o.pod("done", node="node-a", phase="Succeeded", requests={"cpu": "3"}),
    )
    fit = fit_estimate(src, TARGET, RUNNER, WORKFLOW)
    # node-a: 3 cpu free, the waiting pod takes 1.5 -> 1 pair (1.5 cpu each); pools: 6 cpu
    # left, nothing waiting for a launch -> 4.
    assert fit is not None
    assert fit.new_pairs == 5
    assert fit.on_existing_nodes == 1
    assert fit.detail.startswith("1 on existing nodes + 4 within NodePool limits")


def test_a_pair_that_selects_its_nodepool_by_name_gets_that_pool_s_headroom():
    """``nodeSelector: {karpenter.sh/nodepool: runners}`` (the objects' runner template's) is
    Karpenter's own label on every node of that pool. Counted as no host, the estimate gave
    0 new pairs, so no pair needing a node was ever requested."""
    pools = o.DictSource(
        o.nodepool("runners", limits={"cpu": "10", "memory": "64Gi"}),
        o.nodepool("others", limits={"cpu": "100", "memory": "640Gi"}),
    )
    mine = {"karpenter.sh/nodepool": "runners"}
    fit = fit_estimate(
        pools, TARGET, RUNNER, WORKFLOW, runner_selector=mine, workflow_selector=mine
    )
    assert fit is not None
    assert fit.new_pairs == 6  # 10 cpu of "runners" at 1.5 cpu a pair; "others" not counted


def test_a_waiting_pod_its_selector_keeps_off_the_free_room_eats_headroom_instead():
    waiting = o.pod("waiting", requests={"cpu": "1500m", "memory": "1Gi"})
    waiting["spec"]["nodeSelector"] = {"pool": "b"}
    src = o.DictSource(
        o.nodepool(limits={"cpu": "10", "memory": "64Gi"}, used={"cpu": "4", "memory": "16Gi"}),
        o.node("node-a", allocatable={"cpu": "4", "memory": "16Gi"}, labels={"pool": "a"}),
        o.pod("busy", node="node-a", phase="Running", requests={"cpu": "1", "memory": "1Gi"}),
        waiting,
    )
    fit = fit_estimate(src, TARGET, RUNNER, WORKFLOW)
    # node-a: 3 cpu free -> 2 pairs; pools: 6 cpu left - 1.5 waiting for a launch -> 3.
    assert fit is not None
    assert (fit.on_existing_nodes, fit.new_pairs) == (2, 5)


def _full_pool_with_a_freed_slot(*waiting: dict) -> o.DictSource:  # type: ignore[type-arg]
    """A NodePool at its limit whose one node has room for exactly one pair (1.5 cpu)."""
    return o.DictSource(
        o.nodepool(limits={"cpu": "8", "memory": "64Gi"}, used={"cpu": "8", "memory": "32Gi"}),
        o.node("full", allocatable={"cpu": "8", "memory": "32Gi"}),
        o.pod("running", node="full", phase="Running", requests={"cpu": "6500m", "memory": "4Gi"}),
        *waiting,
    )


def _waiting_placeholder(name: str, scale_set: str) -> dict:  # type: ignore[type-arg]
    return o.pod(name, labels={LABEL_SCALE_SET: scale_set}, requests={"cpu": "1", "memory": "2Gi"})


def test_a_slot_freed_in_a_full_shared_pool_is_not_counted_again_while_our_pair_waits():
    """Regression (shared-nodepool): a listener counted a job's freed slot as room for one
    more pair while its own pair already waited for it, step after step; the extra pairs
    stayed PARTIAL (runner half Running, workflow half unschedulable) until
    placeholderReadyTimeout, holding 55% of seed 3's idle CPU-hours in the capped pool."""
    fit = fit_estimate(
        _full_pool_with_a_freed_slot(_waiting_placeholder("ours-w", o.ERS)),
        TARGET,
        RUNNER,
        WORKFLOW,
    )
    assert fit is not None
    assert (fit.on_existing_nodes, fit.new_pairs) == (0, 0)


def test_a_waiting_real_pod_takes_the_freed_slot_before_any_new_pair():
    waiting_job = o.pod("team-b-job-workflow", requests={"cpu": "1", "memory": "2Gi"})
    fit = fit_estimate(_full_pool_with_a_freed_slot(waiting_job), TARGET, RUNNER, WORKFLOW)
    assert fit is not None
    assert (fit.on_existing_nodes, fit.new_pairs) == (0, 0)


def test_another_scale_sets_waiting_placeholder_does_not_keep_us_from_queueing():
    """At equal priority our new pair queues behind team-b's; not counting the slot at all
    would starve this scale set whenever another one keeps a pair waiting."""
    other = _waiting_placeholder("team-b-ph-1-w", "team-b")
    fit = fit_estimate(_full_pool_with_a_freed_slot(other), TARGET, RUNNER, WORKFLOW)
    assert fit is not None
    assert (fit.on_existing_nodes, fit.new_pairs) == (1, 1)


def test_fit_estimate_without_limits_is_bounded_only_by_the_cap():
    src = o.DictSource(o.nodepool(limits=None))
    assert fit_estimate(src, TARGET, RUNNER, WORKFLOW, limit=50).new_pairs == 50


def test_fit_estimate_reports_the_runner_halfs_share_of_a_pair_only_where_they_share_nodes():
    """unblock releases ceil(n * share) stuck pairs; the share is the runner half's largest
    part of any resource (here 0.5 of 1.5 cpu, 1 of 3 GiB), and 0 when the halves are kept
    to different nodes, where a freed workflow half's room is no use to a runner half."""
    src = o.DictSource(o.nodepool(limits={"cpu": "10"}), o.node("node-a"))
    fit = fit_estimate(src, TARGET, RUNNER, WORKFLOW)
    assert fit is not None
    assert fit.runner_share == pytest.approx(1 / 3)
    big = {"cpu": Decimal(4), "memory": Decimal(8 * 2**30)}  # 0.5 / 4.5 cpu, 1 / 9 GiB
    fit = fit_estimate(src, TARGET, RUNNER, big)
    assert fit is not None and fit.runner_share == pytest.approx(1 / 9)
    apart = fit_estimate(
        src, TARGET, RUNNER, WORKFLOW, runner_selector={"pool": "a"}, workflow_selector={}
    )
    assert apart is not None and apart.runner_share == 0.0


@pytest.mark.parametrize(
    ("replicas", "min_runners", "assigned"),
    [
        (5, 0, 5),
        # the scaler writes minRunners + assigned jobs
        (5, 2, 3),
        (1, 2, 0),
        # no replicas written yet: unknown
        (None, 0, None),
    ],
)
def test_assigned_jobs_are_read_from_the_ephemeral_runner_set_replicas(
    replicas: int | None, min_runners: int, assigned: int | None
) -> None:
    ers = o.ers()
    if replicas is None:
        del ers["spec"]["replicas"]
    else:
        ers["spec"]["replicas"] = replicas
    s = snap(o.DictSource(ers, o.ars(min_runners=min_runners)))
    assert s.assigned_jobs == assigned
