"""docs/uninstall.md: its removal list is what the install and the listener create, and its
``kubectl delete`` commands, with the label selectors and names the code really uses,
remove every one of those objects (and the per-scale-set commands nothing shared).

Issue 46: switching off, going back to stock ARC and uninstalling were scattered over three
pages, and no page listed the ServiceAccount, its token Secret, the ClusterRoleBinding or the
Lease at all. The Helm chart (config/chart/) creates the same list, checked here with the real
``helm template``; its ``helm uninstall`` section against what each release holds.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from providers.kubernetes.lease.election import lease_name
from providers.kubernetes.pods import labels as L
from tests.providers.kubernetes import objects as o
from tests.providers.kubernetes.pods.test_placeholders import builder, pair
from tests.ship.test_chart import HELM, WHY_NO_HELM
from tests.ship.test_chart import render as helm_template
from tests.ship.test_install import INSTALL, KUBECTL, WHY_NOT, key, kustomize

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "uninstall.md"
ERS = "<EphemeralRunnerSet>"
#: The EphemeralRunnerSet of the Kubernetes test objects the placeholder builder serves.
SAMPLE_ERS = o.ERS
#: kubectl's resource names on the page -> kinds.
KINDS = {
    "priorityclass": "PriorityClass",
    "clusterrole": "ClusterRole",
    "clusterrolebinding": "ClusterRoleBinding",
    "role": "Role",
    "rolebinding": "RoleBinding",
    "serviceaccount": "ServiceAccount",
    "secret": "Secret",
    "configmap": "ConfigMap",
    "podmonitor": "PodMonitor",
    "prometheusrule": "PrometheusRule",
    "pods": "Pod",
    "lease": "Lease",
}
CLUSTER_SCOPED = {"PriorityClass", "ClusterRole", "ClusterRoleBinding"}


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    if KUBECTL is None:
        pytest.skip(WHY_NOT)
    return kustomize(INSTALL)


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The chart's objects for the example scale set, with the cluster-wide ones."""
    if not HELM.exists():
        pytest.skip(WHY_NO_HELM)
    return helm_template(tmp_path_factory.mktemp("helm"))


def section(heading: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(heading + "\n")
    rest = text[start + len(heading) + 1 :]
    level = heading.split(" ", 1)[0]
    ends = [m.start() for m in re.finditer(rf"^#{{2,{len(level)}}} ", rest, re.MULTILINE)]
    return rest[: ends[0]] if ends else rest


def table() -> dict[tuple[str, str, str], list[str]]:
    """(kind, namespace, name) -> the row's cells, of the removal list (placeholders, which
    have no fixed name, as ``placeholders``)."""
    rows = {}
    for line in section("## 3. Remove everything it installed").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or cells[0] == "kind" or set(cells[0]) <= {"-"}:
            continue
        name = "placeholders" if cells[2].startswith("placeholders:") else cells[2].strip("`")
        rows[(cells[0], cells[1], name)] = cells
    return rows


@dataclass(frozen=True)
class Delete:
    """One removal command of the page: kinds, namespace, label selector, names or a name
    substring (``kubectl get ... | grep '<part>' | xargs kubectl delete``)."""

    kinds: tuple[str, ...]
    namespace: str
    selector: dict[str, str]
    names: tuple[str, ...] = ()
    contains: str = ""

    def removes(self, kind: str, namespace: str, name: str, labels: dict[str, str]) -> bool:
        if kind not in self.kinds or (kind not in CLUSTER_SCOPED and namespace != self.namespace):
            return False
        if any(labels.get(k) != v for k, v in self.selector.items()):
            return False
        if self.names and name not in self.names:
            return False
        return self.contains in f"/{name}"


def commands(text: str, env: dict[str, str]) -> list[Delete]:
    out = []
    for line in re.findall(r"^kubectl .*$", text, re.MULTILINE):
        for var, value in env.items():
            line = line.replace(f"${var}", value)
        first, *piped = [shlex.split(part) for part in line.split(" | ")]
        verb, resources, *args = first[1:]
        if verb not in ("delete", "get"):
            continue
        if verb == "get" and not any(p[:1] == ["xargs"] for p in piped):
            continue
        kinds = tuple(KINDS[r] for r in resources.split(","))
        namespace, selector, names = "", {}, []
        it = iter(args)
        for arg in it:
            if arg == "-n":
                namespace = next(it)
            elif arg == "-l":
                selector = dict(pair.split("=", 1) for pair in next(it).split(","))
            elif arg == "-o":
                next(it)
            elif not arg.startswith("-"):
                names.append(arg)
        grep = next((p[1] for p in piped if p[:1] == ["grep"]), "")
        out.append(Delete(kinds, namespace, selector, tuple(names), grep))
    return out


def placeholder_labels() -> dict[str, str]:
    """The labels the listener's own builder puts on a placeholder pod, with the page's
    stand-in for the EphemeralRunnerSet's name."""
    runner, workflow = builder(o.runner_template()).build(pair(scale_set=SAMPLE_ERS))
    labels = dict(runner["metadata"]["labels"])
    assert labels == workflow["metadata"]["labels"] | {L.LABEL_ROLE: "runner"}
    return {k: ERS if v == SAMPLE_ERS else v for k, v in labels.items()}


def runtime_objects() -> list[tuple[str, str, str, dict[str, str]]]:
    return [
        ("Lease", "arc-runners", lease_name(ERS), {}),
        ("Pod", "arc-runners", "placeholders", placeholder_labels()),
    ]


INSTALLS = ["rendered", "chart"]


@pytest.mark.parametrize("install", INSTALLS, ids=["kustomize", "helm chart"])
def test_the_removal_list_is_what_the_install_and_the_listener_create(
    install: str, request: pytest.FixtureRequest
) -> None:
    """A new object in config/install or the chart (or a renamed Lease) that the page does not
    list fails here: it would survive an uninstall."""
    objects = request.getfixturevalue(install)
    created = {key(obj) for obj in objects} | {(k, ns, n) for k, ns, n, _ in runtime_objects()}
    assert set(table()) == created, sorted(set(table()) ^ created)
    installed = {row for row, cells in table().items() if cells[3] == "install"}
    assert {key(obj) for obj in objects} == installed


def test_the_placeholder_row_names_the_labels_the_listener_puts_on_them() -> None:
    cell = table()[("Pod", "arc-runners", "placeholders")][2]
    shown = dict(p.split("=", 1) for p in re.findall(r"`([^`=]+=[^`]+)`", cell))
    labels = placeholder_labels()
    assert shown == {L.LABEL_MANAGED_BY: labels[L.LABEL_MANAGED_BY], L.LABEL_SCALE_SET: ERS}
    assert labels[L.LABEL_SCALE_SET] == ERS


def _all(rendered: list[dict[str, Any]]) -> list[tuple[str, str, str, dict[str, str]]]:
    installed = [(*key(obj), dict(obj["metadata"].get("labels") or {})) for obj in rendered]
    return installed + runtime_objects()


@pytest.mark.parametrize("install", INSTALLS, ids=["kustomize", "helm chart"])
def test_after_the_last_scale_set_every_object_is_removed(
    install: str, request: pytest.FixtureRequest
) -> None:
    deletes = commands(section("### After the last scale set"), {})
    left = [
        (kind, ns, name)
        for kind, ns, name, labels in _all(request.getfixturevalue(install))
        if not any(d.removes(kind, ns, name, labels) for d in deletes)
    ]
    assert not left, left


@pytest.mark.parametrize("install", INSTALLS, ids=["kustomize", "helm chart"])
def test_removing_one_scale_set_removes_its_objects_and_nothing_shared(
    install: str, request: pytest.FixtureRequest
) -> None:
    """Removing one scale set must not take the PriorityClasses, the ClusterRole or the
    monitoring other scale sets use."""
    deletes = commands(section("### This scale set"), {"ERS": ERS})
    removed = {
        (kind, ns, name)
        for kind, ns, name, labels in _all(request.getfixturevalue(install))
        if any(d.removes(kind, ns, name, labels) for d in deletes)
    }
    own = {row for row, cells in table().items() if cells[4] == "scale set"}
    assert removed == own, sorted(removed ^ own)


def test_the_page_says_the_block_is_read_once_at_start_as_the_code_does() -> None:
    """The switch-off section tells on-call whether editing the ConfigMap is enough; the
    listener loads the block in one place, before it starts."""
    users = [
        path.relative_to(ROOT).as_posix()
        for folder in ("listener", "providers", "reconciler")
        for path in (ROOT / folder).rglob("*.py")
        if "load_capacity_aware(" in path.read_text(encoding="utf-8")
        and path.name != "capacity_config.py"
        and "verify" not in path.parts
    ]
    assert users == ["listener/process/app.py"], users
    text = section("## 1. Switch capacity-aware mode off now")
    assert "reads the block once, at start, and never again" in text
    assert "delete pod" in text and "enabled: false" in text


def test_each_helm_uninstall_removes_what_the_page_says_its_release_holds(
    tmp_path: Path,
) -> None:
    """A release with cluster.create=false holds one scale set's rows; the one with
    cluster.create=true every installed row: uninstalling it first would take the
    PriorityClasses the other scale sets' runner pods name."""
    if not HELM.exists():
        pytest.skip(WHY_NO_HELM)
    text = section("### With the Helm chart")
    lines = re.findall(r"^helm uninstall (\S+) -n (\S+) +# .*cluster\.create=(\w+)$", text, re.M)
    assert [create for _, _, create in lines] == ["false", "true"]  # the shared one last
    rows = {row: cells for row, cells in table().items() if cells[3] == "install"}
    for release, _, create in lines:
        scale_set = release.removeprefix("arc-capacity-")
        held = helm_template(tmp_path, "--set", f"scaleSet={scale_set}",
                             "--set", f"cluster.create={create}")  # fmt: skip
        said = {
            (kind, ns, name.replace("arc-runners", scale_set))
            for (kind, ns, name), cells in rows.items()
            if create == "true" or cells[4] == "scale set"
        }
        assert {key(obj) for obj in held} == said, release
    readme = (INSTALL / "README.md").read_text(encoding="utf-8")
    installed = re.findall(r"^helm install (\S+) config/chart/\S+ -n (\S+)", readme, re.M)
    assert sorted(installed) == sorted((release, ns) for release, ns, _ in lines)
    assert "first three lines of\n[this scale set](#this-scale-set)" in text
