"""Small builders so tests read like stories of the cluster."""

from __future__ import annotations

from reconciler.snapshot import (
    ClusterSnapshot,
    Demand,
    FitEstimate,
    PairPods,
    PlaceholderPod,
    PodPhase,
    RunnerPod,
    WorkflowPod,
)
from state_machine.record import pod_names
from state_machine.states import Role

SCALE_SET = "arc-runners"
NS = "arc-runners"
INSTANCE = "abcde"


def ph(
    pair_id: str,
    role: Role,
    *,
    phase: PodPhase = PodPhase.RUNNING,
    node: str | None = "node-a",
    deleting: bool = False,
    disrupted: bool = False,
    blocked: bool = False,
    instance: str = INSTANCE,
    expires_at: float | None = None,
    message: str | None = None,
) -> PlaceholderPod:
    runner_name, workflow_name = pod_names(SCALE_SET, pair_id)
    return PlaceholderPod(
        name=runner_name if role is Role.RUNNER else workflow_name,
        namespace=NS,
        uid=f"uid-{pair_id}-{role.value}",
        pair_id=pair_id,
        role=role,
        phase=phase,
        node_name=node if phase is not PodPhase.PENDING else None,
        deleting=deleting,
        disruption_target=disrupted,
        node_blocked=blocked,
        instance=instance,
        expires_at=expires_at,
        unschedulable_message=message,
    )


def running_pair(pair_id: str, **kw: object) -> PairPods:
    return PairPods(ph(pair_id, Role.RUNNER, **kw), ph(pair_id, Role.WORKFLOW, **kw))  # type: ignore[arg-type]


def pending_pair(pair_id: str, message: str | None = None) -> PairPods:
    return PairPods(
        ph(pair_id, Role.RUNNER, phase=PodPhase.PENDING, message=message),
        ph(pair_id, Role.WORKFLOW, phase=PodPhase.PENDING, message=message),
    )


def runner(name: str, node: str | None = "node-a", phase: PodPhase = PodPhase.RUNNING) -> RunnerPod:
    return RunnerPod(name=name, node_name=node, phase=phase)


def workflow(runner_name: str, node: str | None = "node-b") -> WorkflowPod:
    return WorkflowPod(
        name=f"{runner_name}-workflow",
        runner_pod=runner_name,
        node_name=node,
        phase=PodPhase.RUNNING if node else PodPhase.PENDING,
    )


def snapshot(
    *,
    now: float = 0.0,
    max_runners: int = 10,
    placeholders: dict[str, PairPods] | None = None,
    runners: tuple[RunnerPod, ...] = (),
    workflows: tuple[WorkflowPod, ...] = (),
    queued: int | None = 0,
    fit: int | None = None,
    signals: tuple[str, ...] = (),
) -> ClusterSnapshot:
    return ClusterSnapshot(
        taken_at=now,
        max_runners=max_runners,
        placeholders=placeholders or {},
        runner_pods=runners,
        workflow_pods=workflows,
        demand=Demand(queued_jobs=queued, error=None if queued is not None else "HUD down"),
        fit=FitEstimate(fit) if fit is not None else None,
        capacity_signals=signals,
    )
