"""Issue 34's bad days, against real ``python -m listener run`` processes whose Kubernetes API
goes through a fault proxy (tests/reliability/bad_day.py). Exit times and header-back times are
measured by ``bench/bad_days.py``; these tests check the behaviour with the issue's bounds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from simulator.faces.actions import Fault
from simulator.faces.live import LiveWorld
from simulator.faults import FaultKind
from tests.reliability.bad_day import (
    LEASE_SECONDS,
    ProxiedListener,
    fault,
    polls_between,
    quiet_spec,
    start_proxied,
    wait_for,
)

#: The issue's bound on SIGTERM to exit (ARC's listener pod has a 60 s grace period).
EXIT_BOUND = 5.0


@pytest.fixture
def world() -> Iterator[LiveWorld]:
    with LiveWorld(quiet_spec()) as running:
        yield running


@pytest.fixture
def listeners(tmp_path: Path) -> Iterator[list[ProxiedListener]]:
    started: list[ProxiedListener] = []
    yield started
    for one in started:
        one.close()
        print(one.process.logs(120))


def _ready_owner(
    world: LiveWorld, tmp_path: Path, started: list[ProxiedListener]
) -> ProxiedListener:
    one = start_proxied(world, tmp_path / "owner")
    started.append(one)
    assert wait_for(one.ready, 60), one.process.logs()
    return one


@pytest.mark.parametrize(
    ("what", "injected"),
    [
        ("unreachable", fault(FaultKind.K8S_TIMEOUT, hold=120)),
        ("429 Retry-After 120", fault(FaultKind.K8S_429, retry_after=120)),
    ],
)
def test_sigterm_exits_0_within_5s_whatever_the_kubernetes_api_does(
    world: LiveWorld, tmp_path: Path, listeners: list[ProxiedListener], what: str, injected: object
) -> None:
    """SIGTERM while every Kubernetes call hangs (or is throttled for 120 s) and a scale patch
    is retrying: exit 0 within 5 s. Prevents issue 34's 49 s exit, where the scaler's retry
    loop ran in a worker thread that ``asyncio.run`` waited for (a SIGKILL under ARC)."""
    owner = _ready_owner(world, tmp_path, listeners)
    owner.proxy.inject(injected)  # type: ignore[arg-type]
    # A scale patch is sent after every 202 (the idle poll window is short): wait for one
    # to meet the fault, then one more second of retrying.
    assert wait_for(lambda: "retrying" in owner.process.logs(200) or owner.proxy.injected, 20)
    time.sleep(1.0)
    assert owner.process.running, owner.process.logs()
    code, took = owner.terminate_timed()
    assert code == 0, owner.process.logs()
    assert took < EXIT_BOUND, f"{what}: exit took {took:.1f}s\n{owner.process.logs()}"


def test_a_process_that_lost_its_lease_sends_no_write_when_the_api_returns(
    world: LiveWorld, tmp_path: Path, listeners: list[ProxiedListener]
) -> None:
    """The API answers 503 to everything until the Lease can no longer be renewed, then
    answers again: the process exits 1 (a successor waits out the Lease) and the recording
    proxy shows no write from it after the Lease was lost. Prevents issue 34's stale write: a
    scale patch retried across the outage landed from a process that no longer owned the
    scale set."""
    owner = _ready_owner(world, tmp_path, listeners)
    owner.proxy.inject(fault(FaultKind.K8S_5XX, status=503))
    outage = time.monotonic()
    # client-go's proportions for a 4 s Lease: the renew deadline is 2/3 of it.
    lost_by = outage + LEASE_SECONDS * 2 / 3
    assert wait_for(lambda: time.monotonic() > lost_by + 0.5, LEASE_SECONDS * 2)
    owner.proxy.clear()
    assert wait_for(lambda: not owner.process.running, 15), owner.process.logs()
    assert owner.process.proc is not None and owner.process.proc.returncode == 1
    late = [w for w in owner.proxy.writes if w[0] > lost_by and "/leases/" not in w[2]]
    assert late == [], owner.process.logs()


def test_get_message_goes_on_at_0_while_a_scale_write_is_stuck(
    world: LiveWorld, tmp_path: Path, listeners: list[ProxiedListener]
) -> None:
    """Stock ARC mode (no Lease): the EphemeralRunnerSet patch is throttled with
    ``Retry-After: 120``. GetMessage keeps being sent, advertising 0 (fail-closed) while the
    write is stuck, and the configured capacity again once it went through. Prevents issue
    34's silent listener: no GetMessage at all while the write loop retried."""
    one = start_proxied(world, tmp_path / "stock", capacity={"enabled": False})
    listeners.append(one)
    assert wait_for(lambda: len(world.actions.requests_to("get_message")) >= 2, 30)
    one.proxy.inject(fault(FaultKind.K8S_429, retry_after=120))
    stuck_at = time.monotonic()
    assert wait_for(lambda: "advertising 0" in one.process.logs(200), 15), one.process.logs()
    time.sleep(3.0)
    during = polls_between(world, stuck_at + 3.0, time.monotonic())
    assert during, "no GetMessage while the write was stuck"
    assert set(during) == {0}, during
    one.proxy.clear()
    reopened = wait_for(lambda: "caught up" in one.process.logs(200), 45)
    assert reopened, one.process.logs()
    after = time.monotonic()
    assert wait_for(lambda: polls_between(world, after, time.monotonic()), 10)
    assert polls_between(world, after, time.monotonic())[-1] == world.spec.max_runners


def test_a_session_the_last_listener_could_not_delete_is_deleted_by_the_next(
    world: LiveWorld, tmp_path: Path, listeners: list[ProxiedListener]
) -> None:
    """The Actions service answers 503 to the session delete at exit: the process still exits
    0 within 5 s, noting the session in its Lease; the next owner deletes that session on its
    first 409 and opens its own at once. Prevents issue 34's leftover session, which made the
    next process meet 409 until the service expired it."""
    owner = _ready_owner(world, tmp_path, listeners)
    scale_set = world.scale_set.id
    left = world.actions.session_of(scale_set)
    # The client retries a 503 after 1 s, then 2 s: the 1.5 s the exit allows takes two.
    world.actions.fail_next("delete_session", Fault.http(503), times=2)
    code, took = owner.terminate_timed()
    assert code == 0 and took < EXIT_BOUND, (code, took, owner.process.logs())
    assert world.actions.session_of(scale_set) == left, "the session was deleted after all"
    conflicts = len([r for r in world.actions.requests_to("create_session") if r.status == 409])
    successor = start_proxied(world, tmp_path / "successor")
    listeners.append(successor)
    assert wait_for(successor.ready, 30), successor.process.logs()
    deletes = [
        r for r in world.actions.requests_to("delete_session") if r.path.endswith(f"/{left}")
    ]
    assert [r.status for r in deletes][-1] == 204, deletes
    new_conflicts = [r for r in world.actions.requests_to("create_session") if r.status == 409]
    assert len(new_conflicts) - conflicts == 1  # one 409, then the leftover is deleted
    assert world.actions.session_of(scale_set) not in (None, left)
