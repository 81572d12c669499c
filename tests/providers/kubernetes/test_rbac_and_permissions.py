"""``arc-capacity-listener rbac`` and the start-up permission check, against the Kubernetes
face with RBAC on (bearer tokens mapped to ServiceAccounts, SelfSubjectAccessReview)."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from listener.commands.rbac import main as rbac_main
from providers.kubernetes.permissions import (
    CannotCheck,
    Permission,
    missing_permissions,
    required_permissions,
)
from simulator.engine.store import ObjectStore
from simulator.faces.k8s import K8sFace
from tests.providers.kubernetes import objects as o

ADMIN, LISTENER = "admin-token-0123", "listener-token-4567"
SA = "arc-runners-754b578d-listener"  # ARC: <ARS>-<hash of its namespace>-listener


def service_account(name: str, namespace: str, scale_set: str, ns: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "actions.github.com/scale-set-name": scale_set,
                "actions.github.com/scale-set-namespace": ns,
            },
        },
    }


@pytest.fixture
def store() -> ObjectStore:
    s = ObjectStore(time.time, history=1000)
    for obj in o.cluster_admin():
        s.create(obj)
    s.create(service_account(SA, "arc-systems", "arc-runners", "arc-runners"))
    # Another scale set's listener, and one of the same name in another namespace: not ours.
    s.create(service_account("gpu-754b578d-listener", "arc-systems", "gpu", "arc-runners"))
    s.create(
        service_account("arc-runners-6b8f4c9d-listener", "arc-systems", "arc-runners", "team-b")
    )
    return s


#: Bearer tokens of the face: a cluster admin, and ARC's listener ServiceAccount.
TOKENS = {ADMIN: "kube-system/admin", LISTENER: f"arc-systems/{SA}"}


@pytest.fixture
def face(store: ObjectStore) -> Iterator[K8sFace]:
    with K8sFace(store, tokens=TOKENS) as f:
        yield f


def kubeconfig(tmp_path: Path, server: str, token: str) -> Path:
    path = tmp_path / f"kubeconfig-{token[:5]}"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "face", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": token}}],
                "contexts": [{"name": "c", "context": {"cluster": "face", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    return path


def rbac(tmp_path: Path, face: K8sFace, *args: str, token: str = ADMIN) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = {"KUBECONFIG": str(kubeconfig(tmp_path, face.url, token))}
    with redirect_stdout(out), redirect_stderr(err):
        code = rbac_main(list(args), env=env)
    return code, out.getvalue(), err.getvalue()


def listener_api(face: K8sFace, token: str = LISTENER) -> client.ApiClient:
    config = client.Configuration(host=face.url)
    config.api_key = {"authorization": f"Bearer {token}"}
    return client.ApiClient(config)


NEEDED = required_permissions(["arc-runners"])


def test_before_rbac_the_check_names_every_missing_verb_and_resource(face: K8sFace) -> None:
    with listener_api(face) as api:
        missing = missing_permissions(api, NEEDED)
    assert missing == NEEDED
    assert str(missing[0]) == "list core/nodes cluster-wide"
    assert Permission("create", "", "pods", "arc-runners") in missing
    assert (
        str(Permission("create", "", "pods", "arc-runners"))
        == "create core/pods in namespace arc-runners"
    )


def test_rbac_prints_bindings_for_the_listener_service_account_it_finds(
    face: K8sFace, tmp_path: Path
) -> None:
    code, out, err = rbac(
        tmp_path, face, "--scale-set", "arc-runners", "--namespace", "arc-runners"
    )
    assert (code, err) == (0, "")
    docs = [d for d in yaml.safe_load_all(out) if d]
    assert [d["kind"] for d in docs] == ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"]
    subjects = {(s["namespace"], s["name"]) for d in docs if "subjects" in d for s in d["subjects"]}
    assert subjects == {("arc-systems", SA)}
    assert f"ServiceAccount arc-systems/{SA}" in out.splitlines()[0]


def test_rbac_apply_grants_exactly_what_the_check_asks_for(face: K8sFace, tmp_path: Path) -> None:
    args = ("--scale-set", "arc-runners", "--namespace", "arc-runners", "--apply")
    code, out, _ = rbac(tmp_path, face, *args)
    assert code == 0
    assert out.splitlines() == [
        "clusterrole/arc-capacity-listener-read created",
        f"clusterrolebinding/arc-capacity-listener-read-{SA} created",
        "role/arc-capacity-listener created",
        "rolebinding/arc-capacity-listener-arc-runners created",
    ]
    with listener_api(face) as api:
        assert missing_permissions(api, NEEDED) == []
    code, out, _ = rbac(tmp_path, face, *args)  # idempotent
    assert code == 0 and out.count("configured") == 4


def test_a_placeholder_namespace_gets_its_own_role(face: K8sFace, tmp_path: Path) -> None:
    code, out, _ = rbac(
        tmp_path,
        face,
        "--scale-set",
        "arc-runners",
        "--namespace",
        "arc-runners",
        "--placeholder-namespace",
        "arc-placeholders",
    )
    roles = [
        d["metadata"]["namespace"] for d in yaml.safe_load_all(out) if d and d["kind"] == "Role"
    ]
    assert (code, roles) == (0, ["arc-runners", "arc-placeholders"])


def test_an_unknown_scale_set_is_one_clear_error(face: K8sFace, tmp_path: Path) -> None:
    code, out, err = rbac(tmp_path, face, "--scale-set", "nope", "--namespace", "arc-runners")
    assert (code, out) == (1, "")
    assert "no listener ServiceAccount for AutoscalingRunnerSet arc-runners/nope" in err


def test_rbac_without_rights_to_list_service_accounts_says_so(
    face: K8sFace, tmp_path: Path
) -> None:
    code, _, err = rbac(
        tmp_path, face, "--scale-set", "arc-runners", "--namespace", "arc-runners", token=LISTENER
    )
    assert code == 1
    assert "HTTP 403" in err


def test_connection_refused_is_reported_as_such_not_as_missing_rbac(tmp_path: Path) -> None:
    config = client.Configuration(host="http://127.0.0.1:9")
    config.retries = 0
    with (
        client.ApiClient(config) as api,
        pytest.raises(
            CannotCheck, match=r"cannot reach the Kubernetes API at http://127\.0\.0\.1:9"
        ),
    ):
        missing_permissions(api, NEEDED[:1], timeout=2)
