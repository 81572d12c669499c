"""`arc-capacity-listener values` checks what it reads and its arguments before writing
anything, and merges a hook template the scale set already has instead of replacing it
(issue 32). Each case names the failure it prevents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from listener.commands.chart_values import load_values, problems, schema
from listener.commands.values import LISTENER_RESOURCES, main

ROOT = Path(__file__).resolve().parents[2]
RUNNER = {
    "name": "runner",
    "image": "ghcr.io/actions/actions-runner:latest",
    "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}},
}
GOOD = {
    "githubConfigUrl": "https://github.com/acme",
    "githubConfigSecret": "arc-github-app",
    "runnerScaleSetName": "arc-runners",
    "containerMode": {"type": "kubernetes-novolume"},
    "template": {"spec": {"containers": [RUNNER]}},
}


def run_values(
    tmp_path: Path, current: str | dict[str, Any], *extra: str, scale_set: str = "arc-runners"
) -> tuple[int, Path]:
    path = tmp_path / "current-values.yaml"
    text = current if isinstance(current, str) else yaml.safe_dump(current, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "overlay.yaml"
    argv = ["--current", str(path), "--scale-set", scale_set, "--image", "reg/acl:1"]
    return main([*argv, "-o", str(out), *extra]), out


BAD_VALUES = [
    pytest.param(
        "runnerScaleSetName: arc-runners\ntempalte:\n  spec: {}\n",
        "current-values.yaml: line 2: tempalte: unknown key; did you mean 'template'?",
        id="a typo is not turned into the chart's default runner",
    ),
    pytest.param(
        "template:\n  spec:\n    containers: {name: runner}\n",
        "line 3: template.spec.containers: expected a list of Container entries, got a mapping",
        id="containers as a mapping is one line, not a traceback",
    ),
    pytest.param(
        "template:\n  spec:\n    nodeSelectr: {pool: ci}\n",
        "template.spec.nodeSelectr: unknown PodSpec field; did you mean 'nodeSelector'?",
        id="a misspelt PodSpec field",
    ),
    pytest.param(
        "template:\n  spec:\n    containers:\n      - image: x\n",
        "template.spec.containers[0]: a container needs a name",
        id="a container without a name",
    ),
    pytest.param(
        "template:\n  spec:\n   containers: [\n  - x\n",
        "current-values.yaml: line 4, column 3: not valid YAML",
        id="bad YAML names the file and the line",
    ),
    pytest.param(
        "containerMode:\n  type: kubernetes-no-volume\n",
        "containerMode.type: 'kubernetes-no-volume' is not one of 'dind', 'kubernetes'",
        id="an unknown container mode",
    ),
    pytest.param(
        "keyVault:\n  type: azure_key_vault\n  azure_key_vault: {url: u}\n",
        "keyVault.azure_key_vault: unknown key; did you mean 'azureKeyVault'?",
        id="the spelling of values.yaml's comment, which the templates never read",
    ),
    pytest.param(
        "minRunners: 3\nmaxRunners: 2\n",
        "line 2: maxRunners: must be >= minRunners (2 < 3)",
        id="crossed runner bounds",
    ),
    pytest.param(
        "capacityAware:\n  enabled: true\n",
        "capacityAware: the chart ignores this key; the listener reads the block from a ConfigMap",
        id="a capacityAware block in the Helm values",
    ),
    pytest.param(
        "template:\n  spec:\n    containers:\n      - name: runnr\n",
        "line 4: template.spec.containers[0].name: 'runnr': ARC configures the container named "
        "'runner' (any other is a sidecar); did you mean 'runner'?",
        id="a misspelt runner container would become a sidecar",
    ),
    pytest.param(
        "template:\n  spec:\n    volumes:\n      - name: Cache_Dir\n        emptyDir: {}\n",
        "template.spec.volumes[0]: a volume needs a name of lowercase letters",
        id="an invalid volume name",
    ),
    pytest.param(
        "USER-SUPPLIED VALUES:\nrunnerScaleSetName: arc-runners\n",
        "line 1: USER-SUPPLIED VALUES: this is `helm get values` without `-o yaml`",
        id="helm's plain output header",
    ),
    pytest.param(
        "- just\n- a list\n",
        "expected a mapping of Helm values",
        id="not a mapping",
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD_VALUES)
def test_bad_values_are_refused_in_one_line_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    code, out = run_values(tmp_path, text)
    err = capsys.readouterr().err
    assert code == 1
    assert message in err
    assert "Traceback" not in err
    assert all(line.startswith("arc-capacity-listener values: ") for line in err.splitlines())
    assert not out.exists()  # nothing written


BAD_ARGUMENTS = [
    pytest.param(
        ["--scale-set", "Arc Runners!"],
        "--scale-set 'Arc Runners!': a runner scale set name",
        id="an invalid object name",
    ),
    pytest.param(
        ["--scale-set", "a" * 46], "at most 45 characters", id="longer than the chart allows"
    ),
    pytest.param(
        ["--scale-set", "other"],
        "runnerScaleSetName is 'arc-runners' but --scale-set is 'other'",
        id="a scale set other than the file's",
    ),
    pytest.param(["--image", ""], "--image '': expected an image reference", id="empty image"),
]


@pytest.mark.parametrize(("extra", "message"), BAD_ARGUMENTS)
def test_bad_arguments_are_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    args = dict(zip(extra[::2], extra[1::2], strict=True))
    scale_set = args.pop("--scale-set", "arc-runners")
    flat = [x for pair in args.items() for x in pair]
    code, out = run_values(tmp_path, GOOD, *flat, scale_set=scale_set)
    assert code == 1
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_the_shipped_full_example_passes_the_chart_schema() -> None:
    """Prevents a schema so strict it refuses the project's own example values."""
    path = ROOT / "config" / "values-capacity-aware.yaml"
    assert problems(load_values(path, path.read_text(encoding="utf-8"))) == []


def test_the_0_15_listener_rate_limit_is_a_chart_value() -> None:
    """Prevents refusing ARC 0.15's ``listenerConfig.scaler`` (the chart copies it into the
    AutoscalingRunnerSet, ARC 142132e) as an unknown key, while a misspelling of it is still
    caught."""
    ok = "listenerConfig:\n  scaler:\n    qps: 75\n    burst: 150\n"
    assert problems(load_values(Path("v.yaml"), ok)) == []
    typo = "listenerConfig:\n  scaler:\n    qsp: 75\n"
    (found,) = problems(load_values(Path("v.yaml"), typo))
    assert "listenerConfig.scaler.qsp: unknown key; did you mean 'qps'?" in found


def test_the_schema_says_where_it_came_from() -> None:
    source = schema()["source"]
    assert source["repository"] == "actions/actions-runner-controller"
    assert {"0.13.0", "0.14.2"} <= set(source["versions"])
    assert all(len(commit) == 40 for commit in source["versions"].values())


def test_the_listener_pod_gets_the_security_context_and_a_tmp_volume(tmp_path: Path) -> None:
    """Prevents an overlay without the pod hardening config/values-capacity-aware.yaml has
    (the image runs read-only: a library writing to /tmp would fail)."""
    code, out = run_values(tmp_path, GOOD)
    assert code == 0
    spec = yaml.safe_load(out.read_text())["listenerTemplate"]["spec"]
    shipped = yaml.safe_load((ROOT / "config" / "values-capacity-aware.yaml").read_text())
    want = shipped["listenerTemplate"]["spec"]
    assert spec["securityContext"] == want["securityContext"]
    (listener,) = spec["containers"]
    assert listener["securityContext"] == want["containers"][0]["securityContext"]
    assert {"name": "tmp", "mountPath": "/tmp"} in listener["volumeMounts"]
    assert {"name": "tmp", "emptyDir": {"sizeLimit": "16Mi"}} in spec["volumes"]


def test_the_users_own_security_settings_are_kept(tmp_path: Path) -> None:
    current = {
        **GOOD,
        "listenerTemplate": {"spec": {"securityContext": {"runAsUser": 1000}, "containers": []}},
    }
    code, out = run_values(tmp_path, current)
    assert code == 0
    spec = yaml.safe_load(out.read_text())["listenerTemplate"]["spec"]
    assert spec["securityContext"]["runAsUser"] == 1000
    assert spec["securityContext"]["runAsNonRoot"] is True


@pytest.mark.parametrize(
    ("resources", "warned"),
    [
        ({"requests": {"cpu": "50m", "memory": "128Mi"}}, ["requests.cpu", "requests.memory"]),
        (
            {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "256Mi"}},
            ["limits.memory"],
        ),
        (LISTENER_RESOURCES, []),
        ({"requests": {"cpu": "1", "memory": "1Gi"}}, []),
    ],
)
def test_listener_resources_below_the_measured_need_are_kept_with_a_warning(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    resources: dict[str, Any],
    warned: list[str],
) -> None:
    listener = {"name": "listener", "resources": resources}
    current = {**GOOD, "listenerTemplate": {"spec": {"containers": [listener]}}}
    code, out = run_values(tmp_path, current)
    assert code == 0
    (kept,) = yaml.safe_load(out.read_text())["listenerTemplate"]["spec"]["containers"]
    assert kept["resources"] == resources
    warnings = [line for line in capsys.readouterr().err.splitlines() if "measured need" in line]
    assert [w.split("resources.")[1].split(" ")[0] for w in warnings] == warned


OWN_HOOK_VALUES = {
    **GOOD,
    "template": {
        "spec": {
            "volumes": [{"name": "pod-templates", "configMap": {"name": "my-pod-templates"}}],
            "containers": [
                {
                    **RUNNER,
                    "env": [
                        {
                            "name": "ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE",
                            "value": "/home/runner/pod-templates/default.yaml",
                        }
                    ],
                    "volumeMounts": [
                        {"name": "pod-templates", "mountPath": "/home/runner/pod-templates"}
                    ],
                }
            ],
        }
    },
}
OWN_TEMPLATE = {
    "spec": {
        "nodeSelector": {"pool": "gpu"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "volumes": [{"name": "scratch", "emptyDir": {}}],
        "containers": [{"name": "$job", "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}}],
    }
}


def own_configmap(template: dict[str, Any]) -> dict[str, Any]:
    """What ``kubectl get configmap my-pod-templates -o yaml`` prints."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "my-pod-templates", "namespace": "arc-runners"},
        "data": {"default.yaml": yaml.safe_dump(template)},
    }


def test_a_hook_template_of_the_users_own_is_not_silently_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Prevents the overlay from repointing ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE (exit 0,
    no warning) so that every workflow pod lost its tolerations, nodeSelector and resources."""
    code, out = run_values(tmp_path, OWN_HOOK_VALUES)
    err = capsys.readouterr().err
    assert code == 1 and not out.exists()
    assert len(err.splitlines()) == 1
    assert "already sets ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE" in err
    assert "--hook-template" in err and "kubectl get configmap my-pod-templates" in err


@pytest.mark.parametrize("as_configmap", [True, False], ids=["configmap", "bare template"])
def test_the_users_hook_template_is_kept_and_arc_workflow_merged_into_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], as_configmap: bool
) -> None:
    hook = tmp_path / "hook.yaml"
    document = own_configmap(OWN_TEMPLATE) if as_configmap else OWN_TEMPLATE
    hook.write_text(yaml.safe_dump(document), encoding="utf-8")
    merged_file = tmp_path / "merged.yaml"
    code, out = run_values(
        tmp_path,
        OWN_HOOK_VALUES,
        "--hook-template", str(hook), "--hook-output", str(merged_file),
        "--namespace", "arc-runners",
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    manifest = yaml.safe_load(merged_file.read_text())
    assert manifest["metadata"] == {
        "name": "arc-runners-hook-template",
        "labels": {"app.kubernetes.io/part-of": "arc-capacity-listener"},
        "namespace": "arc-runners",
    }
    merged = yaml.safe_load(manifest["data"]["workflow-pod.yaml"])
    for key, value in OWN_TEMPLATE["spec"].items():
        assert merged["spec"][key] == value  # kept as written
    assert merged["spec"]["priorityClassName"] == "arc-workflow"
    assert merged["metadata"]["labels"] == {"app.kubernetes.io/component": "workflow"}
    assert "added spec.priorityClassName: arc-workflow" in err  # the additions are named
    runner = yaml.safe_load(out.read_text())["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in runner["env"]}
    assert env["ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE"] == (
        "/home/runner/hook-template/workflow-pod.yaml"
    )


def test_a_hook_template_with_another_priority_class_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hook = tmp_path / "hook.yaml"
    other = {"spec": {**OWN_TEMPLATE["spec"], "priorityClassName": "high"}}
    hook.write_text(yaml.safe_dump(other), encoding="utf-8")
    code, _ = run_values(tmp_path, OWN_HOOK_VALUES, "--hook-template", str(hook))
    err = capsys.readouterr().err
    assert code == 1
    assert "spec.priorityClassName is 'high'; workflow pods need arc-workflow" in err


def test_a_hook_template_without_job_resources_is_merged_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hook = tmp_path / "hook.yaml"
    hook.write_text(yaml.safe_dump({"spec": {"nodeSelector": {"pool": "gpu"}}}), encoding="utf-8")
    code, _ = run_values(
        tmp_path, OWN_HOOK_VALUES, "--hook-template", str(hook),
        "--hook-output", str(tmp_path / "m.yaml"),
    )  # fmt: skip
    assert code == 0
    assert "the $job container has no resource requests" in capsys.readouterr().err


def test_our_own_hook_template_from_an_earlier_run_is_not_mistaken_for_the_users(
    tmp_path: Path,
) -> None:
    """Running ``values`` on values that already carry its overlay must not refuse."""
    code, out = run_values(tmp_path, GOOD)
    assert code == 0
    once = yaml.safe_load(out.read_text())
    code, out = run_values(tmp_path, {**GOOD, **once})
    assert code == 0
    assert yaml.safe_load(out.read_text()) == once
