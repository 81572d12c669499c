"""Benchmark: do pairs stay whole under a storm, what it costs, and the hand-over gap.

Runs one scenario (default ``storm``) for seeds 1..N: stock ARC (``baseline``) once per seed
and the capacity-aware listener once per *variant* per seed, on the same jobs. Variants:

- ``ladder``: the priority ladder alone (what the listener ships);
- ``pdb``:    the ladder plus the opt-in PodDisruptionBudget over placeholders
              (config/placeholder-pdb.yaml, installed as a user would apply it);
- ``no-ramp``: a diagnosis, not a candidate: ``nodeLaunchRate`` 10 000, so the burst's pairs
              reach Karpenter in one batch instead of the ramp's successive ones;
- ``dnd-off``: a diagnosis: ``doNotDisrupt`` forced off (the listener's default ``auto``
              protects for 1 h where a node holds one workflow pod), so
              Karpenter may consolidate nodes that hold only warm placeholders.

The scenario file runs as shipped: shipped scenarios set only what a user must set (the
listener's defaults otherwise), and the simulator reads the demand sources their blocks name.

Printed per variant (per seed, then the sum or mean over seeds):

- safety: failed, stuck, never-started jobs, over-advertised slot-seconds (must stay 0);
- cost: nodes launched, billed node-hours and dollars, and their ratios to stock ARC's;
- speed: fair p50 (failed / never-started jobs are infinitely late), time until 95% of
  jobs were running, both as ratios to stock ARC's;
- pairs: pairs created, and every placeholder a real pod preempted, by who took it and
  which half (``wf>R`` = a workflow pod took a runner half, the break the ladder alone
  invites); *pairs taken whole* = pairs whose two halves went to the runner and workflow
  pod of one job;
- hand-over: while jobs wait (queued, not running yet), each ``job_completed`` is matched to
  the next ``job_running`` not matched yet; the gap is finish -> next job Running (p50/p95 in
  seconds). Stock ARC's gap is its runner pod's start into the freed room; the listener's
  adds whatever it takes to turn the freed room into a confirmed, advertised slot.

Run: ``.venv/bin/python bench/pairs.py [--seeds 3] [--jobs 2] [--variants ladder,pdb]``.
One storm seed takes about 3 s per strategy run on this machine.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import statistics
import sys
from collections import Counter
from multiprocessing import Pool
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simulator.engine.world import World
from simulator.measurement.kth import job_times
from simulator.scenarios.scenario import Scenario, load_scenario
from simulator.scenarios.strategies import BASELINE, CAPACITY_AWARE

#: Per variant: (listener settings, simulator-side knobs of strategies.capacity_aware_sim).
VARIANTS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "ladder": ({}, {"placeholder_pdb": False}),
    "pdb": ({}, {"placeholder_pdb": True}),
    # Diagnosis, not a candidate: the launch ramp out of the way (one Karpenter batch).
    "no-ramp": ({"node_launch_rate": 10_000.0}, {}),
    # Diagnosis: no karpenter.sh/do-not-disrupt on workflow placeholders (default: 1 h).
    "dnd-off": ({"do_not_disrupt": False}, {}),
}


def scenario_for(name: str, variant: str | None, as_shipped: bool = True) -> Scenario:
    """``as_shipped`` is kept for the command line; the shipped files are the defaults now."""
    del as_shipped
    scenario = load_scenario(name)
    strategies = scenario.strategies
    settings = strategies.capacity_aware
    sim = strategies.capacity_aware_sim
    if variant is not None:
        settings = settings.model_copy(update=VARIANTS[variant][0])
        sim = sim.model_copy(update=VARIANTS[variant][1])
    strategies = strategies.model_copy(
        update={"capacity_aware": settings, "capacity_aware_sim": sim}
    )
    return scenario.model_copy(update={"strategies": strategies})


def run_one(task: tuple[str, int, str | None, bool]) -> dict[str, Any]:
    name, seed, variant, as_shipped = task
    strategy = BASELINE if variant is None else CAPACITY_AWARE
    world = World(scenario_for(name, variant, as_shipped), strategy, seed=seed)
    results = world.run()
    events = [json.loads(line) for line in world.log.lines()]
    jobs = [j.running for j in job_times(world.service.jobs, world.loop.start)]
    return {
        "seed": seed,
        "variant": variant or "stock ARC",
        "results": {k: v for k, v in results.items() if k != "scale_sets"},
        "pairs": pair_breaks(events),
        "gaps": handover_gaps(events),
        "nodes": nodes_alive(events),
        "claims": [e["t"] for e in events if e["type"] == "nodeclaim_created"],
        "running": jobs,
    }


def pair_breaks(events: list[dict[str, Any]]) -> dict[str, int]:
    roles: dict[str, str] = {}
    ran: set[str] = set()
    nominated: set[str] = set()
    taken: dict[str, list[str]] = {}  # pair id -> the runner pod names (jobs) that took halves
    out: Counter[str] = Counter()
    for e in events:
        kind = e["type"]
        if kind == "pod_created":
            roles[e["pod"]] = e.get("role", "")
            if e.get("role") == "placeholder-runner":
                out["pairs created"] += 1
        elif kind == "pod_running":
            ran.add(e["pod"])
        elif kind == "pod_nominated":
            nominated.add(e["pod"])
        elif kind == "pod_bound" and roles.get(e["pod"]) == "runner":
            # A runner pod that needed no preemption landed in free room, not in a pair.
            out[
                "runner pods bound by preempting"
                if e["pod"] in nominated
                else "runner pods bound into free room"
            ] += 1
        elif kind == "pod_disrupted" and e.get("reason") == "preempted":
            victim = roles.get(e["pod"], "")
            if not victim.startswith("placeholder"):
                continue
            by = e.get("by", "")
            by_role = roles.get(by, "")
            who = "wf" if by_role == "workflow" else "runner" if by_role == "runner" else "other"
            half = "R" if victim == "placeholder-runner" else "W"
            out[f"{who}>{half}"] += 1
            job = by[: -len("-workflow")] if who == "wf" else by
            taken.setdefault(e["pod"].rsplit("-", 1)[0], []).append(job)
        elif kind == "pod_deleted" and roles.get(e["pod"], "").startswith("placeholder"):
            reason = e.get("reason")
            if reason == "consolidated":
                out["consolidated"] += 1
            elif reason != "preempted":
                out["deleted Running" if e["pod"] in ran else "deleted before Running"] += 1
    out["pairs taken whole"] = sum(
        1 for jobs in taken.values() if len(jobs) == 2 and jobs[0] == jobs[1]
    )
    return dict(out)


def nodes_alive(events: list[dict[str, Any]], step: float = 600.0) -> list[int]:
    """Karpenter nodes alive (NodeClaim created, not yet removed) at 0, step, 2 step, ..."""
    alive: set[str] = set()
    counts: list[int] = []
    t_next = 0.0
    for e in events:
        while e["t"] > t_next:
            counts.append(len(alive))
            t_next += step
        if e["type"] == "nodeclaim_created":
            alive.add(e["nodeclaim"])
        elif e["type"] in ("nodeclaim_deleted", "node_removed") and e.get("nodeclaim"):
            alive.discard(e["nodeclaim"])
    counts.append(len(alive))
    return counts


def handover_gaps(events: list[dict[str, Any]]) -> list[float]:
    queued: dict[int, float] = {}
    running: dict[int, float] = {}
    completed: list[float] = []
    for e in events:
        if e["type"] == "job_queued":
            queued[e["job"]] = e["t"]
        elif e["type"] == "job_running":
            running.setdefault(e["job"], e["t"])
        elif e["type"] == "job_completed":
            completed.append(e["t"])
    starts = sorted(running.values())
    waiting_queued = sorted(queued.values())
    gaps = []
    i = 0
    for t in sorted(completed):
        # Jobs queued by t minus jobs running by t: is anyone waiting for this freed room?
        waiting = _count_le(waiting_queued, t) - _count_le(starts, t)
        if waiting <= 0:
            continue
        while i < len(starts) and starts[i] < t:
            i += 1
        if i == len(starts):
            break
        gaps.append(starts[i] - t)
        i += 1
    return gaps


def _count_le(values: list[float], t: float) -> int:
    return bisect.bisect_right(values, t)


def _pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(p / 100 * len(values) + 0.5) - 1))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", default="storm")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 1..N (default 3)")
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--variants", default="ladder,pdb")
    parser.add_argument(
        "--as-shipped",
        action="store_true",
        help="(no effect: the shipped files are the listener's defaults now)",
    )
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--timeline", action="store_true", help="also print Karpenter nodes alive every 10 min"
    )
    args = parser.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    tasks = [(args.scenario, s, v, args.as_shipped) for s in seeds for v in [None, *variants]]
    with Pool(args.jobs) as pool:
        runs = pool.map(run_one, tasks, chunksize=1)
    if args.json:
        args.json.write_text(json.dumps(runs))
    print(report(runs, ["stock ARC", *variants], list(seeds)))
    if args.timeline:
        print("\nKarpenter nodes alive every 10 minutes (0, 10, 20 ... min):")
        for run in runs:
            print(
                f"{run['variant']:<10} {run['seed']:>4} "
                + " ".join(f"{n:>3}" for n in run["nodes"])
            )
        print("\nNodeClaims created per 30 s from 30 to 36 min (the burst starts at 30 min):")
        for run in runs:
            windows = [0] * 12
            for t in run["claims"]:
                if 1800 <= t < 2160:
                    windows[int((t - 1800) // 30)] += 1
            counts = " ".join(f"{n:>2}" for n in windows)
            print(
                f"{run['variant']:<10} {run['seed']:>4} {counts}  (whole run: {len(run['claims'])})"
            )
    return 0


def report(runs: list[dict[str, Any]], variants: list[str], seeds: list[int]) -> str:
    by = {(r["variant"], r["seed"]): r for r in runs}
    lines = []
    head = (
        f"{'variant':<10} {'seed':>4} {'fail':>4} {'stuck':>5} {'never':>5} {'overadv':>7} "
        f"{'nodes':>5} {'node-h':>7} {'x':>5} {'$':>7} {'x':>5} {'p50':>7} {'x':>5} "
        f"{'t95%':>7} {'x':>5} {'gap p50':>7} {'gap p95':>7} pairs"
    )
    lines.append(head)
    for variant in variants:
        ratios: dict[str, list[float]] = {"nh": [], "usd": [], "p50": [], "t95": []}
        for seed in seeds:
            run, ref = by[(variant, seed)], by[("stock ARC", seed)]
            r, b = run["results"], ref["results"]
            p50, bp50 = (
                r["queue_to_start_fair_seconds"]["p50"],
                b["queue_to_start_fair_seconds"]["p50"],
            )
            t95, bt95 = r["time_to_95pct_running"], b["time_to_95pct_running"]
            row = {
                "nh": r["billed_node_hours"] / b["billed_node_hours"],
                "usd": r["billed_cost_usd"] / b["billed_cost_usd"],
                "p50": _ratio(p50, bp50),
                "t95": _ratio(t95, bt95),
            }
            for k, v in row.items():
                ratios[k].append(v)
            pairs = run["pairs"]
            pair_text = " ".join(f"{k}={pairs[k]}" for k in sorted(pairs)) if pairs else ""
            gaps = run["gaps"]
            lines.append(
                f"{variant:<10} {seed:>4} {r['jobs_failed']:>4} {r['jobs_stuck']:>5} "
                f"{r['jobs_never_started']:>5} {r['over_advertised_slot_seconds']:>7.1f} "
                f"{r['nodes_launched']:>5} {r['billed_node_hours']:>7.1f} {row['nh']:>5.2f} "
                f"{r['billed_cost_usd']:>7.2f} {row['usd']:>5.2f} "
                f"{_num(p50):>7} {row['p50']:>5.2f} "
                f"{_num(t95):>7} {row['t95']:>5.2f} {_pct(gaps, 50):>7.1f} {_pct(gaps, 95):>7.1f} "
                f"{pair_text}"
            )
        pooled = [gap for s in seeds for gap in by[(variant, s)]["gaps"]]
        lines.append(
            f"{variant:<10} mean ratios to stock ARC: node-h {statistics.mean(ratios['nh']):.2f} "
            f"(max {max(ratios['nh']):.2f}), $ {statistics.mean(ratios['usd']):.2f} "
            f"(max {max(ratios['usd']):.2f}), fair p50 {statistics.mean(ratios['p50']):.2f} "
            f"(max {max(ratios['p50']):.2f}), t95% {statistics.mean(ratios['t95']):.2f} "
            f"(max {max(ratios['t95']):.2f}); hand-over gap over all seeds p50 "
            f"{_pct(pooled, 50):.1f} s, p95 {_pct(pooled, 95):.1f} s"
        )
    return "\n".join(lines)


def _ratio(a: float | None, b: float | None) -> float:
    if a is None:
        return float("inf")
    if b is None or b == 0:
        return float("nan")
    return a / b


def _num(v: float | None) -> str:
    return "never" if v is None else f"{v:.0f}"


if __name__ == "__main__":
    raise SystemExit(main())
