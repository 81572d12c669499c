"""Time ``tune`` on the shipped sample history, then check its recommendation.

    python bench/tune.py [--p95 60s] [--workers 2] [--seed 1] [--check-seed 2] [--out DIR]

1. ``arc-capacity-listener tune --history config/history/sample-day.json --scenario
   ice-failover --p95 ... --seeds SEED`` with the default 12-point grid (12 capacity-aware
   points + stock ARC + the static warm pool = 14 replays), timed end to end (wall clock).
2. The recommended ``capacityAware`` block is put back into the replay scenario and run
   again with another seed (``--check-seed``: jobs and latencies the sweep did not see); its
   fair p95 queue-to-start is compared with the target.

Prints the figures and the machine's load average (the machine may be shared); nothing is
asserted.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reconciler.settings_types import duration_seconds  # noqa: E402
from simulator.engine.world import World  # noqa: E402
from simulator.scenarios.scenario import load_scenario  # noqa: E402
from tuning.answer import block_dials  # noqa: E402
from tuning.cli import main as tune_main  # noqa: E402
from tuning.history import load_history  # noqa: E402
from tuning.replay import dial_settings, replayable, with_trace  # noqa: E402
from tuning.sweep import fair_percentiles  # noqa: E402

HISTORY = ROOT / "config" / "history" / "sample-day.json"


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--p95", default="60s")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--check-seed", type=int, default=2)
    p.add_argument("--out", default=str(ROOT / "out" / "bench-tune"))
    args = p.parse_args()
    out = Path(args.out)
    print(f"load average before: {os.getloadavg()}, cores: {os.cpu_count()}")
    argv = [
        "--history", str(HISTORY), "--scenario", "ice-failover", "--p95", args.p95,
        "--seeds", str(args.seed), "--workers", str(args.workers), "--out", str(out),
    ]  # fmt: skip
    started = time.perf_counter()
    cpu_before = _cpu_seconds()
    code = tune_main(argv)
    elapsed = time.perf_counter() - started
    cpu = _cpu_seconds() - cpu_before
    print(f"\ntune: exit {code}, {elapsed:.1f} s wall (target <= 180 s), {args.workers} workers")
    # On a shared machine the wall time depends on the other tenants; the CPU time does not.
    print(
        f"CPU time of this process and its workers: {cpu:.1f} s "
        f"(= {cpu / args.workers:.1f} s wall on {args.workers} otherwise idle cores)"
    )
    print(f"load average after: {os.getloadavg()}")
    if code != 0:
        print("no recommendation to check")
        return 0
    block = yaml.safe_load((out / "recommendation.yaml").read_text(encoding="utf-8"))
    base = load_scenario("ice-failover")
    # The recommendation holds the tuned dials only: set them over the scenario's own block.
    settings = dial_settings(
        base.strategies.capacity_aware,
        block_dials(block["capacityAware"]),
        where="recommendation.yaml",
    )
    jobs, _ = replayable(base, load_history(HISTORY))
    scenario = with_trace(base, out / "history-trace.csv", jobs)
    strategies = scenario.strategies.model_copy(update={"capacity_aware": settings})
    scenario = scenario.model_copy(update={"strategies": strategies})
    world = World(scenario, "capacity-aware", seed=args.check_seed)
    results = world.run(None)
    waits = [
        (j.running_at - j.queued_at) if j.running_at is not None else math.inf
        for j in world.service.jobs
    ]
    fair = fair_percentiles(waits)
    target = duration_seconds(args.p95)
    p95 = math.inf if fair["p95"] is None else fair["p95"]
    print(
        f"recommendation replayed with seed {args.check_seed}: fair p95 {p95} s "
        f"(target {target:g} s: {'met' if p95 <= target else 'NOT met'}), "
        f"failed {results['jobs_failed']}, idle CPU-h {results['idle_reserved_cpu_hours']}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
