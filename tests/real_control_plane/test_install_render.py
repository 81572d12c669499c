"""The scale set the e2e world installs is the shipped example values as ARC's chart would
render them (e2e/scale_set.py), and the build's pins are what the docs say (e2e/components.py)."""

from __future__ import annotations

from e2e.build import _build_groups
from e2e.components import ARC_VERSION, COMPONENTS, component
from e2e.scale_set import ScaleSetOptions, autoscaling_runner_set, shipped_values


def ars() -> dict:
    return autoscaling_runner_set(
        shipped_values(), "http://127.0.0.1:1/acme", ScaleSetOptions(max_runners=7)
    )


def test_the_scale_set_carries_the_release_version_label_arc_checks() -> None:
    """ARC's controller deletes an AutoscalingRunnerSet whose version label's major.minor
    differs from its build version: the label must be the built release's."""
    assert ars()["metadata"]["labels"]["app.kubernetes.io/version"] == ARC_VERSION
    assert f"build.Version={ARC_VERSION}" in " ".join(component("arc").ldflags)


def test_the_runner_template_is_the_shipped_one_plus_the_charts_novolume_env() -> None:
    spec = ars()["spec"]
    values = shipped_values()
    runner = spec["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in runner["env"]}
    assert env["ACTIONS_RUNNER_CONTAINER_HOOKS"] == "/home/runner/k8s-novolume/index.js"
    assert env["ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER"] == "true"
    assert (
        env["ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE"]
        == "/home/runner/hook-template/workflow-pod.yaml"
    )
    assert (
        spec["template"]["spec"]["priorityClassName"]
        == values["template"]["spec"]["priorityClassName"]
    )
    assert runner["resources"] == values["template"]["spec"]["containers"][0]["resources"]
    assert spec["maxRunners"] == 7


def test_only_the_listener_pod_is_steered_to_the_system_node() -> None:
    spec = ars()["spec"]
    assert spec["listenerTemplate"]["spec"]["nodeSelector"] == {"e2e.arc-capacity/role": "system"}
    assert "nodeSelector" not in spec["template"]["spec"]
    assert "tolerations" not in spec["template"]["spec"]


def test_binaries_named_after_their_package_share_one_go_build() -> None:
    kube = _build_groups(component("kubernetes"))
    assert len(kube) == 1 and len(kube[0]) == 4
    # etcd's package ends in /v3 and Karpenter's in /kwok: each needs -o FILE of its own.
    assert [len(g) for g in _build_groups(component("etcd"))] == [1]
    assert [b.name for g in _build_groups(component("karpenter")) for b in g] == ["karpenter-kwok"]


def test_every_wrapper_module_pins_its_component_version() -> None:
    for c in COMPONENTS:
        if c.from_git:
            continue
        go_mod = (c.wrapper / "go.mod").read_text()
        assert f"{c.module} {c.version}" in go_mod, c.name
