"""Cost and pair-break lines of bench/scenarios.py (a helper module, not a script).

Per run (in the worker, from the run's own event log): the warm pool's idle reserved
capacity and its price (:mod:`simulator.measurement.reserve_cost`), the pair report and the
halves taken (:mod:`simulator.measurement.pair_breaks`). Per scenario: node-hours and dollars
of capacity-aware as ratios to stock ARC (``baseline``), and issue 24's budget, per seed:

    capacity-aware $  <=  1.1 x stock ARC's $  +  price of capacity-aware's idle reserved capacity

Then the summary table over scenarios (one row each, capacity-aware against stock ARC).
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from typing import Any

from simulator.engine.world import World
from simulator.measurement.pair_breaks import halves_taken, pair_report
from simulator.measurement.reserve_cost import reserve_cost
from simulator.scenarios.scenario import Scenario
from simulator.scenarios.strategies import BASELINE, CAPACITY_AWARE
from simulator.workload.figures import fair_summary

BUDGET = 1.10


def log_figures(world: World) -> dict[str, Any]:
    """The figures bench/scenarios.py reads from one run's event log."""
    events = [json.loads(line) for line in world.log.lines()]
    scenario = world.scenario
    capacity = {
        it.name: (float(it.cpu), it.gpu) for c in scenario.clusters for it in c.spec.instance_types
    }
    reserve = reserve_cost(events, capacity)
    pairs = pair_report(events)
    return {
        "reserve_cpu_hours": reserve.cpu_hours,
        "reserve_usd": reserve.usd,
        "reserve_unpriced": list(reserve.unpriced),
        "pairs": pairs.pairs,
        "pair_fates": dict(pairs.fates),
        "pair_breaks": dict(pairs.broken_by_cause),
        "pair_mends": dict(pairs.mended_by_cause),
        "halves_taken": dict(halves_taken(events)),
        "launched_types": dict(
            Counter(e["instance_type"] for e in events if e["type"] == "nodeclaim_launched")
        ),
    }


def _ratio(a: float, b: float) -> float:
    return math.inf if b == 0 else a / b


def _r(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.2f}"


def budget_met(cand: dict[str, Any], ref: dict[str, Any]) -> bool:
    """Issue 24: dollars <= 1.1x stock ARC's + the price of the warm pool's idle reserve."""
    limit = BUDGET * ref["results"]["billed_cost_usd"] + cand["log"]["reserve_usd"]
    return bool(cand["results"]["billed_cost_usd"] <= limit + 1e-9)


def _compared(
    by_seed: dict[int, dict[str, dict[str, Any]]],
) -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    """(seed, capacity-aware run, stock ARC run) for the seeds with both and the former's log."""
    return [
        (seed, runs[CAPACITY_AWARE], runs[BASELINE])
        for seed, runs in sorted(by_seed.items())
        if CAPACITY_AWARE in runs and BASELINE in runs and "log" in runs[CAPACITY_AWARE]
    ]


def cost_lines(by_seed: dict[int, dict[str, dict[str, Any]]]) -> list[str]:
    """Per seed and over seeds: node-hours and dollars of capacity-aware / stock ARC."""
    lines = []
    node_h: list[float] = []
    usd: list[float] = []
    met = 0
    compared = _compared(by_seed)
    for seed, cand, ref in compared:
        c, b = cand["results"], ref["results"]
        node_h.append(_ratio(c["billed_node_hours"], b["billed_node_hours"]))
        usd.append(_ratio(c["billed_cost_usd"], b["billed_cost_usd"]))
        ok = budget_met(cand, ref)
        met += ok
        lines.append(
            f"  seed {seed:>2} node-h {_r(node_h[-1])}x, $ {_r(usd[-1])}x "
            f"(${c['billed_cost_usd']:,.2f} vs stock ${b['billed_cost_usd']:,.2f}; warm reserve "
            f"{cand['log']['reserve_cpu_hours']:,.1f} CPU-h = ${cand['log']['reserve_usd']:,.2f}; "
            f"$ <= {BUDGET} x stock + reserve: {'meets' if ok else 'MISSES'})"
        )
    lines += _type_lines(by_seed)
    if usd:
        lines.append(
            f"  ALL     node-h max {_r(max(node_h))}x median {_r(statistics.median(node_h))}x; "
            f"$ max {_r(max(usd))}x median {_r(statistics.median(usd))}x; "
            f"budget met on {met}/{len(usd)} seeds"
        )
        lines += _summed_budget_lines([(c, b) for _, c, b in compared])
    return lines


def _summed_budget_lines(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> list[str]:
    """The budget over all seeds together, and per completed job where the strategies
    completed different numbers of jobs (a job stock ARC failed cost it nothing)."""
    cand = sum(c["results"]["billed_cost_usd"] for c, _ in pairs)
    ref = sum(b["results"]["billed_cost_usd"] for _, b in pairs)
    reserve = sum(c["log"]["reserve_usd"] for c, _ in pairs)
    done_c = sum(c["results"]["jobs_completed"] for c, _ in pairs)
    done_b = sum(b["results"]["jobs_completed"] for _, b in pairs)
    limit = BUDGET * ref + reserve
    verdict = "meets" if cand <= limit + 1e-9 else "MISSES"
    lines = [
        f"  ALL     summed over seeds: ${cand:,.2f} vs stock ${ref:,.2f}; warm reserve "
        f"${reserve:,.2f}; limit ${limit:,.2f}: {verdict}; jobs completed {done_c:,} vs {done_b:,}"
    ]
    if done_c != done_b and done_c and done_b:
        per_job = cand / done_c
        per_limit = BUDGET * ref / done_b + reserve / done_c
        verdict = "meets" if per_job <= per_limit + 1e-12 else "MISSES"
        lines.append(
            f"  ALL     per completed job: ${per_job:.4f} vs limit ${per_limit:.4f} "
            f"({BUDGET} x stock's ${ref / done_b:.4f} + reserve ${reserve / done_c:.4f}): {verdict}"
        )
    return lines


def _type_lines(by_seed: dict[int, dict[str, dict[str, Any]]]) -> list[str]:
    """Nodes launched per seed by instance type: dollars and node-hours can part ways."""
    lines = []
    for strategy in (BASELINE, CAPACITY_AWARE):
        runs = [r[strategy] for r in by_seed.values() if strategy in r and "log" in r[strategy]]
        if runs:
            mix = _sum([r["log"].get("launched_types", {}) for r in runs])
            shown = ", ".join(f"{t} {n / len(runs):.1f}" for t, n in sorted(mix.items()))
            lines.append(f"  nodes launched per seed by type, {strategy}: {shown or 'none'}")
    return lines


def _sum(counters: list[dict[str, int]]) -> Counter[str]:
    total: Counter[str] = Counter()
    for c in counters:
        total.update(c)
    return total


def pair_lines(runs: list[dict[str, Any]]) -> list[str]:
    """Capacity-aware pair breaks by cause (summed over seeds, and per seed), halves taken."""
    mine = [r for r in runs if r["strategy"] == CAPACITY_AWARE and "log" in r]
    if not mine:
        return []
    n = len(mine)
    pairs = sum(r["log"]["pairs"] for r in mine)
    breaks = _sum([r["log"]["pair_breaks"] for r in mine])
    lines = [
        f"  pairs created {pairs:,} ({pairs / n:,.1f} per seed), broken {sum(breaks.values()):,} "
        f"({sum(breaks.values()) / n:,.1f} per seed); broken by cause (all seeds, per seed):"
    ]
    lines += [
        f"    {count:>6,} {count / n:>8,.1f}  {cause}" for cause, count in breaks.most_common()
    ]
    mends = _sum([r["log"].get("pair_mends", {}) for r in mine])
    lines.append(
        f"  halves lost and mended (created again by the listener) {sum(mends.values()):,} "
        f"({sum(mends.values()) / n:,.1f} per seed), by how they were lost:"
    )
    lines += [
        f"    {count:>6,} {count / n:>8,.1f}  {cause}" for cause, count in mends.most_common()
    ]
    lines.append("  pair fates (all seeds):")
    fates = _sum([r["log"]["pair_fates"] for r in mine])
    lines += [f"    {count:>6,}  {fate}" for fate, count in fates.most_common()]
    lines.append("  placeholder halves taken or disrupted (events, all seeds), by strategy:")
    for strategy in sorted({r["strategy"] for r in runs if "log" in r}):
        taken = _sum([r["log"]["halves_taken"] for r in runs if r["strategy"] == strategy])
        if taken:
            shown = "; ".join(f"{cause} {count:,}" for cause, count in taken.most_common())
            lines.append(f"    {strategy}: {shown}")
    return lines


SUMMARY_HEADER = [
    "scenario",
    "seeds",
    "failed",
    "stuck",
    "over-adv slot-s",
    "k-th max",
    "fair p50 x",
    "T95 x",
    "node-h x",
    "$ x",
    "$/job done x",
    "done by hour",
    "$ budget met",
    "breaks/seed",
    "mends/seed",
]


def _never_ratio(cand: float, ref: float) -> str:
    """A ratio of two times that may be infinite (never reached): say so instead of 0 or nan."""
    if math.isinf(ref):
        return "both never" if math.isinf(cand) else "stock never"
    return _r(_ratio(cand, ref))


def _median_finite(values: list[float | None]) -> float:
    return statistics.median([math.inf if v is None else v for v in values]) if values else math.nan


def summary_row(
    scenario: Scenario, runs: list[dict[str, Any]], kth_max: str, done_by_hour: str = "-"
) -> list[str] | None:
    """One row: capacity-aware's safety, and its figures as ratios to stock ARC's;
    ``done_by_hour``: its worst whole hour of jobs completed against stock ARC's."""
    cand = [r for r in runs if r["strategy"] == CAPACITY_AWARE]
    ref = [r for r in runs if r["strategy"] == BASELINE]
    if not cand or not ref:
        return None
    res_c, res_b = [r["results"] for r in cand], [r["results"] for r in ref]

    def fair_p50(rs: list[dict[str, Any]]) -> float:
        waits = [math.inf if run is None else run - q for r in rs for q, run, _ in r["jobs"]]
        p50 = fair_summary(waits)["p50"]
        return math.inf if p50 is None else float(p50)

    def total(rs: list[dict[str, Any]], key: str) -> float:
        return float(sum(x[key] for x in rs))

    t95 = _never_ratio(
        _median_finite([x["time_to_95pct_running"] for x in res_c]),
        _median_finite([x["time_to_95pct_running"] for x in res_b]),
    )
    by_seed = {r["seed"]: r for r in ref}
    logged = [r for r in cand if "log" in r and r["seed"] in by_seed]
    met = sum(budget_met(r, by_seed[r["seed"]]) for r in logged)
    breaks = sum(sum(r["log"]["pair_breaks"].values()) for r in logged)
    mends = sum(sum(r["log"].get("pair_mends", {}).values()) for r in logged)
    per_job = _ratio(
        _ratio(total(res_c, "billed_cost_usd"), total(res_c, "jobs_completed")),
        _ratio(total(res_b, "billed_cost_usd"), total(res_b, "jobs_completed")),
    )
    return [
        scenario.name,
        str(len(cand)),
        f"{int(total(res_c, 'jobs_failed')):,}",
        f"{int(total(res_c, 'jobs_stuck')):,}",
        f"{total(res_c, 'over_advertised_slot_seconds'):,.1f}",
        kth_max,
        _r(_ratio(fair_p50(cand), fair_p50(ref))),
        t95,
        _r(_ratio(total(res_c, "billed_node_hours"), total(res_b, "billed_node_hours"))),
        _r(_ratio(total(res_c, "billed_cost_usd"), total(res_b, "billed_cost_usd"))),
        _r(per_job),
        done_by_hour,
        f"{met}/{len(logged)}" if logged else "-",
        f"{breaks / len(logged):,.1f}" if logged else "-",
        f"{mends / len(logged):,.1f}" if logged else "-",
    ]
