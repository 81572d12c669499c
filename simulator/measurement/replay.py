"""The checker's replay (:mod:`simulator.measurement.checker`): one strategy's events fed in
order, its figures recomputed by the definitions in the checker's module docstring.
Standard library only, plus the price table :mod:`simulator.measurement.prices`."""

from __future__ import annotations

import math
from typing import Any, TypeVar

from simulator.measurement.prices import hourly_price

T = TypeVar("T")


def pop_oldest(stacks: dict[str, list[T]], name: str) -> T | None:
    """Remove and return the oldest machine named ``name``. Node events carry no cluster, and
    two clusters may hold machines of the same name (static "system-0"): same-named machines
    stack in the order they appeared, and a removal closes the oldest."""
    stack = stacks.pop(name, None)
    if not stack:
        return None
    oldest = stack.pop(0)
    if stack:
        stacks[name] = stack
    return oldest


PLACEHOLDER = ("placeholder-runner", "placeholder-workflow")
RUNNER_SIDE = ("runner", "placeholder-runner")
WORKFLOW_SIDE = ("workflow", "placeholder-workflow")


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


class StrategyReplay:
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
        m = pop_oldest(self.machines, name)
        if m is None:
            return
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
