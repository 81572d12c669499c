"""Benchmark: why a strategy launches the nodes it launches (issue 31: node churn).

    .venv/bin/python bench/launch_causes.py [SCENARIO] [--seeds 7] [--strategies ...]
                                            [--set JSON | --sweep JSON-LIST] [--jobs 2]

Runs a shipped scenario per seed and strategy and prints, summed over the seeds:

- **launches** (NodeClaims launched: ``nodeclaim_launched``), split by what the provisioner
  batch that created the claim placed on it, the first matching of: a real workflow pod
  (``workflow``), a real runner pod (``runner``), a re-created placeholder half whose earlier
  pod of the same name was evicted by consolidation (``mend after consolidation``), by
  preemption or otherwise (``mend``), a placeholder half of a new pair (``new pair``);
- **removals** by reason: empty consolidation, underutilized consolidation of a node holding
  only placeholders (``underutilized, placeholders only``) or other pods, and other reasons
  (expiry, node lost, ...);
- node-hours and the fair p50 / p95 queue-to-start, for the trade-off.

With ``--sweep '[{}, {"doNotDisrupt": "1h"}, {"proactiveCapacity": 2}]'`` (a JSON list of
capacity-aware dial sets, ``{}`` being the shipped defaults) it runs stock ARC once per seed and
capacity-aware once per point and ends with the **frontier**: per point, nodes launched per
seed and as a ratio to stock ARC's (summed over the seeds), fair p50 / p95 over the jobs of all
seeds pooled and as a ratio to stock ARC's, dollars as a ratio, failed jobs; the shipped
defaults are marked ``(default)``.

The attribution patches nothing in the product: it wraps the simulated Karpenter provisioner's
``provision`` to see which pending pods each new NodeClaim was created for (the same
scheduling simulation runs; only the bookkeeping is added). Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from multiprocessing import Pool
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simulator.cluster import provisioner as prov
from simulator.scenarios.scenario import load_scenario
from simulator.scenarios.strategies import STRATEGIES
from tuning.replay import apply_dials
from tuning.sweep import fair_percentiles

LAUNCH_CAUSES = (
    "workflow",
    "runner",
    "mend after consolidation",
    "mend",
    "new pair",
    "other",
)


def _recording_provision(record: list[tuple[str, list[str]]]) -> Any:
    """``Provisioner.provision`` with one addition: the pod names placed on each new claim."""

    def provision(self: prov.Provisioner) -> int:
        pods = [p for p in self.pending.values() if p.provisionable]
        if not pods:
            return 0
        self.batches += 1
        pools = self.pools.views()
        pods.sort(key=lambda p: (-p.requests.cpu, -p.requests.memory, -p.requests.gpu, p.seq))
        usage = {pool.name: self.lifecycle.pool_usage(pool.name) for pool in pools}
        batch = prov._Batch(pools, self._targets(), usage)
        homeless: set[Any] = set()
        for pod in pods:
            before = [nc.pods for nc in batch.new]
            if not self._schedule(batch, pod.placement, pod.requests, homeless):
                self.unplaced += 1
                continue
            after = [nc.pods for nc in batch.new]
            for i, nc in enumerate(batch.new):
                if i >= len(before) or after[i] != before[i]:
                    nc.names.append(pod.name)
                    break
        for nc in batch.new:
            claim = self.lifecycle.create(nc.pool, nc.candidates, nc.requests, nc.pods)
            record.append((claim.name, list(nc.names)))
        return len(batch.new)

    return provision


def _cause(names: list[str], evicted_by: dict[str, str], created: Counter[str]) -> str:
    """The first matching cause among the pods a claim was created for (see the module doc)."""
    kinds = []
    for name in names:
        if "-ph-" not in name:
            kinds.append("workflow" if name.endswith("-workflow") else "runner")
        elif created[name] > 1:
            last = evicted_by.get(name)
            kinds.append("mend after consolidation" if last == "consolidated" else "mend")
        else:
            kinds.append("new pair")
    for cause in LAUNCH_CAUSES:
        if cause in kinds:
            return cause
    return "other"


def run(item: tuple[str, str, int, str]) -> dict[str, Any]:
    from simulator.engine.world import World

    scenario_name, strategy, seed, dials = item
    scenario = load_scenario(scenario_name)
    if dials != "{}" and strategy == "capacity-aware":
        scenario = apply_dials(scenario, json.loads(dials), where="bench")
    record: list[tuple[str, list[str]]] = []
    original = prov.Provisioner.provision
    prov.Provisioner.provision = _recording_provision(record)  # type: ignore[method-assign]
    try:
        world = World(scenario, strategy, seed=seed)
        results = world.run()
    finally:
        prov.Provisioner.provision = original  # type: ignore[method-assign]
    return {"strategy": strategy, "seed": seed, "dials": dials, **_figures(world, results, record)}


def _figures(
    world: Any, results: dict[str, Any], record: list[tuple[str, list[str]]]
) -> dict[str, Any]:
    triggers = dict(record)
    created: Counter[str] = Counter()
    evicted_by: dict[str, str] = {}  # pod name -> reason of its last disruption
    on_node: dict[str, set[str]] = {}  # node -> live pods bound there
    launches: Counter[str] = Counter()
    removals: Counter[str] = Counter()
    for event in map(json.loads, world.log.lines()):
        kind = event["type"]
        if kind == "pod_created":
            created[event["pod"]] += 1
        elif kind == "pod_bound":
            on_node.setdefault(event["node"], set()).add(event["pod"])
        elif kind in ("pod_ended", "pod_deleted") and event.get("node"):
            on_node.get(event["node"], set()).discard(event["pod"])
        elif kind == "pod_disrupted":
            evicted_by[event["pod"]] = event["reason"]
        elif kind == "nodeclaim_launched":
            names = triggers.get(event["nodeclaim"], [])
            launches[_cause(names, evicted_by, created)] += 1
        elif kind == "node_disrupted":
            pods = on_node.get(event["node"], set())
            if event["reason"] == "empty":
                removals["empty"] += 1
            elif pods and all("-ph-" in p for p in pods):
                removals["underutilized, placeholders only"] += 1
            else:
                removals["underutilized, other pods"] += 1
        elif kind == "node_removed" and event["reason"] != "consolidated":
            removals[event["reason"]] += 1
    waits = [
        (j.running_at - j.queued_at) if j.running_at is not None else math.inf
        for j in world.service.jobs
    ]
    fair = fair_percentiles(waits)
    return {
        "launches": dict(launches),
        "removals": dict(removals),
        "node_hours": results.get("billed_node_hours", results.get("node_hours")),
        "dollars": results.get("billed_cost_usd", results.get("node_cost_usd")),
        "p50": fair["p50"],
        "p95": fair["p95"],
        "failed": results["jobs_failed"],
        "waits": waits,
    }


def _points(p: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The capacity-aware dial sets to run, each as canonical JSON (one unless ``--sweep``)."""
    if args.sweep is None:
        return [args.set]
    try:
        points = json.loads(args.sweep)
    except json.JSONDecodeError as exc:
        p.error(f"--sweep: not JSON ({exc}); allowed: a list of dial objects like '[{{}}]'")
    if not isinstance(points, list) or not points or not all(isinstance(x, dict) for x in points):
        p.error("--sweep: a non-empty JSON list of dial objects, e.g. '[{}, {\"a\": 1}]'")
    return [json.dumps(x, sort_keys=True) for x in points]


def _report(strategy: str, mine: list[dict[str, Any]]) -> None:
    launches: Counter[str] = Counter()
    removals: Counter[str] = Counter()
    for r in mine:
        launches.update(r["launches"])
        removals.update(r["removals"])
    print(
        f"{strategy}: launches {sum(launches.values())}, "
        f"node-h {sum(r['node_hours'] or 0 for r in mine):,.1f}, "
        f"$ {sum(r['dollars'] or 0 for r in mine):,.2f}, "
        f"failed {sum(r['failed'] for r in mine)}, fair p50/p95 per seed "
        + " ".join(f"{r['p50']}/{r['p95']}" for r in mine)
    )
    causes = ", ".join(f"{c} {launches[c]}" for c in LAUNCH_CAUSES if launches[c])
    print(f"  launches by cause: {causes}")
    print("  removals: " + ", ".join(f"{c} {n}" for c, n in removals.most_common()))


def _totals(mine: list[dict[str, Any]]) -> dict[str, Any]:
    waits = [w for r in mine for w in r["waits"]]
    return {
        "launches": sum(sum(r["launches"].values()) for r in mine),
        "dollars": sum(r["dollars"] or 0 for r in mine),
        "failed": sum(r["failed"] for r in mine),
        **fair_percentiles(waits),
    }


def _ratio(mine: float | None, stock: float | None) -> str:
    if mine is None or stock is None or not stock:
        return "never" if mine is None else "-"
    return f"{mine / stock:.2f}"


def _frontier(rows: list[dict[str, Any]], points: list[str], seeds: int) -> None:
    """One line per capacity-aware point against stock ARC, all seeds summed or pooled."""
    stock = _totals([r for r in rows if r["strategy"] == "baseline"])
    print("frontier (capacity-aware against stock ARC; launches and $ summed, p50/p95 pooled):")
    print(
        f"  {'point':<44} {'nodes/seed':>10} {'nodes x':>8} {'p50 s':>7} {'p50 x':>6} "
        f"{'p95 s':>7} {'$ x':>5} {'failed':>6}"
    )
    print(
        f"  {'stock ARC':<44} {stock['launches'] / seeds:>10.1f} {'1.00':>8} "
        f"{stock['p50'] or 'never':>7} {'1.00':>6} {stock['p95'] or 'never':>7} "
        f"{'1.00':>5} {stock['failed']:>6}"
    )
    for point in points:
        mine = _totals(
            [r for r in rows if r["strategy"] == "capacity-aware" and r["dials"] == point]
        )
        label = point + (" (default)" if point == "{}" else "")
        print(
            f"  {label:<44} {mine['launches'] / seeds:>10.1f} "
            f"{_ratio(mine['launches'], stock['launches']):>8} {mine['p50'] or 'never':>7} "
            f"{_ratio(mine['p50'], stock['p50']):>6} {mine['p95'] or 'never':>7} "
            f"{_ratio(mine['dollars'], stock['dollars']):>5} {mine['failed']:>6}"
        )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenario", nargs="?", default="ice-failover")
    p.add_argument("--seeds", default="7")
    p.add_argument("--strategies", default="baseline,capacity-aware")
    p.add_argument("--set", default="{}", help="JSON capacityAware dials for capacity-aware")
    p.add_argument(
        "--sweep",
        default=None,
        help="JSON list of capacity-aware dial sets; prints the frontier against stock ARC",
    )
    p.add_argument("--jobs", type=int, default=2)
    args = p.parse_args()
    strategies = args.strategies.split(",")
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        p.error(f"--strategies: unknown {unknown}; allowed: {', '.join(STRATEGIES)}")
    if args.sweep is not None and set(strategies) != {"baseline", "capacity-aware"}:
        p.error("--sweep compares with stock ARC: --strategies baseline,capacity-aware")
    points = _points(p, args)
    seeds = [int(s) for s in args.seeds.split(",")]
    items = [
        (args.scenario, s, seed, point)
        for s in strategies
        for point in (points if s == "capacity-aware" else ["{}"])
        for seed in seeds
    ]
    with Pool(args.jobs) as pool:
        rows = pool.map(run, items)
    dials = " | ".join(points)
    print(f"{args.scenario}, seeds {seeds}, capacity-aware dials {dials}; sums over seeds")
    for strategy in strategies:
        for point in points if strategy == "capacity-aware" else ["{}"]:
            mine = [r for r in rows if r["strategy"] == strategy and r["dials"] == point]
            _report(strategy if len(points) == 1 else f"{strategy} {point}", mine)
    if args.sweep is not None:
        _frontier(rows, points, len(seeds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
