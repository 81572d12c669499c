"""Placeholder writes against the HTTP face: idempotent, UID-safe, counted."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from providers.kubernetes.pods.placeholders import PlaceholderPodBuilder
from providers.kubernetes.watch.cache import KubeCache
from providers.kubernetes.write.writer import KubernetesPlaceholderWriter
from reconciler.ports import PairSpec, PodRef
from reconciler.settings import parse_capacity_aware
from simulator.engine.store import ObjectStore
from simulator.faces.k8s import K8sFace
from state_machine.record import pod_names
from tests.providers.kubernetes import objects as o

RUNNER, WORKFLOW = pod_names(o.ERS, "abcde-1")
SPEC = PairSpec("abcde-1", o.ERS, RUNNER, WORKFLOW, expires_at=o.T0 + 1800)


@pytest.fixture
def writer(
    api: client.ApiClient, store: ObjectStore, cache: KubeCache
) -> Iterator[KubernetesPlaceholderWriter]:
    ers = store.get("EphemeralRunnerSet", o.NS, o.ERS)
    builder = PlaceholderPodBuilder(
        parse_capacity_aware({}, where="test"), ers, instance=o.INSTANCE, namespace=o.NS, owner=ers
    )
    w = KubernetesPlaceholderWriter(api, builder, cache=cache, max_workers=2)
    yield w
    w.close()


def test_create_pair_creates_both_pods_once_and_already_exists_is_success(
    api: client.ApiClient, writer: KubernetesPlaceholderWriter, store: ObjectStore
):
    writer.create_pair(SPEC)
    # A retried step or an adopted pair, from a writer whose cache has not seen the pods.
    blind = KubernetesPlaceholderWriter(api, writer.builder, cache=None, max_workers=2)
    blind.create_pair(SPEC)
    blind.close()
    runner = store.get("Pod", o.NS, RUNNER)
    workflow = store.get("Pod", o.NS, WORKFLOW)
    assert runner["spec"]["priority"] == -10 and workflow["spec"]["priority"] == 10
    assert (
        runner["metadata"]["ownerReferences"][0]["uid"]
        == store.get("EphemeralRunnerSet", o.NS, o.ERS)["metadata"]["uid"]
    )
    assert writer.calls == {"create": 2} and blind.calls == {"create": 2}
    assert writer.outcomes == {"created": 2} and blind.outcomes == {"exists": 2}


def test_a_mend_creates_only_the_half_that_is_gone(
    writer: KubernetesPlaceholderWriter, store: ObjectStore, cache: KubeCache
):
    """A mend re-creates a pair whose other half survived: the survivor's POST could only
    meet AlreadyExists, one wasted write per mend (storm: ~400 per run)."""
    writer.create_pair(SPEC)
    uid = store.get("Pod", o.NS, RUNNER)["metadata"]["uid"]
    assert cache.wait_until(lambda c: c.get("Pod", o.NS, WORKFLOW) is not None, 10)
    store.delete("Pod", o.NS, RUNNER, grace_period_seconds=0)  # the scheduler preempted it
    assert cache.wait_until(lambda c: c.was_deleted("Pod", o.NS, RUNNER, uid), 10)
    writer.create_pair(SPEC)
    assert store.get("Pod", o.NS, RUNNER)["metadata"]["uid"] != uid
    assert writer.calls == {"create": 3}
    assert writer.outcomes == {"created": 3, "exists": 1}


def test_delete_resolves_uids_and_skips_pods_nobody_knows(
    writer: KubernetesPlaceholderWriter, store: ObjectStore
):
    writer.create_pair(SPEC)  # the cache may not have seen them yet: the create answer has uids
    writer.delete_pods([PodRef(o.NS, RUNNER), PodRef(o.NS, WORKFLOW), PodRef(o.NS, "never-was")])
    assert store.find("Pod", o.NS, RUNNER) is None and store.find("Pod", o.NS, WORKFLOW) is None
    assert writer.calls["delete"] == 2
    assert writer.outcomes["deleted"] == 2 and writer.outcomes["skipped"] == 1


def test_delete_never_removes_a_recreated_pod_of_the_same_name(
    writer: KubernetesPlaceholderWriter, store: ObjectStore
):
    writer.create_pair(SPEC)
    old_uid = store.get("Pod", o.NS, RUNNER)["metadata"]["uid"]
    store.delete("Pod", o.NS, RUNNER, grace_period_seconds=0)
    store.create(o.placeholder("abcde-1", "runner"))  # same name, new uid
    writer.delete_pods([PodRef(o.NS, RUNNER, old_uid)])
    assert store.get("Pod", o.NS, RUNNER)["metadata"]["uid"] != old_uid  # still there
    assert writer.outcomes["uid_conflict"] == 1


def test_delete_of_a_pod_already_gone_is_success(
    writer: KubernetesPlaceholderWriter, store: ObjectStore
):
    writer.delete_pods([PodRef(o.NS, "vanished", "some-uid")])
    assert writer.outcomes == {"not_found": 1}


def test_renew_lease_merge_patches_only_the_annotation(
    writer: KubernetesPlaceholderWriter, store: ObjectStore, cache: KubeCache
):
    writer.create_pair(SPEC)
    store.mutate(
        "Pod", o.NS, RUNNER, lambda p: p["metadata"]["annotations"].update({"other": "kept"})
    )
    writer.renew_lease([PodRef(o.NS, RUNNER), PodRef(o.NS, "vanished")], o.T0 + 3600.25)
    annotations = store.get("Pod", o.NS, RUNNER)["metadata"]["annotations"]
    assert annotations == {
        "arc-capacity.dev/expires-at": "1700003600.250",
        "arc-capacity.dev/confirm-at": "binding",
        "other": "kept",
    }
    assert writer.outcomes["renewed"] == 1 and writer.outcomes["not_found"] == 1
    assert cache.wait_until(
        lambda c: (
            c.get("Pod", o.NS, RUNNER)["metadata"]["annotations"].get("arc-capacity.dev/expires-at")
            == "1700003600.250"
        ),
        10,
    )


def test_failures_are_counted_not_raised(writer: KubernetesPlaceholderWriter, store: ObjectStore):
    store.delete("PriorityClass", None, "arc-placeholder-runner")
    writer.create_pair(SPEC)  # admission refuses the runner half (403)
    assert writer.outcomes == {"failed_create": 1, "created": 1}
    assert store.find("Pod", o.NS, WORKFLOW) is not None


def test_the_api_server_stores_exactly_what_the_builder_built(
    writer: KubernetesPlaceholderWriter, store: ObjectStore
):
    runner, workflow = writer.builder.build(SPEC)
    writer.create_pair(SPEC)
    for built, priority in ((runner, -10), (workflow, 10)):
        stored = store.get("Pod", o.NS, built["metadata"]["name"])
        assert stored["spec"] == built["spec"] | {"priority": priority, "preemptionPolicy": "Never"}
        assert {k: stored["metadata"][k] for k in built["metadata"]} == built["metadata"]


def test_a_pod_preempted_before_its_delete_costs_no_call(
    writer: KubernetesPlaceholderWriter, store: ObjectStore, cache: KubeCache
):
    writer.create_pair(SPEC)
    uid = store.get("Pod", o.NS, RUNNER)["metadata"]["uid"]
    store.delete("Pod", o.NS, RUNNER, grace_period_seconds=0)  # the scheduler preempted it
    assert cache.wait_until(lambda c: c.was_deleted("Pod", o.NS, RUNNER, uid), 10)
    writer.delete_pods([PodRef(o.NS, RUNNER)])
    assert writer.calls["delete"] == 0 and writer.outcomes["skipped"] == 1


def test_consecutive_writes_on_one_keep_alive_connection_stay_in_step(
    face: K8sFace, store: ObjectStore, cache: KubeCache
):
    # One pooled connection, one worker: every call reuses the previous call's connection,
    # so a response body left unread would be parsed as the next status line.
    config = client.Configuration(host=face.url)
    config.connection_pool_maxsize = 1
    ers = store.get("EphemeralRunnerSet", o.NS, o.ERS)
    builder = PlaceholderPodBuilder(
        parse_capacity_aware({}, where="test"), ers, instance=o.INSTANCE, namespace=o.NS, owner=ers
    )
    with client.ApiClient(config) as api_client:
        w = KubernetesPlaceholderWriter(api_client, builder, cache=cache, max_workers=1)
        try:
            for n in range(3):
                runner, workflow = pod_names(o.ERS, f"abcde-{n}")
                w.create_pair(PairSpec(f"abcde-{n}", o.ERS, runner, workflow, o.T0))
                w.renew_lease([PodRef(o.NS, runner), PodRef(o.NS, workflow)], o.T0 + 1)
                w.delete_pods([PodRef(o.NS, runner), PodRef(o.NS, workflow)])
        finally:
            w.close()
    assert w.outcomes == {"created": 6, "renewed": 6, "deleted": 6}
