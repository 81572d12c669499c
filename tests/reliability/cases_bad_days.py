"""Fault cases of issue 34's bad days, each against real ``python -m listener run`` processes
whose Kubernetes API goes through a fault proxy (tests/reliability/bad_day.py). Each case
returns an :class:`Outcome` whose observed text holds no timings (bounds are checked, figures
are measured by ``bench/bad_days.py``). ``tests/reliability/test_bad_days.py`` runs the same
scenarios as behaviour-named tests; the fault matrix renders them.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from simulator.faces.actions import Fault as Answer
from simulator.faces.live_world import LiveWorld
from simulator.faults import Fault, FaultKind
from tests.reliability.bad_day import (
    LEASE_SECONDS,
    ProxiedListener,
    fault,
    polls_between,
    quiet_spec,
    start_proxied,
    wait_for,
)
from tests.reliability.cases import Outcome

#: The issue's bound on SIGTERM to exit (ARC's listener pod has a 60 s grace period).
EXIT_BOUND = 5.0
WHERE = "k8s proxy -> real listener process"

Scenario = Callable[[LiveWorld, Path, list[ProxiedListener]], Outcome]


def ready_owner(world: LiveWorld, work: Path, started: list[ProxiedListener]) -> ProxiedListener:
    one = start_proxied(world, work / f"owner-{len(started)}")
    started.append(one)
    if not wait_for(one.ready, 60):
        raise AssertionError(f"the listener never became ready\n{one.process.logs()}")
    return one


def sigterm_while(what: str, injected: Fault) -> Scenario:
    def scenario(world: LiveWorld, work: Path, started: list[ProxiedListener]) -> Outcome:
        owner = ready_owner(world, work, started)
        owner.proxy.inject(injected)
        # A scale patch follows every 202: wait for the fault to be met, then retrying.
        wait_for(lambda: bool(owner.proxy.injected), 20)
        time.sleep(1.0)
        running = owner.process.running
        code, took = owner.terminate_timed()
        held = running and code == 0 and took < EXIT_BOUND
        return Outcome(
            f"k8s {what} at SIGTERM",
            WHERE,
            "exit 0 within 5 s whatever the API does (writes wait on a stop token, on a "
            "daemon lane; an exit deadline backs it)",
            f"exit code {code}, {'within' if took < EXIT_BOUND else 'AFTER'} 5 s",
            held,
        )

    return scenario


def lease_lost_then_api_back(
    world: LiveWorld, work: Path, started: list[ProxiedListener]
) -> Outcome:
    owner = ready_owner(world, work, started)
    owner.proxy.inject(fault(FaultKind.K8S_5XX, status=503))
    outage = time.monotonic()
    lost_by = outage + LEASE_SECONDS * 2 / 3  # client-go's renew deadline: 2/3 of the Lease
    wait_for(lambda: time.monotonic() > lost_by + 0.5, LEASE_SECONDS * 2)
    owner.proxy.clear()
    exited = wait_for(lambda: not owner.process.running, 15)
    proc = owner.process.proc
    code = proc.returncode if proc is not None else None
    late = [w for w in owner.proxy.writes if w[0] > lost_by and "/leases/" not in w[2]]
    return Outcome(
        "k8s 503 until the Lease is lost, then back",
        WHERE,
        "the process exits 1 (a successor waits out the Lease); the recording proxy shows no "
        "write from it after the Lease could no longer be renewed",
        f"{'exited' if exited else 'DID NOT EXIT'} with code {code}; writes after the "
        f"renew deadline: {len(late)}",
        exited and code == 1 and not late,
    )


def stuck_scale_write(world: LiveWorld, work: Path, started: list[ProxiedListener]) -> Outcome:
    one = start_proxied(world, work / "stock", capacity={"enabled": False})
    started.append(one)
    wait_for(lambda: len(world.actions.requests_to("get_message")) >= 2, 30)
    one.proxy.inject(fault(FaultKind.K8S_429, retry_after=120))
    stuck_at = time.monotonic()
    closed = wait_for(lambda: "advertising 0" in one.process.logs(200), 15)
    time.sleep(3.0)
    during = sorted(set(polls_between(world, stuck_at + 3.0, time.monotonic())))
    one.proxy.clear()
    caught_up = wait_for(lambda: "caught up" in one.process.logs(200), 45)
    after = time.monotonic()
    wait_for(lambda: bool(polls_between(world, after, time.monotonic())), 10)
    later = polls_between(world, after, time.monotonic())
    reopened = bool(later) and later[-1] == world.spec.max_runners
    return Outcome(
        "k8s 429 Retry-After 120 on the scale write (capacity-aware off)",
        WHERE,
        "GetMessage goes on, advertising 0 while the write is stuck, and maxRunners again "
        "once it went through",
        f"header while stuck: {during or 'NO POLL'}; gate "
        f"{'closed' if closed else 'NOT closed'}, {'reopened' if reopened else 'NOT reopened'}"
        f" once the write {'went through' if caught_up else 'DID NOT go through'}",
        closed and during == [0] and caught_up and reopened,
    )


def session_left_behind(world: LiveWorld, work: Path, started: list[ProxiedListener]) -> Outcome:
    owner = ready_owner(world, work, started)
    scale_set = world.scale_set.id
    left = world.actions.session_of(scale_set)
    # A 503 asking for 30 s: the client's retry waits past the 1 s the exit allows.
    world.actions.fail_next("delete_session", Answer.http(503, Retry_After="30"))
    code, took = owner.terminate_timed()
    still_there = world.actions.session_of(scale_set) == left

    def conflicts() -> int:
        return sum(1 for r in world.actions.requests_to("create_session") if r.status == 409)

    before = conflicts()
    successor = start_proxied(world, work / "successor")
    started.append(successor)
    ready = wait_for(successor.ready, 30)
    deleted = [
        r.status for r in world.actions.requests_to("delete_session") if r.path.endswith(f"/{left}")
    ][-1:] == [204]
    now_held = world.actions.session_of(scale_set)
    held = (
        code == 0
        and took < EXIT_BOUND
        and still_there
        and ready
        and deleted
        and conflicts() - before == 1
        and now_held not in (None, left)
    )
    return Outcome(
        "actions 503 on the session delete at exit",
        "Actions face + k8s proxy -> real listener processes",
        "exit 0 within 5 s with the session noted in the Lease; the next owner deletes it on "
        "its first 409 and opens its own at once",
        f"exit code {code}; session {'left behind' if still_there else 'GONE'}; the next "
        f"process met {conflicts() - before} 409, "
        f"{'deleted' if deleted else 'DID NOT delete'} the leftover, "
        f"{'ready' if ready else 'NOT READY'} with its own session",
        held,
    )


SCENARIOS: dict[str, Scenario] = {
    "k8s_unreachable_at_sigterm": sigterm_while(
        "unreachable (every call hangs)", fault(FaultKind.K8S_TIMEOUT, hold=120)
    ),
    "k8s_429_retry_after_120_at_sigterm": sigterm_while(
        "429 Retry-After 120", fault(FaultKind.K8S_429, retry_after=120)
    ),
    "k8s_lease_lost_then_back": lease_lost_then_api_back,
    "k8s_stuck_scale_write": stuck_scale_write,
    "actions_session_left_behind": session_left_behind,
}


def run_scenario(scenario: Scenario) -> Outcome:
    """One scenario in its own live world, every process it started killed at the end."""
    started: list[ProxiedListener] = []
    with tempfile.TemporaryDirectory() as tmp, LiveWorld(quiet_spec()) as world:
        try:
            return scenario(world, Path(tmp), started)
        finally:
            for one in started:
                one.close()


BAD_DAY_CASES: dict[str, Callable[[], Outcome]] = {
    name: (lambda s=scenario: run_scenario(s)) for name, scenario in SCENARIOS.items()
}
