"""config/install/: the declarative install (a kustomize base) renders, validates, dry-runs
against the project's Kubernetes face, and holds exactly what ``rbac`` and ``values`` name.

Issue 32: there was no declarative install. Inputs were spread over config/priorityclasses.yaml,
two ConfigMaps with hard-coded names, the values overlay, and config/rbac.yaml with a hashed
ServiceAccount name to fill in after the install (ARC ignores ``serviceAccountName`` in the
listener template); ``rbac --apply`` was imperative. The install gives the listener a
ServiceAccount of fixed name whose token Secret the listener template mounts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from listener.commands import rbac, values
from simulator.engine.store import ObjectStore
from simulator.faces.k8s import K8sFace
from tools import alert_rules, install_manifests

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "config" / "install"
K8S_VERSION = "1.32"


def _kubectl_with_kustomize_v5() -> tuple[str | None, str]:
    """kubectl, if its kustomize has components and replacements (v5; kubectl >= 1.27), and
    why not. Debian bookworm's kubernetes-client (1.20, kustomize v2) cannot build the base."""
    found = shutil.which("kubectl")
    if found is None:
        return None, "kubectl not found (the python machine image ships kubectl 1.32)"
    done = subprocess.run(
        [found, "version", "--client", "-o", "json"],
        capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    try:
        version = str(json.loads(done.stdout).get("kustomizeVersion", ""))
    except ValueError:
        version = ""
    if not version.startswith("v5"):
        return None, f"kubectl's kustomize is {version or 'unknown'}; config/install needs v5"
    return found, ""


KUBECTL, WHY_NOT = _kubectl_with_kustomize_v5()
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason=WHY_NOT)
SCALE_SET = "arc-runners"
#: Rendered for the shipped example (kind, namespace, name).
EXPECTED = {
    ("PriorityClass", "", "arc-placeholder-runner"),
    ("PriorityClass", "", "arc-placeholder-workflow"),
    ("PriorityClass", "", "arc-runner"),
    ("PriorityClass", "", "arc-workflow"),
    ("ClusterRole", "", "arc-capacity-listener-read"),
    ("PodMonitor", "arc-systems", "arc-listeners"),
    ("PrometheusRule", "arc-systems", "arc-capacity-listener"),
    ("ServiceAccount", "arc-systems", "arc-runners-capacity-listener"),
    ("Secret", "arc-systems", "arc-runners-capacity-listener-token"),
    ("ClusterRoleBinding", "", "arc-runners-capacity-listener-read"),
    ("Role", "arc-runners", "arc-runners-capacity-listener"),
    ("RoleBinding", "arc-runners", "arc-runners-capacity-listener"),
    ("ConfigMap", "arc-systems", "arc-runners-capacity-aware"),
    ("ConfigMap", "arc-runners", "arc-runners-hook-template"),
}


def key(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", ""), meta["name"]


def kustomize(path: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [KUBECTL or "kubectl", "kustomize", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    if KUBECTL is None:
        pytest.skip(WHY_NOT)
    return kustomize(INSTALL)


def test_the_generated_manifests_are_current() -> None:
    """Edit config/priorityclasses.yaml, a ConfigMap, the monitoring files or the RBAC code
    and forget `make docs`: this fails instead of installing something else."""
    assert install_manifests.main(["--check"]) == 0, "run `python -m tools.install_manifests`"


@needs_kubectl
def test_kubectl_kustomize_renders_the_whole_install(rendered: list[dict[str, Any]]) -> None:
    assert sorted(key(o) for o in rendered) == sorted(EXPECTED)


@needs_kubectl
def test_the_install_holds_exactly_what_rbac_own_service_account_prints(
    rendered: list[dict[str, Any]],
) -> None:
    """Regression (issue 32): config/rbac.yaml bound a hashed ServiceAccount name to be filled
    in after the install; `rbac` and the declarative install now produce the same objects."""
    expected = rbac.own_service_account(SCALE_SET, "arc-systems", [SCALE_SET])
    by_key = {key(o): o for o in rendered}
    for obj in expected:
        assert by_key.get(key(obj)) == obj, key(obj)


@needs_kubectl
def test_the_values_overlay_names_what_the_install_creates(
    rendered: list[dict[str, Any]],
) -> None:
    """The listener template mounts the install's token Secret over the in-cluster token
    path and the install's ConfigMaps: nothing to fill in by hand."""
    overlay, _ = values.overlay(
        {"containerMode": {"type": "kubernetes-novolume"}},
        image="registry.example.com/arc-capacity-listener:0.1.0",
        configmap=f"{SCALE_SET}-capacity-aware",
        hook_configmap=f"{SCALE_SET}-hook-template",
        token_secret=f"{SCALE_SET}-{rbac.OWN_TOKEN}",
    )
    names = {key(o) for o in rendered}
    listener_spec = overlay["listenerTemplate"]["spec"]
    (container,) = listener_spec["containers"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    by_volume = {v["name"]: v for v in listener_spec["volumes"]}
    token = by_volume[values.TOKEN_VOLUME]["secret"]["secretName"]
    assert ("Secret", "arc-systems", token) in names
    assert mounts[values.TOKEN_VOLUME] == rbac.TOKEN_MOUNT_PATH
    configmap = by_volume["capacity-aware"]["configMap"]["name"]
    assert ("ConfigMap", "arc-systems", configmap) in names
    (hook,) = [v for v in overlay["template"]["spec"]["volumes"] if v["name"] == "hook-template"]
    assert ("ConfigMap", "arc-runners", hook["configMap"]["name"]) in names
    secret = next(o for o in rendered if o["kind"] == "Secret")
    account = secret["metadata"]["annotations"]["kubernetes.io/service-account.name"]
    assert ("ServiceAccount", "arc-systems", account) in names


@needs_kubectl
def test_every_built_in_object_passes_kubernetes_validate(rendered: list[dict[str, Any]]) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    custom = {"PodMonitor", "PrometheusRule"}  # CRDs: no schema there; the face checks them
    checked = [o for o in rendered if o["kind"] not in custom]
    for obj in checked:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    assert len(checked) == len(EXPECTED) - len(custom)


@pytest.fixture
def face() -> Iterator[K8sFace]:
    with K8sFace(ObjectStore(time.time, history=1000), absent_groups={"karpenter.sh"}) as running:
        yield running


@needs_kubectl
def test_every_object_passes_a_server_side_dry_run_against_the_face(
    face: K8sFace, rendered: list[dict[str, Any]], tmp_path: Path
) -> None:
    """kubectl apply -k as a GitOps controller would, but --dry-run=server: validated with
    fieldValidation=Strict (the CRDs against their structural schema), nothing stored."""
    done = subprocess.run(
        [
            KUBECTL or "kubectl",
            "--server",
            face.url,
            "--cache-dir",
            str(tmp_path / "cache"),
            "--request-timeout",
            "10s",
            "apply",
            "--server-side",
            "--dry-run=server",
            "-k",
            str(INSTALL),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(EXPECTED), done.stdout
    assert all(line.endswith("serverside-applied (server dry run)") for line in lines), lines
    assert all(face.store.find(k, n or None, name) is None for k, n, name in EXPECTED)


@needs_kubectl
def test_the_face_refuses_a_misspelled_podmonitor_field_in_a_dry_run(
    face: K8sFace, tmp_path: Path
) -> None:
    """The dry run above can fail: a typo in a custom resource is refused like a CRD would."""
    monitor = yaml.safe_load((INSTALL / "cluster" / "podmonitor.yaml").read_text())
    monitor["spec"]["podMetricsEndpoints"][0]["honorlabels"] = True
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(monitor))
    done = subprocess.run(
        [KUBECTL or "kubectl", "--server", face.url, "--cache-dir", str(tmp_path / "cache"),
         "apply", "--server-side", "--dry-run=server", "-f", str(bad)],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert "honorlabels" in done.stderr


def _overlay(tmp_path: Path, text: str) -> Path:
    where = tmp_path / "overlay"
    where.mkdir()
    rel = os.path.relpath(INSTALL, where)
    (where / "kustomization.yaml").write_text(text.replace("INSTALL", rel))
    return where


@needs_kubectl
def test_one_overlay_value_sets_every_runbook_url(tmp_path: Path) -> None:
    base = "https://git.example.com/acme/arc-capacity-listener/blob/main/docs/troubleshooting.md"
    overlay = _overlay(
        tmp_path,
        "resources: [INSTALL/cluster]\n"
        "components: [INSTALL/runbook-base]\n"
        "configMapGenerator:\n"
        "  - name: install-settings\n"
        f"    literals: [runbookBase={base}]\n"
        "    options:\n"
        "      annotations: {config.kubernetes.io/local-config: 'true'}\n",
    )
    (rule,) = [o for o in kustomize(overlay) if o["kind"] == "PrometheusRule"]
    urls = {
        r["alert"]: r["annotations"]["runbook_url"]
        for g in rule["spec"]["groups"]
        for r in g["rules"]
    }
    source = alert_rules.alerts(alert_rules.RULES.read_text(encoding="utf-8"))
    assert urls == {name: f"{base}#{name.lower()}" for name in source}


@needs_kubectl
def test_another_scale_set_is_one_prefix_and_one_label(tmp_path: Path) -> None:
    """The names come from the scale set: an overlay of ../scale-set with its own prefix gives
    what `rbac --own-service-account --scale-set ci-large` prints, token annotation included."""
    shipped = (INSTALL / SCALE_SET / "kustomization.yaml").read_text()
    overlay = _overlay(
        tmp_path,
        shipped.replace("../scale-set", "INSTALL/scale-set").replace(SCALE_SET, "ci-large"),
    )
    objects = {key(o): o for o in kustomize(overlay)}
    for obj in rbac.own_service_account("ci-large", "arc-systems", ["arc-runners"]):
        if obj["kind"] != "ClusterRole":
            assert objects[key(obj)] == obj, key(obj)
    assert ("ConfigMap", "arc-systems", "ci-large-capacity-aware") in objects


@pytest.mark.parametrize("own", [True, False])
def test_values_mounts_the_fixed_account_token_only_when_asked(tmp_path: Path, own: bool) -> None:
    """`values --own-service-account` names the install's token Secret; without it the listener
    keeps ARC's account (the `rbac --apply` path), so no Secret it would wait for is mounted."""
    current = tmp_path / "current.yaml"
    current.write_text("containerMode: {type: kubernetes-novolume}\n")
    out = tmp_path / "overlay.yaml"
    argv = ["--current", str(current), "--scale-set", "ci", "--image", "img:1", "-o", str(out)]
    assert values.main([*argv, "--own-service-account"] if own else argv) == 0
    spec = yaml.safe_load(out.read_text())["listenerTemplate"]["spec"]
    secrets = [v["secret"]["secretName"] for v in spec["volumes"] if "secret" in v]
    mounts = [m["mountPath"] for m in spec["containers"][0]["volumeMounts"]]
    assert secrets == (["ci-capacity-listener-token"] if own else [])
    assert (rbac.TOKEN_MOUNT_PATH in mounts) is own


def test_rbac_own_service_account_prints_without_a_cluster(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = rbac.main(
        ["--scale-set", "ci", "--namespace", "runners", "--own-service-account"], env={}
    )
    assert code == 0
    printed = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    assert printed == rbac.own_service_account("ci", "arc-systems", ["runners"])


def test_the_fixed_account_is_granted_every_call_the_listener_makes() -> None:
    """The listener runs as the install's account alone (not ARC's): every API call the code
    makes (derived from its source, tests/ship/api_usage.py) must be granted by the
    ClusterRole and the Role the install binds it to, ARC's own listener rules included."""
    from tests.ship.api_usage import Permission, scan

    granted: set[Permission] = set()
    for obj in rbac.own_service_account("ci", "arc-systems", ["runners"]):
        if obj["kind"] not in ("ClusterRole", "Role"):
            continue
        scope = "cluster" if obj["kind"] == "ClusterRole" else "namespaced"
        for rule in obj["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    granted |= {Permission(group, resource, v, scope) for v in rule["verbs"]}
    usage = scan()
    assert usage.permissions and not usage.permissions - granted, sorted(
        usage.permissions - granted
    )
