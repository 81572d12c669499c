"""What the reconciler observes: one immutable snapshot of the cluster and of demand.

A snapshot is built by a provider (``providers.kubernetes.observe.translate.build_snapshot``) from
the watch-fed cache, or from the simulated world's objects through the same translation.
The reconciler never reads anything else, so every decision is a pure function of
``(pair records, snapshot, config, now)``.

Counting rules (docs/design.md#capacity-ledger) are applied in :mod:`reconciler.capacity`; the
translator only records facts (phase, node, deletion, conditions, whether the node is usable for the
pod).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from types import MappingProxyType

from state_machine.states import Role


class Half(Enum):
    """How one half of a pair is observed; computed once per pod (hot path of sync)."""

    MISSING = "missing"
    #: Exists, not confirmed yet (waiting for a node, or starting).
    PENDING = "pending"
    #: Confirmed (Running, or bound where binding is enough) on a usable node: backs capacity.
    RUNNING = "running"
    #: Confirmed but its node stopped accepting it (cordoned, disrupted, untolerated taint).
    STALLED = "stalled"
    #: Terminating, a DisruptionTarget, or ended by itself: never usable again.
    LOST = "lost"


class PodPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


#: ``counts`` is read for every placeholder on every step; on Python 3.11 (the image's) reading
#: ``Half.RUNNING`` off the class costs ~150 ns, 30x this global (bench/reconcile_step.py).
_RUNNING = Half.RUNNING
_ENDED = frozenset((PodPhase.SUCCEEDED, PodPhase.FAILED))
_ALIVE = frozenset((PodPhase.PENDING, PodPhase.RUNNING))


def holds_slot(*, bound: bool, deleting: bool, phase: PodPhase) -> bool:
    """A real runner or workflow pod holds its slot: bound to a node, not terminating, and
    Pending or Running. The one rule for the ledger (snapshot) and for which watch events
    are losses (providers/kubernetes/observe/relevance.py).

    Phase ``Unknown`` (the kubelet stopped reporting, usually a node gone unreachable) does
    not hold a slot: capacity is only what the cluster confirms, and a pod nobody can vouch
    for may already be gone with its node while its job is failed on GitHub's side; counting
    it would advertise that room to a new job. Until the pod is deleted the scheduler keeps
    its resources reserved, so not counting it can only under-advertise, and the Running ->
    Unknown event is a loss (a drop check at once)."""
    return bound and not deleting and phase in _ALIVE


@dataclass(frozen=True, slots=True)
class PlaceholderPod:
    """One placeholder pod as observed (labels identify its pair and role)."""

    name: str
    namespace: str
    uid: str
    pair_id: str
    role: Role
    phase: PodPhase
    #: ``spec.nodeName``: set once the scheduler bound the pod.
    node_name: str | None = None
    #: ``metadata.deletionTimestamp`` is set (terminating).
    deleting: bool = False
    #: ``DisruptionTarget`` condition is True (preemption / eviction under way).
    disruption_target: bool = False
    #: The pod's node is cordoned, not Ready, marked ``karpenter.sh/disrupted`` or carries a
    #: NoSchedule/NoExecute taint the pod does not tolerate.
    node_blocked: bool = False
    #: Message of ``PodScheduled=False`` (e.g. "0/3 nodes are available: ..."), for reasons.
    unschedulable_message: str | None = None
    #: Listener instance that created the pod (label), for adoption and orphan sweeps.
    instance: str = ""
    #: Lease expiry from the TTL annotation (epoch seconds); None when absent/unparsable.
    expires_at: float | None = None
    created_at: float = 0.0
    #: Binding is enough to confirm it (providers/kubernetes/observe/admission.py: it requests only
    #: what kubelet admission checks as the scheduler did, and ``confirmAtBinding`` is on).
    confirm_at_binding: bool = False
    #: ``(image, reason)`` of each pre-pull init container the kubelet could not pull or run
    #: (providers/kubernetes/pods/job_images.py: such an image is not pulled again).
    failed_pre_pulls: tuple[tuple[str, str], ...] = ()
    #: Derived from the fields above in ``__post_init__``; never passed in.
    half: Half = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.lost:
            half = Half.LOST
        elif self.confirmed:
            half = Half.STALLED if self.node_blocked else Half.RUNNING
        else:
            half = Half.PENDING
        object.__setattr__(self, "half", half)

    @property
    def running(self) -> bool:
        """Bound and Running: the scheduler placed it and the kubelet started it."""
        return self.phase is PodPhase.RUNNING and self.node_name is not None

    @property
    def confirmed(self) -> bool:
        """The node has taken it: Running, or bound where binding is enough (Pending on its
        node; a kubelet refusal would make it Failed, hence lost)."""
        if self.node_name is None:
            return False
        return self.phase is PodPhase.RUNNING or (
            self.confirm_at_binding and self.phase is PodPhase.PENDING
        )

    @property
    def ended(self) -> bool:
        """The container stopped by itself (lifetime reached, crash): it holds nothing."""
        return self.phase in _ENDED

    @property
    def lost(self) -> bool:
        """No longer usable and never will be again: terminating, disrupted or ended."""
        return self.deleting or self.disruption_target or self.ended

    @property
    def counts(self) -> bool:
        """Backs capacity now (docs/design.md#capacity-ledger): Running, bound, not lost, on a
        usable node."""
        return self.half is _RUNNING


@dataclass(frozen=True, slots=True)
class PairPods:
    """The observed pods of one pair (either may be missing)."""

    runner: PlaceholderPod | None = None
    workflow: PlaceholderPod | None = None

    def get(self, role: Role) -> PlaceholderPod | None:
        return self.runner if role is Role.RUNNER else self.workflow

    def present(self) -> tuple[PlaceholderPod, ...]:
        return tuple(p for p in (self.runner, self.workflow) if p is not None)


@dataclass(frozen=True, slots=True)
class RunnerPod:
    """A real ARC runner pod of this scale set."""

    name: str
    node_name: str | None
    phase: PodPhase
    deleting: bool = False

    @property
    def holds_slot(self) -> bool:
        """It holds runner-side resources (:func:`holds_slot`)."""
        bound = self.node_name is not None
        return holds_slot(bound=bound, deleting=self.deleting, phase=self.phase)

    @property
    def alive(self) -> bool:
        """Exists and has not finished: counts against maxRunners headroom."""
        return not self.deleting and self.phase in _ALIVE


@dataclass(frozen=True, slots=True)
class WorkflowPod:
    """A real workflow pod (label ``runner-pod=<runner pod name>``), not step pods."""

    name: str
    runner_pod: str
    node_name: str | None
    phase: PodPhase
    deleting: bool = False
    #: The image of the container hook's ``job`` container (None: no such container).
    job_image: str | None = None
    #: Names in the pod's ``imagePullSecrets`` (the hook adds one for a job's credentials).
    pull_secrets: tuple[str, ...] = ()

    @property
    def holds_slot(self) -> bool:
        """It holds workflow-side resources (:func:`holds_slot`)."""
        bound = self.node_name is not None
        return holds_slot(bound=bound, deleting=self.deleting, phase=self.phase)


@dataclass(frozen=True, slots=True)
class FleetPart:
    """This cluster's part of its fleet (reconciler/fleet.py): ``rank`` among ``members``
    healthy clusters sorted by name. Queued jobs and the warm pool are both split exactly by
    it (the first clusters by name take what is left over)."""

    rank: int = 0
    members: int = 1

    @property
    def share(self) -> float:
        return 1.0 / self.members


@dataclass(frozen=True, slots=True)
class Demand:
    """Queued jobs for this scale set's labels (see ``providers.demand``), or why unknown.

    ``queued_jobs is None`` means the source failed; decide then falls back to the
    configured floor (fail-safe: never 0 pairs, never unlimited).
    """

    queued_jobs: int | None = 0
    error: str | None = None
    #: Which source produced it (``statistics``, ``hud``, ...), for logs and metrics.
    source: str = ""
    #: This cluster's part of its fleet when ``fleetView`` is on and fresh: ``queued_jobs``
    #: is already its part of the queue, and the warm pool keeps its part of
    #: ``proactiveCapacity``. None: this cluster acts alone.
    fleet: FleetPart | None = None


@dataclass(frozen=True, slots=True)
class FitEstimate:
    """Upper bound on how many *new* pairs could schedule now (docs/design.md#launch-ramp).

    From Karpenter NodePool ``spec.limits - status.resources`` and free allocatable on
    matching nodes. Bounds attempts only; it is never reported as capacity.
    """

    new_pairs: int
    detail: str = ""
    #: Of ``new_pairs``, how many fit free allocatable on existing nodes (no launch needed).
    on_existing_nodes: int = 0
    #: Pairs one node of the best-fitting allowed instance type holds (launch group size).
    pairs_per_node: int = 1
    #: Pairs one node of the largest allowed type holds (what a big batch fills).
    pairs_per_large_node: int = 1
    #: Of one pair's requests, the largest share any resource's runner half takes
    #: (``runner / (runner + workflow)``, e.g. 0.2 for 500m + 2 cpu): a bound workflow half
    #: released makes room for ``(1 - share) / share`` runner halves. 0 when the halves may
    #: not share a node (different nodeSelectors): then that room is no use to them.
    runner_share: float = 0.0


@dataclass(frozen=True, slots=True)
class LaunchFacts:
    """How fast nodes are coming, from Karpenter's NodeClaims (bounds the launch ramp)."""

    #: NodeClaims created in the last minute (any cause: the rate protects the cluster).
    launched_last_minute: int = 0
    #: NodeClaims not initialized yet: nodes on their way for pods already pending.
    launching: int = 0
    #: Pairs those NodeClaims were sized for (their requests): pending pairs they cover.
    covered_pairs: int = 0


_EMPTY: Mapping[str, PairPods] = MappingProxyType({})
_EMPTY_HOT: Mapping[str, PlaceholderPod] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """Everything one reconcile step may look at."""

    taken_at: float
    #: Live ``maxRunners`` (AutoscalingRunnerSet / listener config). 0 is a hard cap.
    max_runners: int
    #: Placeholder pods of this scale set, grouped by pair id (from labels).
    placeholders: Mapping[str, PairPods] = field(default_factory=lambda: _EMPTY)
    runner_pods: tuple[RunnerPod, ...] = ()
    workflow_pods: tuple[WorkflowPod, ...] = ()
    #: Registered runners without a job (EphemeralRunners Running with no jobId).
    idle_runners: int = 0
    #: Workflow placeholders of hot slots, by pod name (docs/design.md#hot-runners); never
    #: in ``placeholders``, so the pairs' sync and sweep do not see them.
    hot_placeholders: Mapping[str, PlaceholderPod] = field(default_factory=lambda: _EMPTY_HOT)
    #: EphemeralRunners that are registered and idle, and those that have a job (jobId).
    idle_runner_names: frozenset[str] = frozenset()
    busy_runner_names: frozenset[str] = frozenset()
    #: Jobs GitHub assigned to the scale set (the EphemeralRunnerSet's replicas less
    #: minRunners; a step also takes off the hot runners its last step had the scaler add);
    #: None when unknown.
    assigned_jobs: int | None = None
    demand: Demand = field(default_factory=Demand)
    fit: FitEstimate | None = None
    #: NodeClaim launch facts; None without Karpenter (no node-launch rate to honour).
    launches: LaunchFacts | None = None
    #: Recent capacity failures seen in Karpenter (e.g. "InsufficientCapacity g5.xlarge
    #: us-east-1a"), used only to explain TIMED_OUT reasons.
    capacity_signals: tuple[str, ...] = ()
    #: Why ARC switched the scale set off (runners Outdated), None while it is on; while
    #: set, ``max_runners`` is 0 (providers/kubernetes/observe/scale_set.py ``switched_off``).
    switched_off: str | None = None
    #: Whether workflow placeholders are placed by the hook template's pod spec (False: like
    #: the runner pod, the template could not be read; None: no placeholder builder yet).
    placed_by_hook_template: bool | None = None

    @property
    def starting_runners(self) -> int:
        """Alive runner pods whose workflow pod does not hold a slot yet (Pending, not created
        yet, or never: an idle runner). Each holds one slot of advertised capacity that no
        warm pair can give to another job: the ledger counts ``min(runner side, workflow
        side)``, so a runner without its bound workflow pod keeps a workflow half spoken for."""
        bound = {w.runner_pod for w in self.workflow_pods if w.holds_slot}
        return sum(1 for p in self.runner_pods if p.alive and p.name not in bound)

    @property
    def spoken_for(self) -> int:
        """Assigned jobs whose runner pod is not bound yet: each will take an advertised slot
        (preempt a READY pair's runner half, or bind into free room) within seconds. GitHub
        already counts those slots as taken, so the READY pairs they will take are not warm
        any more."""
        if self.assigned_jobs is None:
            return 0
        bound = sum(1 for p in self.runner_pods if p.alive and p.node_name is not None)
        return max(0, self.assigned_jobs - bound)

    def slots_taken_from_pairs(self, unserved_runners: int) -> int:
        """Slots GitHub counts as taken that pairs still hold: :attr:`spoken_for` plus the
        ``unserved_runners`` (bound, their workflow half not their own yet), never more than
        the assigned jobs whose workflow pod is not bound (an idle runner has no job and
        takes nothing). 0 when the assigned jobs are unknown."""
        if self.assigned_jobs is None:
            return 0
        started = sum(1 for w in self.workflow_pods if w.holds_slot)
        return min(self.spoken_for + unserved_runners, max(0, self.assigned_jobs - started))
