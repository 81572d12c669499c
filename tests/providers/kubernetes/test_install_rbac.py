"""The declarative install's account, against the Kubernetes face with RBAC on: after the
objects of ``kubectl kustomize config/install`` are created (or ``rbac --own-service-account
--apply``), a listener
holding the fixed account's token is allowed everything it needs, ARC's scaling patches
included, and nothing it does not."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import httpx
import pytest

from listener.commands.rbac import main as rbac_main
from providers.kubernetes.permissions import (
    Permission,
    missing_permissions,
    required_permissions,
)
from simulator.engine.store import KINDS, ObjectStore
from simulator.faces.k8s import K8sFace
from tests.providers.kubernetes import objects as o
from tests.providers.kubernetes.test_rbac_and_permissions import ADMIN, kubeconfig, listener_api
from tests.ship.test_install import INSTALL, KUBECTL, WHY_NOT, kustomize

OWN = "own-listener-token-89ab"
ACCOUNT = "arc-systems/arc-runners-capacity-listener"
#: ARC's own listener Role grants these to its account; ours must grant them to ours.
SCALING = [
    Permission("patch", "actions.github.com", "ephemeralrunnersets", "arc-runners"),
    Permission("patch", "actions.github.com", "ephemeralrunners", "arc-runners"),
    Permission("patch", "actions.github.com", "ephemeralrunners/status", "arc-runners"),
]


@pytest.fixture
def face() -> Iterator[K8sFace]:
    store = ObjectStore(time.time, history=1000)
    for obj in o.cluster_admin():
        store.create(obj)
    with K8sFace(store, tokens={ADMIN: "kube-system/admin", OWN: ACCOUNT}) as running:
        yield running


def _denied(face: K8sFace) -> list[Permission]:
    with listener_api(face, OWN) as api:
        return missing_permissions(api, [*required_permissions(["arc-runners"]), *SCALING])


def _create(face: K8sFace, obj: dict[str, Any]) -> None:
    """POST one object as the cluster admin (kubectl sends no bearer token to a plain-http
    server, so the rendered install is created over plain HTTP instead)."""
    info = KINDS[obj["kind"]]
    base = f"/apis/{info.group}/{info.version}" if info.group else f"/api/{info.version}"
    namespace = obj["metadata"].get("namespace")
    path = f"{base}/namespaces/{namespace}/{info.plural}" if namespace else f"{base}/{info.plural}"
    answer = httpx.post(
        face.url + path, json=obj, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=10
    )
    assert answer.status_code == 201, answer.text


@pytest.mark.skipif(KUBECTL is None, reason=WHY_NOT)
def test_after_the_install_the_fixed_account_may_do_everything_the_listener_does(
    face: K8sFace,
) -> None:
    assert _denied(face)  # before the install: the account may do nothing
    for obj in kustomize(INSTALL):
        _create(face, obj)
    assert _denied(face) == []
    with listener_api(face, OWN) as api:
        # Nothing beyond the runner namespace: no pod writes elsewhere, no Secrets.
        outside = [
            Permission("create", "", "pods", "default"),
            Permission("list", "", "secrets", "arc-systems"),
        ]
        assert missing_permissions(api, outside) == outside


def test_rbac_own_service_account_apply_creates_the_same_grants(
    face: K8sFace, tmp_path: Path
) -> None:
    out, err = io.StringIO(), io.StringIO()
    env = {"KUBECONFIG": str(kubeconfig(tmp_path, face.url, ADMIN))}
    argv = ["--scale-set", "arc-runners", "--namespace", "arc-runners", "--own-service-account"]
    with redirect_stdout(out), redirect_stderr(err):
        code = rbac_main([*argv, "--apply"], env=env)
    assert (code, err.getvalue()) == (0, ""), out.getvalue()
    assert "serviceaccount/arc-runners-capacity-listener created" in out.getvalue()
    assert "secret/arc-runners-capacity-listener-token created" in out.getvalue()
    assert _denied(face) == []
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        again = rbac_main([*argv, "--apply"], env=env)  # idempotent: replaced, not duplicated
    assert again == 0
