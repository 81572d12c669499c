"""Machine-hours and dollars, billed from the launch request (issue 13's cost figures).

The cluster's own ``node_hours`` / ``node_cost_usd`` count a Karpenter machine from the
moment it is Launched. A platform team pays for the whole wait of a machine it asked for, and
a strategy that requests many machines it then does not need should not look cheaper because
the cloud took a minute to deliver them, so these figures start at the request:

- **Karpenter machines**: from the NodeClaim's creation (the launch request) until the
  NodeClaim is removed (or the run ends). A NodeClaim that never launched (ICE, deleted
  before launch) costs nothing: no instance existed and AWS bills none.
- **Static machines** (Nodes not owned by a NodeClaim): from their creation to their removal.

Prices: :mod:`simulator.measurement.prices` (on-demand list price, whatever the capacity type).
Read from the object store's watch (in-memory state); the checker recomputes the same figures
from the event log (``nodeclaim_created`` / ``nodeclaim_launched`` / ``nodeclaim_failed`` /
``node_added`` / ``node_removed``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simulator.engine.store import Obj
from simulator.measurement.prices import hourly_price

LABEL_INSTANCE_TYPE = "node.kubernetes.io/instance-type"


@dataclass(slots=True)
class _Machine:
    since: float
    instance_type: str | None = None  # known once launched (or at once for static nodes)


@dataclass
class MachineBilling:
    """Integrates machine-seconds and dollars; feed it store events of Nodes and NodeClaims."""

    #: Seconds since the run started (the run's own time axis, not a Clock).
    elapsed: Callable[[], float]
    seconds: float = 0.0
    dollars: float = 0.0
    unpriced: set[str] = field(default_factory=set)
    _open: dict[tuple[str, str], _Machine] = field(default_factory=dict)

    def listener(self, cluster: str) -> Callable[[str, Obj], None]:
        """A store listener (``store.subscribe(..., kinds=("Node", "NodeClaim"))``)."""

        def on_change(event_type: str, obj: Obj) -> None:
            self.observe(cluster, event_type, obj)

        return on_change

    def observe(self, cluster: str, event_type: str, obj: Obj) -> None:
        kind = obj.get("kind")
        meta = obj["metadata"]
        if kind == "Node" and _owned_by_claim(meta):
            return  # billed through its NodeClaim
        key = (cluster, f"{kind}/{meta['name']}")
        machine = self._open.get(key)
        if event_type == "DELETED":
            if machine is not None:
                self._bill(machine, self.elapsed())
                del self._open[key]
            return
        if machine is None:
            if event_type != "ADDED":
                return
            machine = self._open[key] = _Machine(self.elapsed())
        if machine.instance_type is None:
            machine.instance_type = (meta.get("labels") or {}).get(LABEL_INSTANCE_TYPE)

    def finish(self, end: float) -> None:
        for machine in self._open.values():
            self._bill(machine, end)
        self._open.clear()

    def _bill(self, machine: _Machine, until: float) -> None:
        if machine.instance_type is None:
            return  # never launched: nothing was billed
        held = max(0.0, until - machine.since)
        self.seconds += held
        price = hourly_price(machine.instance_type)
        if price is None:
            self.unpriced.add(machine.instance_type)
        else:
            self.dollars += held / 3600.0 * price

    def results(self) -> dict[str, Any]:
        return {
            "billed_node_hours": round(self.seconds / 3600.0, 2),
            "billed_cost_usd": round(self.dollars, 2),
            "billed_unpriced_types": sorted(self.unpriced),
        }


def _owned_by_claim(meta: dict[str, Any]) -> bool:
    return any(o.get("kind") == "NodeClaim" for o in meta.get("ownerReferences") or ())
