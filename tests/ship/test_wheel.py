"""A wheel built from this tree carries what its commands read (issue 32: after
``pip install .``, ``demo`` could not find the shipped scenarios, which lived only in the
checkout's config/ directory).

Builds the wheel as ``pip install .`` does (isolated PEP 517 build), checks its file list,
installs it without dependencies into a directory of its own and, from another working
directory, loads every shipped scenario, the sample history and the chart-values schema
from the installed copy.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from simulator.scenarios.scenario import shipped

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


#: What a build or a run leaves in the checkout: not part of the sources a wheel is built from.
NOT_SOURCES = shutil.ignore_patterns(
    ".git",
    ".venv",
    "build",
    "*.egg-info",
    "out",
    ".cache",
    "__pycache__",
    ".*_cache",
    ".hypothesis",
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built from a copy of the tree: setuptools builds in the source directory (build/,
    *.egg-info), so two pytest-xdist workers building this tree at once failed with "File
    exists: build/bdist.linux-x86_64/wheel/...dist-info", and an old build/lib could leak
    deleted modules into the wheel."""
    source = tmp_path_factory.mktemp("source") / "tree"
    shutil.copytree(ROOT, source, symlinks=True, ignore=NOT_SOURCES)
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    (built,) = out.glob("arc_capacity_listener-*.whl")
    return built


def test_the_wheel_carries_the_shipped_scenarios_history_and_schema(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"simulator/scenarios/shipped/{p.name}" for p in shipped()}
    expected |= {
        "simulator/scenarios/shipped/chaos.faults.yaml",
        "simulator/scenarios/placeholder-pdb.yaml",
        "tuning/history_data/sample-day.json",
        "listener/commands/data/gha-runner-scale-set-values.json",
    }
    assert expected <= names, sorted(expected - names)


def test_the_installed_wheel_reads_them_from_its_own_files(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    install = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target"]
    subprocess.run([*install, str(target), str(wheel)], check=True, timeout=120)
    probe = f"""
import sys
sys.path.insert(0, {str(target)!r})
import simulator, tuning, listener
assert all(m.__file__.startswith({str(target)!r}) for m in (simulator, tuning, listener))
from simulator.scenarios.scenario import load_scenario, shipped
from tuning.history import load_history
from listener.commands.chart_values import schema
from simulator.scenarios.placeholder_pdb import placeholder_pdb
print(len([load_scenario(p.stem) for p in shipped()]), len(load_history("sample-day").jobs),
      schema()["source"]["repository"], placeholder_pdb("ns", "set")["kind"])
"""
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == [
        str(len(shipped())),
        "2219",
        "actions/actions-runner-controller",
        "PodDisruptionBudget",
    ]
