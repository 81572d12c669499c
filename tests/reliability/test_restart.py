"""Killing the listener at random points of a reconcile, 50 times, on a live simulated cluster.

Each kill happens inside a reconcile step, at a random pod write (before the first one, between
the two pods of a pair, in the middle of a sweep or a scale-down): the process is gone with
everything it held in memory, and a new one (new instance id, same cluster) starts after a
random downtime, like ARC recreating the listener pod. Demand moves all the time (HUD counts,
HUD outages) so steps create, delete and renew.

Promises checked:
1. No leak: one interval after a new process's first step, every live placeholder belongs to
   a pair the new process holds (adopted or created); the rest were swept.
2. No unreserved capacity: what a step publishes is backed by the cluster right after the
   step (its own deletes included); over time, what a process advertises never exceeds what
   the cluster backs for longer than one reconcile interval; a new process starts from 0.
3. Bounded: the number of placeholder pods never exceeds what two processes' worth of
   demand could create.
"""

from __future__ import annotations

import random

from reconciler.snapshot import Demand
from simulator.measurement.invariants import Invariant, InvariantObserver
from tests.reliability.support import ERS, ListenerProcess, SimCluster

KILLS = 50
MAX_QUEUED = 6


def _demand(rng: random.Random) -> Demand:
    if rng.random() < 0.1:
        return Demand(queued_jobs=None, error="HUD down")
    return Demand(queued_jobs=rng.randint(0, MAX_QUEUED))


def test_fifty_kills_mid_reconcile_never_leak_a_placeholder_nor_over_advertise() -> None:
    sim = SimCluster.build(seed=7)
    rng = random.Random(2026)
    interval = sim.interval
    observer = InvariantObserver(
        scale_set=ERS,
        interval=interval,
        start=sim.loop.start,
        reservable=lambda: sim.truth().capacity,
        max_runners=30,
    )
    observer.watch_store(sim.store, sim.loop)
    # Leftovers of the dead process plus what the live one may want: a loose, finite bound.
    pod_bound = 2 * 2 * (sim.settings.proactive_capacity + MAX_QUEUED)

    def start() -> ListenerProcess:
        process = sim.start_listener()
        process.sink.on_publish.append(observer.advertised)
        observer.advertised(sim.loop.now(), 0)  # a new pod's gate starts at 0
        return process

    process = start()
    kills = restarts_checked = writes_at_kill = 0
    first_step_of: dict[str, float] = {}
    checked: dict[str, bool] = {}
    for _ in range(5000):  # bounded: ends long before this at ~35 % kills per step
        if kills >= KILLS:
            break
        if rng.random() < 0.3:
            sim.demand = _demand(rng)
        kill_at = rng.randint(0, 4) if rng.random() < 0.35 else None
        before = process.store.writes
        result = sim.step(process, kill_after_writes=kill_at)
        if result is None:
            kills += 1
            writes_at_kill += process.store.writes - before
            sim.run(rng.uniform(0.0, 2 * interval))  # downtime until the new pod runs
            process = start()
            continue
        # What a step publishes is backed right after it: the pairs and pods the step itself
        # released are not advertised, not even until the next step.
        assert result.ledger.capacity <= sim.truth().capacity
        first_step_of.setdefault(process.instance, sim.loop.now())
        if sim.loop.now() - first_step_of[process.instance] >= interval and not checked.get(
            process.instance
        ):
            # One interval after the first step of this process: nothing unowned is left.
            assert sim.unowned(process) == [], f"after restart #{kills}: leaked placeholders"
            checked[process.instance] = True
            restarts_checked += 1
        assert len(sim.placeholders()) <= pod_bound
        # Like the production loop: the step's own writes come back as watch events and
        # trigger a debounced step; otherwise the periodic one.
        wrote = process.store.writes > before
        sim.run(sim.settings.watch_debounce if wrote else interval)
        observer.check(sim.loop.now())

    assert kills == KILLS
    assert writes_at_kill > 0, "some kills must land after writes, mid-step"
    assert restarts_checked >= KILLS // 2
    # The last process runs on, unkilled: the cluster converges to exactly its pairs.
    for _ in range(4):
        sim.step(process)
        sim.run(interval)
        observer.check(sim.loop.now())
    assert sim.unowned(process) == []
    report = observer.finish(sim.loop.now())
    assert report.counts[Invariant.CAPACITY_RESERVABLE] == 0, report.violations
    assert report.counts[Invariant.CAPACITY_WITHIN_MAX_RUNNERS] == 0, report.violations
    assert report.counts[Invariant.PLACEHOLDER_TTL] == 0, report.violations
    assert report.placeholders_seen > 2 * KILLS  # the run really created and replaced pods


def test_a_listener_gone_for_good_leaves_placeholders_until_their_lease_is_reaped() -> None:
    """What happens without a restart: nobody deletes the dead instance's pods before a new
    instance runs (the lease is only read by a listener). They are swept at the first step of
    the next instance, however late; ``placeholderTtl`` bounds nothing on its own."""
    sim = SimCluster.build(seed=3)
    process = sim.start_listener()
    sim.demand = Demand(queued_jobs=2)
    for _ in range(4):
        sim.step(process)
        sim.run(sim.interval)
    alive = len(sim.placeholders())
    assert alive > 0
    sim.run(2 * sim.settings.placeholder_ttl)  # the process died silently long ago
    assert len(sim.placeholders()) == alive
    successor = sim.start_listener()
    sim.step(successor)
    sim.run(sim.interval)
    sim.step(successor)
    assert sim.unowned(successor) == []
