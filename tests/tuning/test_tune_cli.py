"""``arc-capacity-listener tune`` end to end on a small history (real worlds, two processes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from listener.__main__ import main as cli
from reconciler.settings import parse_capacity_aware


def gh_job(n: int, minute: int, labels: list[str]) -> dict[str, Any]:
    created = f"2026-01-05T01:{minute:02d}:00Z"
    return {
        "id": n,
        "status": "completed",
        "conclusion": "success",
        "created_at": created,
        "started_at": f"2026-01-05T01:{minute:02d}:40Z",
        "completed_at": f"2026-01-05T01:{minute + 5:02d}:40Z",
        "name": f"nightly-{n}",
        "labels": labels,
    }


@pytest.fixture
def history(tmp_path: Path) -> Path:
    jobs = [gh_job(n, 3 * n, ["linux-nightly"]) for n in range(12)]
    jobs.insert(3, gh_job(99, 5, ["ubuntu-latest"]))  # GitHub-hosted: no scale set serves it
    path = tmp_path / "jobs.json"
    path.write_text(json.dumps({"total_count": len(jobs), "jobs": jobs}), encoding="utf-8")
    return path


@pytest.fixture
def grid(tmp_path: Path) -> Path:
    path = tmp_path / "grid.yaml"
    path.write_text("proactiveCapacity: [0, auto]\n", encoding="utf-8")
    return path


def tune(history: Path, grid: Path, out: Path, *extra: str) -> int:
    argv = ["tune", "--history", str(history), "--scenario", "scale-to-zero", "--grid", str(grid)]
    return cli([*argv, "--out", str(out), *extra])


def test_tune_writes_sweep_plot_and_a_recommendation_the_settings_model_accepts(
    history: Path, grid: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert tune(history, grid, out, "--p95", "10m", "--workers", "2") == 0
    err = capsys.readouterr().err
    assert "skipped 1 history record(s)" in err
    assert "job 3: labels: no scale set of scenario 'scale-to-zero' serves ['ubuntu-latest']" in err

    sweep = json.loads((out / "sweep.json").read_text())
    assert sweep["history"]["jobs_replayed"] == 12
    assert [r["point"] for r in sweep["runs"]] == ["baseline", "overprovision", "p1", "p2"]
    for run in sweep["runs"]:
        assert run["figures"]["jobs"] == 12
        assert {"dollars_per_day", "node_hours", "idle_reserved_cpu_hours"} <= set(run["figures"])
    assert (out / "pareto.png").stat().st_size > 10_000

    block = yaml.safe_load((out / "recommendation.yaml").read_text())["capacityAware"]
    assert parse_capacity_aware(block, where="recommendation.yaml").enabled

    # deterministic per seed, whatever the number of worker processes
    again = tmp_path / "again"
    assert tune(history, grid, again, "--p95", "10m", "--workers", "1", "--no-plot") == 0
    assert json.loads((again / "sweep.json").read_text())["runs"] == sweep["runs"]


def test_an_unreachable_target_writes_the_sweep_and_exits_1(
    history: Path, grid: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert tune(history, grid, out, "--p95", "1s", "--workers", "1", "--no-plot") == 1
    assert (out / "sweep.json").exists()
    assert not (out / "recommendation.yaml").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--p95", "soon"], "--p95: expected a duration"),
        (["--seeds", "1,x"], "--seeds: expected integers"),
        (["--workers", "0"], "--workers: must be >= 1"),
    ],
)
def test_bad_arguments_give_one_message_and_exit_2(
    history: Path,
    grid: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    assert tune(history, grid, tmp_path / "out", *extra) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_history_nobody_serves_is_refused(grid: Path, tmp_path: Path) -> None:
    path = tmp_path / "hosted.json"
    path.write_text(json.dumps([gh_job(0, 1, ["ubuntu-latest"])]), encoding="utf-8")
    assert tune(path, grid, tmp_path / "out") == 2


def test_tune_sweeps_consolidate_after_on_the_nodepools_and_recommends_it_apart(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = tmp_path / "karpenter.yaml"
    grid.write_text("proactiveCapacity: [0]\nkarpenter.consolidateAfter: [30s, 1h]\n")
    out = tmp_path / "out"
    assert tune(history, grid, out, "--p95", "10m", "--workers", "2", "--no-plot") == 0
    capsys.readouterr()
    sweep = json.loads((out / "sweep.json").read_text())
    by_point = {r["point"]: r["figures"] for r in sweep["runs"]}
    assert set(by_point) == {
        "baseline karpenter.consolidateAfter=30s",
        "overprovision karpenter.consolidateAfter=30s",
        "baseline karpenter.consolidateAfter=1h",
        "overprovision karpenter.consolidateAfter=1h",
        "p1",
        "p2",
    }
    # The replay runs an hour past the last job: kept an hour, emptied nodes bill to the end.
    short, long = (by_point[f"baseline karpenter.consolidateAfter={v}"] for v in ("30s", "1h"))
    assert long["node_hours"] > short["node_hours"]
    doc = yaml.safe_load((out / "recommendation.yaml").read_text())
    assert set(doc["karpenterNodePool"]["spec"]["disruption"]) == {"consolidateAfter"}
    assert "consolidateAfter" not in json.dumps(doc["capacityAware"])
    parse_capacity_aware(doc["capacityAware"], where="recommendation.yaml")


def test_an_unknown_nodepool_dial_is_refused_before_any_run(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = tmp_path / "bad.yaml"
    grid.write_text("karpenter.consolidateAfter: [5m, soon]\n")
    assert tune(history, grid, tmp_path / "out", "--p95", "10m") == 2
    err = capsys.readouterr().err
    assert "point p2: karpenter.consolidateAfter: expected a duration like 30s" in err
    assert not (tmp_path / "out" / "sweep.json").exists()
