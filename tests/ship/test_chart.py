"""config/chart/arc-capacity-listener/: the Helm chart of the listener's own objects is generated
from the sources of the kustomize base, passes ``helm lint``, and ``helm template`` renders the
objects ``kubectl kustomize config/install`` renders, for the example and for other inputs.

ARC ships as Helm charts; a team that deploys with Helm had only the kustomize base. The chart
must not become a second, drifting copy: every comparison here is against the base's real
rendering, with the real ``helm`` (built by ``python -m e2e.build helm`` from
``helm.sh/helm/v3``, pinned in e2e/components.py).
"""

from __future__ import annotations

import copy
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.build import binary
from e2e.components import HELM_VERSION
from listener.process.capacity_config import ENV_FILE, load_capacity_aware
from tests.ship.test_install import EXPECTED, INSTALL, KUBECTL, WHY_NOT, key, kustomize
from tools import install_chart, install_manifests

CHART = install_chart.CHART
HELM = binary("helm")
WHY_NO_HELM = (
    f"helm not built at {HELM}: run `python -m e2e.build helm` (Go and the Go module proxy; "
    ".ci/run does it before make test)"
)
needs_helm = pytest.mark.skipif(not HELM.exists(), reason=WHY_NO_HELM)
needs_both = pytest.mark.skipif(
    not HELM.exists() or KUBECTL is None, reason=WHY_NO_HELM if not HELM.exists() else WHY_NOT
)
CLUSTER_KINDS = {"PriorityClass", "ClusterRole", "PodMonitor", "PrometheusRule"}
BLOCK = "capacityAware.yaml"


def helm(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """The real helm, with its cache and config under ``home`` (no repositories, no cluster)."""
    env = {
        **os.environ,
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
        "KUBECONFIG": str(home / "no-kubeconfig"),
    }
    return subprocess.run(
        [str(HELM), *args],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, env=env,
        check=False,
    )  # fmt: skip


def render(tmp_path: Path, *args: str) -> list[dict[str, Any]]:
    done = helm("template", "arc-capacity", str(CHART), *args, home=tmp_path)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def comparable(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """By (kind, namespace, name); the capacityAware block compared as the YAML it holds (the
    chart renders it from a values map, the base keeps the source's text and comments)."""
    out = {}
    for obj in objects:
        obj = copy.deepcopy(obj)
        data = obj.get("data") or {}
        if obj["kind"] == "ConfigMap" and BLOCK in data:
            data[BLOCK] = yaml.safe_load(data[BLOCK])
        out[key(obj)] = obj
    return out


def assert_same(chart: list[dict[str, Any]], base: list[dict[str, Any]]) -> None:
    ours, theirs = comparable(chart), comparable(base)
    assert sorted(ours) == sorted(theirs), sorted(set(ours) ^ set(theirs))
    for name, obj in theirs.items():
        assert ours[name] == obj, name


def test_the_chart_holds_exactly_the_generated_files() -> None:
    """A template the generator no longer writes, left on disk, would still be installed."""
    on_disk = {p for p in CHART.rglob("*") if p.is_file()}
    assert on_disk == set(install_chart.files(install_manifests.COMMAND))
    assert install_manifests.main(["--check"]) == 0, "run `python -m tools.install_manifests`"


@needs_helm
def test_helm_is_the_pinned_version(tmp_path: Path) -> None:
    done = helm("version", "--short", home=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith(HELM_VERSION), done


@needs_helm
@pytest.mark.parametrize("values", [[], ["--set", "cluster.create=false"]], ids=["first", "more"])
def test_helm_lint_passes_strict(tmp_path: Path, values: list[str]) -> None:
    done = helm("lint", "--strict", str(CHART), *values, home=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout


@needs_both
def test_helm_template_renders_what_kubectl_kustomize_renders(tmp_path: Path) -> None:
    """The chart's default values are the base's example: the same objects, field for field."""
    chart = render(tmp_path)
    assert {key(o) for o in chart} == EXPECTED
    assert_same(chart, kustomize(INSTALL))


def _other_base(tmp_path: Path, scale_set: str, controller: str, runner: str, runbook: str) -> Path:
    """config/install for another scale set, namespaces and runbook base, written as
    config/install/README.md says (a copy of arc-runners/ with another prefix and label, the
    namespace patches of "Other namespaces", the runbook-base component)."""
    rel = os.path.relpath(INSTALL, tmp_path / "site")
    (tmp_path / "site" / scale_set).mkdir(parents=True)
    shipped = (INSTALL / "arc-runners" / "kustomization.yaml").read_text()
    (tmp_path / "site" / scale_set / "kustomization.yaml").write_text(
        shipped.replace("../scale-set", f"../{rel}/scale-set").replace("arc-runners", scale_set)
    )
    moves = [
        ("ServiceAccount", f"{scale_set}-capacity-listener", "metadata/namespace", controller),
        ("Secret", f"{scale_set}-capacity-listener-token", "metadata/namespace", controller),
        ("ConfigMap", f"{scale_set}-capacity-aware", "metadata/namespace", controller),
        ("PodMonitor", "arc-listeners", "metadata/namespace", controller),
        ("PrometheusRule", "arc-capacity-listener", "metadata/namespace", controller),
        ("Role", f"{scale_set}-capacity-listener", "metadata/namespace", runner),
        ("RoleBinding", f"{scale_set}-capacity-listener", "metadata/namespace", runner),
        ("ConfigMap", f"{scale_set}-hook-template", "metadata/namespace", runner),
        ("RoleBinding", f"{scale_set}-capacity-listener", "subjects/0/namespace", controller),
        ("ClusterRoleBinding", f"{scale_set}-capacity-listener-read", "subjects/0/namespace",
         controller),
    ]  # fmt: skip
    patches = [
        {
            "target": {"kind": kind, "name": name},
            "patch": yaml.safe_dump([{"op": "replace", "path": f"/{path}", "value": value}]),
        }
        for kind, name, path, value in moves
    ]
    kustomization = {
        "resources": [f"{rel}/cluster", scale_set],
        "components": [f"{rel}/runbook-base"],
        "configMapGenerator": [
            {
                "name": "install-settings",
                "literals": [f"runbookBase={runbook}"],
                "options": {
                    "disableNameSuffixHash": True,
                    "annotations": {"config.kubernetes.io/local-config": "true"},
                },
            }
        ],
        "patches": patches,
    }
    (tmp_path / "site" / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return tmp_path / "site"


@needs_both
def test_other_values_render_what_the_readme_overlay_of_the_base_renders(tmp_path: Path) -> None:
    """Scale set, both namespaces and the runbook base as values give what the README's
    kustomize recipe for them gives: the chart cannot name one namespace where the base names
    another (a Role in the wrong namespace grants nothing)."""
    runbook = "https://git.example.com/acme/arc-capacity-listener/blob/main/docs/troubleshooting.md"
    base = _other_base(tmp_path, "ci-large", "ci-system", "ci-runners", runbook)
    chart = render(
        tmp_path,
        "--set", "scaleSet=ci-large",
        "--set", "controllerNamespace=ci-system",
        "--set", "runnerNamespace=ci-runners",
        "--set", f"cluster.runbookBase={runbook}",
    )  # fmt: skip
    assert_same(chart, kustomize(base))
    assert {o["metadata"].get("namespace", "") for o in chart} == {"", "ci-system", "ci-runners"}


@needs_helm
def test_a_further_release_holds_only_its_scale_sets_objects(tmp_path: Path) -> None:
    """cluster.create=false for every scale set but one: two releases cannot own one
    PriorityClass (Helm refuses the second install)."""
    chart = render(tmp_path, "--set", "cluster.create=false", "--set", "scaleSet=ci-large")
    expected = {
        (kind, ns, name.replace("arc-runners", "ci-large"))
        for kind, ns, name in EXPECTED
        if kind not in CLUSTER_KINDS
    }
    assert {key(o) for o in chart} == expected
    no_monitoring = render(tmp_path, "--set", "cluster.monitoring=false")
    assert {o["kind"] for o in no_monitoring} & CLUSTER_KINDS == {"PriorityClass", "ClusterRole"}


@needs_helm
def test_a_values_file_changes_one_capacity_aware_key_and_keeps_the_rest(tmp_path: Path) -> None:
    """The chart's capacityAware is a map, so Helm merges a user's values key by key (the
    kustomize patch replaces the whole string); the listener's own loader accepts the result."""
    mine = tmp_path / "mine.yaml"
    mine.write_text("capacityAware:\n  proactiveCapacity: 4\n")
    (default,) = [o for o in render(tmp_path) if BLOCK in (o.get("data") or {})]
    (changed,) = [o for o in render(tmp_path, "-f", str(mine)) if BLOCK in (o.get("data") or {})]
    before = yaml.safe_load(default["data"][BLOCK])["capacityAware"]
    after = yaml.safe_load(changed["data"][BLOCK])["capacityAware"]
    assert after == {**before, "proactiveCapacity": 4}
    mounted = tmp_path / BLOCK
    mounted.write_text(changed["data"][BLOCK])
    settings = load_capacity_aware({ENV_FILE: str(mounted)})
    assert settings.proactive_capacity == 4


@needs_helm
def test_a_hook_template_of_ones_own_replaces_the_default_whole(tmp_path: Path) -> None:
    """hookTemplate is the string the runner reads: a user's template is not merged with the
    example's `$job` resources (which would size every workflow pod 2 CPU / 4Gi)."""
    own = "spec:\n  priorityClassName: arc-workflow\n  nodeSelector:\n    pool: gpu\n"
    path = tmp_path / "workflow-pod.yaml"
    path.write_text(own)
    (hook,) = [
        o
        for o in render(tmp_path, "--set-file", f"hookTemplate={path}")
        if "workflow-pod.yaml" in (o.get("data") or {})
    ]
    assert hook["data"]["workflow-pod.yaml"] == own


@needs_helm
@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ("scaleSet=Arc_Runners", "scaleSet"),
        ("runnerNamespace=", "runnerNamespace"),
        ("cluster.creat=false", "creat"),
        ("proactiveCapacity=4", "proactiveCapacity"),
    ],
    ids=["bad name", "empty namespace", "misspelled key", "key outside its block"],
)
def test_the_schema_refuses_a_bad_value_naming_it(tmp_path: Path, setting: str, named: str) -> None:
    done = helm("template", "arc-capacity", str(CHART), "--set", setting, home=tmp_path)
    assert done.returncode != 0
    assert named in done.stderr and not done.stdout
