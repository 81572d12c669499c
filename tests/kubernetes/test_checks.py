"""Start-up checks: each failure says what to change."""

from __future__ import annotations

from providers.kubernetes.checks import (
    Severity,
    check_priority_classes,
    container_mode,
    errors,
    run_startup_checks,
)
from reconciler.settings import PriorityClassNames
from tests.kubernetes import objects as o
from tests.kubernetes.conftest import TARGET

NAMES = PriorityClassNames()


def test_a_well_configured_cluster_passes():
    src = o.DictSource(o.ers(), *o.ladder())
    assert run_startup_checks(src, TARGET, NAMES) == []


def test_missing_or_misconfigured_priority_classes_are_errors_with_a_fix():
    ladder = o.ladder()
    ladder[0]["preemptionPolicy"] = "PreemptLowerPriority"  # runner placeholder could preempt
    ladder[2]["value"] = -20  # workflow placeholder below the runner: order broken
    ladder[3]["globalDefault"] = True
    src = o.DictSource(*ladder[:1], *ladder[2:])  # arc-runner missing
    messages = [f.message for f in check_priority_classes(src, NAMES)]
    assert any("arc-runner is missing" in m and "value 20" in m for m in messages)
    assert any(
        "arc-placeholder-runner has preemptionPolicy PreemptLowerPriority; set it to Never" in m
        for m in messages
    )
    assert any("arc-workflow is globalDefault" in m for m in messages)
    assert any("has value -20, expected 10" in m for m in messages)
    src = o.DictSource(*ladder[:2], *ladder[2:])
    assert any(
        "must be lower than" in f.message for f in errors(check_priority_classes(src, NAMES))
    )


def test_runner_template_must_use_the_runner_class():
    src = o.DictSource(o.ers(template=o.runner_template(priorityClassName="high")), *o.ladder())
    (finding,) = run_startup_checks(src, TARGET, NAMES)
    assert finding.severity is Severity.ERROR and finding.check == "runner-template"
    assert "set template.spec.priorityClassName: arc-runner" in finding.message


def hooks(path: str | None, scheduler: str | None = None) -> dict:
    env = []
    if path:
        env.append({"name": "ACTIONS_RUNNER_CONTAINER_HOOKS", "value": path})
    if scheduler:
        env.append({"name": "ACTIONS_RUNNER_USE_KUBE_SCHEDULER", "value": scheduler})
    return o.runner_template(
        containers=[
            {"name": "runner", "image": "r", "env": env, "resources": {"requests": {"cpu": "1"}}}
        ]
    )


def test_container_mode_detection():
    assert container_mode(hooks("/home/runner/k8s-novolume/index.js")) == "kubernetes-novolume"
    assert container_mode(hooks("/home/runner/k8s/index.js", "true")) == "kubernetes-scheduler"
    assert container_mode(hooks("/home/runner/k8s/index.js")) == "kubernetes"
    assert container_mode(hooks(None)) == "none"


def test_classic_kubernetes_mode_and_dind_are_refused_with_the_fix():
    for template, text in (
        (
            hooks("/home/runner/k8s/index.js"),
            "kubernetes-novolume, or set ACTIONS_RUNNER_USE_KUBE_SCHEDULER=true",
        ),
        (hooks(None), "there is no workflow pod"),
    ):
        src = o.DictSource(o.ers(template=template), *o.ladder())
        (finding,) = run_startup_checks(src, TARGET, NAMES)
        assert finding.check == "container-mode" and text in finding.message
    ok = o.DictSource(o.ers(template=hooks("/home/runner/k8s/index.js", "true")), *o.ladder())
    assert run_startup_checks(ok, TARGET, NAMES) == []


def test_min_runners_above_zero_is_a_warning_and_a_missing_ers_an_error():
    src = o.DictSource(o.ers(), o.ars(min_runners=2), *o.ladder())
    (finding,) = run_startup_checks(src, TARGET, NAMES)
    assert finding.severity is Severity.WARNING and "minRunners is 2" in finding.message
    (finding,) = run_startup_checks(o.DictSource(*o.ladder()), TARGET, NAMES)
    assert "EphemeralRunnerSet arc-runners/arc-runners not found" in finding.message


def test_runner_class_below_workflow_class_is_refused_because_workflow_pods_would_kill_jobs():
    """Regression: with arc-runner (0) < arc-workflow (20), as in the reference design, a
    workflow pod that finds no free placeholder preempts another running job's runner pod."""
    ladder = o.ladder()
    ladder[1]["value"] = 0  # arc-runner
    findings = errors(check_priority_classes(o.DictSource(*ladder), NAMES))
    assert [f.message for f in findings if "arc-workflow (20)" in f.message] == [
        "PriorityClass arc-workflow (20) must be at most arc-runner (0); fix the values so "
        "that runner placeholder < workflow placeholder < runner = workflow"
    ]
