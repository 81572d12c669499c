"""client-go's reflector rules for reconnecting, relisting and backing off
(providers/kubernetes/watch/backoff.py), as a table, and on the real client through the fault
proxy: a watch cut after it delivered events is re-opened at once, however often it is cut."""

from __future__ import annotations

import random
import time

import pytest
from kubernetes import client

from providers.kubernetes.watch.backoff import START, Ending, Next, after, backoff_delay
from providers.kubernetes.watch.cache import KubeCache
from providers.kubernetes.watch.targets import default_targets
from simulator.engine.store import ObjectStore
from simulator.faces.fault_proxy import K8sFaultProxy
from simulator.faces.k8s import K8sFace
from simulator.faults import FaultKind
from tests.providers.kubernetes import objects as o
from tests.reliability.cases import TARGET, WAIT, WATCHES, fault, kube_rig

W, S, X = Ending.WORKED, Ending.SHORT, Ending.EXPIRED
WF, LF = Ending.WATCH_FAILED, Ending.LIST_FAILED


@pytest.mark.parametrize(
    ("endings", "expected"),
    [
        # A watch that worked, however it ended (timeout, cut): resume at once.
        ([W], Next(0, wait=False, relist=False)),
        ([WF, WF, W], Next(0, wait=False, relist=False)),  # ...and the failures are forgotten
        ([W, W, W, W, W, W], Next(0, wait=False, relist=False)),  # cuts never add up
        # Failures back off, growing while they are consecutive.
        ([WF], Next(1, wait=True, relist=False)),
        ([WF, WF, WF], Next(3, wait=True, relist=False)),
        ([S], Next(1, wait=True, relist=False)),  # client-go's "very short watch"
        ([LF], Next(1, wait=True, relist=True)),
        ([LF, LF], Next(2, wait=True, relist=True)),
        # 410: relist at once, without adding a back-off to the failures before it...
        ([W, X], Next(0, wait=False, relist=True, expired=True)),
        ([WF, WF, X], Next(2, wait=False, relist=True, expired=True)),
        # ...unless it follows another 410 with no watch that worked in between.
        ([X, X], Next(1, wait=True, relist=True, expired=True)),
        ([X, W, X], Next(0, wait=False, relist=True, expired=True)),
    ],
)
def test_reflector_rules(endings: list[Ending], expected: Next) -> None:
    plan = START
    for ending in endings:
        plan = after(ending, plan)
    assert plan == expected


@pytest.mark.parametrize(
    ("failures", "low", "high"),
    [(1, 0.25, 0.5), (2, 0.5, 1.0), (6, 8.0, 16.0), (7, 15.0, 30.0), (40, 15.0, 30.0)],
)
def test_backoff_doubles_per_consecutive_failure_up_to_the_cap(
    failures: int, low: float, high: float
) -> None:
    rng = random.Random(3)
    for _ in range(50):
        assert low <= backoff_delay(failures, 0.5, 30.0, rng) <= high


def test_watches_cut_again_and_again_after_delivering_events_reconnect_without_backing_off() -> (
    None
):
    """Prevents issue 34's slow recovery: the retry counter was reset only when a watch ended
    cleanly, so cuts 8 s apart backed off 0.5, 1.0, 1.8, 3.6, 7.2, 15.6 s and the header stayed
    at 0 for 36.7 s after the last one. The face sends bookmarks every 50 ms, so every cut
    stream has delivered events: no cut may cost a back-off."""
    with kube_rig() as rig, rig.cache(backoff_base=0.5, backoff_cap=30.0) as cache:
        assert cache.wait_synced(WAIT)
        rig.face.wait_watches(WATCHES, WAIT)
        waits: list[float] = []
        real = cache._backoff

        def recording(failures: int) -> float:
            waits.append(real(failures))
            return waits[-1]

        cache._backoff = recording  # type: ignore[method-assign]
        reconnects = cache.stats["reconnect"]
        time.sleep(0.3)  # every stream has delivered bookmarks before the first cut
        rig.proxy.inject(fault(FaultKind.K8S_WATCH_DROP, every=0.3))
        cut_enough = cache.wait_until(lambda c: c.stats["reconnect"] >= reconnects + 40, WAIT)
        rig.proxy.clear()
        whole = cache.wait_until(lambda c: c.stale_for() == 0.0, WAIT)
        time.sleep(0.2)
    assert cut_enough, cache.stats
    assert whole
    assert waits == []


def test_a_quiet_watch_reopened_after_an_outage_is_whole_before_any_event() -> None:
    """The API refuses everything, then answers again; nothing changes and no bookmark comes
    (a real API server sends one about a minute apart): the cache is whole as soon as every
    watch is re-opened. Prevents issue 34's 11 s header-back after an 8 s outage, where a
    re-opened watch counted as down until its first event."""
    store = _quiet_store()
    with (
        K8sFace(store, absent_groups={"karpenter.sh"}, bookmark_interval=3600) as face,
        K8sFaultProxy(face.url, seed=1) as proxy,
        client.ApiClient(client.Configuration(host=proxy.url)) as api,
        KubeCache(
            api, default_targets(TARGET), watch_timeout=30, backoff_base=0.01, backoff_cap=0.05
        ) as cache,
    ):
        assert cache.wait_synced(WAIT)
        face.wait_watches(WATCHES, WAIT)
        proxy.inject(fault(FaultKind.K8S_5XX, status=503))
        proxy.drop_streams()
        assert cache.wait_until(lambda c: c.stale_for() > 0, WAIT)
        lists = cache.stats["list"]
        proxy.clear()
        whole = cache.wait_until(lambda c: c.stale_for() == 0.0, WAIT)
        events = {key: p.watch_events for key, p in cache._partitions.items()}
    assert whole
    assert set(events.values()) == {0}, events  # whole from the open, not from an event
    assert cache.stats["list"] == lists  # resumed, not relisted


def _quiet_store() -> ObjectStore:
    store = ObjectStore(time.time, history=5000)
    for obj in o.small_cluster():
        store.create(obj)
    return store
