"""Writes ``<dir>/bin``: one small shell script per stand-in, each running
``python -m simulator.faces.standins --state <dir> <program> "$@"`` with the world's Python
and this checkout on ``PYTHONPATH``."""

from __future__ import annotations

import shlex
import shutil
import stat
from pathlib import Path

from simulator.faces.standins.state import StandinState, write_state

PROGRAMS = ("helm", "docker", "kubectl")


def real_kubectl(bin_dir: Path) -> str | None:
    """The kubectl on PATH that is not our stand-in."""
    import os

    path = os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if Path(p) != bin_dir
    )
    return shutil.which("kubectl", path=path)


def install(state: StandinState) -> Path:
    """The ``bin`` directory to put first on PATH."""
    bin_dir = state.path / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    write_state(state)
    for program in PROGRAMS:
        script = bin_dir / program
        script.write_text(
            "#!/bin/sh\n"
            f"# Stand-in for {program} in the simulated world (simulator/faces/standins).\n"
            f"PYTHONPATH={shlex.quote(state.root)}${{PYTHONPATH:+:$PYTHONPATH}} exec "
            f"{shlex.quote(state.python)} -m simulator.faces.standins "
            f'--state {shlex.quote(state.directory)} {program} "$@"\n'
        )
        script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return bin_dir
