"""Listener footprint: RSS and CPU of the real listener process, for its requests and limits.

Starts ``python -m listener run`` (the same entry point as the image) against the live
simulated world (simulator/faces/live.py) and samples the process's own counters once a
second from /proc (utime+stime for CPU, VmRSS for memory, VmHWM for the peak), so the
world's CPU, which runs in this process, is not counted. Three phases, each its own world:

1. ``idle``: two warm pairs, no job, the Actions long poll held 50 s as GitHub does, the
   default ``recalculateInterval`` (30 s); measured after the pairs are advertised.
2. ``storm``: 200 jobs queued over 20 s on a scale set of maxRunners 40 (Karpenter launches
   about 12 nodes), with the end-to-end test's fast timers (reconcile every 2 s, watch
   debounce 0.5 s, long poll 2 s): an upper bound; measured from the burst until every job
   finished.
3. ``big``: the idle listener in a namespace that also holds another scale set's 10 000 pods
   (3 000 runner and 3 000 workflow pods, which the listener's label-selected watches
   cache, and 4 000 placeholders, which they do not) on 500 static nodes (cached), with 20
   runner-pod updates a second; measured after the caches synced.

Prints one row per phase: wall seconds measured, mean and peak (5 s window) CPU in
millicores, RSS at the end and the peak RSS (VmHWM, including start-up) in MiB.

    .venv/bin/python bench/listener_footprint.py                    # all three, ~5 min
    .venv/bin/python bench/listener_footprint.py --phase idle --seconds 20

Figures, not assertions. The listener runs from the source tree on this machine's Python;
the image runs the same code and lock on Debian's or python:slim's 3.11.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.k8s_cache import pod as arc_pod  # noqa: E402
from providers.kubernetes.pods import labels as L  # noqa: E402
from simulator.faces.live_spec import LiveSpec  # noqa: E402
from simulator.faces.live_world import LiveWorld  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
PAGE_WINDOW = 5  # samples (seconds) per peak-CPU window
OTHER = "big-runners"  # the other scale set of the "big" phase
STATIC_TAINT = {"key": "bench/static", "value": "true", "effect": "NoSchedule"}


@dataclass(frozen=True)
class Sample:
    at: float  # monotonic seconds
    cpu: float  # process CPU seconds so far (user + system)
    rss: int  # bytes
    hwm: int  # bytes


def sample(pid: int) -> Sample:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
    status = Path(f"/proc/{pid}/status").read_text()
    kib = {
        line.split(":")[0]: int(line.split()[1])
        for line in status.splitlines()
        if line.startswith(("VmRSS", "VmHWM"))
    }
    return Sample(time.monotonic(), cpu, kib["VmRSS"] * 1024, kib["VmHWM"] * 1024)


@dataclass(frozen=True)
class Row:
    phase: str
    seconds: float
    cpu_mean_m: float
    cpu_peak_m: float
    rss_mib: float
    hwm_mib: float
    note: str


def summarise(phase: str, samples: list[Sample], note: str) -> Row:
    first, last = samples[0], samples[-1]
    seconds = last.at - first.at
    peak = max(
        (
            (b.cpu - a.cpu) / (b.at - a.at)
            for a, b in zip(samples, samples[PAGE_WINDOW:], strict=False)
        ),
        default=0.0,
    )
    return Row(
        phase,
        seconds,
        1000 * (last.cpu - first.cpu) / seconds,
        1000 * peak,
        last.rss / 2**20,
        last.hwm / 2**20,
        note,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Listener:
    """``python -m listener run`` against ``world``, output to a file in ``workdir``."""

    def __init__(self, world: LiveWorld, workdir: Path, block: dict[str, Any]) -> None:
        port = free_port()
        kubeconfig, config = workdir / "kubeconfig.yaml", workdir / "listener.json"
        kubeconfig.write_text(json.dumps(world.kubeconfig()))
        config.write_text(json.dumps(world.listener_config(f"127.0.0.1:{port}")))
        env = world.listener_process_env(kubeconfig, config, block)
        self.log_path = workdir / "listener.log"
        self.log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "listener", "run"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
        )

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> int | None:
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = None
        self.log.close()
        return code


def measure(
    listener: Listener, seconds: float, until: Callable[[], bool] = lambda: False
) -> list[Sample]:
    """One sample a second for ``seconds`` (or until ``until()``), bounded."""
    samples = [sample(listener.proc.pid)]
    for _ in range(int(seconds)):
        time.sleep(1.0)
        if not listener.alive():
            raise SystemExit(f"listener exited ({listener.proc.returncode}):\n{listener.tail()}")
        samples.append(sample(listener.proc.pid))
        if until():
            break
    return samples


def warm(world: LiveWorld, listener: Listener, pairs: int, timeout: float = 120.0) -> None:
    ok = world.actions.wait_until(
        lambda face: pairs in face.capacity_history or not listener.alive(), timeout=timeout
    )
    if not ok or not listener.alive():
        raise SystemExit(
            f"the listener did not advertise {pairs} within {timeout:.0f} s:\n{listener.tail()}"
        )


def production_block(world: LiveWorld) -> dict[str, Any]:
    """The capacityAware block with the shipped defaults (only what the world requires)."""
    return {
        "enabled": True,
        "proactiveCapacity": 2,
        "workflowResources": dict(world.spec.workflow_requests),
        "hud": {"url": world.hud.url, "tokenEnv": "HUD_INTERNAL_BOT_TOKEN"},
    }


QUIET = dict(ice_start=3000.0, ice_end=3001.0, lose_nodes_at_ice_start=False, burst_count=0)


def phase_idle(workdir: Path, seconds: float) -> Row:
    with LiveWorld(LiveSpec(**QUIET, poll_window=50.0)) as world:
        listener = Listener(world, workdir, production_block(world))
        try:
            warm(world, listener, 2)
            samples = measure(listener, seconds)
        finally:
            listener.stop()
    return summarise("idle", samples, "2 warm pairs, defaults, 50 s long poll")


def phase_storm(workdir: Path, seconds: float) -> Row:
    spec = LiveSpec(
        ice_start=3000.0,
        ice_end=3001.0,
        lose_nodes_at_ice_start=False,
        max_runners=40,
        burst_at=15.0,
        burst_count=200,
        burst_over=20.0,
        job_duration=5.0,
    )
    with LiveWorld(spec) as world:
        listener = Listener(world, workdir, world.capacity_aware(proactiveCapacity=2))
        try:
            warm(world, listener, 2)
            world.wait_until(lambda w: w.elapsed() >= spec.burst_at, timeout=spec.burst_at + 5)
            samples = measure(listener, seconds, until=world.all_jobs_finished)
            counts = world.job_counts()
        finally:
            listener.stop()
    done = counts.get("succeeded", 0)
    return summarise("storm", samples, f"{done}/200 jobs done, maxRunners 40, fast timers")


def populate_big(world: LiveWorld) -> int:
    """Another scale set's 10 000 pods on 500 static (tainted) nodes; returns the number of
    pods in the namespace."""
    ns = world.spec.namespace
    with world.store.lock:
        for n in range(500):
            world.store.create(
                {
                    "kind": "Node",
                    "metadata": {"name": f"static-{n}", "labels": {"bench": "static"}},
                    "spec": {"taints": [STATIC_TAINT]},
                    "status": {
                        "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                        "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                        "conditions": [{"type": "Ready", "status": "True"}],
                    },
                }
            )
        for i in range(3000):
            name = f"{OTHER}-runner-{i:05d}"
            runner = {L.LABEL_EPHEMERAL_RUNNER: "True", L.LABEL_ARC_SCALE_SET_NAME: OTHER}
            world.store.create(arc_pod(name, runner, f"static-{i % 500}", "100m", "256Mi"))
            workflow = {L.LABEL_WORKFLOW_RUNNER_POD: name}
            node = f"static-{(i + 7) % 500}"
            world.store.create(arc_pod(f"{name}-workflow", workflow, node, "100m", "256Mi"))
        for p in range(2000):
            for role in ("runner", "workflow"):
                labels = {L.LABEL_SCALE_SET: OTHER, L.LABEL_PAIR: f"b-{p}", L.LABEL_ROLE: role}
                name = f"{OTHER}-ph-{p}-{role[0]}"
                world.store.create(arc_pod(name, labels, f"static-{p % 500}", "100m", "256Mi"))
        return len(world.store.list("Pod", ns))


def churn(world: LiveWorld, stop: threading.Event, per_second: int) -> None:
    """``per_second`` runner-pod updates a second (label bumps), until ``stop``."""
    ns = world.spec.namespace
    for tick in range(100_000):  # bounded
        if stop.wait(1.0):
            return
        for k in range(per_second):
            i = (tick * per_second + k) % 3000
            world.store.mutate(
                "Pod",
                ns,
                f"{OTHER}-runner-{i:05d}",
                lambda o, t=tick: o["metadata"]["labels"].update(bump=str(t)),
            )


def phase_big(workdir: Path, seconds: float) -> Row:
    with LiveWorld(LiveSpec(**QUIET, poll_window=50.0)) as world:
        pods = populate_big(world)
        listener = Listener(world, workdir, production_block(world))
        stop = threading.Event()
        churner = threading.Thread(target=churn, args=(world, stop, 20), daemon=True)
        try:
            warm(world, listener, 2, timeout=300.0)
            churner.start()
            samples = measure(listener, seconds)
        finally:
            stop.set()
            listener.stop()
    return summarise("big", samples, f"{pods} pods in the namespace, 500 extra nodes, 20 upd/s")


PHASES = {"idle": phase_idle, "storm": phase_storm, "big": phase_big}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", choices=sorted(PHASES), action="append")
    parser.add_argument("--seconds", type=float, default=60.0, help="per phase (storm: at most)")
    args = parser.parse_args(argv)
    rows = []
    for name in args.phase or list(PHASES):
        with tempfile.TemporaryDirectory(prefix=f"footprint-{name}-") as tmp:
            seconds = max(args.seconds, 120.0) if name == "storm" else args.seconds
            rows.append(PHASES[name](Path(tmp), seconds))
        print(f"{name}: done", file=sys.stderr, flush=True)
    print(
        f"{'phase':<6} {'seconds':>7} {'CPU mean m':>10} {'CPU peak5s m':>12} "
        f"{'RSS MiB':>8} {'peak RSS MiB':>12}  note"
    )
    for r in rows:
        print(
            f"{r.phase:<6} {r.seconds:>7.0f} {r.cpu_mean_m:>10.0f} {r.cpu_peak_m:>12.0f} "
            f"{r.rss_mib:>8.0f} {r.hwm_mib:>12.0f}  {r.note}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
