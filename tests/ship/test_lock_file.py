"""requirements.lock pins every runtime dependency with hashes, and the Dockerfile installs
from it alone (a reproducible image)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOCK = (ROOT / "requirements.lock").read_text()
PINNED = dict(re.findall(r"^([A-Za-z0-9_.-]+)==([^\s\\;]+)", LOCK, flags=re.M))


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_runtime_dependency_is_pinned() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {
        _norm(re.split(r"[\[<>=!~; ]", dep, maxsplit=1)[0]) for dep in project["dependencies"]
    }
    pinned = {_norm(name) for name in PINNED}
    assert wanted <= pinned, f"not in requirements.lock: {sorted(wanted - pinned)}"


def test_every_pin_has_a_sha256() -> None:
    blocks = re.split(r"^(?=[A-Za-z0-9_.-]+==)", LOCK, flags=re.M)
    for block in blocks:
        if "==" in block.split("\n", 1)[0]:
            assert "--hash=sha256:" in block, block.split("\n", 1)[0]


def test_the_dockerfile_installs_dependencies_from_the_lock_only() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert "pip install --require-hashes --no-deps -r requirements.lock" in text
    assert "pip install --no-deps /wheels/*.whl" in text


def test_the_lock_sends_pip_to_no_index_or_path_of_the_machine_that_compiled_it() -> None:
    """Prevents a lock compiled where pip.conf names local mirrors (pip-compile copies its
    ``--extra-index-url`` / ``--find-links`` into the lock) from pointing the image build at
    paths that exist only on that machine."""
    options = [line for line in LOCK.splitlines() if line.startswith("-")]
    assert options == []
