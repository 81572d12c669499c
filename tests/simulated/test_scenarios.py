"""Scenario files, the simulate command, determinism, and the independent checker.

The shipped scenarios run truncated to their first 2.5 hours here (the full runs are
``make demo`` and ``bench/sim_day.py``); the truncation keeps their bursts, drain and HUD
outage. The ice-failover outcome is asserted on a compact variant with the same structure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from simulator.cli import main as cli_main
from simulator.engine.runner import TERMINAL_WIDTH, demo, run_scenario
from simulator.measurement import checker
from simulator.scenarios.scenario import ScenarioError, load_scenario, parse_scenario, shipped
from simulator.scenarios.strategies import STRATEGIES
from tests.simulated.workload.builders import ice_failover, load, scenario

ROOT = Path(__file__).resolve().parents[2]
TRUNCATE = 2.5 * 3600
CONTRACT = (
    "jobs_total",
    "jobs_completed",
    "jobs_failed",
    "jobs_stuck",
    "queue_to_start_seconds",
    "over_advertised_slot_seconds",
    "idle_reserved_cpu_hours",
    "idle_reserved_gpu_hours",
    "nodes_launched",
    "placeholder_pods_created",
    "api_writes",
)
REQUIRED = {"burst", "ice-failover", "shared-nodepool", "scale-to-zero", "drain", "merge-queue"}


def _quiet() -> Any:
    return open("/dev/null", "w")


def test_every_required_scenario_is_shipped_and_valid() -> None:
    names = {load_scenario(p).name: p.stem for p in shipped()}
    assert set(names) >= REQUIRED
    assert all(name == stem for name, stem in names.items())


@pytest.mark.parametrize("path", shipped(), ids=lambda p: p.stem)
def test_the_checker_recomputes_the_results_of_every_shipped_scenario(
    path: Path, tmp_path: Path
) -> None:
    loaded = load_scenario(path)
    short = loaded.model_copy(update={"duration": min(loaded.duration, TRUNCATE)})
    results = run_scenario(short, out_dir=tmp_path, plots=False, progress=False, stream=_quiet())
    with (tmp_path / "events.jsonl").open(encoding="utf-8") as handle:
        recomputed = checker.recompute(handle)
    assert checker.compare(recomputed, results) == []
    assert set(results["strategies"]) == set(STRATEGIES)
    for figures in results["strategies"].values():
        assert all(key in figures for key in CONTRACT)
        assert set(figures["queue_to_start_seconds"]) == {"p50", "p95", "p99"}


def test_ice_failover_capacity_aware_fails_nothing_where_stock_arc_does(tmp_path: Path) -> None:
    results = run_scenario(
        load(ice_failover()), out_dir=tmp_path, plots=False, progress=False, stream=_quiet()
    )
    s = results["strategies"]
    base, aware = s["baseline"], s["capacity-aware"]
    assert base["jobs_failed"] + base["jobs_stuck"] > 0
    assert base["over_advertised_slot_seconds"] > 0
    assert (aware["jobs_failed"], aware["jobs_stuck"], aware["over_advertised_slot_seconds"]) == (
        0,
        0,
        0.0,
    )
    assert aware["queue_to_start_seconds"]["p95"] < base["queue_to_start_seconds"]["p95"]
    # The failures are real and recounted from the log alone, not 0 == 0.
    with (tmp_path / "events.jsonl").open(encoding="utf-8") as handle:
        recomputed = checker.recompute(handle)
    assert checker.compare(recomputed, results) == []
    assert recomputed["baseline"]["jobs_failed"] == base["jobs_failed"] > 0
    assert checker.main([str(tmp_path / "events.jsonl")]) == 0


def test_the_same_seed_gives_byte_identical_results_and_event_log(tmp_path: Path) -> None:
    data = load(scenario(duration="40m"))
    for run in ("a", "b"):
        run_scenario(data, out_dir=tmp_path / run, plots=False, progress=False, stream=_quiet())
    for name in ("results.json", "events.jsonl", "timeseries.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    run_scenario(data, seed=2, out_dir=tmp_path / "c", plots=False, progress=False, stream=_quiet())
    assert (tmp_path / "c" / "events.jsonl").read_bytes() != (
        tmp_path / "a" / "events.jsonl"
    ).read_bytes()
    assert json.loads((tmp_path / "c" / "results.json").read_text())["seed"] == 2


def test_outputs_do_not_depend_on_the_process_hash_seed(tmp_path: Path) -> None:
    path = tmp_path / "tiny.yaml"
    path.write_text(json.dumps(scenario(duration="20m")), encoding="utf-8")
    digests = []
    for hash_seed in ("0", "4242"):
        out = tmp_path / f"out-{hash_seed}"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        subprocess.run(
            [
                sys.executable,
                "-m",
                "simulator.cli",
                "simulate",
                str(path),
                "--out",
                str(out),
                "--no-plots",
            ],
            check=True,
            env=env,
            capture_output=True,
            timeout=120,
            cwd=ROOT,
        )
        digests.append([(out / n).read_bytes() for n in ("results.json", "events.jsonl")])
    assert digests[0] == digests[1]


def test_a_tampered_log_is_caught_by_the_checker(tmp_path: Path) -> None:
    results = run_scenario(
        load(ice_failover(hours=2.0)),
        out_dir=tmp_path,
        plots=False,
        progress=False,
        stream=_quiet(),
    )
    lines = (tmp_path / "events.jsonl").read_text(encoding="utf-8").splitlines()
    failed = [i for i, line in enumerate(lines) if '"job_failed"' in line and '"baseline"' in line]
    assert failed
    del lines[failed[0]]
    problems = checker.compare(checker.recompute(lines), results)
    assert any("baseline: jobs_failed" in p for p in problems)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    return path


GOOD = ROOT / "config" / "scenarios" / "drain.yaml"


@pytest.mark.parametrize(
    ("old", "new", "path", "reason"),
    [
        (
            "max_runners: 40",
            "max_runners: -1",
            "scale_sets[0].max_runners",
            "greater than or equal to 0",
        ),
        (
            "limits: {cpu: 512}",
            "limits: {cpus: 512}",
            "clusters[0].spec.nodepools[0].limits",
            "unknown resource 'cpus'",
        ),
        ("duration: 4h", "duration: four hours", "duration", "a duration is a number of seconds"),
        (
            "cluster: blue\n",
            "cluster: purple\n",
            "scale_sets[0].cluster",
            "unknown cluster 'purple'",
        ),
        (
            "requests: {cpu: 500m, memory: 1Gi}",
            "requests: {cpu: lots, memory: 1Gi}",
            "scale_sets[0].runner.requests",
            "not a Kubernetes quantity",
        ),
        (
            "proactiveCapacity: 3",
            "proactiveCapacity: 3\n    proactiveCapcity: 4",
            "strategies.capacity_aware.proactiveCapcity",
            "unknown field",
        ),
    ],
)
def test_a_bad_field_is_reported_with_the_file_the_field_path_and_the_reason(
    tmp_path: Path, old: str, new: str, path: str, reason: str
) -> None:
    text = GOOD.read_text(encoding="utf-8")
    assert old in text
    bad = _write(tmp_path, text.replace(old, new, 1))
    with pytest.raises(ScenarioError) as caught:
        load_scenario(bad)
    message = str(caught.value)
    assert message.startswith(f"{bad}: {path}: ")
    assert reason in message


def test_broken_yaml_and_a_missing_file_name_the_file(tmp_path: Path) -> None:
    bad = _write(tmp_path, "name: x\nclusters: [\n")
    with pytest.raises(ScenarioError, match=r"bad\.yaml: line \d+, column \d+: not valid YAML"):
        load_scenario(bad)
    with pytest.raises(ScenarioError, match="cannot read the scenario"):
        load_scenario(tmp_path / "absent.yaml")
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes("name: café\n".encode("latin-1"))
    with pytest.raises(ScenarioError, match=r"latin1\.yaml: byte 9: not UTF-8 text"):
        load_scenario(latin1)
    with pytest.raises(ScenarioError, match=r"where\.yaml: clusters: required field is missing"):
        parse_scenario({"name": "x"}, where="where.yaml")


def test_simulate_writes_its_outputs_and_bad_input_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "tiny.yaml"
    path.write_text(json.dumps(scenario(duration="15m")), encoding="utf-8")  # JSON is YAML
    assert cli_main(["simulate", str(path), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "capacity-aware" in out and "p95 s" in out
    assert "over-adv slot-s" in (tmp_path / "out" / "REPORT.md").read_text()
    for name in (
        "results.json",
        "events.jsonl",
        "REPORT.md",
        "queue_depth.png",
        "capacity.png",
        "nodes.png",
    ):
        assert (tmp_path / "out" / name).stat().st_size > 0
    assert cli_main(["check", str(tmp_path / "out" / "events.jsonl")]) == 0
    bad = _write(tmp_path, path.read_text().replace('"max_runners": 20', '"max_runners": "x"'))
    assert cli_main(["simulate", str(bad), "--out", str(tmp_path / "x")]) == 2
    assert "scale_sets[0].max_runners" in capsys.readouterr().err


def test_demo_prints_lines_that_fit_100_columns_and_the_report_keeps_every_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make demo` printed its table with every column (242-column rows) and each start-up
    warning as one line of several hundred characters; a terminal wrapped both into noise."""
    data = scenario(duration="15m")
    data["scale_sets"][0]["min_runners"] = 1  # the listener warns about idle runners
    path = _write(tmp_path, json.dumps(data))
    monkeypatch.chdir(tmp_path)  # paths printed as given, as `make demo`'s out/demo
    report = demo("demo", scenarios=[path], plots=False, progress=False)
    captured = capsys.readouterr()
    printed = captured.out.splitlines() + captured.err.splitlines()
    assert "start-up check warning min-runners" in captured.err
    assert "p50 s" in captured.out and "$" in captured.out
    too_wide = [line for line in printed if len(line) > TERMINAL_WIDTH]
    assert too_wide == []
    text = report.read_text()
    for column in ("over-adv slot-s", "unconfirmed slot-s", "idle GPU-h", "API writes"):
        assert column in text, column
