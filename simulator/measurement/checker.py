"""Independent checker: recompute the outcomes of a simulation from its event log alone.

It reads ``events.jsonl`` (nothing else: no simulator code is imported, only the standard
library) and recomputes, per strategy, the figures the simulator accounted for itself, then
compares them with ``results.json``. Definitions (the same words as the simulator's, written
again here from the log's point of view):

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
import math
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from simulator.measurement.prices import hourly_price

PLACEHOLDER = ("placeholder-runner", "placeholder-workflow")
RUNNER_SIDE = ("runner", "placeholder-runner")
WORKFLOW_SIDE = ("workflow", "placeholder-workflow")

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


class LogError(ValueError):
    """The event log is unusable (bad JSON, missing run markers)."""


def _pct(values: list[float], p: float) -> float | None:
    """Linear interpolation; None when empty or when the result is infinite."""
    if not values:
        return None
    values = sorted(values)
    pos = (len(values) - 1) * p / 100.0
    lo = math.floor(pos)
    hi = lo + 1 if lo + 1 < len(values) else lo
    if math.isinf(values[lo]) or (pos > lo and math.isinf(values[hi])):
        return None
    if pos == lo:
        return values[lo]
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def _kth(values: list[float], total: int, fraction: float) -> float | None:
    k = max(1, math.ceil(fraction * total - 1e-9))
    if total <= 0 or len(values) < k:
        return None
    return sorted(values)[k - 1]


class _Strategy:
    """Replays one strategy's events."""

    def __init__(self) -> None:
        self.stuck_after: float | None = None
        self.end: float | None = None
        self.jobs: dict[int, dict[str, Any]] = {}
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.sets: dict[str, dict[str, float]] = {}
        self.cpu_s = 0.0
        self.gpu_s = 0.0
        self.launched = 0
        self.placeholders = 0
        self.episodes: list[float] = []
        self.machines: dict[str, list[dict[str, Any]]] = {}  # claim or static node name
        self.billed_s = 0.0
        self.billed_usd = 0.0

    def _set(self, name: str) -> dict[str, float]:
        s = self.sets.get(name)
        if s is None:
            s = self.sets[name] = {"A": 0, "R": 0, "W": 0, "last": 0.0, "area": 0.0, "open": -1.0}
        return s

    def _episode(self, s: dict[str, float], t: float) -> None:
        """The gap may have changed at ``t``: open or close an over-advertised episode."""
        gap = s["A"] - min(s["R"], s["W"])
        if gap > 0 and s["open"] < 0:
            s["open"] = t
        elif gap <= 0 and s["open"] >= 0:
            if t > s["open"]:
                self.episodes.append(t - s["open"])
            s["open"] = -1.0

    def _bill(self, name: str, t: float) -> None:
        # Node events carry no cluster, and two clusters may hold machines of the same name
        # (static "system-0"): same-named machines stack, a removal bills the oldest.
        stack = self.machines.pop(name, None)
        if not stack:
            return
        m = stack.pop(0)
        if stack:
            self.machines[name] = stack
        if m.get("type") is None:
            return  # never launched: not billed
        held = t - m["since"]
        self.billed_s += held
        self.billed_usd += held / 3600.0 * (hourly_price(m["type"]) or 0.0)

    def _open_machine(self, name: str, since: float, instance_type: str | None) -> None:
        self.machines.setdefault(name, []).append({"since": since, "type": instance_type})

    def _machine_event(self, kind: str, e: dict[str, Any], t: float) -> None:
        if kind == "nodeclaim_created":
            self._open_machine(e["nodeclaim"], t, None)
        elif kind == "nodeclaim_launched":
            self.launched += 1
            pending = [m for m in self.machines.get(e["nodeclaim"], ()) if m["type"] is None]
            if pending:
                pending[0]["type"] = e["instance_type"]
            else:  # older logs: no nodeclaim_created, bill from launch
                self._open_machine(e["nodeclaim"], t, e["instance_type"])
        elif kind == "nodeclaim_failed":
            stack = self.machines.get(e["nodeclaim"], [])
            pending = [m for m in stack if m["type"] is None]
            if pending:
                stack.remove(pending[0])
            if not stack:
                self.machines.pop(e["nodeclaim"], None)
        elif kind == "node_added" and e.get("static"):
            self._open_machine(e["node"], t, e["instance_type"])
        elif kind == "node_removed":
            self._bill(e.get("nodeclaim") or e["node"], t)

    def _advance(self, s: dict[str, float], t: float) -> None:
        gap = s["A"] - min(s["R"], s["W"])
        if gap > 0:
            s["area"] += (t - s["last"]) * gap
        s["last"] = t

    def _count(self, pod: dict[str, Any], delta: int, t: float) -> None:
        pod["counting"] = delta > 0
        name = pod.get("scale_set")
        if name is None:
            return
        s = self._set(name)
        self._advance(s, t)
        if pod["role"] in RUNNER_SIDE:
            s["R"] += delta
        elif pod["role"] in WORKFLOW_SIDE:
            s["W"] += delta
        self._episode(s, t)

    def _release(self, pod: dict[str, Any], t: float) -> None:
        if pod.get("bound") is not None and not pod.get("released"):
            pod["released"] = True
            if pod["role"] in PLACEHOLDER:
                self.cpu_s += (t - pod["bound"]) * pod["cpu"]
                self.gpu_s += (t - pod["bound"]) * pod["gpu"]

    def feed(self, e: dict[str, Any]) -> None:
        kind, t = e["type"], e["t"]
        if kind == "run_started":
            self.stuck_after = float(e["stuck_after"])
        elif kind == "run_ended":
            self.end = t
        elif kind == "job_queued":
            self.jobs[e["job"]] = {"queued": t}
        elif kind in ("job_assigned", "job_started", "job_running", "job_completed", "job_failed"):
            job = self.jobs.setdefault(e["job"], {})
            field = kind.removeprefix("job_")
            job.setdefault(field, t)
            if kind == "job_assigned":
                job["scale_set"] = e.get("scale_set")
        elif kind == "capacity_advertised":
            s = self._set(e["scale_set"])
            self._advance(s, t)
            s["A"] = e["value"]
            self._episode(s, t)
        elif kind == "pod_created":
            key = (e["namespace"], e["pod"])
            self.pods[key] = {
                "role": e["role"],
                "scale_set": e.get("scale_set"),
                "cpu": float(e["cpu"]),
                "gpu": float(e["gpu"]),
            }
            if e["role"] in PLACEHOLDER:
                self.placeholders += 1
        elif kind == "pod_bound":
            pod = self.pods.get((e["namespace"], e["pod"]))
            if pod is not None and pod.get("bound") is None:
                pod["bound"] = t
                self._count(pod, +1, t)
        elif kind in ("pod_disrupted", "pod_ended", "pod_deleted"):
            key = (e["namespace"], e["pod"])
            pod = self.pods.get(key)
            if pod is None:
                return
            if pod.get("counting"):
                self._count(pod, -1, t)
            if kind != "pod_disrupted":
                self._release(pod, t)
            if kind == "pod_deleted":
                del self.pods[key]
        elif kind.startswith(("nodeclaim_", "node_")):
            self._machine_event(kind, e, t)

    def figures(self) -> dict[str, Any]:
        if self.end is None or self.stuck_after is None:
            raise LogError("the log lacks run_started / run_ended for this strategy")
        end, limit = self.end, self.stuck_after
        for s in self.sets.values():
            self._advance(s, end)
            s["A"] = 0  # close any open episode at the end
            self._episode(s, end)
        for pod in self.pods.values():
            self._release(pod, end)
        for name in list(self.machines):
            while name in self.machines:
                self._bill(name, end)
        completed = failed = stuck = 0
        over = 0.0
        to_start = []
        fair: list[float] = []
        ran_at: list[float] = []
        for job in self.jobs.values():
            if "running" in job:
                to_start.append(job["running"] - job["queued"])
            if "running" in job and "failed" not in job:
                fair.append(job["running"] - job["queued"])
                ran_at.append(job["running"])
            else:
                fair.append(math.inf)
            completed += "completed" in job
            failed += "failed" in job
            a = job.get("assigned")
            if a is None:
                continue
            started = job.get("started")
            is_stuck = a + limit <= end and (started is None or started > a + limit)
            stuck += is_stuck
            if "failed" in job:
                over += job["failed"] - a
            elif is_stuck:
                over += (started if started is not None else end) - a
        return {
            "jobs_total": len(self.jobs),
            "jobs_completed": completed,
            "jobs_failed": failed,
            "jobs_stuck": stuck,
            "queue_to_start_seconds": {f"p{p}": _pct(to_start, p) for p in (50, 95, 99)},
            "over_advertised_slot_seconds": over,
            "unconfirmed_advertised_slot_seconds": sum(s["area"] for s in self.sets.values()),
            "idle_reserved_cpu_hours": self.cpu_s / 3600.0,
            "idle_reserved_gpu_hours": self.gpu_s / 3600.0,
            "nodes_launched": self.launched,
            "placeholder_pods_created": self.placeholders,
            "queue_to_start_fair_seconds": {f"p{p}": _pct(fair, p) for p in (50, 95, 99)},
            "jobs_never_started": sum("running" not in job for job in self.jobs.values()),
            "time_to_50pct_running": _kth(ran_at, len(self.jobs), 0.5),
            "time_to_95pct_running": _kth(ran_at, len(self.jobs), 0.95),
            "over_advertised_episodes": {
                "count": len(self.episodes),
                "p50": _pct(self.episodes, 50),
                "p99": _pct(self.episodes, 99),
                "max": max(self.episodes) if self.episodes else None,
            },
            "billed_node_hours": self.billed_s / 3600.0,
            "billed_cost_usd": self.billed_usd,
        }


def recompute(lines: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Figures per strategy, from JSON lines."""
    replays: dict[str, _Strategy] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LogError(f"line {number}: not JSON ({exc.msg})") from None
        replays.setdefault(event["strategy"], _Strategy()).feed(event)
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
