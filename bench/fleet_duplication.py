"""Benchmark: fleet duplication, what clusters serving one label build and hold for each other.

For every multi-cluster scenario of config/scenarios/ (more than one entry under
``clusters:``), each seed 1..N and each strategy, one run; from its event log and the
simulated provisioner's launch attribution,
:func:`simulator.measurement.fleet_duplication.fleet_duplication` counts per cluster (the
definitions are that module's docstring):

- ``jobs``: jobs GitHub gave the cluster;
- ``units``: placeholder units created (capacity-aware pairs; warm-pool pause pods) and
  ``used`` (a job's pod took one of them);
- ``dup``: **duplicate pairs**, built while a fitting job was queued, released unused after
  another cluster took that job (capacity-aware only: ``-`` where units are not built for
  demand);
- ``dup nodes`` / ``part``: NodeClaims launched for duplicate halves only / for some;
  ``dup $``: the former billed over the node's life, and ``<= work``: until a job's pod
  first bound on it (a node launched for a duplicate may go on to serve real jobs);
- ``warm``: unused units held while another cluster took a fitting job, ``warm $`` their
  reserve (each placeholder's dominant share of its node while bound, list prices);
- ``reserve $``: every unit's reserve; ``nodes``: NodeClaims launched.

Figures are means per seed; the ``fleet`` row sums the clusters. Then per strategy the run's
own figures (failed / stuck / over-advertised summed over seeds, fair p50 over the jobs of all
seeds pooled, nodes and dollars per seed) and nodes and dollars as ratios to stock ARC; then,
per nodepool (fleet total, means per seed), launched nodes' node-hours and dollars by what
they held, ``real / placeholder / empty / booting``
(:func:`simulator.measurement.node_hours.node_hours`; runs saved without it print none).

Run: ``.venv/bin/python bench/fleet_duplication.py [--seeds 10] [--jobs 2]
[--first-seed 1] [--scenarios drain,ice-failover,fleet-day]
[--strategies baseline,capacity-aware] [--set KEY=VALUE] [--window START-END |
--store-down START-END] [--json FILE | --from-json FILE...] [--markdown]``
(``--from-json`` merges the runs of several files, e.g. seeds run apart).
``--set`` merges a capacityAware key over every scenario's shared block (as in
bench/scenarios.py): the same table with a listener feature on is the "after" to this
"before".

**One window.** ``--window 12-13`` (hours of the run) adds, per scenario and strategy, that
window's figures (:mod:`simulator.measurement.fleet_window`): jobs queued in it, their fair
p50 / p95 queue-to-start (a job that failed or never started is infinitely late; pooled over
seeds), pairs created in it and the mean READY pairs held, per cluster (means per seed).
``--store-down 12-13`` is the same window with the fleet's shared store down for it, through
the ``fleet_store_down`` fault (simulator/faults/fleet.py); a run without a store (``fleetView``
off, stock ARC) skips the fault and says so. Three runs over one hour (view off, view on,
view on with the store down) show whether the store-down hour is the view-off hour.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import re
import sys
import time
from collections.abc import Sequence
from multiprocessing import Pool
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scenarios import build_world, chosen, markdown_table, render, set_block
from simulator.faults import Fault, FaultKind, FaultPlan, FaultScheduler, fleet_store_handlers
from simulator.measurement.fleet_duplication import fleet_duplication
from simulator.measurement.fleet_window import window_figures
from simulator.measurement.node_hours import STATES, node_hours
from simulator.scenarios.scenario import Scenario, load_scenario, shipped
from simulator.scenarios.strategies import BASELINE, CAPACITY_AWARE, STRATEGIES
from simulator.workload.figures import fair_summary
from simulator.workload.service_records import JobState

#: Strategies whose placeholders are built for queued jobs (the others keep a fixed pool).
DEMAND_DRIVEN = (CAPACITY_AWARE,)


def multi_cluster() -> list[str]:
    """Shipped scenarios with more than one cluster, longest first."""
    names = [p.stem for p in shipped() if len(load_scenario(p.stem).clusters) > 1]
    return sorted(names, key=lambda n: (-load_scenario(n).duration, n))


def capacity_of(scenario: Scenario) -> dict[str, tuple[float, int]]:
    return {
        it.name: (float(it.cpu), it.gpu) for c in scenario.clusters for it in c.spec.instance_types
    }


#: A run's window: (start hour, end hour, take the fleet store down for it).
Window = tuple[float, float, bool]

_HOURS = re.compile(r"\s*(\d+(?:\.\d+)?)\s*-\s*(\d+(?:\.\d+)?)\s*")


def hours_window(text: str) -> tuple[float, float]:
    """``START-END`` in hours of the run (``12-13``, ``9.5-10``), START < END."""
    match = _HOURS.fullmatch(text)
    if match is None or float(match[1]) >= float(match[2]):
        raise argparse.ArgumentTypeError(
            f"expected START-END in hours of the run, START < END, e.g. 12-13 (got {text!r})"
        )
    return float(match[1]), float(match[2])


def take_store_down(world: Any, start_h: float, end_h: float) -> dict[str, Any]:
    """The ``fleet_store_down`` fault over the window, as a fault plan applies it; what
    happened, for the report (skipped: the world has no fleet store)."""
    fault = Fault(kind=FaultKind.FLEET_STORE_DOWN, start=start_h * 3600, end=end_h * 3600)
    scheduler = FaultScheduler(world.loop, FaultPlan(faults=[fault]), fleet_store_handlers(world))
    scheduler.schedule()
    return {"skipped": bool(scheduler.skipped)}


def run_one(task: tuple[str, int, str, dict[str, Any], Window | None]) -> dict[str, Any]:
    """One strategy of one scenario and seed (in a worker process)."""
    name, seed, strategy, _block, window = task
    world = build_world(task[:4])
    launches: dict[str, tuple[str, ...]] = {}
    for handle in world.clusters.values():
        handle.cluster.provisioner.on_claim = launches.__setitem__
    store_down = take_store_down(world, *window[:2]) if window and window[2] else None
    results = world.run()
    # Parsed once for the three readers below: a day-long run logs over 100 000 events.
    events = [json.loads(line) for line in world.log.lines()]
    clusters = fleet_duplication(
        events, capacity_of(world.scenario), launches, demand_driven=strategy in DEMAND_DRIVEN
    )
    held = node_hours(events)
    waits = [
        math.inf
        if j.running_at is None or j.state is JobState.FAILED
        else j.running_at - j.queued_at
        for j in world.service.jobs
    ]
    out: dict[str, Any] = {}
    if window is not None:
        figures = window_figures(events, window[0] * 3600, window[1] * 3600)
        store = world.fleet_store()
        if store_down is not None and store is not None:
            store_down.update(queries=store.queries, failed=store.failed_queries)
        out["window"] = {
            "hours": list(window[:2]),
            "store_down": store_down,
            "waits": list(figures.waits),
            "clusters": [dataclasses.asdict(c) for c in figures.clusters],
        }
    return {
        **out,
        "scenario": name,
        "seed": seed,
        "strategy": strategy,
        "clusters": [dataclasses.asdict(c) for c in clusters],
        "node_hours": [dataclasses.asdict(p) for p in held],
        "waits": waits,
        "results": {
            k: results[k]
            for k in (
                "jobs_total",
                "jobs_failed",
                "jobs_stuck",
                "over_advertised_slot_seconds",
                "nodes_launched",
                "billed_node_hours",
                "billed_cost_usd",
                "api_writes",
            )
        },
    }


HEADER = [
    "cluster",
    "jobs",
    "units",
    "used",
    "dup",
    "dup nodes",
    "part",
    "dup $",
    "<= work $",
    "warm",
    "warm $",
    "reserve $",
    "nodes",
]


def _mean(runs: Sequence[dict[str, Any]], cluster: str | None, key: str) -> float:
    total = 0.0
    for run in runs:
        for c in run["clusters"]:
            if cluster is None or c["cluster"] == cluster:
                total += c[key]
    return total / len(runs)


def cluster_rows(runs: Sequence[dict[str, Any]], demand_driven: bool) -> list[list[str]]:
    """One row per cluster and a ``fleet`` row, means per seed."""
    names = [c["cluster"] for c in runs[0]["clusters"]]
    rows = []
    for cluster in [*names, None]:

        def m(key: str, digits: int = 1, cluster: str | None = cluster) -> str:
            return f"{_mean(runs, cluster, key):,.{digits}f}"

        dup = (
            [
                m("duplicate"),
                m("duplicate_launches"),
                m("duplicate_launches_part"),
                m("duplicate_usd", 2),
                m("duplicate_usd_before_work", 2),
            ]
            if demand_driven
            else ["-"] * 5
        )
        rows.append(
            [
                cluster or "fleet",
                m("jobs_taken"),
                m("units"),
                m("used"),
                *dup,
                m("warm_for_other"),
                m("warm_reserve_usd", 2),
                m("reserve_usd", 2),
                m("launches"),
            ]
        )
    return rows


def _fair_p50(runs: Sequence[dict[str, Any]]) -> float | None:
    value = fair_summary([w for r in runs for w in r["waits"]])["p50"]
    return None if value is None else float(value)


def run_line(runs: Sequence[dict[str, Any]], stock: Sequence[dict[str, Any]]) -> str:
    res = [r["results"] for r in runs]
    n = len(runs)
    nodes = sum(x["nodes_launched"] for x in res) / n
    usd = sum(x["billed_cost_usd"] for x in res) / n
    p50 = _fair_p50(runs)
    unattributed = sum(c["unattributed_launches"] for r in runs for c in r["clusters"])
    line = (
        f"  failed {sum(x['jobs_failed'] for x in res)}, stuck {sum(x['jobs_stuck'] for x in res)}"
        f", over-adv slot-s {sum(x['over_advertised_slot_seconds'] for x in res):,.1f}; "
        f"fair p50 {'never' if p50 is None else f'{p50:.1f}'} s; nodes {nodes:,.1f}/seed, "
        f"${usd:,.2f}/seed"
    )
    # Runs saved before the API writes were recorded have none: say nothing rather than 0.
    if all("api_writes" in x for x in res):
        line += f"; API writes {sum(x['api_writes'] for x in res) / n:,.0f}/seed"
    seeds = {r["seed"] for r in runs}
    stock = [r for r in stock if r["seed"] in seeds]  # ratios over the seeds both ran
    if stock and runs[0]["strategy"] != BASELINE:
        ref = [r["results"] for r in stock]
        ref_nodes = sum(x["nodes_launched"] for x in ref) / len(ref)
        ref_usd = sum(x["billed_cost_usd"] for x in ref) / len(ref)
        ref_p50 = _fair_p50(stock)
        line += (
            f"; against stock ARC: nodes {_ratio(nodes, ref_nodes)}x, "
            f"$ {_ratio(usd, ref_usd)}x, fair p50 {_ratio(p50, ref_p50)}x"
        )
    if unattributed:
        line += f"; {unattributed} launches without attribution (all seeds)"
    return line


def held_lines(runs: Sequence[dict[str, Any]]) -> list[str]:
    """Per nodepool (fleet total), launched nodes' node-hours and dollars by what they held,
    means per seed over the runs that recorded them (runs saved before the field: none)."""
    recorded = [r for r in runs if "node_hours" in r]
    if not recorded:
        return []
    n = len(recorded)
    pools: dict[str, dict[str, float]] = {}
    for run in recorded:
        for row in run["node_hours"]:
            acc = pools.setdefault(row["nodepool"], {})
            for state in STATES:
                for unit in ("node_hours", "usd"):
                    key = f"{state}_{unit}"
                    acc[key] = acc.get(key, 0.0) + row[key] / n
    seeds = "" if n == len(runs) else f", {n} of {len(runs)} seeds"
    lines = [f"  launched nodes by what they held, node-h | $ per seed (fleet{seeds}):"]
    for pool, acc in sorted(pools.items()):
        cells = "  ".join(
            f"{state} {acc[state + '_node_hours']:,.1f} | ${acc[state + '_usd']:,.2f}"
            for state in STATES
        )
        lines.append(f"    {pool}: {cells}")
    return lines


WINDOW_HEADER = [
    "cluster",
    "jobs queued",
    "taken",
    "fair p50 s",
    "fair p95 s",
    "pairs created",
    "mean READY",
]


def _cell(value: float | None, digits: int = 1, none: str = "-") -> str:
    return none if value is None else f"{value:,.{digits}f}"


def window_line(runs: Sequence[dict[str, Any]]) -> str:
    """What the window was and whether the store went down in it, over the runs."""
    start, end = runs[0]["window"]["hours"]
    downs = [r["window"]["store_down"] for r in runs if r["window"]["store_down"] is not None]
    line = f"  window {start:g}-{end:g} h"
    if not downs:
        return line + " (store up)"
    skipped = sum(d["skipped"] for d in downs)
    if skipped:
        line += (
            f", fleet_store_down skipped in {skipped}/{len(runs)} run(s): no fleet store "
            "(fleetView off, or not capacity-aware)"
        )
    applied = [d for d in downs if not d["skipped"]]
    if applied:
        failed = sum(d.get("failed", 0) for d in applied)
        queries = sum(d.get("queries", 0) for d in applied)
        line += (
            f", store down in {len(applied)}/{len(runs)} run(s) ({failed} of {queries} fleet "
            "reads failed)"
        )
    return line


def window_rows(runs: Sequence[dict[str, Any]]) -> list[list[str]]:
    """The window's rows, means per seed: per cluster the jobs queued in the window it was
    given, pairs created, mean READY pairs; the ``fleet`` row adds the jobs queued and their
    fair p50 / p95 (pooled over seeds; ``never``: infinite, a failed or unstarted job)."""
    n = len(runs)

    def mean(cluster: str | None, key: str) -> float | None:
        values = [
            c[key]
            for r in runs
            for c in r["window"]["clusters"]
            if cluster is None or c["cluster"] == cluster
        ]
        return None if any(v is None for v in values) else sum(values) / n

    rows = []
    for cluster in [*(c["cluster"] for c in runs[0]["window"]["clusters"]), None]:
        if cluster is None:
            fair = fair_summary([w for r in runs for w in r["window"]["waits"]])
            queued = sum(len(r["window"]["waits"]) for r in runs) / n
            head = ["fleet", _cell(queued)]
            waits = [_cell(fair["p50"], none="never"), _cell(fair["p95"], none="never")]
        else:
            head, waits = [cluster, "-"], ["-", "-"]
        rows.append(
            [
                *head,
                _cell(mean(cluster, "jobs_taken")),
                *waits,
                _cell(mean(cluster, "pairs_created")),
                _cell(mean(cluster, "mean_ready"), 2),
            ]
        )
    return rows


def _ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}"


def report(names: Sequence[str], runs: list[dict[str, Any]], *, markdown: bool = False) -> None:
    for name in names:
        mine = [r for r in runs if r["scenario"] == name]
        seeds = sorted({r["seed"] for r in mine})
        stock = [r for r in mine if r["strategy"] == BASELINE]
        print(f"\n== {name}: seeds {seeds[0]}..{seeds[-1]} ({len(seeds)}), means per seed")
        for strategy in STRATEGIES:
            of = sorted((r for r in mine if r["strategy"] == strategy), key=lambda r: r["seed"])
            if not of:
                continue
            print(f"{strategy}: seeds {', '.join(str(r['seed']) for r in of)}")
            rows = [HEADER, *cluster_rows(of, strategy in DEMAND_DRIVEN)]
            print(markdown_table(rows) if markdown else render(rows))
            print(run_line(of, stock))
            for line in held_lines(of):
                print(line)
            windowed = [r for r in of if "window" in r]
            if windowed:
                print(window_line(windowed))
                table = [WINDOW_HEADER, *window_rows(windowed)]
                print(markdown_table(table) if markdown else render(table))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="N seeds (default 10)")
    parser.add_argument("--first-seed", type=int, default=1, help="seeds K..K+N-1 (default 1)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes")
    parser.add_argument("--scenarios", default="", help="comma-separated (default: multi-cluster)")
    parser.add_argument("--strategies", default="", help=f"subset of {', '.join(STRATEGIES)}")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--json", type=Path, default=None, help="also write every run here")
    parser.add_argument(
        "--from-json", type=Path, nargs="+", default=None, help="print runs saved by --json"
    )
    parser.add_argument("--markdown", action="store_true", help="tables as Markdown")
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--window",
        type=hours_window,
        metavar="START-END",
        help="also print this window's figures (hours of the run, e.g. 12-13)",
    )
    where.add_argument(
        "--store-down",
        type=hours_window,
        metavar="START-END",
        help="take the fleet store down for this window (hours of the run, e.g. 12-13; "
        "fleet_store_down, skipped where there is no store) and print its figures",
    )
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.jobs < 1:
        parser.error("--seeds and --jobs must be >= 1")
    names = chosen(
        parser, "--scenarios", args.scenarios, multi_cluster(), "multi-cluster scenario(s)"
    )
    if args.from_json is not None:
        # One run per (scenario, seed, strategy): a file given twice does not count twice.
        unique = {
            (r["scenario"], r["seed"], r["strategy"]): r
            for f in args.from_json
            for r in json.loads(f.read_text(encoding="utf-8"))
        }
        runs = list(unique.values())
        saved = [n for n in names if any(r["scenario"] == n for r in runs)]
        report(saved, runs, markdown=args.markdown)
        return 0
    strategies = chosen(parser, "--strategies", args.strategies, STRATEGIES, "strategy(s)")
    block = set_block(parser, args.set, names)
    window: Window | None = None
    if args.window or args.store_down:
        option, (start_h, end_h) = (
            ("--store-down", args.store_down) if args.store_down else ("--window", args.window)
        )
        for name in names:
            hours = load_scenario(name).duration / 3600
            if end_h > hours:
                parser.error(
                    f"{option} {start_h:g}-{end_h:g}: scenario {name} lasts {hours:g} h; the "
                    "window must end by then (pick --scenarios)"
                )
        window = (start_h, end_h, args.store_down is not None)
    tasks = [
        (name, seed, strategy, block, window)
        for name in names
        for seed in range(args.first_seed, args.first_seed + args.seeds)
        for strategy in sorted(strategies, key=lambda s: s != CAPACITY_AWARE)
    ]
    started = time.perf_counter()
    with Pool(args.jobs) as pool:
        runs = []
        for n, run in enumerate(pool.imap_unordered(run_one, tasks), 1):
            runs.append(run)
            if args.json is not None:  # as it goes: a long sweep cut short keeps its runs
                args.json.write_text(json.dumps(runs), encoding="utf-8")
            sys.stderr.write(f"\r{n}/{len(tasks)} runs, {time.perf_counter() - started:.0f} s wall")
        sys.stderr.write("\n")
    if block:
        print(f"capacityAware over every scenario's shared block: {block}")
    report(names, runs, markdown=args.markdown)
    print(
        f"\n{len(tasks)} runs in {time.perf_counter() - started:.0f} s wall, {args.jobs} processes"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
