"""config/install/README.md, "GitOps: three rules": each rule holds against the code and the
real tools, using the files and commands the page shows.

A GitOps user had three traps written nowhere: the values overlay goes stale when the scale
set's own values change (Helm replaces lists), the hook template that ``values
--hook-template`` writes has the name of the base's, and a patch of a ConfigMap's embedded
YAML replaces the whole block.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.build import BuildError, arc_git_dir
from e2e.components import ARC_COMMIT
from listener.commands import values
from listener.commands.hook_merge import HOOK_ENV, HOOK_KEY, HOOK_PATH
from listener.process.capacity_config import ENV_FILE, load_capacity_aware
from tests.ship.test_chart import HELM, WHY_NO_HELM, helm
from tests.ship.test_install import INSTALL, KUBECTL, WHY_NOT, key, kustomize

PAGE = INSTALL / "README.md"
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason=WHY_NOT)
RUNNER = {
    "name": "runner",
    "image": "ghcr.io/actions/actions-runner:latest",
    "command": ["/home/runner/run.sh"],
    "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}},
    "env": [{"name": "TEAM", "value": "build"}],
}
USER_VALUES = {
    "githubConfigUrl": "https://github.com/acme",
    "githubConfigSecret": "arc-github-app",
    "runnerScaleSetName": "arc-runners",
    "containerMode": {"type": "kubernetes-novolume"},
    # Names ARC's controller account (helm template cannot look it up without a cluster).
    "controllerServiceAccount": {"namespace": "arc-systems", "name": "arc-gha-rs-controller"},
    "template": {"spec": {"containers": [RUNNER]}},
}


def rule(number: int) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"### {number}. ")
    end = min(i for i in (text.find("\n### ", start + 1), text.find("\n## ", start + 1)) if i > 0)
    return text[start:end]


def blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)


def ci_command(section: str) -> tuple[list[str], str]:
    """The page's ``values`` arguments and the file its ``git diff`` checks."""
    (script,) = blocks(section, "sh")
    lines = script.replace("\\\n", " ").splitlines()
    (command,) = [shlex.split(li) for li in lines if li.startswith("arc-capacity-listener values")]
    (diff,) = [shlex.split(li) for li in lines if li.startswith("git diff --exit-code")]
    return command[2:], diff[-1]


def run_page_command(tmp_path: Path, current: dict[str, Any]) -> dict[str, Any]:
    argv, checked = ci_command(rule(1))
    where = tmp_path / argv[argv.index("--current") + 1]
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(yaml.safe_dump(current, sort_keys=False), encoding="utf-8")
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        assert values.main(argv) == 0
    finally:
        os.chdir(cwd)
    assert argv[argv.index("-o") + 1] == checked  # CI diffs the file the command writes
    return dict(yaml.safe_load((tmp_path / checked).read_text(encoding="utf-8")))


def with_env(extra: dict[str, str]) -> dict[str, Any]:
    changed: dict[str, Any] = yaml.safe_load(yaml.safe_dump(USER_VALUES))
    runner = changed["template"]["spec"]["containers"][0]
    runner["env"] += [{"name": k, "value": v} for k, v in extra.items()]
    return changed


def runner_env(spec: dict[str, Any]) -> dict[str, str]:
    (runner,) = [c for c in spec["containers"] if c["name"] == "runner"]
    return {e["name"]: e.get("value", "") for e in runner.get("env") or ()}


def test_rule_1_the_overlay_carries_the_users_lists_so_ci_regenerates_it(tmp_path: Path) -> None:
    """The overlay holds the runner container's env as it was when `values` ran: a change to
    the values file shows as a diff of the regenerated overlay, which the page's CI fails on."""
    before = run_page_command(tmp_path / "before", USER_VALUES)
    after = run_page_command(tmp_path / "after", with_env({"CACHE_URL": "http://cache:8080"}))
    assert runner_env(before["template"]["spec"]) == {"TEAM": "build", HOOK_ENV: HOOK_PATH}
    assert runner_env(after["template"]["spec"])["CACHE_URL"] == "http://cache:8080"
    assert before != after
    (files,) = blocks(rule(1), "yaml")
    assert yaml.safe_load(files)["valueFiles"][-1] == ci_command(rule(1))[1].split("/")[-1]


def _arc_chart(tmp_path: Path) -> Path:
    try:
        git_dir = arc_git_dir()
    except BuildError as err:
        pytest.skip(str(err))
    archive = subprocess.run(
        ["git", "-C", str(git_dir), "archive", "--format=tar", ARC_COMMIT,
         "charts/gha-runner-scale-set"],
        capture_output=True, check=True, timeout=60,
    )  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=archive.stdout, check=True)
    return tmp_path / "charts" / "gha-runner-scale-set"


def _rendered_runner_env(tmp_path: Path, chart: Path, *files: Path) -> dict[str, str]:
    args = [a for f in files for a in ("-f", str(f))]
    done = helm("template", "arc-runners", str(chart), "-n", "arc-runners", *args, home=tmp_path)
    assert done.returncode == 0, done.stderr
    (scale_set,) = [
        d for d in yaml.safe_load_all(done.stdout) if d and d["kind"] == "AutoscalingRunnerSet"
    ]
    return runner_env(scale_set["spec"]["template"]["spec"])


@pytest.mark.skipif(not HELM.exists(), reason=WHY_NO_HELM)
def test_rule_1_a_stale_overlay_drops_the_users_change_in_arcs_own_chart(tmp_path: Path) -> None:
    """Why the rule exists, with real Helm and ARC's gha-runner-scale-set chart (0.14.2, from
    the ARC clone the e2e builds from): the values file gains an env var, the overlay listed
    after it is stale, and the runner pods would not get it; regenerated, they do."""
    chart = _arc_chart(tmp_path)
    stale = run_page_command(tmp_path / "v1", USER_VALUES)
    changed = with_env({"CACHE_URL": "http://cache:8080"})
    fresh = run_page_command(tmp_path / "v2", changed)
    mine = tmp_path / "values.yaml"
    mine.write_text(yaml.safe_dump(changed))
    for name, overlay in (("stale", stale), ("fresh", fresh)):
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(overlay))
    alone = _rendered_runner_env(tmp_path, chart, mine)
    with_stale = _rendered_runner_env(tmp_path, chart, mine, tmp_path / "stale.yaml")
    with_fresh = _rendered_runner_env(tmp_path, chart, mine, tmp_path / "fresh.yaml")
    assert alone["CACHE_URL"] == "http://cache:8080"
    assert "CACHE_URL" not in with_stale and with_stale[HOOK_ENV] == HOOK_PATH
    assert with_fresh["CACHE_URL"] == "http://cache:8080"
    assert with_fresh[HOOK_ENV] == HOOK_PATH and with_fresh["TEAM"] == "build"


OWN_HOOK_VALUES: dict[str, Any] = {
    **USER_VALUES,
    "template": {
        "spec": {
            "containers": [
                {
                    **RUNNER,
                    "env": [{"name": HOOK_ENV, "value": "/home/runner/pod-templates/default.yaml"}],
                    "volumeMounts": [
                        {"name": "pod-templates", "mountPath": "/home/runner/pod-templates"}
                    ],
                }
            ]
        }
    },
}
OWN_TEMPLATE = {"spec": {"nodeSelector": {"pool": "gpu"}, "containers": [{"name": "$job"}]}}


def _merged_hook(tmp_path: Path) -> Path:
    """What `values --hook-template` writes for the page's scale set."""
    current, hook = tmp_path / "values.yaml", tmp_path / "my-hook.yaml"
    current.write_text(yaml.safe_dump(OWN_HOOK_VALUES))
    hook.write_text(yaml.safe_dump(OWN_TEMPLATE))
    found = re.search(r"- path: (\S+)\s+# as written by values --hook-template", rule(2))
    assert found is not None, "the page's patch line"
    patch = found.group(1)
    argv = [
        "--current", str(current), "--scale-set", "arc-runners", "--image", "reg/acl:1",
        "--hook-template", str(hook), "--namespace", "arc-runners",
        "-o", str(tmp_path / "overlay.yaml"),
    ]  # fmt: skip
    cwd = Path.cwd()
    os.chdir(tmp_path)  # the page's patch names the file `values` writes by default
    try:
        assert values.main(argv) == 0
    finally:
        os.chdir(cwd)
    assert (tmp_path / patch).exists(), sorted(p.name for p in tmp_path.iterdir())
    return tmp_path / patch


def _site(tmp_path: Path, kustomization: str, *files: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    rel = os.path.relpath(INSTALL, site)
    (site / "kustomization.yaml").write_text(kustomization.replace("../config/install", rel))
    for file in files:
        (site / file.name).write_text(file.read_text())
    return site


@needs_kubectl
def test_rule_2_the_users_hook_template_has_the_bases_name(tmp_path: Path) -> None:
    merged = yaml.safe_load(_merged_hook(tmp_path).read_text())
    names = {key(o) for o in kustomize(INSTALL)}
    assert ("ConfigMap", merged["metadata"]["namespace"], merged["metadata"]["name"]) in names
    assert "`<scale set>-hook-template`" in rule(2)


@needs_kubectl
def test_rule_2_as_a_resource_it_collides_as_the_page_says(tmp_path: Path) -> None:
    merged = _merged_hook(tmp_path)
    site = _site(tmp_path, f"resources:\n  - ../config/install\n  - {merged.name}\n", merged)
    done = subprocess.run(
        [KUBECTL or "kubectl", "kustomize", str(site)],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    quoted = re.search(r"kustomize refuses to build \(`([^`]+)`\)", rule(2))
    assert quoted is not None and quoted.group(1) in done.stderr, done.stderr


@needs_kubectl
def test_rule_2_as_the_pages_patch_it_replaces_the_bases_template(tmp_path: Path) -> None:
    merged = _merged_hook(tmp_path)
    (kustomization,) = blocks(rule(2), "yaml")
    rendered = kustomize(_site(tmp_path, kustomization, merged))
    (hook,) = [
        o for o in rendered if key(o) == ("ConfigMap", "arc-runners", "arc-runners-hook-template")
    ]
    assert hook["data"] == yaml.safe_load(merged.read_text())["data"]
    template = yaml.safe_load(hook["data"][HOOK_KEY])
    assert template["spec"]["nodeSelector"] == {"pool": "gpu"}
    assert template["spec"]["priorityClassName"] == "arc-workflow"
    assert hook["metadata"]["labels"]["arc-capacity-listener/scale-set"] == "arc-runners"
    assert len(rendered) == len(kustomize(INSTALL))


@needs_kubectl
def test_rule_3_a_patch_replaces_the_whole_capacity_aware_block(tmp_path: Path) -> None:
    """The page's patch is the block the listener gets, and nothing of the base's block is
    left: a shorter patch drops the base's keys (they fall back to the defaults)."""
    (patch_text,) = blocks(rule(3), "yaml")
    patch = tmp_path / "capacity-aware.yaml"
    patch.write_text(patch_text)
    kustomization = "resources:\n  - ../config/install\npatches:\n  - path: capacity-aware.yaml\n"
    rendered = {key(o): o for o in kustomize(_site(tmp_path, kustomization, patch))}
    block = rendered[("ConfigMap", "arc-systems", "arc-runners-capacity-aware")]["data"]
    assert block == yaml.safe_load(patch_text)["data"]
    mounted = tmp_path / "capacityAware.yaml"
    mounted.write_text(block["capacityAware.yaml"])
    assert load_capacity_aware({ENV_FILE: str(mounted)}).proactive_capacity == 4

    short = yaml.safe_load(patch_text)
    short["data"]["capacityAware.yaml"] = "capacityAware:\n  proactiveCapacity: 4\n"
    patch.write_text(yaml.safe_dump(short))
    rendered = {key(o): o for o in kustomize(_site(tmp_path, kustomization, patch))}
    got = rendered[("ConfigMap", "arc-systems", "arc-runners-capacity-aware")]["data"]
    assert yaml.safe_load(got["capacityAware.yaml"]) == {"capacityAware": {"proactiveCapacity": 4}}
    assert "replaces the whole block" in rule(3)
