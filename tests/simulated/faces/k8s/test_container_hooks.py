"""The runner container hooks' Kubernetes calls, made by their own client library, on the face.

actions/runner-container-hooks is not published on npm (``npm view`` finds neither
``@actions/runner-container-hooks`` nor ``runner-container-hooks``; it ships as a release zip on
GitHub), so the hook itself cannot be installed from a registry at test time. What is on npm is
the client library its k8s package uses, ``@kubernetes/client-node`` (``^1.3.0`` in the hook's
package.json): the test installs that into ``.cache/npm-hooks`` (git-ignored, reused) and runs
``hooks/prepare_job.mjs``, which makes the hook's calls for one job: the permission check
(``isAuthPermissionsOK``: one SelfSubjectAccessReview per verb), create the workflow pod, wait
for Running (``waitForPodPhases``), delete it with grace 0. Skips cleanly without node/npm or
without the registry.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from simulator.engine.store import ObjectStore
from simulator.faces.k8s import K8sFace

ROOT = Path(__file__).resolve().parents[4]
CACHE = ROOT / ".cache" / "npm-hooks"
CLIENT = "@kubernetes/client-node@^1.3.0"
DRIVER = Path(__file__).with_name("hooks") / "prepare_job.mjs"
NS = "arc-runners"
SA = "arc-runners/arc-runners-gha-rs-no-permission"  # the runner pod's ServiceAccount
RUNNER_VERBS = {  # the Role ARC's chart gives runner pods in kubernetes(-novolume) mode
    "pods": ["get", "list", "create", "delete"],
    "pods/exec": ["get", "create"],
    "pods/log": ["get", "list", "watch"],
    "secrets": ["get", "list", "create", "delete"],
}


def _client_installed() -> bool:
    return (CACHE / "node_modules" / "@kubernetes" / "client-node" / "package.json").exists()


@contextmanager
def cache_lock() -> Iterator[None]:
    """One process at a time installs into, and copies the driver into, the shared cache:
    pytest-xdist workers (or two test runs in one checkout) would otherwise race there."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE.parent / "npm-hooks.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="module")
def driver_dir() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node/npm are not installed")
    with cache_lock():
        return _installed_driver()


def _installed_driver() -> Path:
    if not _client_installed():
        try:
            done = subprocess.run(
                [
                    "npm",
                    "install",
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                    "--prefix",
                    str(CACHE),
                    CLIENT,
                ],
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
        except subprocess.TimeoutExpired:
            pytest.skip("npm install of @kubernetes/client-node timed out (registry unreachable?)")
        if done.returncode != 0 or not _client_installed():
            pytest.skip(f"npm registry unavailable: {done.stderr.strip()[:300]}")
    # In the cache so the bare import resolves; replaced whole, never seen half-written.
    staged = CACHE / f".{DRIVER.name}.{os.getpid()}"
    shutil.copy(DRIVER, staged)
    staged.replace(CACHE / DRIVER.name)
    return CACHE


def grant(store: ObjectStore, verbs: dict[str, list[str]]) -> None:
    ns, name = SA.split("/")
    store.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "runner", "namespace": NS},
            "rules": [{"apiGroups": [""], "resources": [r], "verbs": v} for r, v in verbs.items()],
        }
    )
    store.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "runner", "namespace": NS},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "runner"},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
        }
    )


def kubelet(store: ObjectStore, name: str, stop: threading.Event) -> None:
    """Binds and starts the pod once it exists (what scheduler + kubelet would do)."""
    deadline = time.monotonic() + 20
    while not stop.is_set() and time.monotonic() < deadline:
        if store.find("Pod", NS, name) is not None:
            store.mutate(
                "Pod",
                NS,
                name,
                lambda p: (
                    p["spec"].update(nodeName="node-a"),
                    p["status"].update(phase="Running"),
                ),
            )
            return
        stop.wait(0.05)


def run_driver(face: K8sFace, cache: Path, tmp_path: Path, pod: str) -> tuple[int, list[dict]]:
    # client-node refuses a plain-http server unless TLS verification is off (nothing to
    # verify on loopback http); the token is then sent like on a real cluster.
    config = tmp_path / "kubeconfig"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "sim",
                "clusters": [
                    {
                        "name": "sim",
                        "cluster": {"server": face.url, "insecure-skip-tls-verify": True},
                    }
                ],
                "users": [{"name": "runner", "user": {"token": "runner-token"}}],
                "contexts": [
                    {
                        "name": "sim",
                        "context": {"cluster": "sim", "user": "runner", "namespace": NS},
                    }
                ],
            }
        )
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "KUBECONFIG": str(config),
        "HOOK_NAMESPACE": NS,
        "HOOK_POD": pod,
    }
    done = subprocess.run(
        ["node", str(cache / DRIVER.name)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines() if line]


@pytest.fixture
def hook_face(store: ObjectStore) -> Iterator[K8sFace]:
    with K8sFace(store, tokens={"runner-token": SA}) as face:
        yield face


def test_the_hooks_client_creates_waits_for_and_deletes_a_workflow_pod(
    driver_dir: Path, hook_face: K8sFace, store: ObjectStore, tmp_path: Path
):
    grant(store, RUNNER_VERBS)
    stop = threading.Event()
    thread = threading.Thread(target=kubelet, args=(store, "runner-1-workflow", stop))
    thread.start()
    try:
        code, steps = run_driver(hook_face, driver_dir, tmp_path, "runner-1-workflow")
    finally:
        stop.set()
        thread.join(timeout=10)
    assert code == 0, steps
    assert steps == [
        {"step": "permissions", "denied": []},
        {"step": "created", "phase": "Pending", "priority": 20},  # arc-workflow admitted
        {"step": "waited", "phase": "Running"},
        {"step": "deleted"},
    ]
    assert store.find("Pod", NS, "runner-1-workflow") is None
    assert hook_face.calls["create SelfSubjectAccessReview"] == 13


def test_the_hooks_permission_check_fails_without_the_secrets_grant(
    driver_dir: Path, hook_face: K8sFace, store: ObjectStore, tmp_path: Path
):
    grant(store, {k: v for k, v in RUNNER_VERBS.items() if k != "secrets"})
    code, steps = run_driver(hook_face, driver_dir, tmp_path, "never-created")
    assert code == 1
    assert steps == [
        {
            "step": "permissions",
            "denied": ["create secrets", "delete secrets", "get secrets", "list secrets"],
        }
    ]
    assert store.find("Pod", NS, "never-created") is None
