"""docs/quickstart.md, run as written: every command of its ``sh`` blocks that can run
without a real cluster, in order, against the live simulated world (its Kubernetes face
stands in for the cluster, ARC's controller and Helm).

Stand-ins, and nothing else:
- ``helm get values`` (not installed here): the test writes ``current-values.yaml``, the
  values of a stock ``kubernetes-novolume`` scale set;
- ARC's controller: the test creates the listener ServiceAccount with ARC's labels, and starts
  ``python -m listener run`` with the ConfigMap that the quickstart's ``kubectl apply`` stored
  in the cluster, mounted as a file (what the pod gets);
- ``kubectl port-forward``: the listener listens on loopback, so the doc's
  ``127.0.0.1:8080`` is replaced by its (free) port.
``docker``, ``helm``, ``curl`` and ``kubectl port-forward`` are skipped (the PodMonitor apply
runs: the face serves prometheus-operator's kinds); the test fails if the doc gains a command
of any other program it does not run.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s

from simulator.faces.live_spec import LiveSpec
from simulator.faces.live_world import LiveWorld
from tests.e2e.conftest import ListenerProcess

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "quickstart.md"
SKIPPED_PROGRAMS = {"docker", "helm", "curl"}
RUN = {"kubectl", "arc-capacity-listener"}
#: Commands that need something the simulated cluster does not have.
#: (The face serves prometheus-operator's PodMonitor and PrometheusRule, so step 8's apply runs.)
NEEDS_REAL_CLUSTER: dict[str, str] = {}
SCALE_SET, RUNNERS, CONTROLLER = "arc-runners", "arc-runners", "arc-systems"
CURRENT_VALUES = {
    "githubConfigUrl": "https://github.com/acme",
    "githubConfigSecret": "arc-github-app",
    "runnerScaleSetName": SCALE_SET,
    "containerMode": {"type": "kubernetes-novolume"},
    "template": {
        "spec": {
            "containers": [
                {
                    "name": "runner",
                    "image": "ghcr.io/actions/actions-runner:latest",
                    "command": ["/home/runner/run.sh"],
                    "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}},
                }
            ]
        }
    },
}


def doc_commands() -> list[str]:
    """Every command of the doc's ``sh`` blocks, continuation lines joined, in order."""
    text = DOC.read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"^```sh\n(.*?)^```", text, flags=re.M | re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        commands += [line.strip() for line in joined.splitlines() if line.strip()]
    return commands


def runnable(command: str) -> bool:
    program = shlex.split(command)[0]
    if (program == "kubectl" and " port-forward " in command) or command in NEEDS_REAL_CLUSTER:
        return False
    assert program in RUN | SKIPPED_PROGRAMS, f"quickstart command not covered: {command}"
    return program in RUN


@pytest.fixture
def world() -> Iterator[LiveWorld]:
    # No ICE window or burst during this test: it checks the install path, not failover.
    spec = LiveSpec(
        scale_set=SCALE_SET, labels=(SCALE_SET,), ice_start=3600, ice_end=3601, burst_at=3600
    )
    with LiveWorld(spec) as running:
        yield running


def test_the_quickstart_runs_as_written(world: LiveWorld, tmp_path: Path) -> None:
    commands = doc_commands()
    assert any(c.startswith("arc-capacity-listener rbac") for c in commands)
    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_text(yaml.safe_dump(world.kubeconfig()))
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "config").symlink_to(ROOT / "config")
    (workdir / "current-values.yaml").write_text(yaml.safe_dump(CURRENT_VALUES))  # helm get values
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("KUBERNETES_", "CAPACITY_AWARE"))
    }
    env["KUBECONFIG"] = str(kubeconfig)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    with k8s.ApiClient(k8s.Configuration(host=world.k8s.url)) as api:
        core = k8s.CoreV1Api(api)
        create_listener_service_account(core)  # what ARC's controller does at install
        listener: ListenerProcess | None = None
        outputs: dict[str, str] = {}
        try:
            for command in commands:
                if not runnable(command):
                    continue
                if listener is None and command.startswith("kubectl get pods"):
                    listener = start_listener(world, core, tmp_path)  # ARC starts the pod
                    wait_for_placeholders(core, listener)
                if listener is not None:
                    command = command.replace("127.0.0.1:8080", f"127.0.0.1:{listener.port}")
                result = subprocess.run(
                    shlex.split(command),
                    cwd=workdir,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
                outputs[command.split(" --")[0]] = result.stdout
        finally:
            if listener is not None:
                print(listener.logs())
                listener.terminate(30)
                listener.kill()
    overlay = yaml.safe_load((workdir / "capacity-aware-overlay.yaml").read_text())
    (runner,) = overlay["template"]["spec"]["containers"]
    assert runner["resources"] == {"requests": {"cpu": "250m", "memory": "512Mi"}}  # kept
    assert overlay["listenerTemplate"]["spec"]["terminationGracePeriodSeconds"] == 60
    assert (
        "rolebinding/arc-capacity-listener-arc-runners created"
        in outputs["arc-capacity-listener rbac"]
    )
    placeholders = outputs[
        "kubectl get pods -n arc-runners -l "
        "app.kubernetes.io/managed-by=arc-capacity-listener -o wide"
    ]
    assert placeholders.count("Running") >= 2, placeholders
    assert "READY" in outputs["arc-capacity-listener status"]
    # verify exits 0 only when no row failed; its probes are gone again (the listener's pairs
    # were counted above, before verify ran).
    assert "\nPASS: " in outputs["arc-capacity-listener verify"]
    # Step 8's PodMonitor reached the cluster (the face serves prometheus-operator's kinds).
    applied = outputs["kubectl apply -f config/monitoring/podmonitor.yaml"]
    assert "podmonitor.monitoring.coreos.com/arc-listeners created" in applied, applied


def create_listener_service_account(core: k8s.CoreV1Api) -> None:
    core.create_namespaced_service_account(
        CONTROLLER,
        {
            "metadata": {
                "name": f"{SCALE_SET}-754b578d-listener",
                "labels": {
                    "actions.github.com/scale-set-name": SCALE_SET,
                    "actions.github.com/scale-set-namespace": RUNNERS,
                },
            }
        },
    )


def start_listener(world: LiveWorld, core: k8s.CoreV1Api, tmp_path: Path) -> ListenerProcess:
    """The listener pod: the capacityAware ConfigMap the quickstart applied, as a file."""
    configmap = core.read_namespaced_config_map(f"{SCALE_SET}-capacity-aware", CONTROLLER)
    mounted = tmp_path / "capacityAware.yaml"
    mounted.write_text(configmap.data["capacityAware.yaml"])
    process = ListenerProcess(world, tmp_path, {})
    del process.env["CAPACITY_AWARE_JSON"]
    process.env["CAPACITY_AWARE_CONFIG"] = str(mounted)
    return process.start()


def wait_for_placeholders(
    core: k8s.CoreV1Api, listener: ListenerProcess, timeout: float = 90
) -> None:
    """Until proactiveCapacity (2) pairs are READY and their placeholders run: the doc's
    checks describe that state. (A cpu/memory pair is READY once bound, confirmAtBinding,
    a few seconds before its pause containers run.)"""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert listener.running, f"the listener exited:\n{listener.logs()}"
        status, body = listener.get("/debug/pairs")
        pods = core.list_namespaced_pod(
            "arc-runners", label_selector="app.kubernetes.io/managed-by=arc-capacity-listener"
        ).items
        running = sum(1 for pod in pods if pod.status and pod.status.phase == "Running")
        if status == 200 and body.count('"READY"') >= 2 and running >= 4:
            return
        time.sleep(0.5)
    raise AssertionError(f"no READY pairs within {timeout}s:\n{listener.logs()}")
