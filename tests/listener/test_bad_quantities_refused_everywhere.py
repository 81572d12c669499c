"""A bad quantity or duration in the capacityAware block is refused where the settings are
parsed, with the same one line by ``run``, ``verify`` and ``tune`` (issue 32).

The failure this prevents: ``workflowResources: {cpu: "two"}`` or ``memory: 4GB`` passed
validation, so ``run`` failed only after taking the Lease and opening a session (a standby
replica never reported it), ``verify`` printed ``PASS settings`` and blamed the runner template,
and a ``tune`` grid ended in a traceback after its runs had started.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

import listener.process.app
import tuning.cli
from listener.__main__ import main as cli
from listener.commands.verify import cli as verify_cli
from listener.commands.verify.report import Report, Status
from listener.process.environment import ProcessEnv
from tests.listener.test_arc_config import pat_config

BAD_BLOCKS = [
    (
        {"enabled": True, "workflowResources": {"cpu": "two", "memory": "4Gi"}},
        "capacityAware.workflowResources.cpu: got 'two'; a Kubernetes quantity",
    ),
    (
        {"enabled": True, "workflowResources": {"cpu": "2", "memory": "4GB"}},
        "capacityAware.workflowResources.memory: got '4GB'; a Kubernetes quantity",
    ),
    (
        {"enabled": True, "placeholderReadyTimeout": "five minutes"},
        "capacityAware.placeholderReadyTimeout: got 'five minutes'; a duration is",
    ),
]


def write_block(tmp_path: Path, block: dict[str, Any]) -> Path:
    path = tmp_path / "capacityAware.yaml"
    path.write_text(json.dumps({"capacityAware": block}), encoding="utf-8")
    return path


@pytest.mark.parametrize(("block", "message"), BAD_BLOCKS)
def test_run_refuses_before_the_lease(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    block: dict[str, Any],
    message: str,
) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(pat_config()), encoding="utf-8")

    def never(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the listener was built: the Lease would be taken next")

    monkeypatch.setattr(listener.process.app, "ListenerApp", never)
    env = {
        "LISTENER_CONFIG_PATH": str(config),
        "CAPACITY_AWARE_CONFIG": str(write_block(tmp_path, block)),
    }
    assert listener.process.app.run_from_environment(ProcessEnv.parse(env)) == 1
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1  # one line


@pytest.mark.parametrize(("block", "message"), BAD_BLOCKS)
def test_verify_fails_its_settings_row_with_the_same_line(
    tmp_path: Path, block: dict[str, Any], message: str
) -> None:
    args = argparse.Namespace(scale_set="arc-runners", config=write_block(tmp_path, block))
    report = Report("arc-runners", "arc-runners")
    verify = verify_cli.Verify.__new__(verify_cli.Verify)  # no cluster: settings come first
    verify.args, verify.report, verify.env = args, report, {}
    verify.api = None  # type: ignore[assignment]
    verify._steps(deadline=0.0)
    (row,) = report.rows
    assert (row.check, row.status) == ("settings", Status.FAIL)
    assert message in row.seen
    assert "\n" not in row.seen


@pytest.mark.parametrize(("block", "message"), BAD_BLOCKS)
def test_tune_refuses_a_bad_grid_point_before_any_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    block: dict[str, Any],
    message: str,
) -> None:
    def never(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the sweep started")

    monkeypatch.setattr(tuning.cli, "sweep", never)
    key, value = next((k, v) for k, v in block.items() if k != "enabled")
    grid = tmp_path / "grid.yaml"
    grid.write_text(json.dumps({key: [value]}), encoding="utf-8")
    history = tmp_path / "never-read.json"  # the grid is refused before the history is read
    argv = ["tune", "--history", str(history), "--scenario", "scale-to-zero"]
    assert cli([*argv, "--grid", str(grid), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message.split(": got")[1] in err
    assert "Traceback" not in err
