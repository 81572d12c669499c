"""The wired provider: cache + checks + snapshot + writer, over the HTTP face."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from kubernetes import client

from providers.kubernetes.provider import KubernetesProvider
from reconciler.ports import PairSpec
from reconciler.settings import parse_capacity_aware
from reconciler.snapshot import Demand
from simulator.engine.store import ObjectStore
from simulator.faces.k8s import K8sFace
from state_machine.record import pod_names
from tests.providers.kubernetes import objects as o
from tests.providers.kubernetes.face_fixtures import TARGET


def test_provider_checks_snapshots_and_writes(
    api: client.ApiClient, face: K8sFace, store: ObjectStore
):
    settings = parse_capacity_aware({}, where="test")
    provider = KubernetesProvider(
        api, settings, TARGET, instance=o.INSTANCE, backoff_base=0.01, backoff_cap=0.05
    )
    provider.start()
    try:
        assert provider.wait_synced(10)
        assert provider.startup_checks() == []
        snap = provider.snapshot(now=o.T0, demand=Demand(queued_jobs=1))
        assert [r.name for r in snap.runner_pods] == ["arc-runners-runner-a"]
        assert snap.fit is None  # Karpenter is not installed here

        runner, workflow = pod_names(o.ERS, "abcde-1")
        provider.writer.create_pair(PairSpec("abcde-1", o.ERS, runner, workflow, o.T0 + 60))
        assert provider.cache.wait_until(lambda c: c.get("Pod", o.NS, workflow) is not None, 10)
        assert set(provider.snapshot(now=o.T0, demand=Demand()).placeholders) == {"abcde-1"}

        # A runner template edited in place sizes the next placeholders, no restart.
        def bigger(ers: dict) -> None:
            ers["spec"]["ephemeralRunnerSpec"]["spec"]["containers"][0]["resources"] = {
                "requests": {"cpu": "3", "memory": "6Gi"}
            }

        rv = store.mutate("EphemeralRunnerSet", o.NS, o.ERS, bigger)["metadata"]["resourceVersion"]
        assert provider.cache.wait_until(
            lambda c: c.get("EphemeralRunnerSet", o.NS, o.ERS)["metadata"]["resourceVersion"] == rv,
            10,
        )
        built, _ = provider.writer.builder.build(
            PairSpec("abcde-2", o.ERS, *pod_names(o.ERS, "abcde-2"), o.T0)
        )
        assert built["spec"]["containers"][0]["resources"]["requests"] == {
            "cpu": "3",
            "memory": "6Gi",
        }
    finally:
        provider.stop()


def provider_on(api: client.ApiClient, **cache_options: Any) -> KubernetesProvider:
    """A started provider with default settings over the face, synced."""
    provider = KubernetesProvider(
        api,
        parse_capacity_aware({}, where="test"),
        TARGET,
        instance=o.INSTANCE,
        backoff_base=0.01,
        backoff_cap=0.05,
        **cache_options,
    ).start()
    assert provider.wait_synced(10)
    return provider


def _mutate_and_wait(provider: KubernetesProvider, store: ObjectStore, change) -> None:  # type: ignore[no-untyped-def]
    rv = store.mutate("EphemeralRunnerSet", o.NS, o.ERS, change)["metadata"]["resourceVersion"]
    assert provider.cache.wait_until(
        lambda c: c.get("EphemeralRunnerSet", o.NS, o.ERS)["metadata"]["resourceVersion"] == rv,
        10,
    )


def test_a_replicas_patch_keeps_the_builder_and_its_fit_memo(
    api: client.ApiClient, store: ObjectStore
) -> None:
    """The scaler patches spec.replicas all the time: that is no new template, so the builder
    (and the fit estimate built on it) must not be rebuilt for it."""
    provider = provider_on(api)
    try:
        builder = provider.writer.builder
        _mutate_and_wait(provider, store, lambda ers: ers["spec"].update(replicas=7))
        assert provider.writer.builder is builder
    finally:
        provider.stop()


def test_reading_snapshots_builds_no_writer_and_a_new_template_reaches_the_writer_in_use(
    api: client.ApiClient, store: ObjectStore
) -> None:
    """A snapshot only needs the placeholder builder (for the fit estimate): it must not open
    the writer and its thread pool. The writer the listener took once (it keeps it for the
    shutdown sweep) must still size placeholders like a template edited in place, once a
    snapshot has seen the edit."""
    provider = provider_on(api)
    try:
        provider.snapshot(now=o.T0, demand=Demand())
        assert provider._writer is None
        writer = provider.writer

        def bigger(ers: dict) -> None:  # type: ignore[type-arg]
            ers["spec"]["ephemeralRunnerSpec"]["spec"]["containers"][0]["resources"] = {
                "requests": {"cpu": "3", "memory": "6Gi"}
            }

        _mutate_and_wait(provider, store, bigger)
        provider.snapshot(now=o.T0, demand=Demand())
        assert writer.builder.runner_requests["cpu"] == 3
    finally:
        provider.stop()


def test_a_template_placeholders_cannot_be_built_from_keeps_the_last_sizes(
    api: client.ApiClient, store: ObjectStore, caplog: pytest.LogCaptureFixture
) -> None:
    """A runner template edited to one without requests: the next placeholders keep the
    previous sizes (the runners already running match them), with one warning."""
    provider = provider_on(api)
    try:
        before = provider.writer.builder.runner_requests

        def no_requests(ers: dict) -> None:  # type: ignore[type-arg]
            ers["spec"]["ephemeralRunnerSpec"]["spec"]["containers"][0]["resources"] = {}

        caplog.set_level(logging.WARNING)
        _mutate_and_wait(provider, store, no_requests)
        assert provider.writer.builder.runner_requests == before
        provider.snapshot(now=o.T0, demand=Demand())  # asks the writer again: no new warning
        warnings = [r.getMessage() for r in caplog.records if "cannot size" in r.getMessage()]
        assert len(warnings) == 1
        assert f"EphemeralRunnerSet {o.ERS}" in warnings[0]
        assert "keeping the previous sizes" in warnings[0]
    finally:
        provider.stop()


def test_the_provider_s_start_up_checks_size_pairs_and_warn_about_a_capped_pool(
    store: ObjectStore,
):
    """The listener's own start-up path hands the placeholder builder to the checks, so a
    NodePool whose limit binds with poorly fitting types is named before the first step."""
    pool = o.nodepool("runners", limits={"cpu": "16"})
    pool["spec"]["template"]["spec"]["requirements"] = [
        {
            "key": "node.kubernetes.io/instance-type",
            "operator": "In",
            "values": ["c5.xlarge", "c5.4xlarge"],
        }
    ]
    store.create(pool)
    settings = parse_capacity_aware({"workflowResources": {"cpu": "2"}}, where="test")
    with (
        K8sFace(store, bookmark_interval=0.05) as karpenter_face,  # NodePools served
        client.ApiClient(client.Configuration(host=karpenter_face.url)) as api,
    ):
        provider = KubernetesProvider(
            api, settings, TARGET, instance=o.INSTANCE, backoff_base=0.01, backoff_cap=0.05
        )
        provider.start()
        try:
            assert provider.wait_synced(10)
            (finding,) = provider.startup_checks()
        finally:
            provider.stop()
    assert finding.check == "nodepool-types"
    assert "NodePool runners limits cpu 16, less than maxRunners pairs ask for" in finding.message
    assert "allows c5.xlarge:" in finding.message


def test_a_scale_set_arc_switched_off_is_seen_through_the_watch_and_logged_once_each_way(
    api: client.ApiClient, store: ObjectStore, caplog: pytest.LogCaptureFixture
):
    """The EphemeralRunnerSet's ``status.phase: Outdated`` (ARC #4652) reaches the snapshot
    through the real watch: max runners 0, one warning naming it; back on, one info line."""
    settings = parse_capacity_aware({}, where="test")
    provider = KubernetesProvider(
        api, settings, TARGET, instance=o.INSTANCE, backoff_base=0.01, backoff_cap=0.05
    )
    provider.start()

    def set_phase(phase: str) -> None:
        o.set_ers_phase(store, provider.cache, phase, 10)

    try:
        assert provider.wait_synced(10)
        assert provider.snapshot(now=o.T0, demand=Demand()).switched_off is None
        set_phase("Outdated")
        with caplog.at_level(logging.INFO, logger="providers.kubernetes.provider"):
            snaps = [provider.snapshot(now=o.T0, demand=Demand()) for _ in range(3)]
            set_phase("Running")
            back = provider.snapshot(now=o.T0, demand=Demand())
        assert {(s.max_runners, s.switched_off) for s in snaps} == {
            (0, f"EphemeralRunnerSet {o.ERS} status.phase is Outdated")
        }
        assert back.switched_off is None and back.max_runners == TARGET.max_runners
        lines = [
            (r.levelname, r.getMessage())
            for r in caplog.records
            if r.name == "providers.kubernetes.provider" and "hook template" not in r.getMessage()
        ]
        assert [level for level, _ in lines] == ["WARNING", "INFO"]
        assert "switched off by ARC" in lines[0][1] and "on again" in lines[1][1]
    finally:
        provider.stop()


def test_a_job_image_seen_through_the_watch_is_pulled_by_the_next_workflow_half_until_it_fails(
    api: client.ApiClient, store: ObjectStore
) -> None:
    """``prePullAuto`` end to end over the real client: the watch cache keeps the job
    container's image and the init container states (slim.py), the snapshot hands them to
    the builder, the next workflow half pulls the runner's image then the job's; once a
    placeholder reports that pull failed, later halves leave the image out."""
    provider = provider_on(api)
    try:
        name = "arc-runners-runner-a-workflow"  # the fixture's workflow pod

        def job_container(pod: dict) -> None:
            pod["spec"]["containers"][0].update(name="job", image="ghcr.io/acme/ci:7")

        rv = store.mutate("Pod", o.NS, name, job_container)["metadata"]["resourceVersion"]
        assert provider.cache.wait_until(
            lambda c: c.get("Pod", o.NS, name)["metadata"]["resourceVersion"] == rv, 10
        )
        provider.snapshot(now=o.T0, demand=Demand())
        spec = PairSpec("abcde-1", o.ERS, *pod_names(o.ERS, "abcde-1"), o.T0 + 60)
        provider.writer.create_pair(spec)
        _, workflow = pod_names(o.ERS, "abcde-1")
        assert provider.cache.wait_until(lambda c: c.get("Pod", o.NS, workflow) is not None, 10)
        created = store.get("Pod", o.NS, workflow)
        images = [c["image"] for c in created["spec"]["initContainers"]]
        assert images == ["ghcr.io/actions/actions-runner:latest", "ghcr.io/acme/ci:7"]

        def pull_failed(pod: dict) -> None:
            pod["status"]["initContainerStatuses"] = [
                {"name": "pre-pull-0", "state": {"terminated": {"exitCode": 0}}},
                {"name": "pre-pull-1", "state": {"waiting": {"reason": "ImagePullBackOff"}}},
            ]

        rv = store.mutate("Pod", o.NS, workflow, pull_failed)["metadata"]["resourceVersion"]
        assert provider.cache.wait_until(
            lambda c: c.get("Pod", o.NS, workflow)["metadata"]["resourceVersion"] == rv, 10
        )
        provider.snapshot(now=o.T0 + 1, demand=Demand())
        _, rebuilt = provider.writer.builder.build(
            PairSpec("abcde-2", o.ERS, *pod_names(o.ERS, "abcde-2"), o.T0)
        )
        assert [c["image"] for c in rebuilt["spec"]["initContainers"]] == [
            "ghcr.io/actions/actions-runner:latest"
        ]
    finally:
        provider.stop()
