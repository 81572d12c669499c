"""The wired provider: cache + checks + snapshot + writer, over the HTTP face."""

from __future__ import annotations

from kubernetes import client

from providers.kubernetes.provider import KubernetesProvider
from providers.simulated.k8s_face import K8sFace
from providers.simulated.store import ObjectStore
from reconciler.ports import PairSpec
from reconciler.settings import parse_capacity_aware
from reconciler.snapshot import Demand
from state_machine.record import pod_names
from tests.kubernetes import objects as o
from tests.kubernetes.conftest import TARGET


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

        # A new runner template (Helm upgrade) sizes the next placeholders, no restart.
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
