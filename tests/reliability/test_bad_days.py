"""Issue 34's bad days, against real ``python -m listener run`` processes whose Kubernetes API
goes through a fault proxy (scenarios in tests/reliability/cases_bad_days.py, also rendered in
the fault matrix). Exit and header-back times are measured by ``bench/bad_days.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from simulator.faces.live_world import LiveWorld
from tests.reliability.bad_day import ProxiedListener, quiet_spec
from tests.reliability.cases_bad_days import SCENARIOS, Scenario


@pytest.fixture
def world() -> Iterator[LiveWorld]:
    with LiveWorld(quiet_spec()) as running:
        yield running


@pytest.fixture
def listeners() -> Iterator[list[ProxiedListener]]:
    started: list[ProxiedListener] = []
    yield started
    for one in started:
        one.close()
        print(one.process.logs(120))


def _holds(
    scenario: Scenario, world: LiveWorld, tmp_path: Path, started: list[ProxiedListener]
) -> None:
    outcome = scenario(world, tmp_path, started)
    assert outcome.held, f"expected {outcome.expected}; got {outcome.observed}"


@pytest.mark.parametrize(
    "case", ["k8s_unreachable_at_sigterm", "k8s_429_retry_after_120_at_sigterm"]
)
def test_sigterm_exits_0_within_5s_whatever_the_kubernetes_api_does(
    world: LiveWorld, tmp_path: Path, listeners: list[ProxiedListener], case: str
) -> None:
    """SIGTERM while every Kubernetes call hangs (or is throttled for 120 s) and a scale patch
    is retrying: exit 0 within 5 s. Prevents issue 34's 49 s exit, where the scaler's retry
    loop ran in a worker thread that ``asyncio.run`` waited for (a SIGKILL under ARC)."""
    _holds(SCENARIOS[case], world, tmp_path, listeners)


def test_a_process_that_lost_its_lease_sends_no_write_when_the_api_returns(
    world: LiveWorld, tmp_path: Path, listeners: list[ProxiedListener]
) -> None:
    """The API answers 503 to everything until the Lease can no longer be renewed, then
    answers again: the process exits 1 and the recording proxy shows no write from it after
    the Lease was lost. Prevents issue 34's stale write: a scale patch retried across the
    outage landed from a process that no longer owned the scale set."""
    _holds(SCENARIOS["k8s_lease_lost_then_back"], world, tmp_path, listeners)


def test_get_message_goes_on_at_0_while_a_scale_write_is_stuck(
    world: LiveWorld, tmp_path: Path, listeners: list[ProxiedListener]
) -> None:
    """Stock ARC mode (no Lease): the EphemeralRunnerSet patch is throttled with
    ``Retry-After: 120``. GetMessage keeps being sent, advertising 0 while the write is stuck,
    and maxRunners again once it went through. Prevents issue 34's silent listener: no
    GetMessage at all while the write loop retried."""
    _holds(SCENARIOS["k8s_stuck_scale_write"], world, tmp_path, listeners)


def test_a_session_the_last_listener_could_not_delete_is_deleted_by_the_next(
    world: LiveWorld, tmp_path: Path, listeners: list[ProxiedListener]
) -> None:
    """The Actions service answers 503 to the session delete at exit: the process still exits
    0 within 5 s, noting the session in its Lease; the next owner deletes that session on its
    first 409 and opens its own at once. Prevents issue 34's leftover session, which made the
    next process meet 409 until the service expired it."""
    _holds(SCENARIOS["actions_session_left_behind"], world, tmp_path, listeners)
