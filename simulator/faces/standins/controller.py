"""What ARC's controller does when a scale set's values change, for the ``helm upgrade``
stand-in (:mod:`.helm`):

1. the listener ServiceAccount ``<scale set>-<hash>-listener`` in the controller namespace,
   with ARC's ``actions.github.com/scale-set-name`` / ``-namespace`` labels (``rbac`` finds
   it by them);
2. the listener pod, recreated: a pod object with ARC's labels (``kubectl get pod -l ...``
   finds it; ``schedulerName`` keeps the world's scheduler off it, it runs here, not on a
   node; phase Running, never Ready: ``/readyz`` answers that) and the listener process
   (``python -m listener run``) with the env and the mounted
   ConfigMaps and Secrets of the values' ``listenerTemplate`` written out as files under
   ``<dir>/listener-pod/`` (what the pod would get), the world's listener config and
   kubeconfig in place of what ARC mounts, logs in ``<dir>/listener.log``.

A ConfigMap the template mounts that does not exist stops it with one line (the pod would
hang in ContainerCreating).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from simulator.faces.live_spec import SCRUBBED_ENV
from simulator.faces.standins.state import StandinError, StandinState

T = TypeVar("T")

LISTENER_COMPONENT = "runner-scale-set-listener"
STANDIN_SCHEDULER = "simulated-world-stand-in"
#: Kubernetes' default grace period is what the pod would get without the overlay's 60 s.
STOP_GRACE = 60.0
POD_DIR = "listener-pod"
PID_FILE = "listener.pid"
LOG_FILE = "listener.log"


def listener_name(state: StandinState) -> str:
    digest = hashlib.sha256(f"{state.namespace}/{state.scale_set}".encode()).hexdigest()[:8]
    return f"{state.scale_set}-{digest}-listener"


def arc_labels(state: StandinState) -> dict[str, str]:
    return {
        "actions.github.com/scale-set-name": state.scale_set,
        "actions.github.com/scale-set-namespace": state.namespace,
    }


def reconcile(state: StandinState, values: dict[str, Any]) -> Iterator[str]:
    """Yields one line per thing done."""
    api = k8s_config.new_client_from_config(config_file=state.kubeconfig)
    with api:
        core = k8s.CoreV1Api(api)
        name = listener_name(state)
        if _ensure_service_account(core, state, name):
            yield f"created ServiceAccount {state.controller_namespace}/{name}"
        template = (values.get("listenerTemplate") or {}).get("spec") or {}
        files = _mounted_files(core, state, template)
        stopped = stop_listener(state.path)
        if stopped:
            yield f"stopped the previous listener process ({stopped})"
        _replace_pod(core, state, name)
        pid = _start_listener(state, template, files)
        yield (
            f"listener pod {state.controller_namespace}/{name} runs here as process {pid} "
            f"(python -m listener run), serving {state.listener_addr}, logging to "
            f"{state.path / LOG_FILE}"
        )


def _ensure_service_account(core: k8s.CoreV1Api, state: StandinState, name: str) -> bool:
    body: Any = {"metadata": {"name": name, "labels": arc_labels(state)}}
    try:
        core.create_namespaced_service_account(state.controller_namespace, body)
    except ApiException as exc:
        if exc.status == 409:
            return False
        raise
    return True


def _replace_pod(core: k8s.CoreV1Api, state: StandinState, name: str) -> None:
    labels = {**arc_labels(state), "app.kubernetes.io/component": LISTENER_COMPONENT}
    try:
        core.delete_namespaced_pod(name, state.controller_namespace, grace_period_seconds=0)
    except ApiException as exc:
        if exc.status != 404:
            raise
    pod: Any = {
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {
                "simulator/stand-in": f"runs as a local process; log {state.path / LOG_FILE}"
            },
        },
        "spec": {
            "schedulerName": STANDIN_SCHEDULER,
            "serviceAccountName": name,
            "containers": [{"name": "listener", "image": "local checkout"}],
        },
    }
    for _ in range(50):  # the delete may still be finishing: bounded, 5 s at most
        try:
            core.create_namespaced_pod(state.controller_namespace, pod)
            break
        except ApiException as exc:
            if exc.status != 409:
                raise
            time.sleep(0.1)
    else:
        raise StandinError(f"the old listener pod {name} was not deleted within 5 s")
    # Running (the process is started next); no Ready claim: /readyz is the listener's answer.
    status: Any = {"status": {"phase": "Running", "podIP": "127.0.0.1"}}
    core.patch_namespaced_pod_status(name, state.controller_namespace, status)


def _mounted_files(
    core: k8s.CoreV1Api, state: StandinState, template: dict[str, Any]
) -> dict[str, Path]:
    """Writes every ConfigMap / Secret volume the listener container mounts under
    ``<dir>/listener-pod/<mountPath>``; returns ``mountPath -> local directory``."""
    volumes = {v.get("name"): v for v in template.get("volumes") or ()}
    container = _listener_container(template)
    pod_root = state.path / POD_DIR
    mounts: dict[str, Path] = {}
    for mount in container.get("volumeMounts") or ():
        volume = volumes.get(mount.get("name")) or {}
        data = _volume_data(core, state, volume, mount["mountPath"])
        if data is None:
            continue  # emptyDir and the like: nothing to write
        local = pod_root / mount["mountPath"].lstrip("/")
        local.mkdir(parents=True, exist_ok=True)
        for key, content in data.items():
            (local / key).write_bytes(content)
        mounts[mount["mountPath"]] = local
    return mounts


def _volume_data(
    core: k8s.CoreV1Api, state: StandinState, volume: dict[str, Any], mount_path: str
) -> dict[str, bytes] | None:
    ns = state.controller_namespace
    if "configMap" in volume:
        name = volume["configMap"]["name"]
        found = _mounted(
            lambda: core.read_namespaced_config_map(name, ns),
            "ConfigMap",
            ns,
            name,
            mount_path,
            "apply it first",
        )
        return {k: v.encode() for k, v in (found.data or {}).items()}
    if "secret" in volume:
        name = volume["secret"]["secretName"]
        secret = _mounted(
            lambda: core.read_namespaced_secret(name, ns),
            "Secret",
            ns,
            name,
            mount_path,
            "create it first",
        )
        return {k: base64.b64decode(v) for k, v in (secret.data or {}).items()}
    return None


def _mounted(read: Callable[[], T], kind: str, ns: str, name: str, mount_path: str, fix: str) -> T:
    """The object a volume mounts; a missing one is what a real pod would hang on."""
    try:
        return read()
    except ApiException as exc:
        if exc.status == 404:
            raise StandinError(
                f"{kind} {ns}/{name} (mounted at {mount_path}) does not exist: the "
                f"listener pod would hang in ContainerCreating; {fix}"
            ) from exc
        raise


def _listener_container(template: dict[str, Any]) -> dict[str, Any]:
    for container in template.get("containers") or ():
        if container.get("name") == "listener":
            return dict(container)
    return {"name": "listener"}


def listener_env(
    state: StandinState, template: dict[str, Any], mounts: dict[str, Path]
) -> dict[str, str]:
    """The caller's environment minus what must not leak into a listener, the world's
    kubeconfig and listener config (ARC mounts its own), the template's env with mount paths
    pointing at their local copies, and loopback outside any proxy."""
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    env["KUBECONFIG"] = state.kubeconfig
    env["LISTENER_CONFIG_PATH"] = state.listener_config
    env.update(state.listener_env)
    for item in _listener_container(template).get("env") or ():
        value = str(item.get("value", ""))
        for mount_path, local in mounts.items():
            if value == mount_path or value.startswith(mount_path.rstrip("/") + "/"):
                value = str(local) + value[len(mount_path.rstrip("/")) :]
        env[item["name"]] = value
    env["PYTHONPATH"] = state.root
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def _start_listener(state: StandinState, template: dict[str, Any], mounts: dict[str, Path]) -> int:
    log = state.path / LOG_FILE
    with log.open("ab") as out:
        process = subprocess.Popen(
            [state.python, "-m", "listener", "run"],
            cwd=state.path,
            env=listener_env(state, template, mounts),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives this helm run, as the pod outlives helm
        )
    (state.path / PID_FILE).write_text(json.dumps({"pid": process.pid}))
    return process.pid


def _is_our_listener(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"listener" in cmdline and b"run" in cmdline


def stop_listener(directory: Path, grace: float = STOP_GRACE) -> str:
    """SIGTERM the listener a stand-in started (as the kubelet would stop its pod), SIGKILL
    after ``grace``; "" when none runs."""
    pid_file = directory / PID_FILE
    try:
        pid = int(json.loads(pid_file.read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return ""
    pid_file.unlink(missing_ok=True)
    if not _is_our_listener(pid):
        return ""
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _is_our_listener(pid):
        time.sleep(0.2)
    if _is_our_listener(pid):
        os.kill(pid, signal.SIGKILL)
        return f"process {pid}, killed after {grace:.0f} s"
    return f"process {pid}"
