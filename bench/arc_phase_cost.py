"""Benchmark: what a listener that does not write the EphemeralRunner phase costs in ARC 0.15.

ARC 0.15 (PR #4646) stopped deriving ``phase: Running`` from the runner pod; the listener's
JobStarted patch writes it. A listener that sends the 0.14 patch (job fields, no phase) in a
0.15 world leaves every runner ``Pending`` for the controller. This runs each scenario twice
per seed and strategy in the simulated 0.15 world (scenario field ``arc.version: "0.15"``):
once with the listener writing the phase (``arc.listener_sets_phase: true``, what we ship)
and once without, and prints per scenario and strategy, summed over scale sets and seeds:

- ``failed``, ``stuck``: jobs (results.json's ``jobs_failed`` / ``jobs_stuck``);
- ``pending``, ``running``, ``busy-as-pending``: the mean over ERS reconciles of the runners
  the controller buckets as pending / running (what ``EphemeralRunnerSet.status``'s
  pending/running counts publish), and of the runners with a job counted as pending;
- scale-down walk: runners examined, skipped because their status names a job, refused by
  the Actions service because busy (JobStillRunning), removed;
- ``deferred``: scale-ups the 0.15 controller deferred until a newer patchID (#4642).

With ``--versions 0.13,0.14`` it instead runs the older worlds (the controller derives
``Running`` from the pod, no #4642 deferral; the listener learns the version from the
runners' chart-version label) and prints failed / stuck per scenario, strategy and version.

Run: ``.venv/bin/python bench/arc_phase_cost.py [--seeds 1] [--scenarios burst,drain]
[--versions 0.13,0.14]``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simulator.engine.world import World
from simulator.scenarios.scenario import Scenario, load_scenario, shipped
from simulator.scenarios.strategies import STRATEGIES

COUNTERS = ("examined", "skipped_with_job", "refused_busy", "removed")


def with_phase(scenario: Scenario, sets_phase: bool, version: str = "0.15") -> Scenario:
    arc = scenario.arc.model_copy(update={"version": version, "listener_sets_phase": sets_phase})
    return scenario.model_copy(update={"arc": arc})


def versions_table(paths: Sequence[Path], versions: Sequence[str], seeds: int) -> None:
    print(f"{'scenario':<16}{'strategy':<16}{'ARC':<6}{'failed':>7}{'stuck':>6}{'deferred':>9}")
    for path in paths:
        base = load_scenario(path)
        for strategy in STRATEGIES:
            for version in versions:
                rows = [
                    measure(with_phase(base, True, version), strategy, seed)
                    for seed in range(1, seeds + 1)
                ]
                print(
                    f"{base.name:<16}{strategy:<16}{version:<6}"
                    f"{sum(r['failed'] for r in rows):>7.0f}{sum(r['stuck'] for r in rows):>6.0f}"
                    f"{sum(r['deferred'] for r in rows):>9.0f}",
                    flush=True,
                )


def measure(scenario: Scenario, strategy: str, seed: int) -> dict[str, float]:
    world = World(scenario, strategy, seed=seed, keep_log=False)
    results = world.run()
    row: dict[str, float] = {
        "failed": results["jobs_failed"],
        "stuck": results["jobs_stuck"],
        "deferred": 0,
        "samples": 0,
        "pending": 0,
        "running": 0,
        "busy_pending": 0,
        **dict.fromkeys(COUNTERS, 0),
    }
    for handle in world.scale_sets.values():
        stats = handle.arc.stats
        row["deferred"] += handle.arc.deferred_scale_ups
        row["samples"] += stats.samples
        row["pending"] += stats.pending_sum
        row["running"] += stats.running_sum
        row["busy_pending"] += stats.busy_pending_sum
        for name in COUNTERS:
            row[name] += getattr(stats, name)
    return row


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--scenarios", default="", help="comma-separated names (default: all)")
    parser.add_argument("--versions", default="", help="e.g. 0.13,0.14: older worlds instead")
    args = parser.parse_args(argv)
    wanted = {s for s in args.scenarios.split(",") if s}
    paths = [p for p in shipped() if not wanted or p.stem in wanted]
    if args.versions:
        versions_table(paths, [v for v in args.versions.split(",") if v], args.seeds)
        return 0
    header = (
        f"{'scenario':<16}{'strategy':<16}{'phase':<7}{'failed':>7}{'stuck':>6}"
        f"{'pending':>9}{'running':>9}{'busy-as-pending':>16}{'examined':>9}"
        f"{'with-job':>9}{'refused':>8}{'removed':>8}{'deferred':>9}"
    )
    print(header)
    print("-" * len(header))
    for path in paths:
        base = load_scenario(path)
        for strategy in STRATEGIES:
            for sets_phase in (True, False):
                total: dict[str, float] = {}
                for seed in range(1, args.seeds + 1):
                    row = measure(with_phase(base, sets_phase), strategy, seed)
                    for key, value in row.items():
                        total[key] = total.get(key, 0) + value
                n = max(total["samples"], 1)
                print(
                    f"{base.name:<16}{strategy:<16}{'yes' if sets_phase else 'no':<7}"
                    f"{total['failed']:>7.0f}{total['stuck']:>6.0f}"
                    f"{total['pending'] / n:>9.2f}{total['running'] / n:>9.2f}"
                    f"{total['busy_pending'] / n:>16.2f}{total['examined']:>9.0f}"
                    f"{total['skipped_with_job']:>9.0f}{total['refused_busy']:>8.0f}"
                    f"{total['removed']:>8.0f}{total['deferred']:>9.0f}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
