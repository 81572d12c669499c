"""The listener places workflow placeholders where the hook template places workflow pods: it
reads the template from the ConfigMap the runner template mounts, through the real client's
watch on the Kubernetes face, and falls back to the runner pod's placement, saying why, when it
cannot."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client

from providers.kubernetes.permissions import missing_permissions, required_permissions
from providers.kubernetes.provider import KubernetesProvider
from reconciler.ports import PairSpec
from reconciler.snapshot import Demand
from simulator.engine.store import ObjectStore
from simulator.faces.k8s import K8sFace
from state_machine.record import pod_names
from tests.providers.kubernetes import objects as o
from tests.providers.kubernetes.test_provider import provider_on
from tests.providers.kubernetes.test_rbac_and_permissions import SA, TOKENS, listener_api, rbac
from tests.providers.kubernetes.test_rbac_and_permissions import (
    service_account as arc_service_account,
)

HOOK_DIR = "/home/runner/hook-template"
GPU_POOL = {"karpenter.sh/nodepool": "gpu"}
GPU_TAINT = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
RUNNER_POOL = o.runner_template()["nodeSelector"]


def hook_configmap(spec: dict[str, Any] | str, name: str = "hooks") -> dict[str, Any]:
    text = spec if isinstance(spec, str) else yaml.safe_dump({"spec": spec})
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": o.NS},
        "data": {"workflow-pod.yaml": text},
    }


def mounting(configmap: str = "hooks", env: bool = True) -> dict[str, Any]:
    """A runner template (the default one's CPU pool) that mounts ``configmap`` as its hook
    template, as config/values-capacity-aware.yaml does."""
    template = o.runner_template()
    runner = template["containers"][0]
    if env:
        runner["env"].append(
            {
                "name": "ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE",
                "value": f"{HOOK_DIR}/workflow-pod.yaml",
            }
        )
    runner["volumeMounts"] = [{"name": "hook-template", "mountPath": HOOK_DIR}]
    template["volumes"] = [{"name": "hook-template", "configMap": {"name": configmap}}]
    return template


GPU_HOOK = {
    "priorityClassName": "arc-workflow",
    "nodeSelector": GPU_POOL,
    "tolerations": [GPU_TAINT],
    "containers": [{"name": "$job", "resources": {"requests": {"nvidia.com/gpu": "1"}}}],
}


def cluster(store: ObjectStore, template: dict[str, Any], *configmaps: dict[str, Any]) -> None:
    store.mutate(
        "EphemeralRunnerSet",
        o.NS,
        o.ERS,
        lambda ers: ers["spec"]["ephemeralRunnerSpec"].update(spec=template),
    )
    for configmap in configmaps:
        store.create(configmap)


def started(api: client.ApiClient) -> KubernetesProvider:
    return provider_on(api, absent_retry=0.2)


def halves(provider: KubernetesProvider, pair: str = "abcde-1") -> tuple[dict[str, Any], ...]:
    provider.snapshot(now=o.T0, demand=Demand())  # sees the latest template, as a step does
    spec = PairSpec(pair, o.ERS, *pod_names(o.ERS, pair), o.T0 + 60)
    return tuple(pod["spec"] for pod in provider.writer.builder.build(spec))


def placement(provider: KubernetesProvider) -> bool | None:
    """The placement fact a snapshot carries (a drop check's: it builds no placeholder
    builder of its own, so it says what the last step's builder did)."""
    return provider.drop_snapshot(now=o.T0, demand=Demand()).placed_by_hook_template


def test_workflow_placeholders_are_placed_like_the_hook_template_s_workflow_pods(
    api: client.ApiClient, store: ObjectStore, caplog: pytest.LogCaptureFixture
) -> None:
    """Runners in a CPU pool, workflow pods in a tainted GPU pool (the hook template says so):
    a workflow placeholder placed like the runner would reserve room where no workflow pod
    ever lands, and one needing a GPU would never schedule."""
    cluster(store, mounting(), hook_configmap(GPU_HOOK))
    caplog.set_level(logging.INFO, logger="providers.kubernetes.provider")
    provider = started(api)
    try:
        assert placement(provider) is None  # no builder yet
        runner, workflow = halves(provider)
        assert placement(provider) is True
        assert runner["nodeSelector"] == RUNNER_POOL
        assert workflow["nodeSelector"] == GPU_POOL
        assert workflow["tolerations"] == [GPU_TAINT]
        said = [r.getMessage() for r in caplog.records if "hook template's" in r.getMessage()]
        assert len(said) == 1
        assert "ConfigMap hooks key workflow-pod.yaml" in said[0]
        assert "nodeSelector {'karpenter.sh/nodepool': 'gpu'}, 1 toleration(s)" in said[0]
    finally:
        provider.stop()


def test_an_edit_of_the_hook_template_moves_the_next_workflow_placeholders(
    api: client.ApiClient, store: ObjectStore
) -> None:
    """The runner reads the mounted file per job, so an edited ConfigMap places the next
    workflow pods elsewhere: the next workflow placeholders follow without a restart."""
    cluster(store, mounting(), hook_configmap(GPU_HOOK))
    provider = started(api)
    try:
        assert halves(provider)[1]["nodeSelector"] == GPU_POOL
        moved = {**GPU_HOOK, "nodeSelector": {"karpenter.sh/nodepool": "gpu-large"}}
        rv = store.mutate(
            "ConfigMap",
            o.NS,
            "hooks",
            lambda cm: cm["data"].update({"workflow-pod.yaml": yaml.safe_dump({"spec": moved})}),
        )["metadata"]["resourceVersion"]
        assert provider.cache.wait_until(
            lambda c: c.get("ConfigMap", o.NS, "hooks")["metadata"]["resourceVersion"] == rv, 10
        )
        assert halves(provider, "abcde-2")[1]["nodeSelector"] == moved["nodeSelector"]
    finally:
        provider.stop()


def test_a_hook_template_without_placement_leaves_the_workflow_placeholder_unplaced(
    api: client.ApiClient, store: ObjectStore
) -> None:
    """config/hook-template.yaml sets a class and requests, no placement: its workflow pods go
    to any node whose taints they tolerate, which the runner's tainted pool is not. A
    placeholder placed like the runner would reserve room there for pods that cannot use it."""
    plain = {"priorityClassName": "arc-workflow", "containers": [{"name": "$job"}]}
    cluster(store, mounting(), hook_configmap(plain))
    provider = started(api)
    try:
        runner, workflow = halves(provider)
        assert runner["nodeSelector"] == RUNNER_POOL and runner["tolerations"]
        assert "nodeSelector" not in workflow and "tolerations" not in workflow
    finally:
        provider.stop()


@pytest.mark.parametrize(
    ("template", "configmaps", "why"),
    [
        (mounting(env=False), (), "sets no ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE"),
        (mounting("missing"), (), "ConfigMap missing key workflow-pod.yaml"),
        (mounting(), (hook_configmap("spec: [unclosed"),), "is not valid YAML"),
        (mounting(), (hook_configmap("- a list"),), "is not a mapping"),
    ],
)
def test_an_unreadable_hook_template_places_workflow_placeholders_like_the_runner_saying_why(
    api: client.ApiClient,
    store: ObjectStore,
    caplog: pytest.LogCaptureFixture,
    template: dict[str, Any],
    configmaps: tuple[dict[str, Any], ...],
    why: str,
) -> None:
    """Placed like the runner pod, as before the listener read the template, and one warning
    that says what it could not read (not one per step)."""
    cluster(store, template, *configmaps)
    caplog.set_level(logging.WARNING, logger="providers.kubernetes.provider")
    provider = started(api)
    try:
        halves(provider)
        runner, workflow = halves(provider, "abcde-2")
        assert workflow["nodeSelector"] == runner["nodeSelector"] == RUNNER_POOL
        assert placement(provider) is False
        warnings = [r.getMessage() for r in caplog.records if "hook template" in r.getMessage()]
        assert len(warnings) == 1
        assert why in warnings[0]
        assert "placed like the runner pod" in warnings[0]
    finally:
        provider.stop()


@pytest.fixture
def rbac_store() -> ObjectStore:
    s = ObjectStore(time.time, history=5000)
    for obj in (*o.small_cluster(), *o.cluster_admin()):
        s.create(obj)
    s.create(arc_service_account(SA, "arc-systems", "arc-runners", "arc-runners"))
    cluster(s, mounting(), hook_configmap(GPU_HOOK))
    return s


@pytest.fixture
def rbac_face(rbac_store: ObjectStore) -> Iterator[K8sFace]:
    with K8sFace(rbac_store, tokens=TOKENS) as face:
        yield face


def test_without_rbac_for_configmaps_the_listener_runs_and_says_how_to_grant_it(
    rbac_face: K8sFace, rbac_store: ObjectStore, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """An upgrade that has not re-applied RBAC yet: the new listener must not stay unready
    for a read it can do without. It is ready (no required permission missing), places
    workflow placeholders like the runner, and its warning names the fix."""
    code, _, _ = rbac(
        tmp_path, rbac_face, "--scale-set", "arc-runners", "--namespace", "arc-runners", "--apply"
    )
    assert code == 0

    def without_configmaps(role: dict[str, Any]) -> None:
        role["rules"] = [r for r in role["rules"] if "configmaps" not in r["resources"]]

    rbac_store.mutate("Role", "arc-runners", "arc-capacity-listener", without_configmaps)
    caplog.set_level(logging.WARNING, logger="providers.kubernetes.provider")
    with listener_api(rbac_face) as api:
        assert missing_permissions(api, required_permissions([o.NS])) == []
        optional = missing_permissions(api, required_permissions([o.NS], optional=True))
        assert [str(p) for p in optional] == [
            "list core/configmaps in namespace arc-runners",
            "watch core/configmaps in namespace arc-runners",
        ]
        provider = started(api)
        try:
            runner, workflow = halves(provider)
            assert workflow["nodeSelector"] == runner["nodeSelector"] == RUNNER_POOL
        finally:
            provider.stop()
    warning = next(r.getMessage() for r in caplog.records if "hook template" in r.getMessage())
    assert "may not list ConfigMaps in namespace arc-runners" in warning
    assert "arc-capacity-listener rbac" in warning
