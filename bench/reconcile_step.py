"""Benchmark: one reconcile step at 10, 100, 1 000 and 10 000 pairs.

Drives the production engine, :class:`~reconciler.controller.ScaleSetController` (its
``step`` is what the listener and the simulator run), and prints wall time per step (median
of repeats) in steady state (every pair READY, nothing changes) and with 5% churn (5% of the
pairs preempted and replaced each step), plus peak traced memory of the store + snapshot.
Target (issues 2 and 24): <= 5 ms per churn step at 1 000 pairs, linear growth.

The machine is shared, so wall time per step grows with its load; the churn step's CPU time
(``time.thread_time``, median of the same repeats) is printed beside it and moves far less.

Run: ``.venv/bin/python bench/reconcile_step.py`` (``--pairs 1000`` for one size only;
before/after figures and profiles: docs/benchmarks-step.md)
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reconciler.clock import ManualClock
from reconciler.config import ReconcilerConfig
from reconciler.controller import Output, ScaleSetController
from reconciler.schedule import Timings
from reconciler.snapshot import (
    ClusterSnapshot,
    Demand,
    FitEstimate,
    PairPods,
    PlaceholderPod,
    PodPhase,
)
from state_machine.record import pod_names
from state_machine.states import PairState, Role

SCALE_SET = "bench"


def pod(pair_id: str, role: Role, expires_at: float) -> PlaceholderPod:
    runner, workflow = pod_names(SCALE_SET, pair_id)
    return PlaceholderPod(
        name=runner if role is Role.RUNNER else workflow,
        namespace="ns",
        uid=f"{pair_id}{role}",
        pair_id=pair_id,
        role=role,
        phase=PodPhase.RUNNING,
        node_name="n",
        instance="i0",
        expires_at=expires_at,
    )


def step(controller: ScaleSetController, snapshot: ClusterSnapshot) -> Output:
    """One step of the engine at the snapshot's time; a failed step stops the bench."""
    output = controller.step(snapshot.taken_at, snapshot, stale_for=0.0)
    if output.error is not None:
        raise output.error
    return output


def ready_world(n: int) -> tuple[ScaleSetController, dict[str, PairPods], ManualClock]:
    clock = ManualClock(1_000_000.0)
    config = ReconcilerConfig(
        scale_set=SCALE_SET, proactive_capacity=n, max_pairs_in_flight=n, max_requests_per_step=n
    )
    controller = ScaleSetController(
        config, Timings(interval=30.0), instance="i0", started_at=clock.now()
    )
    step(controller, ClusterSnapshot(taken_at=clock.now(), max_runners=n))
    store = controller.reconciler.store
    far = clock.now() + 10 * 86_400
    pods = {
        r.pair_id: PairPods(pod(r.pair_id, Role.RUNNER, far), pod(r.pair_id, Role.WORKFLOW, far))
        for r in store.records()
    }
    output = step(
        controller, ClusterSnapshot(taken_at=clock.now(), max_runners=n, placeholders=pods)
    )
    if output.capacity != n:
        raise SystemExit(f"{n} pairs should be READY and advertised, got {output.capacity}")
    return controller, pods, clock


def time_steps(
    n: int, churn: float, repeats: int, profile: cProfile.Profile | None = None
) -> tuple[float, float]:
    """Median wall and median CPU seconds of one step (``profile``: enabled around steps)."""
    controller, pods, clock = ready_world(n)
    store = controller.reconciler.store
    samples, cpu = [], []
    for _ in range(repeats):
        clock.advance(1.0)
        if churn:
            lost = list(pods)[: max(1, int(n * churn))]
            for pair_id in lost:
                del pods[pair_id]
        snap = ClusterSnapshot(
            taken_at=clock.now(),
            max_runners=n,
            placeholders=dict(pods),
            demand=Demand(0),
            # As on a cluster with Karpenter: the estimate bounds nothing here (room for every
            # pair) but makes the step run unblock's pass over the waiting pairs.
            fit=FitEstimate(new_pairs=n, runner_share=0.2),
        )
        started, started_cpu = time.perf_counter(), time.thread_time()
        if profile is not None:
            profile.enable()
        step(controller, snap)
        if profile is not None:
            profile.disable()
        samples.append(time.perf_counter() - started)
        cpu.append(time.thread_time() - started_cpu)
        if churn:  # new pairs come up READY for the next round
            far = clock.now() + 10 * 86_400
            for record in store.records():
                if record.pair_id not in pods and record.state is PairState.REQUESTED:
                    pods[record.pair_id] = PairPods(
                        pod(record.pair_id, Role.RUNNER, far),
                        pod(record.pair_id, Role.WORKFLOW, far),
                    )
            for pair_id in [p for p in pods if p not in store]:
                del pods[pair_id]
    return statistics.median(samples), statistics.median(cpu)


def peak_memory(n: int) -> float:
    gc.collect()
    tracemalloc.start()
    controller, pods, clock = ready_world(n)
    clock.advance(1)
    step(controller, ClusterSnapshot(taken_at=clock.now(), max_runners=n, placeholders=pods))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1e6


def print_profile(n: int, top: int) -> None:
    """The hot paths of a churn step: cProfile over 200 steps, by own time and cumulative."""
    profile = cProfile.Profile()
    time_steps(n, 0.05, 200, profile)
    for order in ("tottime", "cumulative"):
        pstats.Stats(profile).strip_dirs().sort_stats(order).print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, nargs="*", default=[10, 100, 1_000, 10_000])
    parser.add_argument(
        "--profile",
        type=int,
        metavar="TOP",
        help="instead: cProfile 200 churn steps at the first --pairs size, print TOP entries",
    )
    args = parser.parse_args()
    if args.profile:
        print_profile(args.pairs[0], args.profile)
        return
    print(
        f"{'pairs':>7} {'steady ms':>10} {'us/pair':>8} {'5% churn ms':>12} "
        f"{'churn CPU ms':>13} {'peak MB':>8}"
    )
    for n in args.pairs:
        repeats = 30 if n <= 1_000 else 7
        steady, _ = time_steps(n, 0.0, repeats)
        churn, churn_cpu = time_steps(n, 0.05, repeats)
        print(
            f"{n:>7} {steady * 1e3:>10.3f} {steady / n * 1e6:>8.2f} "
            f"{churn * 1e3:>12.3f} {churn_cpu * 1e3:>13.3f} {peak_memory(n):>8.1f}"
        )


if __name__ == "__main__":
    main()
