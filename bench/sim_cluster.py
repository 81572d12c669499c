"""Benchmark of the simulated cluster alone: a synthetic 24 h day of CI jobs.

A tiny stand-in for the workload half drives the cluster through the store only: jobs arrive
in bursts following a day curve; each job creates a runner pod (class arc-runner), and once it
runs, a workflow pod (arc-workflow, 10 % with a GPU) a few seconds later; when the job's
duration is over both end (``finish_pod``) and are deleted, like ARC does. A warm pool of
placeholder pairs (arc-placeholder-runner / -workflow, grace 0) is kept at a target size by
hour and recreated when preempted, like the capacity-aware strategy. Karpenter launches and
consolidates nodes (default spec, consolidateAfter 5 min), with an ICE window on g5.xlarge.

Prints wall time, loop steps, events per second and the cluster's figures.

    .venv/bin/python bench/sim_cluster.py [--jobs 6000] [--seed 7] [--log out.jsonl]
"""

from __future__ import annotations

import argparse
import cProfile
import math
import pstats
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from providers.kubernetes.pods.labels import (
    COMPONENT_PLACEHOLDER,
    DEFAULT_PRIORITY_CLASSES,
    LABEL_COMPONENT,
)
from simulator.cluster import Cluster, ClusterSpec, IceWindow, NodePoolSpec
from simulator.engine.eventlog import EventLog
from simulator.engine.loop import EventLoop
from simulator.engine.store import Obj, ObjectStore

NS = "arc-runners"
CLASS = {role: name for role, (name, _v) in DEFAULT_PRIORITY_CLASSES.items()}
DAY = 86_400.0


def make_pod(
    name: str, cls: str, cpu: str, memory: str, *, gpu: int = 0, placeholder: bool = False
) -> Obj:
    requests: dict[str, str] = {"cpu": cpu, "memory": memory}
    tolerations: list[dict[str, str]] = []
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
        tolerations.append({"key": "nvidia.com/gpu", "operator": "Exists"})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {LABEL_COMPONENT: COMPONENT_PLACEHOLDER} if placeholder else {},
        },
        "spec": {
            "priorityClassName": cls,
            "terminationGracePeriodSeconds": 0 if placeholder else 30,
            "restartPolicy": "Never",
            "tolerations": tolerations,
            "containers": [
                {
                    "name": "main",
                    "image": "x",
                    "resources": {"requests": requests, "limits": dict(requests)},
                }
            ],
        },
    }


class Workload:
    """Jobs and a placeholder warm pool, reacting to pod changes on the loop (never inline)."""

    def __init__(
        self, loop: EventLoop, store: ObjectStore, cluster: Cluster, rng: random.Random, jobs: int
    ) -> None:
        self.loop, self.store, self.cluster, self.rng = loop, store, cluster, rng
        self.jobs = jobs
        self.seq = 0
        self.waiting_workflow: dict[str, dict[str, Any]] = {}  # runner -> job
        self.job_of_workflow: dict[str, dict[str, Any]] = {}
        self.placeholders: dict[str, str] = {}  # name -> role
        self.started = 0
        self.completed = 0
        store.subscribe(self.on_pod, ["Pod"])

    def schedule_day(self) -> None:
        # A day curve (quiet night, busy office hours) in bursts of 1-40 jobs.
        t = 0.0
        made = 0
        weights = [0.2 + math.sin(math.pi * h / 24) ** 4 * 3 for h in range(24)]
        mean_per_hour = self.jobs / sum(weights)
        hour_rate = [w * mean_per_hour for w in weights]
        while made < self.jobs and t < DAY:
            rate = hour_rate[int(t // 3600)]
            burst = min(self.rng.randint(1, 40), self.jobs - made)
            t += self.rng.expovariate(rate / 3600 / 20.5)
            if t >= DAY:
                break
            self.loop.call_at(self.loop.start + t, self.arrive, burst)
            made += burst
        for h in range(24):
            target = max(2, int(hour_rate[h] / 60))
            self.loop.call_at(self.loop.start + h * 3600, self.set_pool, target)

    def name(self, prefix: str) -> str:
        self.seq += 1
        return f"{prefix}-{self.seq}"

    def arrive(self, n: int) -> None:
        for _ in range(n):
            gpu = 1 if self.rng.random() < 0.1 else 0
            job = {"gpu": gpu, "duration": self.rng.uniform(120, 1200)}
            runner = self.name("runner")
            self.waiting_workflow[runner] = job
            self.store.create(make_pod(runner, CLASS["runner"], "1", "2Gi"))

    def set_pool(self, target: int) -> None:
        self.target = target
        self.top_up()

    def top_up(self) -> None:
        pairs = sum(1 for r in self.placeholders.values() if r == "r")
        for _ in range(max(0, self.target - pairs)):
            n = self.name("ph")
            self.placeholders[n + "-r"] = "r"
            self.placeholders[n + "-w"] = "w"
            self.store.create(
                make_pod(n + "-r", CLASS["runnerPlaceholder"], "1", "2Gi", placeholder=True)
            )
            self.store.create(
                make_pod(n + "-w", CLASS["workflowPlaceholder"], "2", "4Gi", placeholder=True)
            )

    def on_pod(self, event: str, obj: Obj) -> None:
        name = obj["metadata"]["name"]
        if event == "DELETED":
            if self.placeholders.pop(name, None) is not None:
                partner = name[:-1] + ("w" if name.endswith("r") else "r")
                if partner in self.placeholders:
                    self.placeholders.pop(partner)
                    self.loop.call_soon(self._delete, partner)
                self.loop.call_soon(self.top_up)
            return
        if obj.get("status", {}).get("phase") != "Running" or obj["metadata"].get(
            "deletionTimestamp"
        ):
            return
        job = self.waiting_workflow.pop(name, None)
        if job is not None:  # runner up: it claims the job and makes the workflow pod
            self.started += 1
            self.loop.call_later(self.rng.uniform(3, 10), self.make_workflow, name, job)
            return
        job = self.job_of_workflow.pop(name, None)
        if job is not None:
            self.loop.call_later(job["duration"], self.finish, job["runner"], name)

    def make_workflow(self, runner: str, job: dict[str, Any]) -> None:
        if self.store.find("Pod", NS, runner) is None:
            return
        wf = runner + "-workflow"
        job["runner"] = runner
        self.job_of_workflow[wf] = job
        self.store.create(make_pod(wf, CLASS["workflow"], "2", "4Gi", gpu=job["gpu"]))

    def finish(self, runner: str, workflow: str) -> None:
        self.completed += 1
        for pod in (workflow, runner):
            self.cluster.finish_pod(NS, pod)
            self._delete(pod)

    def _delete(self, name: str) -> None:
        if self.store.find("Pod", NS, name) is not None:
            self.store.delete("Pod", NS, name)


def profile_shares(profiler: cProfile.Profile) -> dict[str, float]:
    """Own (exclusive) time per code area: the cluster, the store, the event log, the rest."""
    shares: dict[str, float] = {}
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    for (filename, _line, _func), (_cc, _nc, tottime, _ct, _callers) in stats.items():
        if "simulated/cluster/" in filename:
            area = "cluster"
        elif filename.endswith("simulated/store.py"):
            area = "store"
        elif filename.endswith("eventlog.py") or "json" in filename:
            area = "eventlog"
        elif filename.endswith("sim_cluster.py"):
            area = "toy workload"
        else:
            area = "other (engine, stdlib)"
        shares[area] = shares.get(area, 0.0) + tottime
    return shares


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=6000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--log", type=Path, default=None, help="write the event log (JSON lines)")
    ap.add_argument("--profile", action="store_true", help="split own time by code area")
    args = ap.parse_args()

    base = ClusterSpec.default()
    pools = tuple(
        NodePoolSpec(
            **{**p.model_dump(), "limits": {"cpu": 2000, "memory": "8000Gi", "nvidia.com/gpu": 64}}
        )
        for p in base.nodepools
    )
    spec = base.model_copy(
        update={
            "nodepools": pools,
            "ice_windows": (IceWindow(instance_type="g5.xlarge", start=8 * 3600, end=11 * 3600),),
        }
    )
    loop = EventLoop()
    store = ObjectStore(loop.now)
    log = EventLog("bench", loop, loop.start)
    rng = random.Random(args.seed)
    cluster = Cluster(loop, store, spec, rng=rng, log=log)
    cluster.start()
    workload = Workload(loop, store, cluster, random.Random(args.seed + 1), args.jobs)
    workload.schedule_day()

    t0, c0 = time.perf_counter(), time.process_time()
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(loop.run_until, loop.start + DAY)
    else:
        loop.run_until(loop.start + DAY)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    stats = cluster.stats()
    pods_created = store.writes["create"] - store.count("Event") - stats.nodeclaims_created
    print(
        f"simulated day: jobs={args.jobs} started={workload.started} "
        f"completed={workload.completed} seed={args.seed}"
    )
    print(
        f"wall={wall:.2f}s cpu={cpu:.2f}s (cluster + store + log + toy workload)  "
        f"loop steps={loop.steps} "
        f"steps/s={loop.steps / wall:,.0f}  log events={len(log)} "
        f"events/s={len(log) / wall:,.0f}"
    )
    print(f"store writes={dict(store.writes)}  ~objects created={pods_created}")
    print(
        f"nodes_launched={stats.nodes_launched} nodeclaims_failed={stats.nodeclaims_failed} "
        f"consolidated={stats.nodes_consolidated} passes={stats.scheduling_passes} "
        f"bindings={stats.bindings} preemptions={stats.preemptions} "
        f"victims={stats.preemption_victims} batches={stats.provisioning_batches}"
    )
    requested = {k: round(v / 3600, 1) for k, v in stats.requested_cpu_core_seconds.items()}
    print(
        f"node_hours={stats.node_seconds / 3600:.1f} "
        f"cpu_core_hours={stats.cpu_core_seconds / 3600:.1f} requested={requested} "
        f"gpu_hours={stats.gpu_seconds / 3600:.1f} cost=${stats.cost:.2f}"
    )
    print(f"log counts: {dict(sorted(log.counts.items()))}")
    if args.profile:
        shares = profile_shares(profiler)
        total = sum(shares.values())
        print(
            "own time by area (profiled, so slower): "
            + ", ".join(
                f"{k} {v:.2f}s ({v / total:.0%})"
                for k, v in sorted(shares.items(), key=lambda kv: -kv[1])
            )
        )
    if args.log:
        with args.log.open("w") as out:
            log.write(out)


if __name__ == "__main__":
    main()
