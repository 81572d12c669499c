"""Memory soak: the capacity-aware listener over a simulated week at constant load.

Runs ``config/scenarios/chaos.yaml`` (without its faults) with a constant job rate for
``--days`` simulated days and prints, once per simulated day:

- the deep size in bytes of the listener-side objects (the reconciler with its pair store and
  subscribers, the placeholder writer and pod builder, the cache view of the cluster and the
  reconcile schedule), walked with ``gc.get_referents`` and stopping at the simulated world's
  own objects (its ObjectStore and event loop), so the simulator's memory (its ever-growing
  event log, the cluster's objects) is left out; tracemalloc was tried and slows the world
  about a hundredfold;
- the footprint proxy the invariant observer samples (pair records + cached pods);
- the invariant observer's verdict at the end (``memory_bounded`` compares the last quarter
  of the run with the second).

    .venv/bin/python bench/soak_memory.py            # a week, about half a minute
    .venv/bin/python bench/soak_memory.py --days 2   # quicker

Figures, not assertions: a bench prints; tests/reliability asserts on the footprint proxy.
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulator.engine.world import World  # noqa: E402
from simulator.faults import FaultPlan, WorldChaos  # noqa: E402
from simulator.measurement.observe import observe_world  # noqa: E402
from simulator.scenarios.scenario import load_scenario  # noqa: E402

DAY = 86_400.0
_SKIP = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.CodeType,
)


def deep_size(roots: list[object], stop: list[object]) -> int:
    """Bytes reachable from ``roots`` (each object counted once), not crossing ``stop``."""
    seen = {id(o) for o in stop}
    todo = list(roots)
    total = 0
    for _ in range(10_000_000):  # bounded walk
        if not todo:
            break
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, _SKIP):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        todo.extend(gc.get_referents(obj))
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--per-hour", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)

    base = load_scenario("chaos")
    jobs = [s.model_copy(update={"schedule": [], "per_hour": args.per_hour}) for s in base.jobs]
    scale_sets = [s.model_copy(update={"changes": []}) for s in base.scale_sets]
    clusters = [
        c.model_copy(update={"spec": c.spec.model_copy(update={"ice_windows": ()})})
        for c in base.clusters
    ]
    scenario = base.model_copy(
        update={
            "duration": args.days * DAY,
            "jobs": jobs,
            "scale_sets": scale_sets,
            "clusters": clusters,
            "hud": base.hud.model_copy(update={"outages": []}),
        }
    )
    started = time.perf_counter()
    world = World(scenario, "capacity-aware", seed=args.seed)
    WorldChaos(world, FaultPlan(), seed=args.seed).install()
    observers = observe_world(world, tick=60.0)
    loop = world.loop
    print(
        f"{'day':>4} {'listener KiB':>13} {'pair records':>13} {'cached pods':>12} "
        f"{'jobs':>6} {'wall s':>7}"
    )
    for day in range(1, args.days + 1):
        loop.run_until(loop.start + day * DAY)
        driver = world.strategy.drivers[0]
        source = driver.source
        roots = [driver.reconciler, driver.writer, driver.builder, driver.schedule, source]
        # Stop at the world: its store, loop, log, the Actions service (its job list grows by
        # design) and the simulated ARC listener the capacity sink feeds.
        stop = [
            driver.ctx.store,
            loop,
            world,
            driver.ctx,
            world.log,
            world.service,
            driver.ctx.listener,
        ]
        if source is not None:
            # The view's pods are the store's own dicts here; a real cache holds copies.
            stop.append(source.store)
        kib = deep_size(roots, stop) / 1024
        pods = len(source.list("Pod")) if source is not None else 0
        print(
            f"{day:>4} {kib:>13.0f} {len(driver.reconciler.store):>13} {pods:>12} "
            f"{len(world.service.jobs):>6} {time.perf_counter() - started:>7.1f}"
        )
    (report,) = [o.finish(loop.now()) for o in observers.values()]
    print(f"invariants: {report.summary()}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
