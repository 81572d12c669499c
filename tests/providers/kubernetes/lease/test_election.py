"""Lease election (coordination.k8s.io/v1) through the real kubernetes client on the face."""

from __future__ import annotations

import asyncio

import pytest
from kubernetes import client

from providers.kubernetes.lease.election import (
    LeaseElector,
    LeaseLostError,
    LeaseRecord,
    LeaseTiming,
    held_by_other,
)
from reconciler.clock import ManualClock
from tests.providers.kubernetes import objects as o

NAME = "arc-capacity-listener-arc-runners"


def elector(api: client.ApiClient, identity: str, clock: ManualClock) -> LeaseElector:
    return LeaseElector(
        api, namespace=o.NS, name=NAME, identity=identity, timing=LeaseTiming(), clock=clock
    )


def record(holder: str, duration: int = 15) -> LeaseRecord:
    return LeaseRecord(holder, duration, "", 0, "7")


def test_a_live_lease_of_another_holder_is_respected_until_one_second_after_it_expires() -> None:
    rec = record("a")
    assert held_by_other(rec, "b", observed_at=100.0, now=114.0)
    assert not held_by_other(rec, "b", observed_at=100.0, now=115.0)
    assert not held_by_other(rec, "b", observed_at=100.0, now=116.0)


def test_an_empty_or_own_holder_is_never_held_by_other() -> None:
    assert not held_by_other(record(""), "b", observed_at=100.0, now=100.0)
    assert not held_by_other(record("b"), "b", observed_at=100.0, now=100.0)


def test_the_first_process_creates_the_lease_and_the_second_waits(
    api: client.ApiClient,
) -> None:
    clock = ManualClock(1000.0)
    first, second = elector(api, "pod-a_x1", clock), elector(api, "pod-b_x2", clock)
    assert first.try_acquire_or_renew()
    assert not second.try_acquire_or_renew()
    lease = client.CoordinationV1Api(api).read_namespaced_lease(NAME, o.NS)
    assert lease.spec.holder_identity == "pod-a_x1"
    assert lease.spec.lease_duration_seconds == 15
    assert lease.spec.lease_transitions == 0
    assert second.holder == "pod-a_x1"


def test_a_renewing_owner_keeps_the_lease_however_long_the_second_waits(
    api: client.ApiClient,
) -> None:
    clock = ManualClock(1000.0)
    first, second = elector(api, "a", clock), elector(api, "b", clock)
    assert first.try_acquire_or_renew()
    for _ in range(20):
        clock.advance(5)
        assert first.try_acquire_or_renew()
        assert not second.try_acquire_or_renew()


def test_a_lease_first_seen_just_now_counts_as_live_whatever_its_renew_time(
    api: client.ApiClient,
) -> None:
    """Like client-go, expiry is measured on our own clock from when we first saw the record:
    another node's clock may be minutes off, so its renewTime proves nothing."""
    clock = ManualClock(1000.0)
    assert elector(api, "a", clock).try_acquire_or_renew()
    clock.advance(3600)
    assert not elector(api, "b", clock).try_acquire_or_renew()


def test_the_second_takes_over_when_the_owner_stops_renewing_and_counts_a_transition(
    api: client.ApiClient,
) -> None:
    clock = ManualClock(1000.0)
    first, second = elector(api, "a", clock), elector(api, "b", clock)
    assert first.try_acquire_or_renew()
    assert not second.try_acquire_or_renew()  # observes the record now
    clock.advance(14)
    assert not second.try_acquire_or_renew()
    clock.advance(2)
    assert second.try_acquire_or_renew()
    lease = client.CoordinationV1Api(api).read_namespaced_lease(NAME, o.NS)
    assert (lease.spec.holder_identity, lease.spec.lease_transitions) == ("b", 1)
    assert not first.is_leader  # its last renew is 16 s old, past the 10 s renew deadline
    assert not first.try_acquire_or_renew()  # and it cannot get it back while b renews


def test_a_released_lease_is_taken_at_once(api: client.ApiClient) -> None:
    clock = ManualClock(1000.0)
    first, second = elector(api, "a", clock), elector(api, "b", clock)
    assert first.try_acquire_or_renew()
    assert not second.try_acquire_or_renew()
    first.release()
    assert second.try_acquire_or_renew()


def test_of_two_takers_of_an_expired_lease_only_one_wins(api: client.ApiClient) -> None:
    clock = ManualClock(1000.0)
    owner = elector(api, "a", clock)
    assert owner.try_acquire_or_renew()
    b, c = elector(api, "b", clock), elector(api, "c", clock)
    assert not b.try_acquire_or_renew() and not c.try_acquire_or_renew()  # both observe it
    leases = client.CoordinationV1Api(api)
    stale = leases.read_namespaced_lease(NAME, o.NS)
    clock.advance(16)
    # Both read the same expired record; b writes first, c's write carries a stale version.
    assert b.try_acquire_or_renew()
    stale.spec.holder_identity = "c"
    with pytest.raises(client.exceptions.ApiException) as raised:
        leases.replace_namespaced_lease(NAME, o.NS, stale)
    assert raised.value.status == 409
    assert not c.try_acquire_or_renew()


def test_hold_raises_lease_lost_when_another_process_took_the_lease(
    api: client.ApiClient,
) -> None:
    """The loss names the new holder, read by a renewal that found it, so the deadline leaves
    a loaded 2-core runner time for that renewal's round trip (at 0.3 s the loss was sometimes
    declared before any renewal had read the intruder, naming nobody)."""
    first = LeaseElector(
        api,
        namespace=o.NS,
        name=NAME,
        identity="a",
        timing=LeaseTiming(duration=5, renew_deadline=2.0, retry_period=0.1),
    )
    assert first.try_acquire_or_renew()
    lease_api = client.CoordinationV1Api(api)
    lease = lease_api.read_namespaced_lease(NAME, o.NS)
    lease.spec.holder_identity = "intruder"
    lease_api.replace_namespaced_lease(NAME, o.NS, lease)

    async def hold() -> None:
        await asyncio.wait_for(first.hold(asyncio.Event()), 5)

    with pytest.raises(LeaseLostError, match="intruder"):
        asyncio.run(hold())


def test_timing_refuses_a_renew_deadline_not_below_the_duration() -> None:
    with pytest.raises(ValueError, match="renew_deadline"):
        LeaseTiming(duration=10, renew_deadline=10, retry_period=2)
    assert LeaseTiming.for_duration(15) == LeaseTiming(15, 10.0, 2.0)


@pytest.mark.parametrize(
    ("note_at_exit", "released", "inherited"),
    [
        ("sess-1", True, "sess-1"),  # the delete failed at exit: the successor deletes it
        ("", True, ""),  # deleted at exit: nothing to hand over
        ("sess-1", False, "sess-1"),  # killed without releasing: the renewals carried it
    ],
)
def test_the_next_holder_inherits_the_session_the_last_one_noted(
    api: client.ApiClient, note_at_exit: str, released: bool, inherited: str
) -> None:
    """The Lease carries the holder's message session to the next holder (lease.py step 4),
    so a session that could not be deleted at exit is deleted by the next process instead of
    blocking it with 409 until the service expires it (issue 34)."""
    clock = ManualClock(1000.0)
    first, second = elector(api, "a", clock), elector(api, "b", clock)
    assert first.try_acquire_or_renew()
    first.session_note = "sess-1"
    assert first.try_acquire_or_renew()  # a renewal writes the note
    first.session_note = note_at_exit
    if released:
        first.release()
    else:
        clock.advance(16)  # the holder died: its Lease expires
        assert not second.try_acquire_or_renew()  # first sight of the record
        clock.advance(16)
    assert second.try_acquire_or_renew()
    assert second.inherited_session == inherited
    assert first.inherited_session == ""  # nobody held it before the first
