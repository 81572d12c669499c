"""kube-scheduler: the scheduling queue, filters, scoring, binding and DefaultPreemption.

Queue. Pods without ``spec.nodeName`` wait in an *active* set; a pass takes them all, highest
``spec.priority`` first (then creation order, the PrioritySort plugin), and either binds each
one or marks it ``PodScheduled=False/Unschedulable`` and parks it in the *unschedulable* set.
Parked pods go back to active when something may have made room (a pod released resources, a
node appeared or changed) and, as a safety net, every ``timings.scheduler_retry`` seconds.
Passes are event-driven and coalesced: at most one per virtual instant (a trigger after a pass
at the same instant runs 1 ms later). Pods of one *class* (same placement, requests, priority,
preemption policy) are interchangeable, so once one fails in a pass the rest of its class
fails with the same message without re-running filters: a pass costs O(classes x nodes + pods).

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
randomly among ties; we need determinism). A nominated pod tries its nominated node first.

Preemption (PostFilter, only when no node fits, never for ``preemptionPolicy: Never``):

1. Not eligible if the pod already has ``nominatedNodeName`` and that node still has a
   terminating pod of lower priority (it waits for its victims instead of preempting again).
2. Per node passing the non-resource filters: remove every lower-priority pod; if the pod
   still does not fit, the node is no candidate. Otherwise reprieve the removed pods from the
   most important down (higher priority, then earlier start) while the pod still fits; the
   rest are the victims.
3. Pick the node (``pickOneNodeForPreemption``): lowest highest-victim priority, then lowest
   sum of victim priorities *each offset by MaxInt32+1* (as in kube-scheduler, so fewer
   victims effectively wins before a lower raw sum), then fewest victims, then the latest
   start time among the highest-priority victims, then node name. No PDBs are modelled.
4. Victims get ``DisruptionTarget=True`` reason ``PreemptionByScheduler`` and are deleted
   through the store (graceful per their own grace period; already terminating victims are
   not deleted again). Lower-priority pods nominated to that node lose their nomination. The
   preemptor gets ``status.nominatedNodeName`` and is retried when the victims are gone.

Binding sets ``spec.nodeName``, ``PodScheduled=True`` and clears ``nominatedNodeName``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from providers.simulated.cluster.emit import Emitter
from providers.simulated.cluster.matching import tolerates
from providers.simulated.cluster.quantity import Resources
from providers.simulated.cluster.state import ClusterState, NodeInfo, Observer, PodInfo
from providers.simulated.engine import EventLoop, Timer
from providers.simulated.store import Obj, StoreError, iso

MAX_INT32 = 2**31 - 1
UNSCHEDULABLE_TAINT = ("node.kubernetes.io/unschedulable", "", "NoSchedule")
REASON_UNSCHEDULABLE_NODE = "node(s) were unschedulable"
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
PASS_GAP = 0.001  # seconds between two passes triggered at the same instant

PodClass = tuple[str, Resources, int, bool]
_UNKNOWN = object()


_ISO: dict[int, str] = {}


def iso_cached(ts: float) -> str:
    """``store.iso`` memoised per second (timestamps have one-second resolution)."""
    key = int(ts)
    text = _ISO.get(key)
    if text is None:
        if len(_ISO) > 4096:
            _ISO.clear()
        text = _ISO[key] = iso(ts)
    return text


def set_condition(obj: Obj, ctype: str, status: str, reason: str, message: str, now: float) -> None:
    """Upsert a pod condition; lastTransitionTime moves only when the status changes."""
    conditions = obj.setdefault("status", {}).setdefault("conditions", [])
    for cond in conditions:
        if cond.get("type") == ctype:
            if cond.get("status") != status:
                cond["lastTransitionTime"] = iso_cached(now)
            cond.update(status=status, reason=reason, message=message)
            return
    conditions.append({"type": ctype, "status": status, "reason": reason, "message": message,
                       "lastTransitionTime": iso_cached(now)})


def _fits(req: Resources, free: Resources) -> bool:
    return (
        (req.cpu == 0 or req.cpu <= free.cpu)
        and (req.memory == 0 or req.memory <= free.memory)
        and (req.gpu == 0 or req.gpu <= free.gpu)
        and req.pods <= free.pods
    )


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


def _histogram(counts: dict[str, int]) -> str:
    return ", ".join(sorted(f"{v} {k}" for k, v in counts.items()))


class Scheduler(Observer):
    def __init__(
        self,
        loop: EventLoop,
        state: ClusterState,
        emit: Emitter,
        *,
        retry: float,
        scoring: str = "LeastAllocated",
    ) -> None:
        self.loop = loop
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
        #: A pod class that failed stays failed until capacity may have appeared (a pod
        #: released resources, a node changed, a nomination was cleared: ``_capacity_version``)
        #: or, for classes that may preempt, until a lower-priority pod was bound (a potential
        #: new victim).
        self._failed: dict[PodClass, tuple[int, int, str]] = {}
        self._capacity_version = 0
        self._binds: dict[int, int] = {}  # bindings so far by pod priority
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
        self._binds[pod.priority] = self._binds.get(pod.priority, 0) + 1
        self._active.pop(pod.uid, None)
        self._unsched.pop(pod.uid, None)

    def pod_released(self, pod: PodInfo, node: NodeInfo | None) -> None:
        self._wake_all()

    def pod_removed(self, pod: PodInfo) -> None:
        self._active.pop(pod.uid, None)
        self._unsched.pop(pod.uid, None)
        if pod.nominated:
            self._wake_all()  # its reservation is gone

    def node_changed(self, node: NodeInfo, added: bool) -> None:
        self._wake_all()

    def node_removed(self, node: NodeInfo, orphans: list[PodInfo]) -> None:
        self._wake_all()

    # --- queue ------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        return len(self._active) + len(self._unsched)

    def _wake_all(self) -> None:
        self._capacity_version += 1
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
        for pod in batch:
            if pod.uid not in pods or not pod.pending_unbound:
                continue
            nodes = self.state.sorted_nodes()
            cls: PodClass = (pod.placement.key, pod.requests, pod.priority, pod.preempt_never)
            if pod.nominated is None:
                cached = failed.get(cls)
                if (
                    cached is not None
                    and cached[0] == self._capacity_version
                    and (pod.preempt_never or cached[1] == self._binds_below(pod.priority))
                ):
                    self._park(pod, cached[2])
                    continue
            node, diagnosis = self._find_node(pod, nodes)
            if node is not None:
                self._bind(pod, node)
                continue
            message = self._fit_message(diagnosis, len(nodes))
            if nodes:
                chosen, post = self._preempt(pod, nodes)
                if chosen is not None:
                    self._park(pod, f"{message} {post}", nominate=chosen.name)
                    continue
                message = f"{message} {post}"
            self._park(pod, message)
            if pod.nominated is None:
                failed[cls] = (self._capacity_version, self._binds_below(pod.priority), message)

    def _binds_below(self, priority: int) -> int:
        return sum(n for p, n in self._binds.items() if p < priority)

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

    def _static_reason(self, pod: PodInfo, node: NodeInfo) -> str | None:
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
    ) -> tuple[NodeInfo | None, dict[str, int]]:
        req = pod.requests
        rc, rm, rg = req.cpu, req.memory, req.gpu
        if pod.nominated:
            nominated = self.state.nodes.get(pod.nominated)
            if (
                nominated is not None
                and self._static_reason(pod, nominated) is None
                and _fits(req, self._free_for(pod, nominated))
            ):
                return nominated, {}
        static_failures: list[str] = []
        short: list[tuple[int, int, int, int]] = []
        best: NodeInfo | None = None
        best_score = -1.0
        key = pod.placement.key
        most = self._most
        for node in nodes:
            # Hot loop (every pending pod x every node): the filters and the fit are inlined.
            reason = node.filter_memo.get(key, _UNKNOWN)
            if reason is _UNKNOWN:
                reason = self._static_reason(pod, node)
            if reason is not None:
                static_failures.append(reason)  # type: ignore[arg-type]
                continue
            a = node.allocatable
            if node.nominated:
                fc, fm, fg, fp = self._free(pod, node)
            else:
                fc, fm = a.cpu - node.req_cpu, a.memory - node.req_mem
                fg, fp = a.gpu - node.req_gpu, a.pods - node.npods
            if (rc and rc > fc) or (rm and rm > fm) or (rg and rg > fg) or fp < 1:
                short.append((fc, fm, fg, fp))
                continue
            # LeastAllocated / MostAllocated on cpu and memory, equal weights.
            used = ((node.req_cpu + rc) / a.cpu if a.cpu else 1.0) + (
                (node.req_mem + rm) / a.memory if a.memory else 1.0)
            score = used if most else 2.0 - used
            if score > best_score:
                best, best_score = node, score
        if best is not None:
            return best, {}
        # Only a failure needs the per-reason histogram of the message.
        diagnosis: dict[str, int] = {}
        for reason in static_failures:
            diagnosis[reason] = diagnosis.get(reason, 0) + 1
        for free in short:
            for reason in _insufficient(req, Resources(*free)):
                diagnosis[reason] = diagnosis.get(reason, 0) + 1
        return None, diagnosis

    @staticmethod
    def _fit_message(diagnosis: dict[str, int], n_nodes: int) -> str:
        if n_nodes == 0:
            return "no nodes available to schedule pods."
        return f"0/{n_nodes} nodes are available: {_histogram(diagnosis)}."

    def _bind(self, pod: PodInfo, node: NodeInfo) -> None:
        now = self.loop.now()

        def change(obj: Obj) -> None:
            obj["spec"]["nodeName"] = node.name
            set_condition(obj, "PodScheduled", "True", "", "", now)
            obj["status"].pop("nominatedNodeName", None)

        if self._write(pod, change, verb="update"):
            self.bindings += 1

    # --- preemption -------------------------------------------------------------------

    def _preempt(self, pod: PodInfo, nodes: list[NodeInfo]) -> tuple[NodeInfo | None, str]:
        if pod.preempt_never:
            return None, "preemption: not eligible due to preemptionPolicy=Never."
        if pod.nominated:
            nominated = self.state.nodes.get(pod.nominated)
            if nominated is not None and any(
                v.terminating and v.priority < pod.priority for v in nominated.pods.values()
            ):
                return None, ("preemption: not eligible due to a terminating pod on the "
                              "nominated node.")
        candidates: list[tuple[Any, ...]] = []
        statuses: dict[str, int] = {}
        for node in nodes:
            if self._static_reason(pod, node) is not None:
                statuses[NOT_HELPFUL] = statuses.get(NOT_HELPFUL, 0) + 1
                continue
            victims = self._select_victims(pod, node)
            if not victims:
                statuses[NO_VICTIMS] = statuses.get(NO_VICTIMS, 0) + 1
                continue
            top = victims[0].priority
            earliest_top_start = min(_start(v) for v in victims if v.priority == top)
            key = (
                top,
                sum(v.priority + MAX_INT32 + 1 for v in victims),
                len(victims),
                -earliest_top_start,  # the latest such start time wins
                node.name,
            )
            candidates.append((key, node, victims))
        if not candidates:
            return None, f"preemption: 0/{len(nodes)} nodes are available: {_histogram(statuses)}."
        _key, node, victims = min(candidates, key=lambda c: c[0])
        self._prepare(pod, node, victims)
        return node, "preemption: nominated after preempting lower-priority pods."

    def _select_victims(self, pod: PodInfo, node: NodeInfo) -> list[PodInfo] | None:
        """Minimal victim set on ``node`` (most important first), or None if none helps."""
        prio = pod.priority
        potential = [v for v in node.pods.values() if v.priority < prio]
        if not potential:
            return None
        cpu, mem, gpu, pods = self._free(pod, node)
        for v in potential:
            r = v.requests
            cpu, mem, gpu, pods = cpu + r.cpu, mem + r.memory, gpu + r.gpu, pods + 1
        req = pod.requests
        rc, rm, rg = req.cpu, req.memory, req.gpu
        if (rc and rc > cpu) or (rm and rm > mem) or (rg and rg > gpu) or pods < 1:
            return None
        potential.sort(key=lambda v: (-v.priority, _start(v), v.seq))
        victims = []
        for v in potential:
            r = v.requests
            c, m, g, p = cpu - r.cpu, mem - r.memory, gpu - r.gpu, pods - 1
            if (rc and rc > c) or (rm and rm > m) or (rg and rg > g) or p < 1:
                victims.append(v)
            else:
                cpu, mem, gpu, pods = c, m, g, p  # reprieved: it stays
        return victims

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
                lambda obj: set_condition(obj, "DisruptionTarget", "True",
                                          "PreemptionByScheduler", message, now),
            )
            self.emit("pod_disrupted", pod=victim.name, namespace=victim.namespace,
                      node=node.name, reason="preempted", by=pod.name)
            with contextlib.suppress(StoreError):
                self.store.delete("Pod", victim.namespace, victim.name, uid=victim.uid)
        for other in list(node.nominated.values()):
            if other is not pod and other.priority < pod.priority:
                self._clear_nomination(other)

    def _clear_nomination(self, pod: PodInfo) -> None:
        self._capacity_version += 1

        def change(obj: Obj) -> None:
            obj.setdefault("status", {}).pop("nominatedNodeName", None)

        self._write(pod, change)
        if pod.pending_unbound and pod.uid in self.state.pods:
            self._unsched.pop(pod.uid, None)
            self._active[pod.uid] = pod
            self._request_pass()


def _start(pod: PodInfo) -> float:
    return pod.bound_at if pod.bound_at is not None else pod.created_at
