"""Where the machine dollars go: launched nodes' billed time split by what the node held.

Every Karpenter machine of one strategy's event log is billed as the checker bills it
(:mod:`simulator.measurement.replay`): from its ``nodeclaim_created`` (the launch request; in
logs without it, from ``nodeclaim_launched``) to its ``node_removed`` or ``run_ended``; a
NodeClaim that never launched (``nodeclaim_failed``) costs nothing. That time is split into
four states, per (cluster, nodepool):

- ``booting``: from the launch request to the node's ``node_added`` (registration), the wait
  the platform pays for before anything can run there;
- ``real``: at least one pod that is not a placeholder is on the node (a runner, a workflow
  pod, or any other role ``pod_created`` names);
- ``placeholder``: only placeholder pods (``placeholder-runner`` / ``placeholder-workflow``:
  capacity-aware pairs and warm-pool pause pods alike) are on it;
- ``empty``: nothing is on it (waiting for Karpenter's consolidation, or for a pod that went
  elsewhere).

A pod is on a node from its ``pod_bound`` to the first of ``pod_disrupted``, ``pod_ended``,
``pod_deleted`` (a disrupted pod no longer counts: it is leaving) or the node's removal. A pod
bound and gone at the same instant adds nothing. Dollars are seconds times the launched type's
list price (:mod:`simulator.measurement.prices`); a type without a price adds hours but no
dollars and is named in ``unpriced``.

**Which cluster.** Node events carry no cluster (and the event log is left as it is: other
tools compare it byte for byte); pods do (``pod_created``). A machine belongs to the cluster of
the first pod bound to, or nominated onto, it; a machine that never had one is reported with
``cluster`` None. Karpenter machines are named ``<nodepool>-<5 random characters>`` per
cluster, so two clusters may, rarely, hold machines of one name at once: such machines are
kept apart (a stack per name), a bind or nomination goes to the one of the pod's cluster (or
one not yet claimed by a cluster), and a removal closes the oldest, as the checker's billing
does. Pods are keyed by (namespace, name), as the checker keys them.

**The identity.** The four states sum, over all (cluster, nodepool), to the checker's
``billed_node_hours`` (and dollars) minus what static nodes (``node_added`` with ``static``,
not launched, not counted here) bill. Against the simulator's in-memory billing
(:mod:`simulator.workload.machines`, which knows each object's cluster) the only possible
difference is the same-name case above: two clusters' same-named machines removed in the
other order bill each other's lifetimes. Nodes added without any launched NodeClaim (logs
older than the ``nodeclaim_*`` events) are not billed by the checker and not counted here.

Only the standard library is used, so a log can be read anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from simulator.measurement.prices import hourly_price
from simulator.measurement.replay import pop_oldest
from simulator.measurement.reserve_cost import PLACEHOLDER_ROLES

#: The states a launched machine's billed time is split into, in report order.
STATES = ("real", "placeholder", "empty", "booting")

#: Events after which a pod no longer holds its node.
POD_GONE = ("pod_disrupted", "pod_ended", "pod_deleted")


class NodeHoursLogError(ValueError):
    """The log cannot be read as one whole run (the message names what is missing)."""


@dataclass(frozen=True, slots=True)
class PoolNodeHours:
    """Billed node-hours and dollars of one (cluster, nodepool), by what the nodes held."""

    cluster: str | None  # None: machines no pod ever bound to (the log does not say whose)
    nodepool: str
    nodes: int = 0  # NodeClaims launched
    real_node_hours: float = 0.0
    placeholder_node_hours: float = 0.0
    empty_node_hours: float = 0.0
    booting_node_hours: float = 0.0
    real_usd: float = 0.0
    placeholder_usd: float = 0.0
    empty_usd: float = 0.0
    booting_usd: float = 0.0
    unpriced: tuple[str, ...] = ()

    @property
    def node_hours(self) -> float:
        return (
            self.real_node_hours
            + self.placeholder_node_hours
            + self.empty_node_hours
            + self.booting_node_hours
        )

    @property
    def usd(self) -> float:
        return self.real_usd + self.placeholder_usd + self.empty_usd + self.booting_usd


@dataclass(slots=True)
class _Machine:
    nodepool: str
    since: float  # start of the current state's interval
    instance_type: str | None = None  # None until launched
    registered: bool = False
    cluster: str | None = None
    pods: dict[tuple[str, str], bool] = field(default_factory=dict)  # pod -> is a placeholder
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STATES, 0.0))

    def state(self) -> str:
        if not self.registered:
            return "booting"
        if any(not placeholder for placeholder in self.pods.values()):
            return "real"
        return "placeholder" if self.pods else "empty"

    def advance(self, t: float) -> None:
        """Charge the time since the last change to the state held over it."""
        self.seconds[self.state()] += max(0.0, t - self.since)
        self.since = max(self.since, t)


@dataclass(slots=True)
class _Replay:
    machines: dict[str, list[_Machine]] = field(default_factory=dict)  # name -> oldest first
    pod_cluster: dict[tuple[str, str], str] = field(default_factory=dict)
    pod_role: dict[tuple[str, str], str] = field(default_factory=dict)
    pod_on: dict[tuple[str, str], _Machine] = field(default_factory=dict)
    closed: list[_Machine] = field(default_factory=list)
    end: float | None = None

    def pick(self, name: str, cluster: str | None) -> _Machine | None:
        """The live machine ``name`` a pod of ``cluster`` refers to (see the module doc)."""
        stack = self.machines.get(name) or []
        mine = [m for m in stack if cluster is not None and m.cluster == cluster]
        unclaimed = [m for m in stack if m.cluster is None]
        picked = mine or unclaimed or stack
        return picked[0] if picked else None

    def close(self, name: str, t: float) -> None:
        m = pop_oldest(self.machines, name)
        if m is None:
            return
        for key in [k for k, on in self.pod_on.items() if on is m]:
            del self.pod_on[key]  # a node removed with pods on it: they go with it
        if m.instance_type is None:
            return  # never launched: not billed
        m.advance(t)
        self.closed.append(m)


def _key(event: Mapping[str, Any]) -> tuple[str, str]:
    return str(event.get("namespace", "")), str(event["pod"])


def _feed(r: _Replay, event: Mapping[str, Any]) -> None:
    kind, t = event.get("type"), float(event.get("t", 0.0))
    if kind == "nodeclaim_created":
        name = str(event["nodeclaim"])
        r.machines.setdefault(name, []).append(_Machine(str(event.get("nodepool") or ""), t))
    elif kind == "nodeclaim_launched":
        name = str(event["nodeclaim"])
        pending = [m for m in r.machines.get(name, ()) if m.instance_type is None]
        if pending:
            pending[0].instance_type = str(event["instance_type"])
        else:  # older logs: no nodeclaim_created, billed from the launch
            machine = _Machine(str(event.get("nodepool") or ""), t, str(event["instance_type"]))
            r.machines.setdefault(name, []).append(machine)
    elif kind == "nodeclaim_failed":
        stack = r.machines.get(str(event["nodeclaim"]), [])
        pending = [m for m in stack if m.instance_type is None]
        if pending:
            stack.remove(pending[0])
    elif kind == "node_added" and not event.get("static"):
        name = str(event.get("nodeclaim") or event["node"])
        waiting = [m for m in r.machines.get(name, ()) if not m.registered]
        if waiting:
            waiting[0].advance(t)
            waiting[0].registered = True
    elif kind == "node_removed":
        if event.get("nodeclaim") is not None:  # static nodes are removed without one
            r.close(str(event["nodeclaim"]), t)
    elif kind == "pod_created":
        key = _key(event)
        r.pod_role[key] = str(event.get("role", ""))
        if event.get("cluster") is not None:
            r.pod_cluster[key] = str(event["cluster"])
    elif kind in ("pod_bound", "pod_nominated"):
        key = _key(event)
        cluster = r.pod_cluster.get(key)
        target = r.pick(str(event["node"]), cluster)
        if target is None:
            return  # a static node, or one this log never launched
        if target.cluster is None:
            target.cluster = cluster
        if kind == "pod_bound" and key not in r.pod_on:
            target.advance(t)
            target.pods[key] = r.pod_role.get(key) in PLACEHOLDER_ROLES
            r.pod_on[key] = target
    elif kind in POD_GONE:
        key = _key(event)
        held = r.pod_on.pop(key, None)
        if held is not None:
            held.advance(t)
            held.pods.pop(key, None)
    elif kind == "run_ended":
        r.end = t


def node_hours(events: Iterable[Mapping[str, Any]]) -> list[PoolNodeHours]:
    """Billed node-hours and dollars of launched machines per (cluster, nodepool), split by
    what the nodes held (definitions and the identity they keep: the module doc), sorted by
    cluster (None last) and nodepool."""
    r = _Replay()
    for event in events:
        _feed(r, event)
    if r.end is None:
        raise NodeHoursLogError("no run_ended event: the log is not a whole run")
    for name in list(r.machines):
        while name in r.machines:  # still up at the end: billed until it
            r.close(name, r.end)
    groups: dict[tuple[str | None, str], list[_Machine]] = {}
    for m in r.closed:
        groups.setdefault((m.cluster, m.nodepool), []).append(m)
    out = []
    for (cluster, pool), machines in sorted(
        groups.items(), key=lambda kv: (kv[0][0] is None, kv[0][0] or "", kv[0][1])
    ):
        hours = dict.fromkeys(STATES, 0.0)
        usd = dict.fromkeys(STATES, 0.0)
        unpriced: set[str] = set()
        for m in machines:
            price = hourly_price(m.instance_type or "")
            if price is None:
                unpriced.add(m.instance_type or "")
            for s in STATES:
                hours[s] += m.seconds[s] / 3600.0
                usd[s] += m.seconds[s] / 3600.0 * (price or 0.0)
        out.append(
            PoolNodeHours(
                cluster=cluster,
                nodepool=pool,
                nodes=len(machines),
                real_node_hours=hours["real"],
                placeholder_node_hours=hours["placeholder"],
                empty_node_hours=hours["empty"],
                booting_node_hours=hours["booting"],
                real_usd=usd["real"],
                placeholder_usd=usd["placeholder"],
                empty_usd=usd["empty"],
                booting_usd=usd["booting"],
                unpriced=tuple(sorted(unpriced)),
            )
        )
    return out
