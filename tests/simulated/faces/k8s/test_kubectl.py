"""kubectl against the HTTP face: discovery, list, watch and custom resources."""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import threading
from collections import Counter
from pathlib import Path

import pytest
import yaml

from simulator.engine.store import ObjectStore
from simulator.faces.k8s import K8sFace
from tests.providers.kubernetes import objects as o

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)")


ROOT = Path(__file__).resolve().parents[4]


def manifests() -> list[Path]:
    """Every Kubernetes manifest under config/ (YAML whose documents all have a kind)."""
    out = []
    for path in sorted((ROOT / "config").glob("*.yaml")):
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        if docs and all(isinstance(d, dict) and "kind" in d and "apiVersion" in d for d in docs):
            out.append(path)
    return out


def run_kubectl(face: K8sFace, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
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
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)


def kubectl(face: K8sFace, tmp_path: Path, *args: str) -> str:
    done = run_kubectl(face, tmp_path, *args)
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


def test_config_manifests_are_what_kubectl_apply_should_see():
    names = {p.name for p in manifests()}
    assert names == {
        "capacity-aware-configmap.yaml",
        "hook-template.yaml",
        "placeholder-pdb.yaml",
        "priorityclasses.yaml",
        "rbac.yaml",
    }


@pytest.mark.parametrize("manifest", manifests(), ids=lambda p: p.name)
def test_kubectl_applies_config_manifest_with_validation(
    face: K8sFace, store: ObjectStore, tmp_path: Path, manifest: Path
):
    """No --validate=false: kubectl reads /openapi/v3, sends fieldValidation=Strict."""
    docs = [d for d in yaml.safe_load_all(manifest.read_text()) if d]
    for doc in docs:  # the fixture's PriorityClasses are the ones in the manifest
        if store.find(doc["kind"], doc["metadata"].get("namespace"), doc["metadata"]["name"]):
            store.remove(doc["kind"], doc["metadata"].get("namespace"), doc["metadata"]["name"])
    first = kubectl(face, tmp_path, "apply", "-f", str(manifest))
    assert first.count(" created") == len(docs), first
    again = kubectl(face, tmp_path, "apply", "-f", str(manifest))
    # policy/v1 PodDisruptionBudget spec.selector has patchStrategy "replace": kubectl's
    # computed patch is never empty, so a real API server reports an unchanged PDB as
    # "configured" too (k8s.io/api policy/v1 types.go; seen in Azure/eno#246).
    replaced = sum(1 for d in docs if d["kind"] == "PodDisruptionBudget")
    assert again.count(" unchanged") == len(docs) - replaced, again
    assert again.count(" configured") == replaced, again
    server_side = kubectl(face, tmp_path, "apply", "--server-side", "-f", str(manifest))
    assert server_side.count(" serverside-applied") == len(docs), server_side
    for doc in docs:
        stored = store.get(doc["kind"], doc["metadata"].get("namespace"), doc["metadata"]["name"])
        body = {k: v for k, v in doc.items() if k not in ("metadata", "apiVersion", "kind")}
        assert {k: stored.get(k) for k in body} == body
    kinds = Counter(d["kind"] for d in docs)
    assert all(face.calls[f"patch {k}"] >= n for k, n in kinds.items())  # applied by PATCH


def test_kubectl_strict_validation_refuses_an_unknown_field(face: K8sFace, tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: typo}\n"
        "value: 5\nvalu: 6\n"
    )
    done = run_kubectl(face, tmp_path, "apply", "-f", str(bad))
    assert done.returncode == 1
    assert 'strict decoding error: unknown field "valu"' in done.stderr
    assert face.store.find("PriorityClass", None, "typo") is None


def test_kubectl_refuses_to_change_a_priority_class_value(face: K8sFace, tmp_path: Path):
    change = tmp_path / "change.yaml"
    change.write_text(
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: arc-runner}\n"
        "value: 999\n"
    )
    done = run_kubectl(face, tmp_path, "apply", "--server-side", "-f", str(change))
    assert done.returncode == 1
    assert 'The PriorityClass "arc-runner" is invalid: value: Forbidden' in done.stderr
    assert face.store.get("PriorityClass", None, "arc-runner")["value"] == 20


def test_server_side_apply_drops_what_the_manager_stopped_applying_and_keeps_others(
    face: K8sFace, store: ObjectStore, tmp_path: Path
):
    cm = tmp_path / "cm.yaml"
    head = f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c, namespace: {o.NS}}}\n"
    cm.write_text(head + "data: {a: '1', b: '2'}\n")
    kubectl(face, tmp_path, "apply", "--server-side", "-f", str(cm))
    kubectl(
        face,
        tmp_path,
        "patch",
        "configmap",
        "c",
        "-n",
        o.NS,
        "--type",
        "merge",
        "-p",
        '{"data": {"other": "x"}}',
    )
    cm.write_text(head + "data: {a: '3'}\n")
    kubectl(face, tmp_path, "apply", "--server-side", "-f", str(cm))
    stored = store.get("ConfigMap", o.NS, "c")
    assert stored["data"] == {"a": "3", "other": "x"}
    managers = [(m["manager"], m["operation"]) for m in stored["metadata"]["managedFields"]]
    assert managers == [("kubectl", "Apply")]


def test_kubectl_get_pods_prints_ready_and_status_columns(
    face: K8sFace, store: ObjectStore, tmp_path: Path
):
    out = kubectl(face, tmp_path, "get", "pods", "-n", o.NS)
    header, *rows = out.splitlines()
    assert header.split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    by_name = {r.split()[0]: r.split() for r in rows}
    assert by_name["unrelated"][1:3] == ["0/1", "Running"]  # no containerStatuses: not ready
    assert (
        by_name["arc-runners-runner-a-workflow"][2]
        == store.get("Pod", o.NS, "arc-runners-runner-a-workflow")["status"]["phase"]
    )
    store.delete("Pod", o.NS, "unrelated")  # bound: graceful, deletionTimestamp set
    out = kubectl(face, tmp_path, "get", "pod", "unrelated", "-n", o.NS, "-o", "wide")
    header, row = out.splitlines()
    assert header.split()[:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]
    assert row.split()[2] == "Terminating" and row.split()[6] == "node-a"


def test_kubectl_auth_can_i_sends_a_protobuf_review_the_face_reads(face: K8sFace, tmp_path: Path):
    """kubectl posts SelfSubjectAccessReview as protobuf. (It sends no bearer token to a
    plain-http server, so RBAC decisions are tested with the Python client instead.)"""
    done = run_kubectl(face, tmp_path, "auth", "can-i", "create", "pods", "-n", o.NS)
    assert (done.returncode, done.stdout.strip()) == (0, "yes"), done.stderr
    assert face.calls["create SelfSubjectAccessReview"] == 1
