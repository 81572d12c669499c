"""Replay a history under stock ARC, a static warm pool and every grid point, in parallel.

Each run is one :class:`~simulator.engine.world.World` (deterministic per seed, so the
same inputs give the same ``sweep.json``); runs are spread over worker processes with a
progress line on stderr. Stock ARC (``baseline``) and the static warm pool
(``overprovision``, the scenario's ``warm_slots``) run once per seed; every grid point runs the
``capacity-aware`` strategy once per seed.

Figures of one run (:func:`figures`): the fair queue-to-start percentiles (a job that failed
or never reached Running counts as infinitely late: ``None`` when a percentile lands on one),
failed / never started jobs, idle reserved CPU/GPU hours, node-hours and dollars (scaled to
dollars per day). A point's aggregate takes the worst seed for latency and the mean for cost.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import IO, Any

from reconciler.clock import SYSTEM_CLOCK, Clock
from simulator.engine.world import World
from simulator.scenarios.scenario import Scenario
from simulator.scenarios.strategies import BASELINE, CAPACITY_AWARE, OVERPROVISION
from simulator.workload.metrics import percentile
from tuning import karpenter
from tuning.grid import Point
from tuning.replay import apply_dials

DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class Run:
    """One replay: ``point`` is the grid point id, or the strategy name for the references."""

    point: str
    strategy: str
    seed: int
    dials: tuple[tuple[str, Any], ...] = ()


def plan(points: Sequence[Point], seeds: Sequence[int]) -> list[Run]:
    """Stock ARC and the static warm pool once per seed and per NodePool setting the grid
    tries (``karpenter.`` dials change their cost too: each capacity-aware point is compared
    with references on the same NodePools), then every point once per seed."""
    settings: list[tuple[tuple[str, Any], ...]] = []
    for p in points:
        pools = tuple((k, v) for k, v in p.dials if k.startswith(karpenter.PREFIX))
        if pools not in settings:
            settings.append(pools)
    runs = [
        Run(reference_id(name, pools), name, seed, pools)
        for pools in settings or [()]
        for name in (BASELINE, OVERPROVISION)
        for seed in seeds
    ]
    runs += [Run(p.id, CAPACITY_AWARE, seed, p.dials) for p in points for seed in seeds]
    return runs


def reference_id(strategy: str, pools: tuple[tuple[str, Any], ...]) -> str:
    """``baseline``, or ``baseline karpenter.consolidateAfter=5m`` on swept NodePools."""
    return " ".join([strategy, *(f"{k}={v}" for k, v in pools)])


def fair_percentiles(waits: Sequence[float]) -> dict[str, float | None]:
    """p50/p95/p99 over all jobs, ``inf`` for a job that never started (``None`` out)."""
    ordered = sorted(waits)
    out: dict[str, float | None] = {}
    for p in (50, 95, 99):
        value = percentile(ordered, p)
        out[f"p{p}"] = None if value is None or not math.isfinite(value) else round(value, 1)
    return out


def figures(results: dict[str, Any], waits: Sequence[float], duration: float) -> dict[str, Any]:
    """The figures a sweep compares (see module doc)."""
    per_day = DAY / duration
    dollars = results.get("billed_cost_usd", results.get("node_cost_usd", 0.0))
    return {
        "jobs": results["jobs_total"],
        "completed": results["jobs_completed"],
        "failed": results["jobs_failed"],
        "never_started": sum(1 for w in waits if math.isinf(w)),
        "queue_to_start_fair_seconds": fair_percentiles(waits),
        "idle_reserved_cpu_hours": results["idle_reserved_cpu_hours"],
        "idle_reserved_gpu_hours": results["idle_reserved_gpu_hours"],
        "node_hours": results.get("node_hours"),
        "dollars": dollars,
        "dollars_per_day": round(dollars * per_day, 2),
        "idle_reserved_cpu_hours_per_day": round(results["idle_reserved_cpu_hours"] * per_day, 2),
    }


def run_one(scenario: Scenario, run: Run) -> dict[str, Any]:
    """One replay in this process (the worker body)."""
    world_scenario = apply_dials(scenario, dict(run.dials), where=f"point {run.point}")
    world = World(world_scenario, run.strategy, seed=run.seed, keep_log=False)
    results = world.run(None)
    waits = [
        (j.running_at - j.queued_at) if j.running_at is not None else math.inf
        for j in world.service.jobs
    ]
    return {
        "point": run.point,
        "strategy": run.strategy,
        "seed": run.seed,
        "dials": dict(run.dials),
        "figures": figures(results, waits, world_scenario.duration),
    }


_SCENARIO: Scenario | None = None


def _init(scenario: Scenario) -> None:
    global _SCENARIO
    _SCENARIO = scenario


def _work(run: Run) -> dict[str, Any]:
    if _SCENARIO is None:
        raise RuntimeError("sweep worker used before its initializer ran")
    return run_one(_SCENARIO, run)


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


def sweep(
    scenario: Scenario,
    runs: Sequence[Run],
    *,
    workers: int | None = None,
    progress: Callable[[float], None] | None = None,
) -> list[dict[str, Any]]:
    """Every run's record, in plan order whatever order the workers finish in."""
    count = workers or default_workers()
    records: dict[int, dict[str, Any]] = {}
    if count == 1:
        _init(scenario)
        for i, run in enumerate(runs):
            records[i] = _work(run)
            if progress:
                progress(len(records) / len(runs))
    else:
        with multiprocessing.get_context("fork").Pool(
            count, initializer=_init, initargs=(scenario,), maxtasksperchild=4
        ) as pool:
            results = pool.imap_unordered(_indexed, longest_first(runs))
            for i, record in results:
                records[i] = record
                if progress:
                    progress(len(records) / len(runs))
    return [records[i] for i in range(len(runs))]


#: Relative cost of one replay by strategy (the capacity-aware listener builds a snapshot on
#: every step; stock ARC and the static pool simulate the same world without it).
COST = {CAPACITY_AWARE: 3, OVERPROVISION: 1, BASELINE: 1}


def longest_first(runs: Sequence[Run]) -> list[tuple[int, Run]]:
    """``(plan index, run)`` with the costliest runs first, so the last run a worker picks up
    is a short one and the workers finish together (stable: plan order within a cost)."""
    return sorted(enumerate(runs), key=lambda item: -COST.get(item[1].strategy, 1))


def _indexed(item: tuple[int, Run]) -> tuple[int, dict[str, Any]]:
    return item[0], _work(item[1])


def aggregate(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per point: worst seed's p95 (``None`` = infinite), mean cost over seeds."""
    by_point: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_point.setdefault(record["point"], []).append(record)
    rows = []
    for point, group in by_point.items():
        figs = [r["figures"] for r in group]
        p95s = [f["queue_to_start_fair_seconds"]["p95"] for f in figs]
        rows.append(
            {
                "point": point,
                "strategy": group[0]["strategy"],
                "dials": group[0]["dials"],
                "seeds": [r["seed"] for r in group],
                "p95_worst_seconds": None if None in p95s else max(p95s),
                "failed_total": sum(f["failed"] for f in figs),
                "never_started_total": sum(f["never_started"] for f in figs),
                "dollars_per_day_mean": _mean(f["dollars_per_day"] for f in figs),
                "idle_cpu_hours_per_day_mean": _mean(
                    f["idle_reserved_cpu_hours_per_day"] for f in figs
                ),
            }
        )
    return rows


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return round(sum(items) / len(items), 2)


def progress_bar(total: int, stream: IO[str] | None = None) -> Callable[[float], None]:
    """Runs done / total with the time left, on stderr (see :class:`RunProgress`)."""
    return RunProgress(total, stream or sys.stderr)


def _clock_text(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"


class RunProgress:
    """``tune: 3/14 runs done, 1m 05s elapsed, about 4m 10s left``.

    The time left is the mean time per finished run times the runs left (runs go costliest
    first, so early estimates run high). On a terminal one line is rewritten after every run;
    elsewhere (a CI log) a line is printed after every run, or every twentieth of the sweep
    when it is longer than 40 runs.
    """

    def __init__(
        self,
        total: int,
        stream: IO[str],
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.total = total
        self.stream = stream
        self.clock = clock
        self.started = clock.monotonic()
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.every = 1 if total <= 40 else max(1, total // 20)
        self.done = 0

    def line(self, done: int) -> str:
        elapsed = self.clock.monotonic() - self.started
        text = f"tune: {done}/{self.total} runs done, {_clock_text(elapsed)} elapsed"
        if 0 < done < self.total:
            text += f", about {_clock_text(elapsed / done * (self.total - done))} left"
        return text

    def __call__(self, fraction: float) -> None:
        done = round(fraction * self.total)
        if done == self.done:
            return
        self.done = done
        if self.tty:
            end = "\n" if done >= self.total else ""
            self.stream.write(f"\r{self.line(done):<72}{end}")
        elif done % self.every == 0 or done >= self.total:
            self.stream.write(self.line(done) + "\n")
        self.stream.flush()


class Stopwatch:
    """Wall time for the user only (never written to sweep.json)."""

    def __init__(self) -> None:
        self.started = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started
