"""kube-scheduler: the scheduling queue, filters, scoring, binding and DefaultPreemption.

Queue. Pods without ``spec.nodeName`` and without ``spec.schedulingGates`` (the SchedulingGates
PreEnqueue plugin; the API server marks them ``PodScheduled=False/SchedulingGated``) wait in an
*active* set; a pass takes them all, highest
``spec.priority`` first (then creation order, the PrioritySort plugin), and either binds each
one or marks it ``PodScheduled=False/Unschedulable`` and parks it in the *unschedulable* set.
Parked pods go back to active when something may have made room (a pod released resources, a
node appeared or changed) and, as a safety net, every ``timings.scheduler_retry`` seconds.
Passes are event-driven and coalesced: at most one per virtual instant (a trigger after a pass
at the same instant runs 1 ms later). Pods of one *class* (same placement, requests, priority,
preemption policy) are interchangeable, so a class that failed stays failed - same message, no
filters run - until something that can help happens: a pod released resources, a node changed
or a nomination was cleared (a binding never helps, see ``_failed``). A pass therefore costs
O(classes x nodes + pods). Like kube-scheduler's queueing hints, the
periodic retry does not re-evaluate a class nothing has changed for; a side effect is that the
reason histogram of a cached message may lag behind bindings elsewhere (counts only, never the
outcome).

Filters, in kube-scheduler's order: NodeUnschedulable (``spec.unschedulable`` unless the pod
tolerates ``node.kubernetes.io/unschedulable``), TaintToleration (NoSchedule/NoExecute),
NodeAffinity (nodeSelector + required affinity), NodeResourcesFit (cpu, memory,
nvidia.com/gpu, pod count; a zero request is not checked). Resources in use are the requests
of pods bound to the node that have not ended - terminating pods keep holding theirs until the
kubelet removes them - plus the requests of pods *nominated* to the node with priority >= the
pod's (the real scheduler's addNominatedPods), so a preemptor's space is not stolen by a lower
priority pod while its victims terminate.

Scoring: ``LeastAllocated`` (default, kube-scheduler's default strategy) or ``MostAllocated``
on cpu and memory, equal weights; ties go to the first node by name (the real scheduler picks
randomly among ties; we need determinism). A pod with preferred node affinity is also scored
by the NodeAffinity plugin (the weights of the preferred terms a node matches, normalized to
0-100 over the feasible nodes) at twice the weight of NodeResourcesFit, as in the default
profile (:mod:`.scoring`): it goes to a matching node that fits rather than a merely emptier
one, and to a non-matching node when no matching one fits (preferences never filter). A
nominated pod tries its nominated node first.

Preemption (PostFilter, only when no node fits, never for ``preemptionPolicy: Never``):

1. Not eligible if the pod already has ``nominatedNodeName`` and that node still has a
   lower-priority pod terminating *by preemption* (DisruptionTarget reason
   PreemptionByScheduler): it waits for the victims instead of preempting again. Pods
   terminating for other reasons (evicted, deleted by their owner) do not block it, nor does
   a nominated node that now fails the pod's taint / affinity / unschedulable filters.
2. Per node passing the non-resource filters: remove every lower-priority pod; if the pod
   still does not fit, the node is no candidate. Otherwise reprieve the removed pods from the
   most important down (higher priority, then earlier start) while the pod still fits; the
   rest are the victims.
3. Pick the node (``pickOneNodeForPreemption``): lowest highest-victim priority, then lowest
   sum of victim priorities *each offset by MaxInt32+1* (as in kube-scheduler, so fewer
   victims effectively wins before a lower raw sum), then fewest victims, then the latest
   start time among the highest-priority victims, then node name. PodDisruptionBudgets
   (:mod:`.pdb`) come first on both counts: on a node, victims whose PDB allows no more
   disruptions are reprieved before the others, and the node with the fewest such
   violations wins before any priority is compared. Preemption still violates a budget
   when nothing else helps (best effort, as upstream).
4. Victims get ``DisruptionTarget=True`` reason ``PreemptionByScheduler`` and are deleted
   through the store (graceful per their own grace period; already terminating victims are
   not deleted again). Lower-priority pods nominated to that node lose their nomination. The
   preemptor gets ``status.nominatedNodeName`` and is retried when the victims are gone.

Binding sets ``spec.nodeName``, ``PodScheduled=True`` and clears ``nominatedNodeName``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simulator.cluster.conditions import set_condition
from simulator.cluster.emit import Emitter
from simulator.cluster.infos import NodeInfo, Observer, PodInfo
from simulator.cluster.matching import tolerates
from simulator.cluster.pdb import Budget, budgets
from simulator.cluster.pods import terminating_by_preemption
from simulator.cluster.preemption import (
    NO_VICTIMS,
    NOT_HELPFUL,
    candidate_key,
    select_victims_on_node,
)
from simulator.cluster.quantity import Resources, fits
from simulator.cluster.scoring import best_preferred
from simulator.cluster.state import ClusterState
from simulator.engine.loop import EventLoop, Timer
from simulator.engine.store import Obj, StoreError

UNSCHEDULABLE_TAINT = ("node.kubernetes.io/unschedulable", "", "NoSchedule")
REASON_UNSCHEDULABLE_NODE = "node(s) were unschedulable"
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
PASS_GAP = 0.001  # seconds between two passes triggered at the same instant

PodClass = tuple[str, Resources, int, bool]
_UNKNOWN = object()


def _insufficient(req: Resources, free: Resources) -> list[str]:
    out = []
    if req.pods > free.pods:
        out.append("Too many pods")
    if req.cpu and req.cpu > free.cpu:
        out.append("Insufficient cpu")
    if req.memory and req.memory > free.memory:
        out.append("Insufficient memory")
    if req.gpu and req.gpu > free.gpu:
        out.append("Insufficient nvidia.com/gpu")
    return out


class _Reasons:
    """Per-node reasons plus their running histogram (kube-scheduler's message format)."""

    __slots__ = ("counts", "per_node")

    def __init__(self) -> None:
        self.per_node: dict[str, tuple[str, ...]] = {}
        self.counts: dict[str, int] = {}

    def update(self, reasons: dict[str, tuple[str, ...]]) -> None:
        per_node, counts = self.per_node, self.counts
        for name, new in reasons.items():
            for r in per_node.get(name, ()):
                counts[r] -= 1
            for r in new:
                counts[r] = counts.get(r, 0) + 1
            per_node[name] = new

    def text(self) -> str:
        """ "3 Insufficient cpu, 1 Too many pods" (sorted like kube-scheduler's FitError)."""
        return ", ".join(sorted(f"{v} {k}" for k, v in self.counts.items() if v))


@dataclass(eq=False, slots=True)
class _Failure:
    """Why a pod class cannot schedule, node by node, valid for one hard version.

    ``reasons`` (filters / fit) are current up to release number ``seen``, ``post``
    (preemption: no victims / not helpful) up to ``post_seen`` (-1: never evaluated on every
    node), and ``message`` - the condition message of a non-nominated pod - up to
    ``msg_seen``. A pod nominated elsewhere may refresh reasons and post (a failure on its own
    nominated node, where it sees more room, is a failure for its class too) but not the
    message (its "waiting for victims" text is its own).
    """

    version: int
    seen: int = -1
    reasons: _Reasons = field(default_factory=_Reasons)
    post_seen: int = -1
    post: _Reasons = field(default_factory=_Reasons)
    msg_seen: int = -1
    message: str = ""


class Scheduler(Observer):
    def __init__(
        self,
        loop: EventLoop,
        state: ClusterState,
        emit: Emitter,
        *,
        retry: float,
        scoring: str = "LeastAllocated",
        preemption: bool = True,
    ) -> None:
        self.loop = loop
        #: False: a scheduler profile without the DefaultPreemption PostFilter plugin (no
        #: pod ever preempts; the Unschedulable message has no "preemption:" part).
        self.preemption = preemption
        self.state = state
        self.store = state.store
        self.emit = emit
        self.retry = retry
        self._most = scoring == "MostAllocated"
        self._active: dict[str, PodInfo] = {}
        self._unsched: dict[str, PodInfo] = {}
        self._pass_timer: Timer | None = None
        self._retry_timer: Timer | None = None
        self._last_pass_at = float("-inf")
        self._in_pass = False
        self._rerun = False
        #: Why each pod class failed, node by node (see ``_Failure``). Only a node where a pod
        #: released resources can newly fit a failed class or newly offer it victims: a
        #: binding never helps (for preemption, a lower-priority binding moves requests from
        #: "free" to "victims" on its node, leaving free + victims - all preemption looks at -
        #: unchanged; any other binding only takes room). So a failed class is re-checked on
        #: the nodes released since, and fully only after a "hard" change: a node added,
        #: changed or removed, or a nomination (a reservation) cleared.
        self._failed: dict[PodClass, _Failure] = {}
        #: False evaluates every pod on every node (tests prove the memo changes no outcome).
        self.memo = True
        self._hard_version = 0
        self._release_seq = 0
        self._released: dict[str, int] = {}  # node -> release_seq of its last release
        self.passes = 0
        self.bindings = 0
        self.preemptions = 0
        self.victims = 0

    # --- observer hooks (no store writes here) ---------------------------------------

    def pod_pending(self, pod: PodInfo) -> None:
        self._unsched.pop(pod.uid, None)
        self._active[pod.uid] = pod
        self._request_pass()

    def pod_bound(self, pod: PodInfo, node: NodeInfo) -> None:
        self._active.pop(pod.uid, None)
        self._unsched.pop(pod.uid, None)

    def pod_released(self, pod: PodInfo, node: NodeInfo | None) -> None:
        if node is None:
            self._hard_version += 1
        else:
            self._release_seq += 1
            self._released[node.name] = self._release_seq
        self._wake_all()

    def pod_removed(self, pod: PodInfo) -> None:
        self._active.pop(pod.uid, None)
        self._unsched.pop(pod.uid, None)

    def nomination_dropped(self, pod: PodInfo, node_name: str) -> None:
        self._hard_version += 1  # its reservation is gone: room may have appeared there
        self._wake_all()

    def node_changed(self, node: NodeInfo, added: bool) -> None:
        self._hard_version += 1
        self._wake_all()

    def node_removed(self, node: NodeInfo, orphans: list[PodInfo]) -> None:
        self._hard_version += 1
        self._released.pop(node.name, None)
        self._wake_all()

    # --- queue ------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        return len(self._active) + len(self._unsched)

    def _wake_all(self) -> None:
        if self._in_pass:
            self._rerun = True  # e.g. a grace-0 victim vanished mid-pass: look again after it
            return
        if self._unsched:
            self._active.update(self._unsched)
            self._unsched.clear()
        if self._active:
            self._request_pass()

    def _request_pass(self) -> None:
        if self._pass_timer is not None:
            return
        now = self.loop.now()
        at = now if now > self._last_pass_at else self._last_pass_at + PASS_GAP
        self._pass_timer = self.loop.call_at(at, self._run_pass)

    def _retry_due(self) -> None:
        """The periodic flush of unschedulable pods (a safety net: it does not invalidate
        the failure cache, every change that can help already does)."""
        self._retry_timer = None
        if self._unsched:
            self._active.update(self._unsched)
            self._unsched.clear()
            self._request_pass()

    def _arm_retry(self) -> None:
        if self._unsched and self._retry_timer is None:
            self._retry_timer = self.loop.call_later(self.retry, self._retry_due)

    # --- the pass ---------------------------------------------------------------------

    def _run_pass(self) -> None:
        self._pass_timer = None
        self._last_pass_at = self.loop.now()
        self.passes += 1
        batch = sorted(self._active.values(), key=lambda p: (-p.priority, p.seq))
        self._active.clear()
        self._in_pass, self._rerun = True, False
        try:
            self._schedule(batch)
        finally:
            self._in_pass = False
        if self._rerun:
            self._wake_all()
        self._arm_retry()

    def _schedule(self, batch: list[PodInfo]) -> None:
        failed = self._failed
        if len(failed) > 10_000:
            failed.clear()
        pods = self.state.pods
        released = self._released
        for pod in batch:
            if pod.uid not in pods or not pod.pending_unbound:
                continue
            nodes = self.state.sorted_nodes()
            now_seq = self._release_seq
            cls: PodClass = (pod.placement.key, pod.requests, pod.priority, pod.preempt_never)
            entry = failed.get(cls) if self.memo else None
            if entry is None or entry.version != self._hard_version:
                entry = None
                scope = nodes
            else:
                if pod.nominated is None and entry.msg_seen == now_seq:
                    self._park(pod, entry.message)
                    continue
                # A nominated pod sees its nominated node differently (its own reservation is
                # not in its way there), so that node is always re-checked for it.
                seen, mine = entry.seen, pod.nominated
                scope = [n for n in nodes if released.get(n.name, -1) > seen or n.name == mine]
            node, reasons = self._find_node(pod, scope)
            if node is not None:
                self._bind(pod, node)
                continue
            if entry is None:
                entry = failed[cls] = _Failure(self._hard_version)
            entry.reasons.update(reasons)
            entry.seen = now_seq
            if not nodes:
                message = "no nodes available to schedule pods."
            else:
                message = f"0/{len(nodes)} nodes are available: {entry.reasons.text()}."
                post = self._ineligible(pod) if self.preemption else ""
                if post is None:
                    if entry.post_seen < 0:
                        scope = nodes
                    else:
                        seen, mine = entry.post_seen, pod.nominated
                        scope = [
                            n for n in nodes if released.get(n.name, -1) > seen or n.name == mine
                        ]
                    chosen, statuses = self._try_preempt(pod, scope)
                    if chosen is not None:
                        self._park(
                            pod,
                            f"{message} preemption: nominated after preempting "
                            "lower-priority pods.",
                            nominate=chosen.name,
                        )
                        continue
                    entry.post.update(statuses)
                    entry.post_seen = now_seq
                    post = f"preemption: 0/{len(nodes)} nodes are available: {entry.post.text()}."
                message = f"{message} {post}" if post else message
            if pod.nominated is None:
                entry.message, entry.msg_seen = message, now_seq
            self._park(pod, message)

    def _park(self, pod: PodInfo, message: str, *, nominate: str | None = None) -> None:
        """Mark Unschedulable (write only if the condition or nomination changes) and park."""
        if pod.uid in self.state.pods and pod.pending_unbound:
            self._unsched[pod.uid] = pod
        new = ("False", "Unschedulable", message)
        target = nominate if nominate is not None else pod.nominated
        if pod.sched == new and target == pod.nominated:
            return
        first = pod.sched is None or pod.sched[1] != "Unschedulable"
        now = self.loop.now()

        def change(obj: Obj) -> None:
            set_condition(obj, "PodScheduled", *new, now)
            if nominate is not None:
                obj["status"]["nominatedNodeName"] = nominate

        if not self._write(pod, change):
            return
        if nominate is not None:
            self.emit("pod_nominated", pod=pod.name, namespace=pod.namespace, node=nominate)
        elif first:
            self.emit("pod_unschedulable", pod=pod.name, namespace=pod.namespace, message=message)

    def _write(self, pod: PodInfo, change: Callable[[Obj], None], verb: str = "patch") -> bool:
        try:
            self.store.mutate("Pod", pod.namespace, pod.name, change, verb=verb, uid=pod.uid)
        except StoreError:
            return False  # deleted meanwhile (e.g. by a subscriber reacting to our last write)
        return True

    # --- filtering and scoring --------------------------------------------------------

    def static_reason(self, pod: PodInfo, node: NodeInfo) -> str | None:
        """Why the node is out for the pod regardless of resources (None: it is not).
        Memoised per node and placement; the node's memo is reset when the node changes."""
        key = pod.placement.key
        memo = node.filter_memo
        try:
            return memo[key]
        except KeyError:
            pass
        reason: str | None = None
        placement = pod.placement
        if node.unschedulable and not tolerates(placement.tolerations, UNSCHEDULABLE_TAINT):
            reason = REASON_UNSCHEDULABLE_NODE
        else:
            taint = placement.untolerated(node.taints)
            if taint is not None:
                reason = f"node(s) had untolerated taint {{{taint[0]}: {taint[1]}}}"
            elif not placement.matches(node.labels, node.name):
                reason = REASON_AFFINITY
        memo[key] = reason
        return reason

    @staticmethod
    def _free(pod: PodInfo, node: NodeInfo) -> tuple[int, int, int, int]:
        """Free (cpu, memory, gpu, pods) for ``pod``: allocatable minus requests of pods
        holding resources minus pods nominated here with priority >= the pod's."""
        a = node.allocatable
        cpu = a.cpu - node.req_cpu
        mem = a.memory - node.req_mem
        gpu = a.gpu - node.req_gpu
        pods = a.pods - node.npods
        if node.nominated:
            for other in node.nominated.values():
                if other is not pod and other.priority >= pod.priority:
                    r = other.requests
                    cpu, mem, gpu, pods = cpu - r.cpu, mem - r.memory, gpu - r.gpu, pods - 1
        return cpu, mem, gpu, pods

    def _free_for(self, pod: PodInfo, node: NodeInfo) -> Resources:
        return Resources(*self._free(pod, node))

    def _find_node(
        self, pod: PodInfo, nodes: list[NodeInfo]
    ) -> tuple[NodeInfo | None, dict[str, tuple[str, ...]]]:
        """The best feasible node, or None and why each node failed."""
        req = pod.requests
        rc, rm, rg = req.cpu, req.memory, req.gpu
        if pod.nominated:
            nominated = self.state.nodes.get(pod.nominated)
            if (
                nominated is not None
                and self.static_reason(pod, nominated) is None
                and fits(req, self._free_for(pod, nominated))
            ):
                return nominated, {}
        static_failures: list[tuple[str, str]] = []
        short: list[tuple[str, tuple[int, int, int, int]]] = []
        best: NodeInfo | None = None
        best_score = -1.0
        key = pod.placement.key
        most = self._most
        # Preferred node affinity is scored against every feasible node (it is normalized
        # over them); other pods keep the running maximum.
        scored: list[tuple[NodeInfo, float]] | None = [] if pod.placement.preferred else None
        for node in nodes:
            # Hot loop (every pending pod x every node): the filters and the fit are inlined.
            reason = node.filter_memo.get(key, _UNKNOWN)
            if reason is _UNKNOWN:
                reason = self.static_reason(pod, node)
            if reason is not None:
                static_failures.append((node.name, reason))  # type: ignore[arg-type]
                continue
            a = node.allocatable
            if node.nominated:
                fc, fm, fg, fp = self._free(pod, node)
            else:
                fc, fm = a.cpu - node.req_cpu, a.memory - node.req_mem
                fg, fp = a.gpu - node.req_gpu, a.pods - node.npods
            if (rc and rc > fc) or (rm and rm > fm) or (rg and rg > fg) or fp < 1:
                short.append((node.name, (fc, fm, fg, fp)))
                continue
            # LeastAllocated / MostAllocated on cpu and memory, equal weights.
            used = ((node.req_cpu + rc) / a.cpu if a.cpu else 1.0) + (
                (node.req_mem + rm) / a.memory if a.memory else 1.0
            )
            score = used if most else 2.0 - used
            if scored is not None:
                scored.append((node, score))
            elif score > best_score:
                best, best_score = node, score
        if scored:
            return best_preferred(pod.placement, scored), {}
        if best is not None:
            return best, {}
        # Only a failure needs the reasons (for the message).
        reasons: dict[str, tuple[str, ...]] = {name: (r,) for name, r in static_failures}
        for name, free in short:
            reasons[name] = tuple(_insufficient(req, Resources(*free)))
        return None, reasons

    def _bind(self, pod: PodInfo, node: NodeInfo) -> None:
        now = self.loop.now()

        def change(obj: Obj) -> None:
            obj["spec"]["nodeName"] = node.name
            set_condition(obj, "PodScheduled", "True", "", "", now)
            obj["status"].pop("nominatedNodeName", None)

        if self._write(pod, change, verb="update"):
            self.bindings += 1

    # --- preemption -------------------------------------------------------------------

    def _ineligible(self, pod: PodInfo) -> str | None:
        """``PodEligibleToPreemptOthers`` (defaultpreemption/default_preemption.go): why this
        pod may not preempt now, or None.

        A nominated pod waits only while a lower-priority pod on its nominated node is
        terminating *because of a scheduler preemption* (DisruptionTarget reason
        PreemptionByScheduler); a pod evicted by Karpenter or deleted by its owner does not
        hold it back. If the nominated node now fails the pod's non-resource filters
        (UnschedulableAndUnresolvable), it may preempt elsewhere at once."""
        if pod.preempt_never:
            return "preemption: not eligible due to preemptionPolicy=Never."
        if pod.nominated:
            nominated = self.state.nodes.get(pod.nominated)
            if (
                nominated is not None
                and self.static_reason(pod, nominated) is None
                and any(
                    v.priority < pod.priority and v.terminating and terminating_by_preemption(v.obj)
                    for v in nominated.pods.values()
                )
            ):
                return "preemption: not eligible due to a terminating pod on the nominated node."
        return None

    def _try_preempt(
        self, pod: PodInfo, nodes: list[NodeInfo]
    ) -> tuple[NodeInfo | None, dict[str, tuple[str, ...]]]:
        """Preempt on the best candidate node, or return why each node is no candidate."""
        candidates: list[tuple[Any, ...]] = []
        statuses: dict[str, tuple[str, ...]] = {}
        pdbs = self._budgets()
        for node in nodes:
            if self.static_reason(pod, node) is not None:
                statuses[node.name] = (NOT_HELPFUL,)
                continue
            found = select_victims_on_node(pod, node, self._free(pod, node), pdbs)
            if not found or not found[0]:
                statuses[node.name] = (NO_VICTIMS,)
                continue
            victims, violations = found
            candidates.append((candidate_key(node, victims, violations), node, victims))
        if not candidates:
            return None, statuses
        _key, node, victims = min(candidates, key=lambda c: c[0])
        self._prepare(pod, node, victims)
        return node, {}

    def _budgets(self) -> list[Budget]:
        """Every PodDisruptionBudget with the allowance the disruption controller would give
        it now (the scheduler reads ``status.disruptionsAllowed`` from its PDB lister)."""
        listed = self.store.list("PodDisruptionBudget")
        if not listed:
            return []
        return budgets(listed, self.state.pods.values())

    def _prepare(self, pod: PodInfo, node: NodeInfo, victims: list[PodInfo]) -> None:
        self.preemptions += 1
        now = self.loop.now()
        message = "default-scheduler: preempting to accommodate a higher priority pod"
        for victim in victims:
            if victim.terminating or victim.uid not in self.state.pods:
                continue
            self.victims += 1
            victim.deletion_reason = "preempted"
            self._write(
                victim,
                lambda obj: set_condition(
                    obj, "DisruptionTarget", "True", "PreemptionByScheduler", message, now
                ),
            )
            self.emit(
                "pod_disrupted",
                pod=victim.name,
                namespace=victim.namespace,
                node=node.name,
                reason="preempted",
                by=pod.name,
            )
            with contextlib.suppress(StoreError):
                self.store.delete("Pod", victim.namespace, victim.name, uid=victim.uid)
        for other in list(node.nominated.values()):
            if other is not pod and other.priority < pod.priority:
                self._clear_nomination(other)

    def _clear_nomination(self, pod: PodInfo) -> None:

        def change(obj: Obj) -> None:
            obj.setdefault("status", {}).pop("nominatedNodeName", None)

        self._write(pod, change)
        if pod.pending_unbound and pod.uid in self.state.pods:
            self._unsched.pop(pod.uid, None)
            self._active[pod.uid] = pod
            self._request_pass()
