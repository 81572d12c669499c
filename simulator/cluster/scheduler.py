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

Filters and scoring: :mod:`.filters`.

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
from typing import Any

from simulator.cluster.class_failures import ClassFailure
from simulator.cluster.conditions import set_condition
from simulator.cluster.emit import Emitter
from simulator.cluster.filters import find_node, free_room, static_reason
from simulator.cluster.infos import NodeInfo, Observer, PodInfo
from simulator.cluster.pdb import Budget, budgets
from simulator.cluster.preemption import (
    NO_VICTIMS,
    NOT_HELPFUL,
    candidate_key,
    ineligible,
    select_victims_on_node,
)
from simulator.cluster.quantity import Resources
from simulator.cluster.state import ClusterState
from simulator.engine.loop import EventLoop, Timer
from simulator.engine.store import Obj, StoreError

PASS_GAP = 0.001  # seconds between two passes triggered at the same instant

PodClass = tuple[str, Resources, int, bool]


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
        #: Why each pod class failed, node by node (see ``ClassFailure``). Only a node where a pod
        #: released resources can newly fit a failed class or newly offer it victims: a
        #: binding never helps (for preemption, a lower-priority binding moves requests from
        #: "free" to "victims" on its node, leaving free + victims - all preemption looks at -
        #: unchanged; any other binding only takes room). So a failed class is re-checked on
        #: the nodes released since, and fully only after a "hard" change: a node added,
        #: changed or removed, or a nomination (a reservation) cleared.
        self._failed: dict[PodClass, ClassFailure] = {}
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
            node, reasons = find_node(pod, scope, self.state.nodes, self._most)
            if node is not None:
                self._bind(pod, node)
                continue
            if entry is None:
                entry = failed[cls] = ClassFailure(self._hard_version)
            entry.reasons.update(reasons)
            entry.seen = now_seq
            if not nodes:
                message = "no nodes available to schedule pods."
            else:
                message = f"0/{len(nodes)} nodes are available: {entry.reasons.text()}."
                post = ineligible(pod, self.state.nodes) if self.preemption else ""
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

    # --- filtering and scoring (simulator/cluster/filters.py) ---------------------------

    def static_reason(self, pod: PodInfo, node: NodeInfo) -> str | None:
        return static_reason(pod, node)

    def _bind(self, pod: PodInfo, node: NodeInfo) -> None:
        now = self.loop.now()

        def change(obj: Obj) -> None:
            obj["spec"]["nodeName"] = node.name
            set_condition(obj, "PodScheduled", "True", "", "", now)
            obj["status"].pop("nominatedNodeName", None)

        if self._write(pod, change, verb="update"):
            self.bindings += 1

    # --- preemption -------------------------------------------------------------------

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
            found = select_victims_on_node(pod, node, free_room(pod, node), pdbs)
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
