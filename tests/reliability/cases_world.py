"""Fault cases in virtual time: the simulated world (cluster + ARC + Actions + the production
reconciler) with one fault, and the invariant observer watching.

Each case runs ``config/scenarios/chaos.yaml`` shortened to two hours at a steady load, with
a single fault one hour in, and reports what the listener did about it (pair transitions
after the fault, what the invariants saw). Everything here is deterministic (virtual time,
fixed seed), so the observed text is stable.

The restart case uses the restart harness of ``test_restart.py`` (kills at random writes).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from reconciler.snapshot import Demand
from simulator.engine.world import World
from simulator.faults import FaultPlan, WorldChaos
from simulator.measurement.invariants import Invariant, InvariantObserver, Report
from simulator.measurement.observe import observe_world
from simulator.scenarios.scenario import load_scenario
from state_machine.events import AnyTransition, TransitionEvent
from state_machine.states import PairState
from tests.reliability.cases import Outcome
from tests.reliability.support import ERS, SimCluster

FAULT_AT = 3600.0
WHERE = "virtual-time world -> reconciler + subscribers"
#: A seed whose warm pool is whole at the fault: ``proactiveCapacity`` (3) READY pairs, the
#: state the cluster cases' promises are about (``test_fault_matrix`` checks it). Under seed 5
#: the pool is then one READY pair and two re-paired survivor slots (four PREEMPTED records),
#: where losing a node retires survivors instead of moving pairs to PREEMPTED.
SEED = 1


@dataclass
class WorldRun:
    report: Report
    #: (seconds since start, source, target) of every transition from the fault on.
    transitions: list[tuple[float, str, str]]
    events: list[tuple[float, str, str]]
    results: dict[str, Any]
    chaos: WorldChaos
    advertised_at_fault: int
    advertised_after: list[tuple[float, int]]
    #: Pair states (value -> count) just before the fault, over every scale set.
    states_at_fault: dict[str, int]


def _scenario(duration: float = 7200.0) -> Any:
    scenario = load_scenario("chaos")
    jobs = [
        stream.model_copy(update={"schedule": [], "per_hour": 40.0}) for stream in scenario.jobs
    ]
    scale_sets = [s.model_copy(update={"changes": []}) for s in scenario.scale_sets]
    clusters = [
        c.model_copy(update={"spec": c.spec.model_copy(update={"ice_windows": ()})})
        for c in scenario.clusters
    ]
    return scenario.model_copy(
        update={
            "duration": duration,
            "jobs": jobs,
            "scale_sets": scale_sets,
            "clusters": clusters,
            "hud": scenario.hud.model_copy(update={"outages": []}),
        }
    )


def run_world(*faults: dict[str, Any], seed: int = SEED, duration: float = 7200.0) -> WorldRun:
    plan = FaultPlan.model_validate({"faults": list(faults)})
    world = World(_scenario(duration), "capacity-aware", seed=seed)
    chaos = WorldChaos(world, plan, seed=seed)
    chaos.install()
    observers = observe_world(world)
    transitions: list[tuple[float, str, str]] = []
    advertised: list[tuple[float, int]] = []
    loop = world.loop

    class Transitions:
        """A subscriber counting (source, target) of every transition after the fault."""

        def notify(self, events: Sequence[AnyTransition], commands: Sequence[Any]) -> None:
            if loop.now() - loop.start < FAULT_AT:
                return
            for event in events:
                if not isinstance(event, TransitionEvent):
                    continue  # a hot slot's move: these cases count pairs
                source = event.source.value if event.source is not None else "new"
                transitions.append((loop.now() - loop.start, source, event.target.value))

    def subscribe(driver: Any) -> None:
        driver.subscribers.append(Transitions())

    for driver in chaos.drivers:
        subscribe(driver)
    chaos.on_restart.append(subscribe)
    states: dict[str, int] = {}

    def record_states() -> None:
        for driver in chaos.drivers:
            for state, count in driver.reconciler.store.counts().items():
                states[state.value] = states.get(state.value, 0) + count

    loop.call_at(loop.start + FAULT_AT - 0.001, record_states)
    world.service.capacity_observers.append(
        lambda ss, value: advertised.append((loop.now() - loop.start, value))
    )
    results = world.run()
    report = next(iter(observers.values())).finish(loop.now())
    before = [v for t, v in advertised if t <= FAULT_AT]
    return WorldRun(
        report,
        transitions,
        chaos.record.events,
        results,
        chaos,
        before[-1] if before else 0,
        [(t, v) for t, v in advertised if t > FAULT_AT],
        states,
    )


def _moves(run: WorldRun, *pairs: tuple[PairState, PairState], within: float = 7200.0) -> int:
    wanted = {(a.value, b.value) for a, b in pairs}
    return sum(
        1 for t, a, b in run.transitions if (a, b) in wanted and FAULT_AT <= t <= FAULT_AT + within
    )


@lru_cache(maxsize=1)
def baseline() -> WorldRun:
    """The same world without any fault (same seed): what happens anyway."""
    return run_world()


def _verdict(run: WorldRun) -> str:
    return run.report.summary()


P = PairState


@lru_cache(maxsize=1)
def _in_flight_baseline() -> WorldRun:
    """Pairs replaced just before the fault time, and no fault: the reference for cases that
    need pairs in flight."""
    return run_world({"kind": "placeholder_deleted", "start": FAULT_AT - 3, "params": {"count": 4}})


def _cluster_case(kind: str, expected: str, params: dict[str, Any]) -> Outcome:
    run = run_world({"kind": kind, "start": FAULT_AT, "params": params})
    lost = ((P.READY, P.PREEMPTED), (P.PARTIAL, P.PREEMPTED), (P.REQUESTED, P.PREEMPTED))
    preempted = _moves(run, *lost, within=60)
    anyway = _moves(baseline(), *lost, within=60)
    detail = run.events[0][2] if run.events else "nothing to act on"
    observed = (
        f"{detail}; {preempted} pair(s) PREEMPTED within 60 s ({anyway} without the "
        f"fault), replaced by the next steps; {_verdict(run)}"
    )
    return Outcome(kind, WHERE, expected, observed, run.report.ok and preempted > anyway)


def node_loss() -> Outcome:
    return _cluster_case(
        "node_loss",
        "pairs on the lost node go PREEMPTED -> DELETED and are replaced; capacity drops "
        "within one debounced step; invariants hold",
        {"count": 1},
    )


def placeholder_deleted() -> Outcome:
    return _cluster_case(
        "placeholder_deleted",
        "a READY pair missing a half is PREEMPTED, its survivor released, the pair replaced",
        {"count": 3},
    )


def consolidation() -> Outcome:
    return _cluster_case(
        "karpenter_consolidation",
        "evicted placeholders (DisruptionTarget) stop counting at once; pairs replaced",
        {"count": 1},
    )


def listener_crash_world() -> Outcome:
    run = run_world(
        {
            "kind": "listener_crash",
            "start": FAULT_AT,
            "params": {"after_writes": 0, "restart_after": 20},
        },
        {"kind": "placeholder_deleted", "start": FAULT_AT + 1, "params": {"count": 2}},
    )
    died = next(t for t, label, detail in run.events if detail.startswith("died"))
    back = next(t for t, label, _ in run.events if label == "restart")
    expected = (
        "the process dies in a step before its first write; 20 s later a new instance "
        "adopts READY pairs and sweeps the rest; nothing advertised in between"
    )
    history = [(FAULT_AT, run.advertised_at_fault), *run.advertised_after]
    in_force = [v for t, v in history if t < back][-1]
    adopted = sum(
        1
        for t, a, b in run.transitions
        if (a, b) == ("new", "READY") and back <= t <= back + 5  # the adoption edge
    )
    observed = (
        f"died {died - FAULT_AT:.0f}s after the fault, back {back - died:.0f}s later; "
        f"advertised {in_force} just before the restart; {adopted} pair(s) adopted at "
        f"restart; {_verdict(run)}"
    )
    return Outcome(
        "listener_crash", WHERE, expected, observed, run.report.ok and in_force == 0 and adopted > 0
    )


def listener_crash_restarts() -> Outcome:
    """50 kills at random writes (the restart harness), summarised."""
    sim = SimCluster.build(seed=11)
    rng = random.Random(11)
    observer = InvariantObserver(
        scale_set=ERS,
        interval=sim.interval,
        start=sim.loop.start,
        reservable=lambda: sim.truth().capacity,
        max_runners=30,
    )
    observer.watch_store(sim.store, sim.loop)
    process = sim.start_listener()
    process.sink.on_publish.append(observer.advertised)
    kills = leaks = 0
    first: dict[str, float] = {}
    checked: set[str] = set()
    for _ in range(5000):
        if kills >= 50:
            break
        if rng.random() < 0.3:
            sim.demand = Demand(queued_jobs=rng.randint(0, 6))
        before = process.store.writes
        result = sim.step(
            process, kill_after_writes=rng.randint(0, 4) if rng.random() < 0.35 else None
        )
        if result is None:
            kills += 1
            sim.run(rng.uniform(0, 2 * sim.interval))
            process = sim.start_listener()
            process.sink.on_publish.append(observer.advertised)
            observer.advertised(sim.loop.now(), 0)
            continue
        first.setdefault(process.instance, sim.loop.now())
        if (
            sim.loop.now() - first[process.instance] >= sim.interval
            and process.instance not in checked
        ):
            checked.add(process.instance)
            leaks += len(sim.unowned(process))
        wrote = process.store.writes > before
        sim.run(sim.settings.watch_debounce if wrote else sim.interval)
        observer.check(sim.loop.now())
    report = observer.finish(sim.loop.now())
    expected = "no placeholder leaked, no unreserved capacity advertised after any restart"
    observed = f"{kills} kills at random writes: {leaks} leaked placeholder(s); {report.summary()}"
    return Outcome(
        "listener_crash x50 (restart test)",
        "simulated cluster -> reconciler killed mid-step",
        expected,
        observed,
        kills == 50 and leaks == 0 and report.ok,
    )


def second_listener() -> Outcome:
    # Pairs in flight when the second one starts: its first step sweeps what it cannot adopt.
    run = run_world(
        {"kind": "placeholder_deleted", "start": FAULT_AT - 3, "params": {"count": 4}},
        {"kind": "second_listener", "start": FAULT_AT, "end": FAULT_AT + 600},
    )
    lost = ((P.READY, P.PREEMPTED), (P.REQUESTED, P.PREEMPTED), (P.PARTIAL, P.PREEMPTED))
    churn = _moves(run, *lost, within=600)
    anyway = _moves(_in_flight_baseline(), *lost, within=600)
    exited = next(
        detail
        for _, label, detail in run.events
        if label.startswith("second_listener") and "exited" in detail
    )
    expected = (
        "the second listener's session is refused, but its reconciler runs (ARC "
        "starts capacity-aware work before the session): the two must not make "
        "capacity look bigger than it is"
    )
    observed = (
        f"{exited}; {churn} pair(s) PREEMPTED in the 10 min ({anyway} without it); {_verdict(run)}"
    )
    return Outcome("second_listener", WHERE, expected, observed, run.report.ok)


def clock_jump(seconds: float) -> Outcome:
    # Pairs in flight at the jump (their placeholders were just replaced).
    run = run_world(
        {"kind": "placeholder_deleted", "start": FAULT_AT - 3, "params": {"count": 4}},
        {"kind": "clock_jump", "start": FAULT_AT, "params": {"seconds": seconds}},
    )
    moves = ((P.REQUESTED, P.TIMED_OUT), (P.PARTIAL, P.TIMED_OUT), (P.PREEMPTED, P.DELETED))
    after = _moves(run, *moves, within=600)
    anyway = _moves(_in_flight_baseline(), *moves, within=600)
    expected = (
        "timeouts and leases are measured on the listener's clock: a jump may time "
        "out in-flight pairs or retire survivors early once, never strand capacity"
    )
    observed = (
        f"{after} pair(s) timed out or retired in 10 min ({anyway} without the jump); "
        f"{_verdict(run)}"
    )
    return Outcome(f"clock_jump ({seconds:+g} s)", WHERE, expected, observed, run.report.ok)


def api_refusing_writes() -> Outcome:
    run = run_world(
        {"kind": "k8s_429", "start": FAULT_AT, "end": FAULT_AT + 600},
        {"kind": "placeholder_deleted", "start": FAULT_AT + 60, "params": {"count": 2}},
    )
    failed = run.chaos.gate.failed
    replaced = sum(
        1 for t, a, b in run.transitions if (a, b) == ("QUEUED", "REQUESTED") and t > FAULT_AT + 600
    )
    expected = (
        "writes refused for 10 min (< placeholderTtl/2) while pairs must be replaced: "
        "creates and deletes fail soft and are retried by later steps; nothing "
        "over-advertised"
    )
    observed = (
        f"{failed} writes refused; {replaced} pair(s) requested once the API answered; "
        f"{_verdict(run)}"
    )
    return Outcome(
        "k8s_429 (writes, 10 min)", WHERE, expected, observed, run.report.ok and failed > 0
    )


def api_refusing_writes_past_lease() -> Outcome:
    ttl = 1800.0
    run = run_world({"kind": "k8s_5xx", "start": FAULT_AT, "end": FAULT_AT + ttl})
    ttl_violations = run.report.counts[Invariant.PLACEHOLDER_TTL]
    others = sum(n for inv, n in run.report.counts.items() if inv is not Invariant.PLACEHOLDER_TTL)
    expected = (
        "writes refused for a whole placeholderTtl: leases cannot be renewed, so pods "
        "outlive them (nobody can delete them either); renewed at the first step after"
    )
    observed = (
        f"{ttl_violations} placeholder(s) past their lease during the outage; other "
        f"invariants: {'held' if not others else f'{others} violation(s)'}"
    )
    return Outcome(
        "k8s_5xx (writes, > TTL)", WHERE, expected, observed, ttl_violations > 0 and others == 0
    )


def stale_cache_outage() -> Outcome:
    run = run_world(
        {"kind": "k8s_watch_drop", "start": FAULT_AT, "end": FAULT_AT + 1, "params": {"hold": 180}},
        {"kind": "node_loss", "start": FAULT_AT + 30, "params": {"count": 1}},
    )
    report = run.report
    expected = (
        "watches down for 3 min while a node with placeholders is lost: stop "
        "advertising what cannot be confirmed within one interval (fail closed)"
    )
    observed = (
        f"advertised up to {report.max_excess} slot(s) more than reservable for "
        f"{report.longest_excess:.0f}s (stale cache); "
        f"{report.counts[Invariant.CAPACITY_RESERVABLE]} violation(s)"
    )
    return Outcome(
        "k8s watches down 3 min + node_loss",
        WHERE,
        expected,
        observed,
        report.counts[Invariant.CAPACITY_RESERVABLE] == 0,
    )


def hud_faults_world() -> Outcome:
    run = run_world(
        {
            "kind": "hud_absurd",
            "start": FAULT_AT,
            "end": FAULT_AT + 900,
            "params": {"value": 1_000_000_000},
        },
    )
    expected = "absurd demand is rejected: the reconciler keeps its floor, no pair storm"
    requested = _moves(run, (P.QUEUED, P.REQUESTED))
    observed = f"{requested} pair(s) requested in the hour after; {_verdict(run)}"
    return Outcome("hud_absurd (world)", WHERE, expected, observed, run.report.ok)


def fleet_store_down() -> Outcome:
    """Two clusters serving one label with ``fleetView`` on (tests/simulated's compact
    ice-failover), the shared store down for 15 minutes 40 minutes in."""
    from tests.simulated.workload.builders import ice_failover, load

    scenario = load(ice_failover(hours=1.5)).with_capacity_aware(
        {
            "fleetView": {
                "enabled": True,
                "url": "http://fleet-store.simulated",
                "cluster": "set-by-the-world",
                "fleet": "linux-gpu",
            }
        },
        where="fleet_store_down case",
    )
    world = World(scenario, "capacity-aware", seed=3)
    down_from, down_to = 40 * 60.0, 55 * 60.0
    plan = FaultPlan.model_validate(
        {"faults": [{"kind": "fleet_store_down", "start": down_from, "end": down_to}]}
    )
    chaos = WorldChaos(world, plan, seed=3)
    chaos.install()
    loop = world.loop
    during: list[bool] = []  # the step's demand is its own sources' answer, unshared
    around: list[bool] = []  # the step's demand is half the fleet's (two healthy clusters)

    def check(into: list[bool], shared: bool) -> None:
        for d in chaos.drivers:
            seen = d.demand
            if shared:
                into.append(seen.fleet is not None and seen.fleet.share == 0.5)
            else:
                into.append(seen == d.scale_set_demand.combined.current and seen.fleet is None)

    poll = 15.0  # fleetView.pollInterval: the first read after the outage starts
    for at in range(int(down_from + poll), int(down_to), 10):
        loop.call_at(loop.start + at, check, during, False)
    for at in (*range(10 * 60, 30 * 60, 60), *range(int(down_to) + 180, int(down_to) + 1200, 60)):
        loop.call_at(loop.start + at, check, around, True)
    world.run()
    store = world.fleet_store()
    failed = store.failed_queries if store is not None else 0
    expected = (
        "every read in the outage fails; from the first one each listener decides on its own "
        "sources' demand, unshared, exactly as with fleetView off; sharing resumes after"
    )
    observed = (
        f"{failed} read(s) failed; {sum(during)}/{len(during)} checks in the outage saw the "
        f"unshared demand; {sum(around)}/{len(around)} checks before and after saw a share of "
        "1/2"
    )
    held = failed > 0 and bool(during) and all(during) and sum(around) > len(around) // 2
    return Outcome(
        "fleet_store_down (15 min, 2 clusters)",
        "virtual-time fleet store -> FleetShareSource + reconciler",
        expected,
        observed,
        held,
    )


WORLD_CASES: dict[str, Callable[[], Outcome]] = {
    "node_loss": node_loss,
    "placeholder_deleted": placeholder_deleted,
    "karpenter_consolidation": consolidation,
    "listener_crash": listener_crash_world,
    "listener_crash_x50": listener_crash_restarts,
    "second_listener": second_listener,
    "clock_jump_forward": lambda: clock_jump(600),
    "clock_jump_back": lambda: clock_jump(-600),
    "k8s_429_writes": api_refusing_writes,
    "k8s_5xx_writes_past_lease": api_refusing_writes_past_lease,
    "stale_cache_outage": stale_cache_outage,
    "hud_absurd_world": hud_faults_world,
    "fleet_store_down": fleet_store_down,
}


# --- the chaos day -------------------------------------------------------------------------------

CHAOS_SEEDS = (1, 2, 3)


@dataclass(frozen=True)
class ChaosResult:
    seed: int
    jobs_total: int
    jobs_completed: int
    jobs_failed: int
    jobs_stuck: int
    faults_applied: int
    faults_skipped: tuple[str, ...]
    crashes: int
    restarts: int
    report: Report
    #: Placeholder pods created during the day, and those missing any hardening field.
    placeholders_created: int
    not_hardened: tuple[str, ...]
    #: Real runner pods preempted by another job's workflow pod (from the event log).
    runners_preempted_by_workflows: int


def is_hardened(pod: dict[str, Any]) -> bool:
    """docs/design.md#placeholder-pods / issue 7: runAsNonRoot, no privilege escalation, every
    capability dropped, read-only root fs, no service-account token, seccomp RuntimeDefault."""
    spec = pod.get("spec") or {}
    pod_ctx = spec.get("securityContext") or {}
    containers = spec.get("containers") or []
    return (
        pod_ctx.get("runAsNonRoot") is True
        and (pod_ctx.get("seccompProfile") or {}).get("type") == "RuntimeDefault"
        and spec.get("automountServiceAccountToken") is False
        and bool(containers)
        and all(
            (c.get("securityContext") or {}).get("allowPrivilegeEscalation") is False
            and (c.get("securityContext") or {}).get("readOnlyRootFilesystem") is True
            and ((c.get("securityContext") or {}).get("capabilities") or {}).get("drop") == ["ALL"]
            for c in containers
        )
    )


def run_chaos(seed: int) -> ChaosResult:
    """config/scenarios/chaos.yaml for one simulated day with its sidecar fault plan."""
    from simulator.faults import plan_for_scenario
    from simulator.scenarios.scenario import resolve

    scenario = load_scenario("chaos")
    plan = plan_for_scenario(resolve("chaos"))
    world = World(scenario, "capacity-aware", seed=seed)
    chaos = WorldChaos(world, plan, seed=seed)
    scheduler = chaos.install()
    observers = observe_world(world)
    created: list[str] = []
    not_hardened: list[str] = []

    def on_pod(event_type: str, pod: dict[str, Any]) -> None:
        labels = pod["metadata"].get("labels") or {}
        if event_type == "ADDED" and "arc-capacity.dev/pair" in labels:
            created.append(pod["metadata"]["name"])
            if not is_hardened(pod):
                not_hardened.append(pod["metadata"]["name"])

    for handle in world.clusters.values():
        handle.store.subscribe(on_pod, kinds=("Pod",))
    results = world.run()
    (report,) = [o.finish(world.loop.now()) for o in observers.values()]
    return ChaosResult(
        seed=seed,
        jobs_total=results["jobs_total"],
        jobs_completed=results["jobs_completed"],
        jobs_failed=results["jobs_failed"],
        jobs_stuck=results["jobs_stuck"],
        faults_applied=len({id(f) for _, _, f in scheduler.applied}),
        faults_skipped=tuple(f.label() for f in scheduler.skipped),
        crashes=chaos.record.crashes,
        restarts=chaos.record.restarts,
        report=report,
        placeholders_created=len(created),
        not_hardened=tuple(not_hardened),
        runners_preempted_by_workflows=_runners_preempted_by_workflows(world),
    )


def _runners_preempted_by_workflows(world: World) -> int:
    import json

    count = 0
    for line in world.log.lines():
        event = json.loads(line)
        if (
            event["type"] == "pod_disrupted"
            and event.get("reason") == "preempted"
            and "-ph-" not in event.get("pod", "")
            and str(event.get("by", "")).endswith("-workflow")
        ):
            count += 1
    return count
