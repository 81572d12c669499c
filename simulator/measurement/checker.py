"""Independent checker: recompute the outcomes of a simulation from its event log alone.

It reads ``events.jsonl`` (nothing else: no simulator code is imported, only the standard
library and its replay, :mod:`simulator.measurement.replay`) and recomputes, per strategy, the
figures the simulator accounted for itself, then compares them with ``results.json``.
Definitions (the same words as the simulator's, written again here from the log's point of
view):

- jobs: ``job_queued`` / ``job_completed`` / ``job_failed`` counts. A job is **stuck** when
  it has a ``job_assigned`` at ``a`` and no ``job_started`` at or before ``a + stuck_after``,
  and ``a + stuck_after`` is not after the run's end (``run_started`` gives ``stuck_after``,
  ``run_ended`` the end).
- **queue-to-start** percentiles: ``job_running.t - job_queued.t`` (linear interpolation).
- **over-advertised slot-seconds** (realized): for every failed or stuck job, the time from
  its ``job_assigned`` to its ``job_failed`` (failed jobs), else to its ``job_started`` or the
  end of the run (stuck jobs).
- **unconfirmed advertised slot-seconds**: per scale set, the integral of
  ``max(0, A - min(R, W))`` where ``A`` is the latest ``capacity_advertised`` value and
  ``R`` / ``W`` count the runner-side / workflow-side pods of the scale set (``pod_created``
  gives each pod's role and scale set) between their ``pod_bound`` and the first of
  ``pod_disrupted``, ``pod_ended``, ``pod_deleted``.
- **idle reserved CPU/GPU hours**: placeholder pods' cpu/gpu (from ``pod_created``) from
  ``pod_bound`` to ``pod_ended`` or ``pod_deleted`` (or the end).
- **nodes launched**: ``nodeclaim_launched`` events; **placeholder pods created**:
  ``pod_created`` with a placeholder role.

Fair figures (issue 13):

- **fair queue-to-start**: every ``job_queued`` job; ``job_running.t - job_queued.t`` for a job
  that reached Running and has no ``job_failed``, else infinity. Percentiles interpolate
  linearly; one touching infinity is infinite, reported ``None`` (``null`` in results.json).
- **jobs never started**: jobs without ``job_running``.
- **time to 50% / 95% running**: the ``ceil(0.5 N)``-th / ``ceil(0.95 N)``-th smallest
  ``job_running.t`` over jobs without ``job_failed`` (``N`` = all jobs); ``None`` if fewer ran.
- **over-advertised episodes**: per scale set, maximal stretches of positive
  ``A - min(R, W)`` (zero-length ones dropped, an open one closed at ``run_ended``): count,
  p50, p99, max.
- **billed node-hours / dollars**: a NodeClaim with ``nodeclaim_launched`` is billed from its
  ``nodeclaim_created`` (or, in logs without it, from ``nodeclaim_launched``) to its
  ``node_removed`` (or the end); a static node (``node_added`` with ``static``) from that event
  to its ``node_removed``. Prices: :mod:`simulator.measurement.prices` (a stdlib-only data table,
  the one module of the project this checker reads).

Usage: ``python -m simulator.measurement.checker EVENTS.jsonl [RESULTS.json]``; exit code 1
when a figure disagrees.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from simulator.measurement.replay import LogError, StrategyReplay

#: Allowed difference per figure: counts must match; figures rounded to 0.1 (or 0.01) may
#: differ by one rounding step plus float summation order.
TOLERANCE = {
    "jobs_total": 0,
    "jobs_completed": 0,
    "jobs_failed": 0,
    "jobs_stuck": 0,
    "nodes_launched": 0,
    "placeholder_pods_created": 0,
    "over_advertised_slot_seconds": 0.15,
    "unconfirmed_advertised_slot_seconds": 0.15,
    "idle_reserved_cpu_hours": 0.015,
    "idle_reserved_gpu_hours": 0.015,
    "queue_to_start_seconds.p50": 0.15,
    "queue_to_start_seconds.p95": 0.15,
    "queue_to_start_seconds.p99": 0.15,
    "queue_to_start_fair_seconds.p50": 0.15,
    "queue_to_start_fair_seconds.p95": 0.15,
    "queue_to_start_fair_seconds.p99": 0.15,
    "jobs_never_started": 0,
    "time_to_50pct_running": 0.15,
    "time_to_95pct_running": 0.15,
    "over_advertised_episodes.count": 0,
    "over_advertised_episodes.p50": 0.0015,
    "over_advertised_episodes.p99": 0.0015,
    "over_advertised_episodes.max": 0.0015,
    "billed_node_hours": 0.015,
    "billed_cost_usd": 0.015,
}


def recompute(lines: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Figures per strategy, from JSON lines."""
    replays: dict[str, StrategyReplay] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LogError(f"line {number}: not JSON ({exc.msg})") from None
        replays.setdefault(event["strategy"], StrategyReplay()).feed(event)
    return {name: replay.figures() for name, replay in replays.items()}


def _flatten(figures: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in figures.items():
        if isinstance(value, dict):
            for sub, v in value.items():
                out[f"{key}.{sub}"] = v
        else:
            out[key] = value
    return out


def compare(recomputed: dict[str, dict[str, Any]], results: dict[str, Any]) -> list[str]:
    """Disagreements, one line each (empty when everything agrees)."""
    problems = []
    reported = results.get("strategies", {})
    for strategy in sorted(set(recomputed) | set(reported)):
        if strategy not in recomputed or strategy not in reported:
            problems.append(f"{strategy}: present in only one of the log and results.json")
            continue
        mine = _flatten(recomputed[strategy])
        theirs = _flatten(reported[strategy])
        for key, tolerance in TOLERANCE.items():
            a, b = mine.get(key), theirs.get(key)
            if a is None or b is None:
                if a is not b:
                    problems.append(f"{strategy}: {key}: log says {a}, results.json says {b}")
                continue
            if abs(a - b) > tolerance:
                problems.append(f"{strategy}: {key}: log says {a:.3f}, results.json says {b}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or len(args) > 2:
        sys.stderr.write(
            "usage: python -m simulator.measurement.checker EVENTS.jsonl [RESULTS.json]\n"
        )
        return 2
    events = Path(args[0])
    results_path = Path(args[1]) if len(args) == 2 else events.with_name("results.json")
    try:
        with events.open(encoding="utf-8") as handle:
            recomputed = recompute(handle)
        results = json.loads(results_path.read_text(encoding="utf-8"))
    except (OSError, LogError, json.JSONDecodeError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    problems = compare(recomputed, results)
    for strategy, figures in recomputed.items():
        flat = _flatten(figures)
        shown = ", ".join(
            f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in flat.items()
        )
        print(f"{strategy}: {shown}")
    if problems:
        print("MISMATCH:\n  " + "\n  ".join(problems))
        return 1
    print(f"OK: the event log agrees with {results_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
