"""Benchmark: two listener processes for one scale set (a rollout, a stuck old pod).

The real ``python -m listener run`` processes run against the live simulated world (its
Kubernetes, Actions and HUD faces on loopback, real time) while jobs flow for ``--minutes``.
Run 1: one listener. Run 2: the same world and jobs with two listeners for the same scale
set, the second started ``--second-after`` seconds after the first (the newcomer of a rolling
update, or a stuck pod), both running to the end. Each listener talks to its own Kubernetes
face over the one object store, so the writes of each process are counted apart.

Figures (issue 10's Must show):
- placeholder creations in run 2 / run 1 (target <= 1.2);
- placeholder pods deleted by a listener that is not the Lease owner (target 0);
- assignment wait (job queued -> assigned by GitHub) p90, run 2 / run 1 (target <= 1.2).

Run: ``.venv/bin/python bench/rollout.py [--minutes 5] [--second-after 15]``
(about twice ``--minutes`` of wall time; the machine should otherwise be quiet).
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from providers.kubernetes.pods.labels import LABEL_SCALE_SET
from simulator.faces.k8s import K8sFace
from simulator.faces.live_spec import LiveSpec
from simulator.faces.live_world import LiveWorld

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Figures:
    created: int = 0
    deleted_by_non_owner: int = 0
    created_by_non_owner: int = 0
    waits: list[float] = field(default_factory=list)
    jobs_total: int = 0
    jobs_finished: int = 0
    owners: list[str] = field(default_factory=list)

    @property
    def p90(self) -> float:
        return percentile(self.waits, 90)

    @property
    def p50(self) -> float:
        return percentile(self.waits, 50)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Process:
    """One listener pod: its own face over the shared store, config files, subprocess."""

    def __init__(self, world: LiveWorld, workdir: Path, name: str) -> None:
        self.name = name
        self.face = K8sFace(world.store, bookmark_interval=1.0).start()
        workdir.mkdir()
        self.port = port = free_port()
        kubeconfig = world.kubeconfig()
        kubeconfig["clusters"][0]["cluster"]["server"] = self.face.url
        (workdir / "kubeconfig.yaml").write_text(json.dumps(kubeconfig))
        (workdir / "config.json").write_text(json.dumps(world.listener_config(f"127.0.0.1:{port}")))
        env = world.listener_process_env(
            workdir / "kubeconfig.yaml", workdir / "config.json", world.capacity_aware()
        )
        self.log = (workdir / "listener.log").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "listener", "run"],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
        )

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = None
        self.log.close()
        self.face.stop()
        return code


def world_spec(minutes: float) -> LiveSpec:
    seconds = minutes * 60
    return LiveSpec(
        ice_start=seconds + 100,
        ice_end=seconds + 101,
        lose_nodes_at_ice_start=False,
        burst_at=10.0,
        burst_count=max(1, int((seconds - 40) / 2.5)),
        burst_over=max(1.0, seconds - 40),
        job_duration=6.0,
    )


def run(minutes: float, listeners: int, second_after: float, workdir: Path) -> Figures:
    figures = Figures()
    lock = threading.Lock()
    with LiveWorld(world_spec(minutes)) as world:
        scale_set = world.spec.scale_set

        def on_event(event_type: str, obj: dict[str, Any]) -> None:
            labels = (obj.get("metadata") or {}).get("labels") or {}
            if event_type == "ADDED" and labels.get(LABEL_SCALE_SET) == scale_set:
                with lock:
                    figures.created += 1

        world.store.subscribe(on_event, kinds=["Pod"])
        started = time.monotonic()
        processes = [Process(world, workdir / f"listener-{listeners}-0", "first")]
        if listeners > 1:
            time.sleep(second_after)
            processes.append(Process(world, workdir / f"listener-{listeners}-1", "second"))
        time.sleep(max(0.0, minutes * 60 - (time.monotonic() - started)))
        for process in processes:
            if owns_lease(process):
                figures.owners.append(process.name)
            else:
                figures.deleted_by_non_owner += process.face.calls.get("delete Pod", 0)
                figures.created_by_non_owner += process.face.calls.get("create Pod", 0)
        jobs = world.jobs()
        figures.jobs_total = len(jobs)
        figures.jobs_finished = sum(1 for j in jobs if j.finished_at is not None)
        figures.waits = [
            max(0.0, j.assigned_at - j.queued_at) for j in jobs if j.assigned_at is not None
        ]
        for process in processes:  # SIGTERM only after the figures: shutdown deletes are fine
            process.stop()
    return figures


def owns_lease(process: Process) -> bool:
    """The process's own ``arc_capacity_owner`` gauge (1 = it holds the Lease)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{process.port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return False
    return any(
        line.startswith("arc_capacity_owner{") and line.rstrip().endswith(" 1.0")
        for line in text.splitlines()
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--second-after", type=float, default=15.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rollout-bench-") as tmp:
        single = run(args.minutes, 1, args.second_after, Path(tmp))
        double = run(args.minutes, 2, args.second_after, Path(tmp))
    ratio_created = double.created / single.created if single.created else float("nan")
    ratio_p90 = double.p90 / single.p90 if single.p90 else float("nan")
    print(
        f"rollout bench: {args.minutes:g} min of jobs, second listener after "
        f"{args.second_after:g} s"
    )
    print(
        "| listeners | jobs finished | placeholder creations | deleted by non-owner | "
        "created by non-owner | assignment wait p50 s | p90 s |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n, f in ((1, single), (2, double)):
        print(
            f"| {n} | {f.jobs_finished}/{f.jobs_total} | {f.created} | "
            f"{f.deleted_by_non_owner} | {f.created_by_non_owner} | {f.p50:.1f} | "
            f"{f.p90:.1f} |"
        )
    print(f"Lease owner at the end: run 1 {single.owners}, run 2 {double.owners}")
    print(
        f"creations 2 vs 1: {ratio_created:.2f}x (target <= 1.2); "
        f"p90 wait 2 vs 1: {ratio_p90:.2f}x (target <= 1.2); "
        f"deletions by the non-owner: {double.deleted_by_non_owner} (target 0)"
    )
    ok = (
        ratio_created <= 1.2
        and ratio_p90 <= 1.2
        and double.deleted_by_non_owner == 0
        and len(double.owners) == 1
    )
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
