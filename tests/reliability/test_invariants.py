"""The invariant observer: each promise, kept and broken, reported with time and detail."""

from __future__ import annotations

from providers.kubernetes.pods import labels as L
from simulator.engine.loop import EventLoop
from simulator.engine.store import ObjectStore
from simulator.measurement.invariants import Invariant, InvariantObserver

SET = "arc-runners"


def observer(
    loop: EventLoop, reservable: list[int] | None = None, **kw: object
) -> InvariantObserver:
    truth = reservable if reservable is not None else [0]
    return InvariantObserver(
        scale_set=SET, interval=30, start=loop.start, reservable=lambda: truth[0], **kw
    )  # type: ignore[arg-type]


def placeholder(name: str, expires_at: float, scale_set: str = SET) -> dict:
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "labels": {L.LABEL_SCALE_SET: scale_set},
            "annotations": {L.ANNOTATION_EXPIRES_AT: f"{expires_at:.3f}"},
        },
    }


def test_advertising_above_live_max_runners_is_reported_after_the_grace() -> None:
    loop = EventLoop()
    obs = observer(loop, [5], max_runners=5, max_runners_grace=6)
    obs.advertised(loop.now(), 5)
    obs.max_runners(loop.now() + 10, 0)  # a drain
    obs.check(loop.now() + 15)  # within the grace: the listener pod is restarting
    assert obs.counts[Invariant.CAPACITY_WITHIN_MAX_RUNNERS] == 0
    obs.check(loop.now() + 17)
    obs.check(loop.now() + 20)  # the same excess is one problem, reported once
    report = obs.finish(loop.now() + 21)
    assert report.counts[Invariant.CAPACITY_WITHIN_MAX_RUNNERS] == 1
    (violation,) = report.violations
    assert violation.at == 17 and "advertised 5 > live maxRunners 0" in violation.detail


def test_over_advertising_for_less_than_an_interval_is_allowed_longer_is_not() -> None:
    loop = EventLoop()
    truth = [4]
    obs = observer(loop, truth)
    t0 = loop.now()
    obs.advertised(t0, 4)
    truth[0] = 3  # a placeholder was lost
    obs.check(t0 + 10)
    obs.check(t0 + 30)
    assert obs.counts[Invariant.CAPACITY_RESERVABLE] == 0
    obs.advertised(t0 + 31, 3)  # corrected by the next step: the excess ends
    obs.check(t0 + 40)
    truth[0] = 1
    obs.check(t0 + 50)
    obs.check(t0 + 81)
    report = obs.finish(t0 + 82)
    assert report.counts[Invariant.CAPACITY_RESERVABLE] == 1
    assert "advertised 3, only 1 reservable, for 31s" in report.violations[0].detail
    assert report.max_excess == 2 and report.longest_excess == 31


def test_placeholders_past_their_lease_and_leftovers_are_reported_from_the_store() -> None:
    loop = EventLoop()
    store = ObjectStore(loop.now)
    obs = observer(loop)
    obs.watch_store(store, loop)
    store.create(placeholder("p-r", expires_at=loop.now() + 60))
    store.create(placeholder("other-r", expires_at=loop.now() - 1000, scale_set="other"))
    obs.check(loop.now() + 89)
    assert obs.counts[Invariant.PLACEHOLDER_TTL] == 0
    # Renewed in time: the lease moves, no violation.
    store.mutate(
        "Pod",
        "ns",
        "p-r",
        lambda p: p["metadata"]["annotations"].update(
            {L.ANNOTATION_EXPIRES_AT: f"{loop.now() + 600:.3f}"}
        ),
    )
    obs.check(loop.now() + 200)
    assert obs.counts[Invariant.PLACEHOLDER_TTL] == 0
    obs.check(loop.now() + 631)
    obs.check(loop.now() + 700)
    assert obs.counts[Invariant.PLACEHOLDER_TTL] == 1  # once per pod
    obs.listener_gone(loop.now() + 700)
    obs.check(loop.now() + 731)
    report = obs.finish(loop.now() + 732)
    assert report.counts[Invariant.NO_LEFTOVER_PLACEHOLDERS] == 1
    assert "1 placeholder(s) left 31s after the listener stopped: p-r" in str(report.violations)
    assert report.placeholders_seen == 1


def test_a_deleted_placeholder_is_not_a_leftover() -> None:
    loop = EventLoop()
    store = ObjectStore(loop.now)
    obs = observer(loop)
    obs.watch_store(store, loop)
    store.create(placeholder("p-w", expires_at=loop.now() + 600))
    obs.scale_set_gone(loop.now())
    store.delete("Pod", "ns", "p-w")
    assert obs.finish(loop.now() + 100).ok


def test_messages_lost_or_handled_twice_are_reported() -> None:
    loop = EventLoop()
    obs = observer(loop)
    for message_id in (1, 2, 3):
        obs.message_delivered(loop.now(), message_id)
    obs.message_handled(loop.now(), 1)
    obs.message_handled(loop.now(), 2)
    obs.message_handled(loop.now(), 2)
    report = obs.finish(loop.now())
    details = [v.detail for v in report.violations]
    assert details == ["message 2 handled twice", "1 delivered message(s) never handled: [3]"]


def test_memory_that_keeps_growing_is_reported_and_a_plateau_is_not() -> None:
    loop = EventLoop()
    flat, growing = observer(loop), observer(loop)
    for i in range(40):
        flat.memory(loop.now() + i, 5_000_000 + (i % 3) * 1000)
        growing.memory(loop.now() + i, 5_000_000 + i * 200_000)
    assert flat.finish(loop.now() + 40).ok
    report = growing.finish(loop.now() + 40)
    assert report.counts[Invariant.MEMORY_BOUNDED] == 1
