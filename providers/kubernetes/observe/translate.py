"""Translate Kubernetes objects (API JSON dicts) into the reconciler's ClusterSnapshot.

Pure functions over an :class:`ObjectSource`: the watch-fed cache in production, the
simulated world's ObjectStore in the simulator, plain dicts in tests. The translation only
records facts (docs/design.md#capacity-ledger counting happens in ``reconciler.capacity``):

1. Scale-set identity: the EphemeralRunnerSet (ERS) of the target, the ARS name (explicit,
   else the ERS's ``actions.github.com/scale-set-name`` label, else the ERS name) and the live
   ``maxRunners`` / ``minRunners`` from the AutoscalingRunnerSet spec when present; both 0
   while ARC has switched the scale set off (its runners ``Outdated``: ``switched_off``).
2. EphemeralRunners of this ERS (controller ownerReference, or the scale-set-name label when
   no ERS owner is recorded): their names link runner pods; Running ones without
   ``status.jobId`` are idle registered runners.
3. One pass over the pods of the runner (and placeholder) namespace: placeholders (our
   labels), runner pods (owned by one of our EphemeralRunners, or labelled
   ``actions-ephemeral-runner=True`` + our scale-set-name), workflow-pod candidates
   (``runner-pod`` label, name ending ``-workflow``; step pods are ignored).
4. Workflow candidates are kept when their runner pod is ours.
5. Placeholders are grouped into pairs; ``node_blocked`` is computed against the node
   (cordoned, not Ready, missing, ``karpenter.sh/disrupted``, or an untolerated
   NoSchedule/NoExecute taint, with Kubernetes toleration semantics).

Everything is O(pods + nodes + runners). The scale set's own objects (target, ERS, ARS limits,
EphemeralRunners) are read by providers/kubernetes/observe/scale_set.py; recent Karpenter capacity
failures by providers/kubernetes/observe/signals.py;
:func:`providers.kubernetes.placement.fit.fit_estimate` is the Ray-style bin-packing bound on new
pairs (bounds attempts only; never reported as capacity).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from providers.kubernetes.observe.admission import AT_BINDING, binding_confirms, pod_resource_names
from providers.kubernetes.observe.nodes import (
    LazyNodeStates,
    NodeState,
    node_state,
)
from providers.kubernetes.observe.object_fields import (
    float_or_none,
    metadata_of,
    owners_of,
    parse_timestamp,
    pod_phase,
)
from providers.kubernetes.observe.scale_set import (
    ObjectSource,
    ScaleSetTarget,
    find_object,
    live_limits,
    our_runners,
    runner_activity,
    runner_view,
    scale_set_name,
    switched_off,
)
from providers.kubernetes.observe.signals import capacity_signals_from
from providers.kubernetes.pods import labels as L
from providers.kubernetes.pods.job_images import (
    failed_pre_pulls,
    job_container_image,
    pull_secret_names,
)
from providers.kubernetes.watch.memo import ObjectMemo
from reconciler.snapshot import (
    ClusterSnapshot,
    Demand,
    FitEstimate,
    LaunchFacts,
    PairPods,
    PlaceholderPod,
    RunnerPod,
    WorkflowPod,
)
from state_machine.record import HOT_PREFIX
from state_machine.states import Role

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]

_ROLES = {r.value: r for r in Role}
#: Upper bound reported when a NodePool sets no limit on any resource the pair needs.
UNBOUNDED_PAIRS = 10_000


# --- the snapshot ---------------------------------------------------------------------------


def placeholder_pod(pod: Obj, nodes: Mapping[str, NodeState]) -> PlaceholderPod | None:
    """A PlaceholderPod from a pod carrying our labels; None if its role label is unknown.

    ``nodes``: :func:`node_states` of the cluster. A pod bound to a node missing from it
    (deleted, or not yet in the cache) is ``node_blocked``: the placeholder is then STALLED,
    never lost, so a cache lag costs capacity for one tick, not a pair.
    """
    meta = pod.get("metadata") or {}
    lab = meta.get("labels") or {}
    role = _ROLES.get(lab.get(L.LABEL_ROLE, ""))
    if role is None:
        log.warning(
            "placeholder %s/%s has an unknown role label %r; ignored",
            meta.get("namespace"),
            meta.get("name"),
            lab.get(L.LABEL_ROLE),
        )
        return None
    spec = pod.get("spec") or {}
    node_name = spec.get("nodeName") or None
    blocked = False
    if node_name:
        state = nodes.get(node_name)
        blocked = state is None or state.blocks(spec.get("tolerations") or ())
    status = pod.get("status") or {}
    disruption = False
    message = None
    for cond in status.get("conditions") or ():
        ctype = cond.get("type")
        if ctype == "DisruptionTarget":
            disruption = cond.get("status") == "True"
        elif ctype == "PodScheduled" and cond.get("status") == "False":
            message = cond.get("message") or cond.get("reason") or "Unschedulable"
    annotations = meta.get("annotations") or {}
    return PlaceholderPod(
        name=meta.get("name", ""),
        namespace=meta.get("namespace", ""),
        uid=meta.get("uid", ""),
        pair_id=lab.get(L.LABEL_PAIR, ""),
        role=role,
        phase=pod_phase(pod),
        node_name=node_name,
        deleting=bool(meta.get("deletionTimestamp")),
        disruption_target=disruption,
        node_blocked=blocked,
        unschedulable_message=message,
        instance=lab.get(L.LABEL_INSTANCE, ""),
        expires_at=float_or_none(annotations.get(L.ANNOTATION_EXPIRES_AT)),
        created_at=parse_timestamp(meta.get("creationTimestamp")) or 0.0,
        # The builder's mark, and the requests checked again: a GPU half never counts at
        # binding whatever its annotation says.
        confirm_at_binding=annotations.get(L.ANNOTATION_CONFIRM) == AT_BINDING
        and binding_confirms(pod_resource_names(pod)),
        failed_pre_pulls=failed_pre_pulls(pod),
    )


def assigned_jobs(ers: Obj | None, min_runners: int) -> int | None:
    """Jobs GitHub has assigned to the scale set, from the EphemeralRunnerSet's
    ``spec.replicas``: ARC's scaler writes ``min(minRunners + totalAssignedJobs, maxRunners)``
    on every poll (listener/arc/scaler.py, as ARC's listener does). None without an ERS.

    With hot slots the scaler adds the idle runners it keeps for them; no object says how
    many, so the reconcile step takes them off (reconciler/hot_slots.py
    ``assigned_net_of_hot``, with the count its last step gave the scaler)."""
    replicas = ((ers or {}).get("spec") or {}).get("replicas")
    if ers is None or not isinstance(replicas, int):
        return None
    return max(0, replicas - min_runners)


def _prefer(current: PlaceholderPod | None, new: PlaceholderPod) -> PlaceholderPod:
    """Two pods claim the same pair and role (should not happen): keep the live, newer one."""
    if current is None:
        return new
    if current.deleting != new.deleting:
        return current if new.deleting else new
    return new if new.created_at >= current.created_at else current


def group_pairs(pods: Iterable[PlaceholderPod]) -> dict[str, PairPods]:
    halves: dict[str, list[PlaceholderPod | None]] = {}
    for pod in pods:
        slot = halves.setdefault(pod.pair_id, [None, None])
        index = 0 if pod.role is Role.RUNNER else 1
        slot[index] = _prefer(slot[index], pod)
    return {pair: PairPods(runner=r, workflow=w) for pair, (r, w) in halves.items()}


class PodView:
    """What :func:`build_snapshot` reads from one pod, whatever the scale set: parsed once per
    pod version when a :class:`SnapshotMemo` is used."""

    __slots__ = (
        "_blocked", "_placed", "_state", "arc_scale_set", "ephemeral", "placeholder", "runner",
        "runner_owners", "scale_set", "tolerations", "workflow", "workflow_labelled",
    )  # fmt: skip

    def __init__(self, pod: Obj) -> None:
        meta = metadata_of(pod)
        lab = meta.get("labels") or {}
        spec = pod.get("spec") or {}
        #: Placeholder side: our scale-set label, the pod parsed as if its node accepted it.
        self.scale_set: str | None = lab.get(L.LABEL_SCALE_SET)
        self.placeholder: PlaceholderPod | None = None
        self.tolerations: Sequence[Mapping[str, Any]] = spec.get("tolerations") or ()
        self._blocked: PlaceholderPod | None = None
        self._state: NodeState | None = None
        self._placed: PlaceholderPod | None = None
        if self.scale_set is not None:
            self.placeholder = placeholder_pod(pod, NO_NODE_CHECK)
        #: Runner namespace side: a workflow pod (not a step pod), or a runner pod candidate.
        self.workflow_labelled = L.LABEL_WORKFLOW_RUNNER_POD in lab
        self.workflow: WorkflowPod | None = None
        name = meta.get("name", "")
        node_name = spec.get("nodeName") or None
        deleting = bool(meta.get("deletionTimestamp"))
        if self.workflow_labelled and name.endswith("-workflow") and "-step-" not in name:
            self.workflow = WorkflowPod(
                name=name,
                runner_pod=lab[L.LABEL_WORKFLOW_RUNNER_POD],
                node_name=node_name,
                phase=pod_phase(pod),
                deleting=deleting,
                job_image=job_container_image(spec),
                pull_secrets=pull_secret_names(spec),
            )
        self.runner_owners = tuple(owners_of(pod, "EphemeralRunner"))
        self.ephemeral = lab.get(L.LABEL_EPHEMERAL_RUNNER)
        self.arc_scale_set = lab.get(L.LABEL_ARC_SCALE_SET_NAME)
        self.runner = RunnerPod(
            name=name, node_name=node_name, phase=pod_phase(pod), deleting=deleting
        )

    def placed(self, nodes: Mapping[str, NodeState]) -> PlaceholderPod | None:
        """The placeholder with ``node_blocked`` from this snapshot's nodes."""
        ph = self.placeholder
        if ph is None or not ph.node_name:
            return ph
        state = nodes.get(ph.node_name)
        if state is not None and state is self._state:
            return self._placed  # same node version (memoised NodeState): same answer
        placed = ph
        if state is None or state.blocks(self.tolerations):
            if self._blocked is None:
                self._blocked = replace(ph, node_blocked=True)
            placed = self._blocked
        self._state, self._placed = state, placed
        return placed


class _NoNodeCheck(Mapping[str, NodeState]):
    """Every node accepts the pod (PodView applies the snapshot's nodes afterwards)."""

    _OPEN = NodeState(hard_blocked=False)

    def __getitem__(self, name: str) -> NodeState:
        return self._OPEN

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


#: Every node accepts every pod: judge a pod alone (PodView, providers/kubernetes/observe/rises.py).
NO_NODE_CHECK = _NoNodeCheck()


class SnapshotMemo:
    """Parsed pods, nodes and EphemeralRunners reused across the snapshots of one source
    (see :mod:`providers.kubernetes.watch.memo`); pass the same one to every
    :func:`build_snapshot` over that source."""

    def __init__(self) -> None:
        self.pods: ObjectMemo[PodView] = ObjectMemo(PodView)
        self.nodes: ObjectMemo[NodeState] = ObjectMemo(node_state)
        self.runners = ObjectMemo(runner_view)

    def age(self) -> None:
        for memo in (self.pods, self.nodes, self.runners):
            memo.age()


def build_snapshot(
    source: ObjectSource,
    target: ScaleSetTarget,
    *,
    now: float,
    demand: Demand,
    fit: FitEstimate | None = None,
    launches: LaunchFacts | None = None,
    memo: SnapshotMemo | None = None,
    hot: bool = False,
    placed_by_hook_template: bool | None = None,
) -> ClusterSnapshot:
    """One immutable snapshot of this scale set's slice of the cluster (see module doc).

    ``hot``: hot slots are kept (``hotRunners``), so the idle and busy runners are named too
    (also whenever a hot slot's placeholder is seen: a listener restarted without them).
    ``placed_by_hook_template``: the placeholder builder's placement, carried as a fact."""
    ers = find_object(source, "EphemeralRunnerSet", target.runner_namespace, target.ers_name)
    scale_set = scale_set_name(ers, target)
    max_runners, min_runners = live_limits(source, target, ers)
    off = switched_off(source, target, ers)
    if off is not None:
        # ARC pins the set at zero replicas: a drain, so nothing is held or advertised for it.
        max_runners = min_runners = 0
    if memo is None:
        view: Callable[[Obj], PodView] = PodView
        runner_names, idle = our_runners(source, target, scale_set)
        nodes = LazyNodeStates(source.list("Node"))
    else:
        view = memo.pods
        runner_names, idle = our_runners(source, target, scale_set, memo.runners)
        nodes = LazyNodeStates(source.list("Node"), memo.nodes)

    namespaces = [target.runner_namespace]
    if target.placeholder_namespace != target.runner_namespace:
        namespaces.append(target.placeholder_namespace)

    placeholders: list[PlaceholderPod] = []
    runner_pods: list[RunnerPod] = []
    workflow_candidates: list[WorkflowPod] = []
    for namespace in namespaces:
        in_runner_ns = namespace == target.runner_namespace
        in_placeholder_ns = namespace == target.placeholder_namespace
        for pod in source.list("Pod", namespace):
            v = view(pod)
            if v.scale_set is not None:
                if in_placeholder_ns and v.scale_set == target.ers_name:
                    ph = v.placed(nodes)
                    if ph is not None:
                        placeholders.append(ph)
                continue
            if not in_runner_ns:
                continue
            if v.workflow_labelled:
                if v.workflow is not None:
                    workflow_candidates.append(v.workflow)
                continue
            owned = any(o in runner_names for o in v.runner_owners)
            labelled = v.ephemeral == "True" and v.arc_scale_set == scale_set
            if owned or labelled:
                runner_pods.append(v.runner)
    if memo is not None:
        memo.age()

    ours = {r.name for r in runner_pods}
    workflow_pods = [w for w in workflow_candidates if w.runner_pod in ours]
    hot_placeholders = {p.name: p for p in placeholders if p.pair_id.startswith(HOT_PREFIX)}
    if hot_placeholders:
        placeholders = [p for p in placeholders if p.name not in hot_placeholders]
    idle_names = busy_names = frozenset[str]()
    if hot or hot_placeholders:
        idle_names, busy_names = runner_activity(source, target, scale_set)

    return ClusterSnapshot(
        taken_at=now,
        max_runners=max_runners,
        placeholders=group_pairs(placeholders),
        runner_pods=tuple(runner_pods),
        workflow_pods=tuple(workflow_pods),
        idle_runners=idle,
        hot_placeholders=hot_placeholders,
        idle_runner_names=idle_names,
        busy_runner_names=busy_names,
        assigned_jobs=assigned_jobs(ers, min_runners),
        demand=demand,
        fit=fit,
        launches=launches,
        capacity_signals=capacity_signals_from(source, now),
        switched_off=off,
        placed_by_hook_template=placed_by_hook_template,
    )
