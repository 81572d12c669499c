"""Fixtures of the end-to-end tests: a live simulated world and the real listener process.

The world (:class:`simulator.faces.live_world.LiveWorld`) serves its Kubernetes-API, Actions and
HUD faces on 127.0.0.1 in real time; :class:`ListenerProcess` starts ``python -m listener
run`` as a subprocess pointed at them with a config file and a kubeconfig, exactly as ARC's
controller would start the listener pod, and reads its ``/metrics`` from the outside.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from simulator.faces.live_spec import LiveSpec
from simulator.faces.live_world import LiveWorld

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """An ephemeral loopback port for the listener's metrics server (released at once)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ListenerProcess:
    """The real entry point as a subprocess; logs go to files (shown when a test fails)."""

    def __init__(self, world: LiveWorld, workdir: Path, capacity_aware: dict[str, Any]) -> None:
        self.world = world
        self.workdir = workdir
        self.port = free_port()
        self.metrics_url = f"http://127.0.0.1:{self.port}/metrics"
        kubeconfig = workdir / "kubeconfig.yaml"
        kubeconfig.write_text(json.dumps(world.kubeconfig()))
        config = workdir / "listener-config.json"
        config.write_text(json.dumps(world.listener_config(f"127.0.0.1:{self.port}")))
        self.env = world.listener_process_env(kubeconfig, config, capacity_aware)
        self.stdout_path = workdir / "listener.stdout"
        self.stderr_path = workdir / "listener.stderr"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ListenerProcess:
        with self.stdout_path.open("wb") as out, self.stderr_path.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "listener", "run"],
                cwd=REPO,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
            )
        return self

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def get(self, path: str, timeout: float = 5.0) -> tuple[int, str]:
        """GET a path of the listener's HTTP server: (status, body); (0, error) if down."""
        url = f"http://127.0.0.1:{self.port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(errors="replace")
        except OSError as exc:
            return 0, str(exc)

    def terminate(self, timeout: float) -> int | None:
        """SIGTERM, then wait up to ``timeout``; the exit code, or None if it did not exit."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def logs(self, lines: int = 60) -> str:
        parts = []
        for path in (self.stdout_path, self.stderr_path):
            if path.exists():
                tail = path.read_text(errors="replace").splitlines()[-lines:]
                parts.append(f"--- {path.name} (last {len(tail)} lines) ---\n" + "\n".join(tail))
        return "\n".join(parts)


@pytest.fixture
def world() -> Iterator[LiveWorld]:
    with LiveWorld(LiveSpec()) as running:
        yield running


@pytest.fixture
def core(world: LiveWorld) -> Iterator[k8s.CoreV1Api]:
    """The real kubernetes client on the world's Kubernetes face."""
    with k8s.ApiClient(k8s.Configuration(host=world.k8s.url)) as api:
        yield k8s.CoreV1Api(api)


@pytest.fixture
def listener_factory(world: LiveWorld, tmp_path: Path) -> Iterator[Any]:
    started: list[ListenerProcess] = []

    def start(capacity_aware: dict[str, Any]) -> ListenerProcess:
        process = ListenerProcess(world, tmp_path, capacity_aware).start()
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()
        # Shown by pytest only when the test failed: what the listener and the world said.
        print(process.logs())
    print("world:", world.status_line())
    print(
        "advertised per GET (t, capacity):",
        [
            (round(world.elapsed_at(r.received_at), 1), r.capacity)
            for r in world.actions.requests_to("get_message")
        ],
    )
    for job in world.jobs():
        print(job)
