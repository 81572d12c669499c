"""Placeholder pod manifests: golden files for CPU, GPU and sidecar/init/overhead templates."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from providers.kubernetes.pods.placeholders import (
    PlaceholderPodBuilder,
    PlaceholderSpecError,
    jittered_lifetime,
)
from reconciler.ports import PairSpec
from reconciler.settings import parse_capacity_aware
from reconciler.snapshot import ClusterSnapshot, PodPhase, WorkflowPod
from state_machine.record import pod_names
from tests.providers.kubernetes import objects as o

GOLDEN = Path(__file__).resolve().parents[3] / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"


def pair(pair_id: str = "abcde-1", scale_set: str = o.ERS) -> PairSpec:
    runner, workflow = pod_names(scale_set, pair_id)
    return PairSpec(
        pair_id=pair_id,
        scale_set=scale_set,
        runner_pod=runner,
        workflow_pod=workflow,
        expires_at=o.T0 + 1800,
    )


def assert_golden(name: str, manifests: Any) -> None:
    path = GOLDEN / name
    text = json.dumps(manifests, indent=2, sort_keys=True) + "\n"
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"golden file {path} is missing; run with UPDATE_GOLDEN=1 to write it")
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs; review and rerun with UPDATE_GOLDEN=1"


def builder(
    template: dict,
    *,
    settings: dict | None = None,
    namespace: str = o.NS,
    owner: bool = True,
    workflow_pod_spec: dict | None = None,
) -> PlaceholderPodBuilder:
    ers = o.ers(template=template, uid="ers-uid-1")
    return PlaceholderPodBuilder(
        parse_capacity_aware(settings or {}, where="test"),
        ers,
        instance=o.INSTANCE,
        namespace=namespace,
        owner=ers if owner else None,
        workflow_pod_spec=workflow_pod_spec,
    )


def test_golden_cpu_runner():
    assert_golden("placeholder_cpu.json", builder(o.runner_template()).build(pair()))


def test_golden_gpu_runner():
    template = o.runner_template(
        nodeSelector={"karpenter.sh/nodepool": "gpu", "nvidia.com/gpu.present": "true"},
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "karpenter.k8s.aws/instance-family",
                                    "operator": "In",
                                    "values": ["g5", "g6"],
                                }
                            ]
                        }
                    ]
                }
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "podAffinityTerm": {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": {"app": "runner"}},
                        },
                    }
                ]
            },
        },
    )
    template["containers"][0]["resources"] = {"requests": {"cpu": "1", "memory": "2Gi"}}
    settings = {"workflowResources": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}}
    runner, workflow = builder(template, settings=settings).build(pair("abcde-7"))
    assert workflow["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert "podAntiAffinity" not in runner["spec"]["affinity"]
    assert_golden("placeholder_gpu.json", [runner, workflow])


def test_golden_init_container_sidecar_and_overhead():
    template = o.runner_template(
        initContainers=[
            {
                "name": "init-dind-externals",
                "image": "runner",
                "resources": {"requests": {"cpu": "2", "memory": "256Mi"}},
            },
            {
                "name": "proxy",
                "image": "envoy",
                "restartPolicy": "Always",
                "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
            },
        ],
        overhead={"cpu": "100m", "memory": "64Mi"},
        runtimeClassName="kata",
    )
    runner, workflow = builder(template, settings={"workflowResources": {"cpu": "2"}}).build(pair())
    # max(500m + 250m, 2) + 100m overhead; memory 1Gi + 256Mi + 64Mi.
    assert runner["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "2100m",
        "memory": "1344Mi",
    }
    assert "runtimeClassName" not in runner["spec"]
    assert_golden("placeholder_sidecar_overhead.json", [runner, workflow])


def test_every_placeholder_is_hardened_and_short_lived():
    runner, workflow = builder(o.runner_template()).build(pair())
    for pod in (runner, workflow):
        spec = pod["spec"]
        assert spec["terminationGracePeriodSeconds"] == 0
        assert spec["restartPolicy"] == "Never"
        assert spec["automountServiceAccountToken"] is False
        assert spec["securityContext"]["runAsNonRoot"] is True
        (container,) = spec["containers"]
        assert container["resources"]["requests"] == container["resources"]["limits"]
        assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
        assert "serviceAccountName" not in spec and "priority" not in spec
    assert runner["spec"]["priorityClassName"] == "arc-placeholder-runner"
    assert workflow["spec"]["priorityClassName"] == "arc-placeholder-workflow"
    assert runner["spec"]["activeDeadlineSeconds"] == workflow["spec"]["activeDeadlineSeconds"]


def test_lifetimes_are_jittered_deterministically_within_bounds():
    lifetimes = {jittered_lifetime(f"abcde-{n}", 14_400, 0.2) for n in range(200)}
    assert min(lifetimes) >= 14_400 * 0.8 and max(lifetimes) <= 14_400 * 1.2
    assert len(lifetimes) > 100
    assert jittered_lifetime("abcde-1", 14_400, 0.2) == jittered_lifetime("abcde-1", 14_400, 0.2)
    assert jittered_lifetime("abcde-1", 14_400, 0.0) == 14_400


def test_owner_reference_only_in_the_owner_namespace():
    same = builder(o.runner_template()).build(pair())[0]
    assert same["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": "EphemeralRunnerSet",
            "name": o.ERS,
            "uid": "ers-uid-1",
        }
    ]
    other = builder(o.runner_template(), namespace="arc-placeholders").build(pair())[0]
    assert "ownerReferences" not in other["metadata"]


def test_a_workflow_pod_spec_when_known_places_the_workflow_half():
    ers = o.ers(uid="u")
    b = PlaceholderPodBuilder(
        parse_capacity_aware({}, where="t"),
        ers,
        instance=o.INSTANCE,
        namespace=o.NS,
        owner=None,
        workflow_pod_spec={"nodeSelector": {"pool": "big"}},
    )
    runner, workflow = b.build(pair())
    assert workflow["spec"]["nodeSelector"] == {"pool": "big"}
    assert runner["spec"]["nodeSelector"] == {"karpenter.sh/nodepool": "runners"}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (PairSpec("abcde-1", o.ERS, "x" * 64, "ok-w", 0.0), "at most 63 characters"),
        (PairSpec("abcde-1", o.ERS, "Bad_Name", "ok-w", 0.0), "lowercase"),
        (PairSpec("abcde-1", "another-set", "ok-r", "ok-w", 0.0), "scale set 'another-set'"),
        (PairSpec("abcde-1", o.ERS, "same", "same", 0.0), "both halves"),
    ],
)
def test_bad_pair_specs_raise_a_typed_error(spec, message):
    with pytest.raises(PlaceholderSpecError, match=message):
        builder(o.runner_template()).build(spec)


def test_a_template_without_requests_or_containers_is_refused_with_advice():
    with pytest.raises(PlaceholderSpecError, match=r"set resources\.requests"):
        builder(o.runner_template(containers=[{"name": "runner", "image": "x"}]))
    ers = o.ers()
    del ers["spec"]["ephemeralRunnerSpec"]["spec"]
    with pytest.raises(PlaceholderSpecError, match=r"spec\.ephemeralRunnerSpec\.spec\.containers"):
        PlaceholderPodBuilder(
            parse_capacity_aware({}, where="t"), ers, instance="abcde", namespace=o.NS, owner=None
        )


@pytest.mark.parametrize(
    ("setting", "expected"),
    [(False, None), (True, "true"), ("30m", "1800s"), ("90s", "90s"), (7200, "7200s")],
)
def test_do_not_disrupt_goes_on_the_workflow_placeholder_only_as_true_or_a_duration(
    setting: object, expected: str | None
) -> None:
    runner, workflow = builder(o.runner_template(), settings={"doNotDisrupt": setting}).build(
        pair()
    )
    key = "karpenter.sh/do-not-disrupt"
    assert key not in runner["metadata"]["annotations"]
    assert workflow["metadata"]["annotations"].get(key) == expected


RUNNER_IMAGE = "ghcr.io/actions/actions-runner:latest"
JOB_IMAGE = "ghcr.io/acme/ci:latest"
DECLARED = ["ghcr.io/acme/ci:2024-06", "ghcr.io/acme/tools@sha256:" + "0" * 64]


def learned(image: str, *, secrets: tuple[str, ...] = (), at: float = o.T0) -> ClusterSnapshot:
    """A snapshot holding one running workflow pod whose ``job`` container runs ``image``."""
    pod = WorkflowPod(
        name="r-1-workflow",
        runner_pod="r-1",
        node_name="n1",
        phase=PodPhase.RUNNING,
        job_image=image,
        pull_secrets=secrets,
    )
    return ClusterSnapshot(taken_at=at, max_runners=10, workflow_pods=(pod,))


def pre_pulled(b: PlaceholderPodBuilder, spec: PairSpec | None = None) -> list[str]:
    workflow = b.build_pods(spec or pair())[-1]
    return [c["image"] for c in workflow["spec"].get("initContainers", ())]


def test_the_workflow_half_pulls_the_runners_image_then_declared_then_learned_ones():
    """``prePullAuto`` (default): the runner lands beside a new workflow half and starts first,
    and the kubelet pulls one image at a time, so its image comes first; then the declared
    ``prePullImages``; then the job images learned from workflow pods, without repeats."""
    b = builder(o.runner_template(), settings={"prePullImages": [*DECLARED, RUNNER_IMAGE]})
    assert pre_pulled(b) == [RUNNER_IMAGE, *DECLARED]
    b.observe(learned(JOB_IMAGE))
    assert pre_pulled(b) == [RUNNER_IMAGE, *DECLARED, JOB_IMAGE]


def test_pre_pull_init_containers_reserve_nothing_more_and_skip_images_on_the_node():
    """Each init container runs ``sh -c :`` with the main container's requests, limits and
    security context (a pod's effective request is the larger of its largest init container
    and its containers: the placeholder reserves what it did without them); ``IfNotPresent``,
    so an image already on the node makes no registry round trip in the node's serial
    puller; the runner half is unchanged."""
    plain = builder(o.runner_template(), settings={"prePullAuto": False}).build(pair())
    runner, workflow = builder(o.runner_template(), settings={"prePullImages": DECLARED}).build(
        pair()
    )
    assert runner == plain[0]
    init = workflow["spec"]["initContainers"]
    main = workflow["spec"]["containers"][0]
    assert [c["name"] for c in init] == ["pre-pull-0", "pre-pull-1", "pre-pull-2"]
    assert all(c["command"] == ["sh", "-c", ":"] for c in init)
    assert all(c["imagePullPolicy"] == "IfNotPresent" for c in init)
    assert all(c["resources"] == main["resources"] for c in init)
    assert all(c["securityContext"] == main["securityContext"] for c in init)
    without = {k: v for k, v in workflow["spec"].items() if k != "initContainers"}
    assert without == plain[1]["spec"]


GPU = {"workflowResources": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}}
GPU_POOL = {
    "nodeSelector": {"pool": "gpu"},
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
}


@pytest.mark.parametrize(
    ("settings", "workflow_spec", "workflow_only", "expected"),
    [
        ({}, None, False, [RUNNER_IMAGE, *DECLARED, JOB_IMAGE]),
        # A hot slot's runner runs already: nothing of it to pull.
        ({}, None, True, [*DECLARED, JOB_IMAGE]),
        # Off: only what the user declared.
        ({"prePullAuto": False}, None, False, DECLARED),
        # A half that waits for Running (GPUs) or a kubelet that may still refuse after
        # binding: the pulls hold its confirmation back, but the job's pods would pull the
        # same images there after the assignment, so they are pulled all the same.
        (GPU, None, False, [RUNNER_IMAGE, *DECLARED, JOB_IMAGE]),
        ({"confirmAtBinding": False}, None, False, [RUNNER_IMAGE, *DECLARED, JOB_IMAGE]),
        # The workflow half has a pool of its own: the runner never lands beside it.
        (GPU, GPU_POOL, False, [*DECLARED, JOB_IMAGE]),
    ],
)
def test_the_runners_image_is_pulled_only_where_the_runner_may_land_beside_the_half(
    settings: dict, workflow_spec: dict | None, workflow_only: bool, expected: list[str]
) -> None:
    b = builder(
        o.runner_template(),
        settings={"prePullImages": DECLARED, **settings},
        workflow_pod_spec=workflow_spec,
    )
    b.observe(learned(JOB_IMAGE))
    spec = replace(pair(), workflow_only=workflow_only)
    assert pre_pulled(b, spec) == expected


def test_a_job_image_behind_a_pull_secret_the_placeholder_lacks_is_not_learned():
    """The hook adds a secret for a job's ``credentials``; the placeholder carries only the
    runner template's, so its pull would fail: not learned. One the template has is fine."""
    template = o.runner_template(imagePullSecrets=[{"name": "registry"}])
    b = builder(template)
    b.observe(learned("private/ci:1", secrets=("job-credentials-abc",)))
    b.observe(learned("shared/ci:1", secrets=("registry",)))
    assert pre_pulled(b) == [RUNNER_IMAGE, "shared/ci:1"]


@pytest.mark.parametrize(
    ("images", "message"),
    [
        (["ghcr.io/acme/ci latest"], "no spaces"),
        ([""], "image reference"),
        ([7], "image reference"),
        (["-rm"], "image reference"),
        ([f"img:{i}" for i in range(9)], "at most 8"),
    ],
)
def test_a_bad_pre_pull_image_is_one_clear_error(images: list, message: str) -> None:
    with pytest.raises(Exception, match=message) as caught:
        parse_capacity_aware({"prePullImages": images}, where="listener.yaml")
    assert "prePullImages" in str(caught.value)
