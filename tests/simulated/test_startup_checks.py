"""simulate/demo run the listener's start-up checks and refuse what `run` would refuse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from providers.kubernetes.checks import KUBE_SCHEDULER_ENV
from simulator.cli import main as cli_main
from simulator.engine.runner import run_scenario
from simulator.engine.startup import StartupRefused, check_world, refuse_on_errors
from simulator.engine.world import World
from simulator.scenarios.scenario import parse_scenario
from simulator.scenarios.strategies import BASELINE, CAPACITY_AWARE
from tests.simulated.workload.builders import cluster_spec, scenario


def classic_mode() -> dict:
    data = scenario(duration="10m")
    data["scale_sets"][0]["container_mode"] = "kubernetes"
    return data


def test_a_novolume_scale_set_passes_the_listener_s_checks() -> None:
    world = World(parse_scenario(scenario(duration="10m"), where="t"), CAPACITY_AWARE)
    [result] = check_world(world)
    assert result.scale_set == "gpu-east" and result.errors == ()
    assert refuse_on_errors(world) == []


def test_classic_kubernetes_mode_is_refused_with_the_listener_s_message() -> None:
    world = World(parse_scenario(classic_mode(), where="t"), CAPACITY_AWARE)
    with pytest.raises(StartupRefused) as refused:
        refuse_on_errors(world)
    message = str(refused.value)
    assert message.startswith(
        "scenario test, scale set gpu-east: the capacity-aware listener would refuse to start: "
        "start-up checks failed: container-mode: containerMode kubernetes pins the workflow pod"
    )
    assert KUBE_SCHEDULER_ENV in message


def test_a_missing_priority_class_ladder_is_refused_before_any_strategy_runs(
    tmp_path: Path,
) -> None:
    data = scenario(duration="10m")
    spec = cluster_spec()
    spec["priority_classes"] = {}  # the cluster does not install the ladder
    data["clusters"][0]["spec"] = spec
    loaded = parse_scenario(data, where="t")
    with pytest.raises(StartupRefused, match="PriorityClass arc-placeholder-runner is missing"):
        run_scenario(loaded, out_dir=tmp_path / "out", plots=False, progress=False)
    assert not (tmp_path / "out").exists()  # nothing ran, nothing written


def test_other_strategies_are_not_checked() -> None:
    world = World(parse_scenario(classic_mode(), where="t"), BASELINE)
    assert check_world(world) == []


def test_simulate_exits_2_with_the_refusal_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "classic.yaml"
    path.write_text(json.dumps(classic_mode()), encoding="utf-8")
    assert cli_main(["simulate", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "error: scenario test, scale set gpu-east" in err
    assert "start-up checks failed: container-mode:" in err


def test_the_refusal_is_word_for_word_what_run_raises() -> None:
    """listener.process.app refuses the same world's objects with the same text (FatalError)."""
    from listener.process.startup import FatalError, refuse_to_start
    from providers.kubernetes.checks import run_startup_checks

    world = World(parse_scenario(classic_mode(), where="t"), CAPACITY_AWARE)
    [driver] = world.capacity_drivers()
    store = world.cluster_of("gpu-east").store
    # What the provider's startup_checks() runs, over the world's objects.
    findings = run_startup_checks(store, driver.target, driver.settings.priority_classes)
    with pytest.raises(FatalError) as fatal:
        refuse_to_start(findings)
    with pytest.raises(StartupRefused) as refused:
        refuse_on_errors(world)
    assert str(refused.value).endswith(": " + str(fatal.value))
