"""The stand-ins the quickstart world puts on PATH (simulator/faces/standins), each in
isolation: Helm's merge of values, ``helm get values``, ``docker``, ``kubectl port-forward``'s
checks, and what ``--quickstart`` leaves out of the world."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from simulator.faces.live import _parser, detach, spec_from_args
from simulator.faces.standins import helm, tools
from simulator.faces.standins.controller import listener_env
from simulator.faces.standins.state import StandinError, StandinState

STOCK: dict[str, Any] = {"runnerScaleSetName": "arc-runners", "template": {"spec": {"a": 1}}}


def state(tmp_path: Path, **changes: Any) -> StandinState:
    fields: dict[str, Any] = {
        "directory": str(tmp_path),
        "python": "python3",
        "root": str(tmp_path),
        "kubeconfig": str(tmp_path / "kubeconfig.yaml"),
        "listener_config": str(tmp_path / "listener-config.json"),
        "listener_addr": "127.0.0.1:8080",
        "scale_set": "arc-runners",
        "namespace": "arc-runners",
        "controller_namespace": "arc-systems",
        "listener_env": {"HUD_INTERNAL_BOT_TOKEN": "t"},
        "kubectl": "/bin/false",
        "stock_values": STOCK,
    }
    fields.update(changes)
    return StandinState(**fields)


@pytest.mark.parametrize(
    ("base", "overlay", "merged"),
    [
        ({"a": {"b": 1, "c": 2}}, {"a": {"c": 3}}, {"a": {"b": 1, "c": 3}}),  # maps merge
        ({"a": [1, 2]}, {"a": [3]}, {"a": [3]}),  # lists are replaced, as Helm does
        ({"a": {"b": 1}}, {"a": None}, {"a": None}),
        ({}, {"x": {"y": [1]}}, {"x": {"y": [1]}}),
    ],
)
def test_helm_values_merge_maps_key_by_key_and_replace_lists(
    base: dict[str, Any], overlay: dict[str, Any], merged: dict[str, Any]
) -> None:
    assert helm.merge(base, overlay) == merged
    assert helm.merge(base, overlay) is not base


def test_helm_set_nests_a_dotted_key_and_types_its_value() -> None:
    assert helm.set_value({"metrics": {"a": 1}}, "metrics.listenerAddr=:8080") == {
        "metrics": {"a": 1, "listenerAddr": ":8080"}
    }
    assert helm.set_value({}, "maxRunners=3") == {"maxRunners": 3}
    with pytest.raises(StandinError, match="KEY=VALUE"):
        helm.set_value({}, "novalue")


def test_helm_get_values_answers_the_stock_values_first_and_refuses_other_releases(
    tmp_path: Path,
) -> None:
    out = io.StringIO()
    assert (
        helm.main(state(tmp_path), ["get", "values", "arc-runners", "-n", "arc-runners"], out) == 0
    )
    assert yaml.safe_load(out.getvalue()) == STOCK
    with pytest.raises(StandinError, match="release: not found"):
        helm.main(state(tmp_path), ["get", "values", "other", "-n", "arc-runners"], io.StringIO())


def test_helm_refuses_what_the_quickstart_does_not_run_naming_what_it_stands_in_for(
    tmp_path: Path,
) -> None:
    with pytest.raises(StandinError, match="runs only `helm get values"):
        helm.main(state(tmp_path), ["install", "x", "y"], io.StringIO())


def test_helm_upgrade_of_the_controller_chart_keeps_the_values_only(tmp_path: Path) -> None:
    out = io.StringIO()
    argv = ["upgrade", "arc", "oci://x/gha-runner-scale-set-controller", "-n", "arc-systems"]
    assert helm.main(state(tmp_path), [*argv, "--reuse-values", "--set", "m.a=:8080"], out) == 0
    kept = helm.values_path(state(tmp_path), "arc-systems", "arc")
    assert yaml.safe_load(kept.read_text()) == {"m": {"a": ":8080"}}
    assert "already serves /metrics" in out.getvalue()
    with pytest.raises(StandinError, match="is a gha-runner-scale-set-controller release"):
        helm.main(state(tmp_path), ["upgrade", "arc", "oci://x/other", "-n", "arc-systems"])


def test_docker_push_needs_the_tag_built_first_and_build_needs_a_dockerfile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    s = state(tmp_path)
    with pytest.raises(StandinError, match="An image does not exist locally with the tag"):
        tools.docker(s, ["push", "r/x:1"], io.StringIO())
    with pytest.raises(StandinError, match="no Dockerfile"):
        tools.docker(s, ["build", "-t", "r/x:1", "."], io.StringIO())
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    out = io.StringIO()
    assert tools.docker(s, ["build", "-t", "r/x:1", "."], out) == 0
    assert tools.docker(s, ["push", "r/x:1"], out) == 0
    assert out.getvalue().count("stand-in") == 2


def test_port_forward_refuses_a_port_the_listener_does_not_serve(tmp_path: Path) -> None:
    s = state(tmp_path, kubectl="/bin/true")  # "the pod exists"
    with pytest.raises(StandinError, match=r"listens on 127\.0\.0\.1:8080: forward 8080"):
        tools.port_forward(s, ["port-forward", "-n", "arc-systems", "pod/x", "9090"], io.StringIO())
    out = io.StringIO()
    assert tools.port_forward(s, ["port-forward", "-n", "arc-systems", "pod/x", "8080"], out) == 0
    assert "nothing to forward" in out.getvalue()


def test_the_listener_gets_the_templates_env_with_mount_paths_pointing_at_local_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAPACITY_AWARE_JSON", "{}")  # the caller's: must not leak in
    template = {
        "containers": [
            {
                "name": "listener",
                "env": [
                    {"name": "CAPACITY_AWARE_CONFIG", "value": "/etc/capacity-aware/c.yaml"},
                    {"name": "OTHER", "value": "/etc/capacity-aware-not"},
                ],
            }
        ]
    }
    local = tmp_path / "listener-pod" / "etc" / "capacity-aware"
    env = listener_env(state(tmp_path), template, {"/etc/capacity-aware": local})
    assert env["CAPACITY_AWARE_CONFIG"] == f"{local}/c.yaml"
    assert env["OTHER"] == "/etc/capacity-aware-not"
    assert "CAPACITY_AWARE_JSON" not in env
    assert env["HUD_INTERNAL_BOT_TOKEN"] == "t"
    assert env["LISTENER_CONFIG_PATH"].endswith("listener-config.json")


@pytest.mark.parametrize(
    ("argv", "ice", "jobs", "scale_set"),
    [
        (["--quickstart"], False, 0, "arc-runners"),
        (["--quickstart", "--ice-start", "90", "--burst-at", "95"], True, 6, "arc-runners"),
        ([], True, 6, "e2e-runners"),
    ],
)
def test_the_quickstart_world_has_no_capacity_loss_window_or_burst_unless_asked(
    argv: list[str], ice: bool, jobs: int, scale_set: str
) -> None:
    """A capacity-loss window overlapping the quickstart's verify failed it."""
    spec = spec_from_args(_parser().parse_args(argv))
    assert (spec.ice_window, spec.burst_count, spec.scale_set) == (ice, jobs, scale_set)


def test_a_second_detached_world_in_the_same_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two worlds writing one kubeconfig and one listener pid file would fight: the second
    --detach names the first and how to stop it, and starts nothing."""
    (tmp_path / "world.pid").write_text(str(os.getpid()))  # "a world" that is alive
    assert detach(tmp_path, ["--quickstart", "--dir", str(tmp_path)]) == 1
    assert "a world already runs in" in capsys.readouterr().err
    assert not (tmp_path / "world.log").exists()
