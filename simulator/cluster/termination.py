"""Karpenter's node termination in the simulated cluster: drain a disrupted node (evict every
reschedulable pod through the eviction path), then remove its pods, the Node and the NodeClaim
once nothing holds resources there; a lost node goes at once (see the "Termination" paragraph
of simulator/cluster/lifecycle.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from providers.kubernetes.pods.labels import TAINT_KARPENTER_DISRUPTED
from simulator.cluster.claims import Claim
from simulator.cluster.conditions import set_condition
from simulator.cluster.emit import Emitter
from simulator.cluster.infos import NodeInfo, PodInfo
from simulator.cluster.state import ClusterState
from simulator.cluster.usage import Usage
from simulator.engine.loop import EventLoop
from simulator.engine.store import Obj, StoreError


class NodeTermination:
    """Drains and removes nodes; ``claims`` is the lifecycle's own map (a removed node's claim
    leaves it), ``write_pool_status`` its NodePool status writer."""

    def __init__(
        self,
        loop: EventLoop,
        state: ClusterState,
        emit: Emitter,
        usage: Usage,
        claims: dict[str, Claim],
        write_pool_status: Callable[[str], None],
    ) -> None:
        self.loop = loop
        self.state = state
        self.store = state.store
        self.emit = emit
        self.usage = usage
        self.claims = claims
        self.write_pool_status = write_pool_status
        self.draining: dict[str, str] = {}  # node name -> pod deletion reason

    def terminate(self, node_name: str, reason: str) -> None:
        """Drain and remove a Karpenter node (the disrupted taint is already on it)."""
        node = self.state.nodes.get(node_name)
        if node is None or node_name in self.draining:
            return
        self.draining[node_name] = reason
        with contextlib.suppress(StoreError):
            self.store.delete("Node", None, node_name)
        if node_name in self.claims:
            with contextlib.suppress(StoreError):
                self.store.delete("NodeClaim", None, node_name)
        for pod in list(node.pods.values()):
            if pod.reschedulable:
                self.evict(pod, reason)
        self._check_drained(node_name)

    def evict(self, pod: PodInfo, reason: str) -> None:
        """The eviction API: DisruptionTarget, then a graceful delete (no PDBs modelled)."""
        if pod.terminating or pod.uid not in self.state.pods:
            return
        now = self.loop.now()
        pod.deletion_reason = reason
        try:
            self.store.mutate(
                "Pod",
                pod.namespace,
                pod.name,
                lambda obj: set_condition(
                    obj,
                    "DisruptionTarget",
                    "True",
                    "EvictionByEvictionAPI",
                    "Eviction API: evicting",
                    now,
                ),
                uid=pod.uid,
            )
            self.emit(
                "pod_disrupted", pod=pod.name, namespace=pod.namespace, node=pod.node, reason=reason
            )
            self.store.delete("Pod", pod.namespace, pod.name, uid=pod.uid)
        except StoreError:
            pass

    def pod_released(self, pod: PodInfo, node: NodeInfo | None) -> None:
        if node is not None and node.name in self.draining:
            self.loop.call_soon(self._check_drained, node.name)

    def pod_bound(self, pod: PodInfo, node: NodeInfo) -> None:
        if node.name in self.draining:
            self.loop.call_soon(self.evict, pod, self.draining[node.name])

    def _check_drained(self, node_name: str) -> None:
        node = self.state.nodes.get(node_name)
        if node is None or node_name not in self.draining or node.pods:
            return
        self._remove_node(node_name, self.draining[node_name])

    def _remove_node(self, node_name: str, reason: str) -> None:
        for pod in [p for p in self.state.pods.values() if p.node == node_name]:
            if pod.deletion_reason is None and not pod.terminal:
                pod.deletion_reason = reason  # ended pods keep "completed" / "deadline"
            self.store.remove("Pod", pod.namespace, pod.name)
        self.draining.pop(node_name, None)
        self.store.remove("Node", None, node_name)
        claim = self.claims.pop(node_name, None)
        if claim is not None:
            for t in claim.timers:
                t.cancel()
            self.store.remove("NodeClaim", None, node_name)
            self.write_pool_status(claim.pool)
            self.emit("nodeclaim_deleted", nodeclaim=claim.name, nodepool=claim.pool, reason=reason)
        self.usage.machine_stopped(node_name)
        self.emit(
            "node_removed",
            node=node_name,
            nodeclaim=claim.name if claim else None,
            nodepool=claim.pool if claim else None,
            reason=reason,
        )

    def lose(self, node_name: str, reason: str) -> None:
        """The machine vanished: pods, Node and NodeClaim are removed at once."""
        self._remove_node(node_name, reason)

    def add_disrupted_taint(self, node_name: str) -> None:
        def change(obj: Obj) -> None:
            taints = obj["spec"].setdefault("taints", [])
            if not any(t.get("key") == TAINT_KARPENTER_DISRUPTED for t in taints):
                taints.append({"key": TAINT_KARPENTER_DISRUPTED, "effect": "NoSchedule"})

        with contextlib.suppress(StoreError):
            self.store.mutate("Node", None, node_name, change)
