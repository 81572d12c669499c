"""Start-up checks: each failure says what to change."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest

from providers.kubernetes.checks import (
    Severity,
    check_nodepool_types,
    check_priority_classes,
    container_mode,
    errors,
    run_startup_checks,
)
from reconciler.settings import PriorityClassNames
from tests.providers.kubernetes import objects as o
from tests.providers.kubernetes.face_fixtures import TARGET

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


@dataclass(frozen=True)
class Pair:
    """What the check reads of the placeholder builder (``PairShape``)."""

    runner_requests: Mapping[str, Decimal]
    workflow_requests: Mapping[str, Decimal]
    runner_placement: Mapping[str, Any] = field(default_factory=lambda: {"nodeSelector": POOL})
    workflow_placement: Mapping[str, Any] = field(default_factory=lambda: {"nodeSelector": POOL})
    prefers_fitting_types: bool = True


POOL = {"pool": "ci"}
TYPES = ["m5.2xlarge", "m5.4xlarge", "c5.2xlarge", "c5.4xlarge"]


def capped_pool(types: list[str], limits: dict[str, str] | None, hosts: str = "ci") -> dict:
    pool = o.nodepool("ci", limits=limits)
    pool["spec"]["template"] = {
        "metadata": {"labels": {"pool": hosts}},
        "spec": {
            "requirements": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": types}
            ]
        },
    }
    return pool


def pair(workflow_cpu: str, *, runner_elsewhere: bool = False) -> Pair:
    cpu = {"cpu": Decimal(workflow_cpu), "memory": Decimal(2 * 2**30 * int(workflow_cpu))}
    shape = Pair({"cpu": Decimal("0.5"), "memory": Decimal(2**30)}, cpu)
    if runner_elsewhere:
        return Pair(shape.runner_requests, cpu, runner_placement={"nodeSelector": {"pool": "r"}})
    return shape


@pytest.mark.parametrize(
    ("pool", "shape", "named"),
    [
        # 4 cpu / 8Gi: an 8-vCPU node holds one (51-58% of it), a c5.4xlarge three (90%).
        (capped_pool(TYPES, {"cpu": "160"}), pair("4"), ["m5.2xlarge", "c5.2xlarge"]),
        # Without a limit Karpenter sizes nodes to what it sees: nothing to warn about.
        (capped_pool(TYPES, None), pair("4"), []),
        # 2 cpu / 4Gi: three on 8 vCPU (76-87%), six or seven on 16 (88-90%): all fit well.
        (capped_pool(TYPES, {"cpu": "160"}), pair("2"), []),
        # A limit on a resource the workflow pod does not ask for does not cap it.
        (capped_pool(TYPES, {"nvidia.com/gpu": "8"}), pair("4"), []),
        # A pool that does not host the workflow half is not this scale set's.
        (capped_pool(TYPES, {"cpu": "160"}, hosts="gpu"), pair("4"), []),
        # Runner halves on another pool: the workflow half still fragments this one.
        (
            capped_pool(TYPES, {"cpu": "160"}),
            pair("4", runner_elsewhere=True),
            ["m5.2xlarge", "c5.2xlarge"],
        ),
        # One allowed type: nothing better to name.
        (capped_pool(["c5.2xlarge"], {"cpu": "160"}), pair("4"), []),
    ],
    ids=[
        "capped",
        "no-limit",
        "small-pods",
        "other-limit",
        "other-pool",
        "split-halves",
        "one-type",
    ],
)
def test_a_capped_nodepool_allowing_types_that_hold_workflow_pods_poorly_is_warned_about(
    pool: dict, shape: Pair, named: list[str]
) -> None:
    """At a NodePool limit, 8-vCPU nodes holding one 4-cpu workflow pod each run a third
    fewer jobs than 16-vCPU nodes holding three (burst: the budget missed on 6 of 10 seeds,
    met on 10/10 with only 16-vCPU types allowed)."""
    findings = check_nodepool_types(o.DictSource(pool), shape, max_runners=150)
    if not named:
        assert findings == []
        return
    (finding,) = findings
    assert finding.severity is Severity.WARNING and finding.check == "nodepool-types"
    listed = finding.message.split(" and allows ")[1].split(":")[0].split(", ")
    assert sorted(listed) == sorted(named)
    assert "operations.md#instance-types-for-a-capped-nodepool" in finding.message


def test_the_capped_pool_warning_says_what_each_type_holds() -> None:
    source = o.DictSource(capped_pool(TYPES, {"cpu": "160"}))
    (finding,) = check_nodepool_types(source, pair("4"), max_runners=150)
    assert finding.message.startswith(
        "NodePool ci limits cpu 160, less than maxRunners pairs ask for, and allows "
        "m5.2xlarge, c5.2xlarge: one m5.2xlarge holds 1 of this scale set's workflow pods "
        "(4 cpu, 8Gi memory) using 51% of it, one c5.4xlarge 3 using 90%."
    )


@pytest.mark.parametrize(
    ("prefer", "says"),
    [
        (True, "workflow placeholders prefer c5.4xlarge, m5.4xlarge, but real pods that come "),
        (False, "(preferFittingTypes is off), so pairs and real pods that come alone get "),
    ],
)
def test_the_capped_pool_warning_says_whether_placeholders_prefer_the_good_types(
    prefer: bool, says: str
) -> None:
    """The warning must not claim a preference the listener was told not to apply."""
    shape = pair("4")
    shape = Pair(shape.runner_requests, shape.workflow_requests, prefers_fitting_types=prefer)
    source = o.DictSource(capped_pool(TYPES, {"cpu": "160"}))
    (finding,) = check_nodepool_types(source, shape, max_runners=150)
    assert says in finding.message


def test_the_pool_check_runs_only_when_placeholders_can_be_sized() -> None:
    src = o.DictSource(o.ers(), *o.ladder(), capped_pool(TYPES, {"cpu": "8"}))
    assert run_startup_checks(src, TARGET, NAMES) == []
    (finding,) = run_startup_checks(src, TARGET, NAMES, pair("4"))
    assert finding.check == "nodepool-types"
