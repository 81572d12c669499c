"""``make venv`` says what it is doing before each slow step (issue 32: 90 s of silence on a
first install looked like a hang). Read from ``make -n``, which prints the recipe as make
would run it without running it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_venv_announces_each_step_before_it_runs(tmp_path: Path) -> None:
    venv = tmp_path / "fresh-venv"  # a venv that does not exist, so every step would run
    result = subprocess.run(
        # --no-print-directory: inside `make test` the nested make would print
        # "Leaving directory" lines around the recipe.
        ["make", "-n", "--no-print-directory", f"VENV={venv}", "venv"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    lines = result.stdout.splitlines()
    steps = [i for i, line in enumerate(lines) if "-m venv" in line or "pip install" in line]
    assert len(steps) == 3, lines
    for step in steps:
        assert lines[step - 1].startswith('echo "venv: '), (lines[step - 1], lines[step])
    assert lines[-1].startswith('echo "venv: ready')
