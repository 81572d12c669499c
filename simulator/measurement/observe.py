"""Invariant observers attached to a running simulated ``World``: one
:class:`~simulator.measurement.invariants.InvariantObserver` per capacity-aware scale set, fed
from the Actions service's capacity observers, the cluster's store and the listener's state."""

from __future__ import annotations

from typing import Any

from simulator.engine.store import ObjectStore
from simulator.measurement.invariants import InvariantObserver


def observe_world(
    world: Any, *, tick: float = 10.0, max_runners_grace: float | None = None
) -> dict[str, InvariantObserver]:
    """One observer per capacity-aware scale set of a ``World`` (before it runs).

    Advertised capacity comes from the Actions service's capacity observers (the value the
    broker holds), reservable capacity from the ledger recomputed from the cluster's store
    (the truth, not the listener's possibly stale cache), the footprint from the reconciler's
    pair store and the cache view's objects. ``check`` runs every ``tick`` virtual seconds.

    ``max_runners_grace`` defaults to the scenario's listener ``restart_delay`` + 1 s: ARC
    recreates the listener pod on a ``maxRunners`` change, and the service keeps the old
    header until the new pod's first poll (which is clamped to the new value at once).
    """
    from providers.kubernetes.observe.translate import build_snapshot
    from reconciler.capacity import compute_ledger
    from reconciler.snapshot import Demand

    loop = world.loop
    if max_runners_grace is None:
        max_runners_grace = float(world.scenario.listener.restart_delay) + 1.0
    observers: dict[str, InvariantObserver] = {}
    drivers = list(getattr(world.strategy, "drivers", ()))
    for driver in drivers:
        name = driver.ctx.spec.name
        store = driver.ctx.store
        target = driver.target

        def reservable(store: ObjectStore = store, target: Any = target) -> int:
            snapshot = build_snapshot(store, target, now=loop.now(), demand=Demand())
            # Hot slots' placeholders (kept apart from pairs) hold workflow room too; read from
            # the pods alone, any Running one counts (the listener counts confirmed slots only,
            # so this bound is looser for them, never tighter).
            hot = sum(1 for p in snapshot.hot_placeholders.values() if p.counts)
            return compute_ledger(snapshot, 0, hot_workflow_halves=hot).capacity

        observer = InvariantObserver(
            scale_set=name,
            interval=driver.settings.recalculate_interval,
            start=loop.start,
            reservable=reservable,
            max_runners=driver.ctx.spec.max_runners,
            max_runners_grace=max_runners_grace,
        )
        observer.watch_store(store, loop)
        observers[name] = observer

    def on_capacity(scale_set: Any, value: int) -> None:
        observer = observers.get(scale_set.name)
        if observer is not None:
            observer.advertised(loop.now(), value)

    world.service.capacity_observers.append(on_capacity)

    def sample() -> None:
        for driver in drivers:
            observer = observers[driver.ctx.spec.name]
            observer.check(loop.now())
            source = driver.source
            cached = source.list("Pod") if source is not None else []
            observer.memory(loop.now(), footprint(driver.reconciler.store.view(), cached))
        loop.call_later(tick, sample)

    loop.call_soon(sample)
    return observers


def footprint(*objects: Any) -> int:
    """A cheap, deterministic size proxy for listener-side state: total ``len`` of the given
    containers (records, histories, caches). For bytes, use tracemalloc (bench/soak_memory.py)."""
    total = 0
    for obj in objects:
        try:
            total += len(obj)
        except TypeError:
            total += 1
    return total
