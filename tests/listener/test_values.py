"""`arc-capacity-listener values`: the overlay keeps the scale set's own values (Helm replaces
lists under --reuse-values, so our lists carry the user's entries too)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from listener.commands.values import GRACE_SECONDS, LISTENER_RESOURCES, overlay
from providers.kubernetes.checks import check_container_mode
from simulator.workload.arc_spec import HOOK_PATHS

ROOT = Path(__file__).resolve().parents[2]
CURRENT = {
    "githubConfigUrl": "https://github.com/acme",
    "containerMode": {"type": "kubernetes-novolume"},
    "template": {
        "spec": {
            "nodeSelector": {"pool": "ci"},
            "volumes": [{"name": "cache", "emptyDir": {}}],
            "containers": [
                {
                    "name": "runner",
                    "image": "acme/runner:2.330",
                    "env": [{"name": "RUNNER_DEBUG", "value": "1"}],
                    "resources": {"requests": {"cpu": "2", "memory": "4Gi"}},
                },
                {"name": "sidecar", "image": "acme/sidecar:1"},
            ],
        }
    },
}


def render(current: dict[str, object]) -> tuple[dict[str, object], list[str]]:
    return overlay(
        current,
        image="reg/acl:1",
        configmap="arc-runners-capacity-aware",
        hook_configmap="arc-runners-hook-template",
    )


def test_the_users_runner_container_and_volumes_are_kept() -> None:
    result, warnings = render(CURRENT)
    spec = result["template"]["spec"]  # type: ignore[index]
    runner, sidecar = spec["containers"]
    assert runner["image"] == "acme/runner:2.330"
    assert runner["resources"] == {"requests": {"cpu": "2", "memory": "4Gi"}}
    assert [e["name"] for e in runner["env"]] == [
        "RUNNER_DEBUG",
        "ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE",
    ]
    assert sidecar == {"name": "sidecar", "image": "acme/sidecar:1"}
    assert [v["name"] for v in spec["volumes"]] == ["cache", "hook-template"]
    assert spec["nodeSelector"] == {"pool": "ci"} and spec["priorityClassName"] == "arc-runner"
    assert warnings == []


def test_the_listener_keeps_a_60s_grace_period_and_gets_the_config_mount() -> None:
    result, _ = render(CURRENT)
    spec = result["listenerTemplate"]["spec"]  # type: ignore[index]
    assert spec["terminationGracePeriodSeconds"] == GRACE_SECONDS == 60
    (listener,) = spec["containers"]
    assert listener["name"] == "listener" and listener["image"] == "reg/acl:1"
    assert listener["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert {"name": "capacity-aware", "configMap": {"name": "arc-runners-capacity-aware"}} in spec[
        "volumes"
    ]


def test_rendering_twice_changes_nothing() -> None:
    once, _ = render(CURRENT)
    twice, _ = render({**CURRENT, **once})
    assert twice == once


def test_a_non_novolume_mode_is_a_warning_pointing_to_the_migration() -> None:
    _, warnings = render({**CURRENT, "containerMode": {"type": "kubernetes"}})
    assert any("docs/migrate-kubernetes-novolume.md" in w for w in warnings)


def _with_mode(mode: str | None, kube_scheduler: str | None) -> dict[str, object]:
    current: dict[str, object] = {**CURRENT, "containerMode": {"type": mode} if mode else {}}
    if kube_scheduler is not None:
        env = [{"name": "ACTIONS_RUNNER_USE_KUBE_SCHEDULER", "value": kube_scheduler}]
        current["template"] = {"spec": {"containers": [{"name": "runner", "env": env}]}}
    return current


def _mode_warnings(current: dict[str, object]) -> list[str]:
    return [w for w in render(current)[1] if w.startswith("containerMode.type")]


def test_kubernetes_mode_with_the_kube_scheduler_is_accepted_as_at_start_up() -> None:
    """Issue 46: `values` warned that the listener refuses `kubernetes` mode even with
    ACTIONS_RUNNER_USE_KUBE_SCHEDULER=true, which the start-up check accepts (workflow pods
    then go through kube-scheduler as in kubernetes-novolume)."""
    assert _mode_warnings(_with_mode("kubernetes", "true")) == []


def test_kubernetes_mode_without_the_kube_scheduler_is_a_warning_naming_both_ways_out() -> None:
    (warning,) = _mode_warnings(_with_mode("kubernetes", None))
    assert "start-up check will refuse" in warning
    assert "kubernetes-novolume, or set ACTIONS_RUNNER_USE_KUBE_SCHEDULER=true" in warning
    assert "docs/migrate-kubernetes-novolume.md" in warning
    (false,) = _mode_warnings(_with_mode("kubernetes", "false"))
    assert false == warning


@pytest.mark.parametrize(
    ("mode", "kube_scheduler", "refused"),
    [
        ("kubernetes-novolume", None, False),
        ("kubernetes-novolume", "true", False),
        ("kubernetes", "true", False),
        ("kubernetes", "TRUE", False),
        ("kubernetes", None, True),
        ("dind", None, True),
        ("dind", "true", True),
        (None, None, True),
    ],
)
def test_values_warns_exactly_when_the_start_up_check_refuses_the_rendered_runner_pods(
    mode: str | None, kube_scheduler: str | None, refused: bool
) -> None:
    """The runner pod the simulated ARC chart renders (its own hook paths) goes through the
    real start-up check; `values` warns for the same modes, no more, no fewer."""
    env = (
        [{"name": "ACTIONS_RUNNER_CONTAINER_HOOKS", "value": HOOK_PATHS[mode]}]
        if (mode in HOOK_PATHS)
        else []
    )
    if kube_scheduler is not None:
        env.append({"name": "ACTIONS_RUNNER_USE_KUBE_SCHEDULER", "value": kube_scheduler})
    rendered = {"containers": [{"name": "runner", "env": env}]}
    assert bool(check_container_mode(rendered)) is refused
    assert bool(_mode_warnings(_with_mode(mode, kube_scheduler))) is refused


def test_values_without_a_runner_container_get_the_charts_default_one() -> None:
    result, warnings = render({"containerMode": {"type": "kubernetes-novolume"}})
    (runner,) = result["template"]["spec"]["containers"]  # type: ignore[index]
    assert runner["image"] == "ghcr.io/actions/actions-runner:latest"
    assert any("no resource requests" in w for w in warnings)


def test_the_listener_gets_the_measured_resources_when_it_has_none() -> None:
    """Prevents a listener pod without requests (BestEffort: first evicted under memory
    pressure, placeholders left behind) when the user's values set no resources."""
    result, _ = render(CURRENT)
    (listener,) = result["listenerTemplate"]["spec"]["containers"]  # type: ignore[index]
    assert listener["resources"] == LISTENER_RESOURCES
    assert "cpu" not in LISTENER_RESOURCES["limits"], "no CPU limit: it would throttle cuts"


def test_the_users_own_listener_resources_are_kept() -> None:
    """Prevents the overlay from overwriting resources a user sized for their cluster."""
    own = {"requests": {"cpu": "1", "memory": "1Gi"}}
    current = {
        **CURRENT,
        "listenerTemplate": {"spec": {"containers": [{"name": "listener", "resources": own}]}},
    }
    result, _ = render(current)
    (listener,) = result["listenerTemplate"]["spec"]["containers"]  # type: ignore[index]
    assert listener["resources"] == own


def test_the_shipped_example_values_carry_the_same_listener_resources() -> None:
    """Prevents config/values-capacity-aware.yaml and ``values`` from drifting apart on the
    listener's sizing (both come from the same measurement, docs/image.md)."""
    shipped = yaml.safe_load((ROOT / "config" / "values-capacity-aware.yaml").read_text())
    (listener,) = shipped["listenerTemplate"]["spec"]["containers"]
    assert listener["resources"] == LISTENER_RESOURCES


def test_the_sizing_doc_shows_the_resources_values_writes() -> None:
    """Prevents docs/image.md from recommending other figures than the ones shipped."""
    text = (ROOT / "docs" / "image.md").read_text()
    assert yaml.safe_dump({"resources": LISTENER_RESOURCES}, sort_keys=False) in text
