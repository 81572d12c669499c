"""The watch-fed cache against the HTTP face, with the real kubernetes client."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, watch

from providers.kubernetes.observe.relevance import Verdict
from providers.kubernetes.observe.translate import build_snapshot
from providers.kubernetes.watch.cache import KubeCache
from providers.kubernetes.watch.slim import slim_pod
from providers.kubernetes.watch.targets import WatchTarget, default_targets
from reconciler.clock import ManualClock
from reconciler.snapshot import Demand
from simulator.engine.store import ObjectStore
from simulator.faces.k8s import K8sFace
from tests.providers.kubernetes import objects as o
from tests.providers.kubernetes.face_fixtures import TARGET, WATCHES

WAIT = 10.0


def names(cache: KubeCache, kind: str = "Pod") -> set[str]:
    return {obj["metadata"]["name"] for obj in cache.list(kind)}


def test_initial_sync_holds_only_the_selected_objects(cache: KubeCache, face: K8sFace):
    assert cache.has_synced
    assert names(cache) == {"arc-runners-runner-a", "arc-runners-runner-a-workflow"}
    assert names(cache, "Node") == {"node-a", "node-b"}
    assert names(cache, "EphemeralRunnerSet") == {o.ERS}
    assert len(cache.list("PriorityClass")) == 4
    # Karpenter is not installed on this cluster: tolerated, marked absent, empty.
    assert sorted(cache.absent()) == ["NodeClaim/*", "NodePool/*"]
    assert cache.list("NodePool") == []
    # One LIST per target, and not a single one more.
    assert cache.stats["list"] == len(default_targets(TARGET))


def test_watch_events_update_the_cache_and_fire_on_change(
    cache: KubeCache, store: ObjectStore, changes: list[str]
):
    store.create(o.placeholder("abcde-1", "runner", node=None, phase="Pending"))
    store.mutate("Node", None, "node-b", lambda n: n["spec"].update(unschedulable=True))
    store.delete("Pod", o.NS, "arc-runners-runner-a-workflow", grace_period_seconds=0)

    def caught_up(c: KubeCache) -> bool:
        node_b = c.get("Node", None, "node-b")
        return (
            "arc-runners-ph-abcde-1-r" in names(c)
            and "arc-runners-runner-a-workflow" not in names(c)
            and node_b is not None
            and node_b["spec"].get("unschedulable") is True
        )

    assert cache.wait_until(caught_up, WAIT)
    assert {"Pod", "Node"} <= set(changes)
    snap = build_snapshot(cache, TARGET, now=o.T0, demand=Demand())
    assert set(snap.placeholders) == {"abcde-1"}
    assert snap.workflow_pods == ()
    assert cache.stats["list"] == len(default_targets(TARGET))  # still no relist


def test_a_placeholder_turning_running_is_a_rise_and_a_node_change_is_not(
    api: client.ApiClient, face: K8sFace, store: ObjectStore
):
    """The leading trigger's source (providers/kubernetes/observe/relevance.py), through real
    watches: a cordon and a fresh Pending placeholder are no rise; the placeholder turning Running
    is."""
    rises: list[int] = []
    seen: list[Verdict] = []

    def on_event(verdict: Verdict) -> None:
        seen.append(verdict)
        if verdict.rise:
            rises.append(1)

    cache = KubeCache(
        api,
        default_targets(TARGET),
        on_event=on_event,
        watch_timeout=30,
        backoff_base=0.01,
        backoff_cap=0.05,
        absent_retry=30,
    ).start()
    try:
        assert cache.wait_synced(10) and face.wait_watches(WATCHES, 10)
        store.mutate("Node", None, "node-b", lambda n: n["spec"].update(unschedulable=True))
        store.create(o.placeholder("abcde-1", "runner", node="node-a", phase="Pending"))

        def pending_seen(c: KubeCache) -> bool:
            node_b = c.get("Node", None, "node-b")
            return "arc-runners-ph-abcde-1-r" in names(c) and bool(
                node_b and node_b["spec"].get("unschedulable")
            )

        assert cache.wait_until(pending_seen, WAIT)
        assert rises == []  # a Pending placeholder and a cordon raise nothing
        assert any(v.relevant for v in seen)  # the cordon still wakes a (debounced) step
        store.mutate(
            "Pod", o.NS, "arc-runners-ph-abcde-1-r", lambda p: p["status"].update(phase="Running")
        )
        assert cache.wait_until(lambda c: bool(rises), WAIT)
        assert rises == [1]
    finally:
        cache.stop()


def test_a_dropped_watch_resumes_from_its_version_without_losing_events(
    cache: KubeCache, store: ObjectStore, face: K8sFace
):
    lists_before = cache.stats["list"]
    with store.lock:  # nothing reconnects until the changes are in
        assert face.drop_watches() == WATCHES
        store.create(o.placeholder("abcde-2", "runner"))
        store.mutate(
            "Pod", o.NS, "arc-runners-runner-a", lambda p: p["status"].update(phase="Succeeded")
        )
    assert cache.wait_until(
        lambda c: (
            "arc-runners-ph-abcde-2-r" in names(c)
            and c.get("Pod", o.NS, "arc-runners-runner-a")["status"]["phase"] == "Succeeded"
        ),
        WAIT,
    )
    assert cache.stats["reconnect"] >= 1
    assert cache.stats["list"] == lists_before  # resumed, not relisted
    assert cache.stats["relist_410"] == 0


def test_410_gone_relists_and_recovers_every_change(
    cache: KubeCache, store: ObjectStore, face: K8sFace
):
    with store.lock:
        face.drop_watches()
        store.create(o.placeholder("abcde-3", "workflow"))
        store.delete("Pod", o.NS, "arc-runners-runner-a-workflow", grace_period_seconds=0)
        store.mutate("EphemeralRunnerSet", o.NS, o.ERS, lambda e: e["spec"].update(replicas=3))
        store.create(o.node("node-c"))
        face.compact()  # every resumed watch now gets an ERROR event with a 410 Status
    assert cache.wait_until(
        lambda c: (
            "arc-runners-ph-abcde-3-w" in names(c)
            and "arc-runners-runner-a-workflow" not in names(c)
            and c.get("EphemeralRunnerSet", o.NS, o.ERS)["spec"]["replicas"] == 3
            and "node-c" in names(c, "Node")
        ),
        WAIT,
    )
    assert cache.stats["relist_410"] >= 4


def test_bookmarks_keep_quiet_watches_fresh_so_compaction_costs_no_relist(
    cache: KubeCache, store: ObjectStore, face: K8sFace
):
    for n in range(5):  # node changes only: every other watch sees bookmarks, no events
        store.create(o.node(f"extra-{n}"))
    latest = str(store.resource_version)
    absent = set(cache.absent())
    assert cache.wait_until(
        lambda c: all(
            rv == latest for key, rv in c.resource_versions().items() if key not in absent
        ),
        WAIT,
    )
    lists_before = cache.stats["list"]
    with store.lock:
        face.drop_watches()
        face.compact()
        store.create(o.placeholder("abcde-4", "runner"))
    assert cache.wait_until(lambda c: "arc-runners-ph-abcde-4-r" in names(c), WAIT)
    # Every watch resumed from its bookmarked version: no 410, no relist.
    assert cache.stats["relist_410"] == 0
    assert cache.stats["list"] == lists_before


def test_required_kinds_gate_the_sync_and_optional_ones_do_not(store: ObjectStore):
    # ARC's CRDs are missing: EphemeralRunnerSet/EphemeralRunner are required, so no sync.
    with K8sFace(store, absent_groups={"actions.github.com", "karpenter.sh"}) as face:
        config = client.Configuration(host=face.url)
        config.connection_pool_maxsize = 32
        with client.ApiClient(config) as api:
            cache = KubeCache(api, default_targets(TARGET), backoff_base=0.01, backoff_cap=0.05)
            with cache:
                required_arc = {
                    f"EphemeralRunnerSet/{o.NS}/f:metadata.name={o.ERS}",
                    f"EphemeralRunner/{o.NS}",
                }
                # Everything else listed (or was found absent); ARC's kinds keep failing.
                assert cache.wait_until(
                    lambda c: (
                        set(c.unsynced()) == required_arc
                        and len(c.absent()) == 3
                        and c.stats["error"] >= 4
                    ),
                    WAIT,
                )
                assert not cache.has_synced
                assert not cache.wait_synced(0)
                # The optional ARS is tolerated like Karpenter.
                assert f"AutoscalingRunnerSet/{o.NS}" in cache.absent()


def test_pods_are_slimmed_to_what_the_listener_reads():
    pod = o.runner_pod("r")
    pod["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    pod["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
        "arc-capacity.dev/expires-at": "1",
    }
    pod["spec"]["containers"][0]["env"] = [{"name": "SECRET", "value": "x"}]
    pod["spec"]["imagePullSecrets"] = [{"name": "registry"}]
    pod["status"]["initContainerStatuses"] = [
        {
            "name": "pre-pull-0",
            "image": "x",
            "imageID": "sha256:0",
            "state": {"waiting": {"reason": "ImagePullBackOff", "message": "long text"}},
        }
    ]
    slim = slim_pod(pod)
    assert "managedFields" not in slim["metadata"]
    assert slim["metadata"]["annotations"] == {"arc-capacity.dev/expires-at": "1"}
    assert slim["spec"]["containers"] == [
        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}
    ]
    assert slim["spec"]["imagePullSecrets"] == [{"name": "registry"}]
    # Init container states only as far as failed pre-pulls read them (job_images.py).
    assert slim["status"] == {
        "phase": "Running",
        "initContainerStatuses": [
            {"name": "pre-pull-0", "state": {"waiting": {"reason": "ImagePullBackOff"}}}
        ],
    }


def test_watch_targets_have_stable_keys():
    assert WatchTarget("Pod", "ns", "a=b").key == "Pod/ns/l:a=b"
    assert WatchTarget("Node").key == "Node/*"


def test_stale_for_reports_how_long_the_api_has_been_unreachable(cache: KubeCache, face: K8sFace):
    """The listener fails closed on this figure (listener/process/assembly.py): a quiet but
    healthy watch is not stale; an API that stops answering is, from its first failure on."""
    assert cache.stale_for() == 0.0
    face.stop()  # every watch breaks and every reconnect is refused
    assert cache.wait_until(lambda c: c.stale_for() > 0.0, WAIT)
    first = cache.stale_for()
    assert cache.wait_until(lambda c: c.stale_for() > first, WAIT)


# --- supervision (issue 10, failure 3) -------------------------------------------------------


def test_a_malformed_watch_line_is_counted_and_every_informer_keeps_applying_events(
    cache: KubeCache, store: ObjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An event whose object is not an object is counted, the target relists and keeps
    applying events. Prevents issue 10's failure 3: it ended the informer thread silently
    while the cache still looked fresh (has_synced true, stale_for 0)."""
    original = watch.Watch.stream
    poisoned = threading.Event()

    def stream(self: watch.Watch, func: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        if not poisoned.is_set():  # the first watch that reconnects gets the bad line
            poisoned.set()
            yield {"type": "MODIFIED", "object": None, "raw_object": "not an object"}
        yield from original(self, func, *args, **kwargs)

    monkeypatch.setattr(watch.Watch, "stream", stream)
    for pod_watch in list(cache._watches.values()):
        pod_watch.stop()  # reconnect every watch, through the poisoned stream
    assert cache.wait_until(lambda c: c.stats["crash"] >= 1, 10), cache.stats
    # Every informer (the poisoned one included) still applies events.
    store.create(o.ephemeral_runner("after-the-poison", job_id="2"))
    store.create(o.runner_pod("after-the-poison"))
    assert cache.wait_until(
        lambda c: (
            c.get("EphemeralRunner", o.NS, "after-the-poison") is not None
            and c.get("Pod", o.NS, "after-the-poison") is not None
        ),
        10,
    )
    assert cache.wait_until(lambda c: c.stale_for() == 0.0, 10)  # the crashed one relisted


def test_a_dead_informer_thread_makes_the_cache_stale(
    api: client.ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = ManualClock(100.0)
    c = KubeCache(api, default_targets(TARGET), clock=clock)
    monkeypatch.setattr(c, "_informer", lambda partition: None)  # every thread ends at once
    c.start()
    for thread in c._threads:
        thread.join(5)
    clock.advance(31.0)
    assert c.stale_for() == pytest.approx(31.0)
    c.stop()
