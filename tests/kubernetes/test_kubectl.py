"""kubectl against the HTTP face: discovery, list, watch and custom resources."""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from providers.simulated.k8s_face import K8sFace
from providers.simulated.store import ObjectStore
from tests.kubernetes import objects as o

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)")


def kubectl(face: K8sFace, tmp_path: Path, *args: str) -> str:
    cmd = [
        KUBECTL or "kubectl",
        "--server",
        face.url,
        "--cache-dir",
        str(tmp_path / "cache"),
        "--request-timeout",
        "10s",
        *args,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_kubectl_lists_pods_and_gets_custom_resources(face: K8sFace, tmp_path: Path):
    out = kubectl(face, tmp_path, "get", "pods", "-n", o.NS, "-o", "name")
    assert out.split() == [
        "pod/arc-runners-runner-a",
        "pod/arc-runners-runner-a-workflow",
        "pod/unrelated",
    ]
    out = kubectl(face, tmp_path, "get", "pods", "-A", "-l", "actions-ephemeral-runner=True")
    assert "arc-runners-runner-a " in out and "unrelated" not in out
    ers = json.loads(
        kubectl(
            face,
            tmp_path,
            "get",
            "ephemeralrunnersets.actions.github.com",
            "-n",
            o.NS,
            o.ERS,
            "-o",
            "json",
        )
    )
    assert ers["kind"] == "EphemeralRunnerSet"
    assert ers["spec"]["ephemeralRunnerSpec"]["spec"]["priorityClassName"] == "arc-runner"
    out = kubectl(face, tmp_path, "get", "ephemeralrunners", "-n", o.NS, "-o", "name")
    assert out.split() == ["ephemeralrunner.actions.github.com/arc-runners-runner-a"]
    assert "arc-placeholder-runner" in kubectl(face, tmp_path, "get", "priorityclasses")


def test_kubectl_watches_pods(face: K8sFace, store: ObjectStore, tmp_path: Path):
    cmd = [
        KUBECTL or "kubectl",
        "--server",
        face.url,
        "--cache-dir",
        str(tmp_path / "cache"),
        "get",
        "pods",
        "-n",
        o.NS,
        "--watch",
        "-o",
        "name",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.strip())

    threading.Thread(target=pump, daemon=True).start()
    try:
        initial = {lines.get(timeout=20) for _ in range(3)}
        assert initial == {
            "pod/arc-runners-runner-a",
            "pod/arc-runners-runner-a-workflow",
            "pod/unrelated",
        }
        store.create(o.pod("late-arrival"))  # kubectl prints the name of every event
        store.mutate("Pod", o.NS, "unrelated", lambda p: p["status"].update(phase="Failed"))
        assert lines.get(timeout=20) == "pod/late-arrival"
        assert lines.get(timeout=20) == "pod/unrelated"
        assert face.calls["watch Pod"] == 1
    finally:
        proc.terminate()
        proc.wait(timeout=10)
