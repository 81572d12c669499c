"""Reading the hook template back through the runner template's mount, and bad usage."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from listener.commands.verify.cli import main
from listener.commands.verify.report import Report, failed, passed, skipped
from providers.kubernetes.pods.hook_template import HookTemplateError, read_hook_template

PATH = "/home/runner/hook-template/workflow-pod.yaml"


def runner_template(env_path: str | None = PATH, items: list[Any] | None = None) -> dict[str, Any]:
    env = (
        [{"name": "ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE", "value": env_path}] if env_path else []
    )
    source: dict[str, Any] = {"name": "hooks"}
    if items is not None:
        source["items"] = items
    return {
        "containers": [
            {
                "name": "runner",
                "env": env,
                "volumeMounts": [{"name": "hook", "mountPath": "/home/runner/hook-template"}],
            }
        ],
        "volumes": [{"name": "hook", "configMap": source}],
    }


TEMPLATE = "spec:\n  priorityClassName: arc-workflow\n  containers: [{name: $job}]\n"


def test_the_hook_template_is_read_from_the_configmap_the_runner_mounts() -> None:
    hook = read_hook_template(
        runner_template(), {"hooks": {"data": {"workflow-pod.yaml": TEMPLATE}}}
    )
    assert hook.spec["priorityClassName"] == "arc-workflow"
    assert hook.where == "ConfigMap hooks key workflow-pod.yaml"
    assert hook.job_spec("pause")["containers"] == [{"name": "job", "image": "pause"}]


def test_a_projected_key_is_followed_to_its_configmap_key() -> None:
    """``items: [{key, path}]`` renames a key in the mount (prevents a false "missing")."""
    template = runner_template(items=[{"key": "tpl", "path": "workflow-pod.yaml"}])
    hook = read_hook_template(template, {"hooks": {"data": {"tpl": TEMPLATE}}})
    assert hook.where == "ConfigMap hooks key tpl"


@pytest.mark.parametrize(
    ("template", "configmaps", "words"),
    [
        (runner_template(None), {}, "sets no ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE"),
        (runner_template("/elsewhere/t.yaml"), {}, "is not under any volumeMount"),
        (runner_template(), {}, "does not exist"),
        (runner_template(), {"hooks": {"data": {"workflow-pod.yaml": "[a"}}}, "not valid YAML"),
    ],
)
def test_a_hook_template_that_cannot_be_read_says_where_it_looked(
    template: dict[str, Any], configmaps: dict[str, Any], words: str
) -> None:
    with pytest.raises(HookTemplateError, match=words):
        read_hook_template(template, configmaps)


@pytest.mark.parametrize(
    "argv",
    [
        [],  # --scale-set is required
        ["--scale-set", "Arc Runners"],  # not a Kubernetes name
        ["--scale-set", "arc-runners", "--timeout", "forever"],
        ["--scale-set", "arc-runners", "--timeout", "2h"],  # above the 1 h ceiling
        ["--scale-set", "arc-runners", "--probe-timeout", "0"],
    ],
)
def test_bad_usage_exits_2_before_touching_the_cluster(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """No credentials are even loaded (the env has none): usage errors come first."""
    with pytest.raises(SystemExit) as raised:
        main(argv, env={})
    assert raised.value.code == 2
    assert "arc-capacity-listener verify" in capsys.readouterr().err


def test_python_m_listener_verify_is_the_same_command() -> None:
    """The module entry point reaches verify's own parser (prevents a subcommand that is
    listed but not wired)."""
    result = subprocess.run(
        [sys.executable, "-m", "listener", "verify", "--scale-set", "Bad Name"],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("KUBE")},
    )
    assert result.returncode == 2
    assert "arc-capacity-listener verify: error: argument --scale-set" in result.stderr


def test_the_exit_code_is_1_only_when_a_row_failed() -> None:
    report = Report("s", "ns", [passed("a", "ok"), skipped("b", "why")])
    assert report.exit_code == 0
    report.add(failed("c", "saw", "fix"))
    assert report.exit_code == 1
    doc = json.loads(report.as_json())
    assert doc["result"] == "FAIL"
    assert [c["status"] for c in doc["checks"]] == ["PASS", "SKIP", "FAIL"]
    assert "fix: fix" in report.as_text()


def test_an_unreachable_api_fails_with_one_row_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Connection refused: the run ends with an ``api`` row naming the address, the cleanup
    row says it could not check, and nothing hangs (prevents a traceback or an endless
    retry loop when the kubeconfig points at the wrong cluster)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nothing listens there
    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    env = {"KUBECONFIG": str(kubeconfig), "CAPACITY_AWARE_JSON": '{"enabled": true}'}
    code = main(["--scale-set", "arc-runners", "--namespace", "arc-runners", "--json"], env=env)
    doc = json.loads(capsys.readouterr().out)
    rows = {row["check"]: row for row in doc["checks"]}
    assert code == 1
    assert f"127.0.0.1:{port}" in rows["api"]["seen"]
    assert rows["cleanup"]["status"] == "FAIL"
    assert "kubectl delete" in rows["cleanup"]["fix"]
