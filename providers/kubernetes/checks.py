"""Start-up checks (docs/design.md#start-up-checks): is this cluster set up so that placeholders
can work?

Each check returns typed :class:`Finding` values; an ERROR means capacity-aware mode would
advertise wrong numbers or never get a pair READY, a WARNING means it works with a caveat.
Every message says what to change. The checks read from any ObjectSource (the cache after
its first sync, or plain dicts in tests), so they cost no extra API calls.

1. The four PriorityClasses exist, with the expected values (or at least the required
   order: runner placeholder < runner < workflow placeholder < workflow) and
   ``preemptionPolicy: Never`` on the placeholder classes, PreemptLowerPriority on the
   real ones; none of them is ``globalDefault``.
2. The runner pod template (EphemeralRunnerSet ``spec.ephemeralRunnerSpec.spec``) uses the
   runner class.
3. The container mode lets workflow pods go through kube-scheduler: ``kubernetes-novolume``
   hooks, or ``kubernetes`` hooks with ``ACTIONS_RUNNER_USE_KUBE_SCHEDULER=true``. Classic
   ``kubernetes`` mode pins the workflow pod with ``spec.nodeName`` (no preemption) and
   dind / no hooks run the job inside the runner pod (no workflow pod at all).
4. ``minRunners > 0`` is warned about: those idle runners hold no room for their workflow
   pods and are paid for around the clock (``hotRunners`` keeps idle runners whose room is
   held).
5. A NodePool with ``spec.limits`` that allows instance types holding this scale set's
   workflow pods poorly is warned about (docs/operations.md#instance-types-for-a-capped-nodepool):
   at the limit, 8-vCPU nodes that hold one 4-cpu workflow pod run a third fewer jobs per
   vCPU than 16-vCPU nodes that hold three.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any

from providers.kubernetes.observe.scale_set import ObjectSource, ScaleSetTarget, live_limits
from providers.kubernetes.observe.signals import list_if_known
from providers.kubernetes.placement.capped_pools import CappedFit, capped_fits
from providers.kubernetes.placement.inputs import PairShape
from providers.kubernetes.placement.resources import format_quantity
from providers.kubernetes.pods import labels as L
from providers.kubernetes.pods.hook_template import container_env, runner_container
from reconciler.settings import PriorityClassNames


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Finding:
    severity: Severity
    check: str  # "priority-classes", "runner-template", "container-mode", "min-runners"...
    message: str

    def __str__(self) -> str:
        return f"[{self.severity}] {self.check}: {self.message}"


@dataclass(frozen=True, slots=True)
class _Expected:
    key: str  # PriorityClassNames field
    value: int
    never: bool  # preemptionPolicy Never expected


LADDER = (
    _Expected("runner_placeholder", L.DEFAULT_PRIORITY_CLASSES["runnerPlaceholder"][1], True),
    _Expected("runner", L.DEFAULT_PRIORITY_CLASSES["runner"][1], False),
    _Expected("workflow_placeholder", L.DEFAULT_PRIORITY_CLASSES["workflowPlaceholder"][1], True),
    _Expected("workflow", L.DEFAULT_PRIORITY_CLASSES["workflow"][1], False),
)
HOOKS_ENV = "ACTIONS_RUNNER_CONTAINER_HOOKS"
KUBE_SCHEDULER_ENV = "ACTIONS_RUNNER_USE_KUBE_SCHEDULER"
#: ``ACTIONS_RUNNER_CONTAINER_HOOKS`` as the gha-runner-scale-set chart (0.13-0.15) sets it on
#: the runner container per ``containerMode.type`` (none for ``dind`` or no mode).
CHART_HOOKS = {
    "kubernetes": "/home/runner/k8s/index.js",
    "kubernetes-novolume": "/home/runner/k8s-novolume/index.js",
}
FIX_CLASSES = "apply config/priorityclasses.yaml (or set capacityAware.priorityClasses)"


def _by_name(objs: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {(o.get("metadata") or {}).get("name", ""): o for o in objs}


def check_priority_classes(source: ObjectSource, names: PriorityClassNames) -> list[Finding]:
    found = _by_name(source.list("PriorityClass"))
    out: list[Finding] = []
    values: dict[str, int] = {}
    for exp in LADDER:
        name = getattr(names, exp.key)
        policy_wanted = "Never" if exp.never else "PreemptLowerPriority"
        pc = found.get(name)
        if pc is None:
            out.append(
                Finding(
                    Severity.ERROR,
                    "priority-classes",
                    f"PriorityClass {name} is missing: create it with value {exp.value} and "
                    f"preemptionPolicy {policy_wanted}; {FIX_CLASSES}",
                )
            )
            continue
        value = int(pc.get("value", 0))
        values[exp.key] = value
        policy = pc.get("preemptionPolicy") or "PreemptLowerPriority"
        if policy != policy_wanted:
            why = (
                "a placeholder must never preempt real pods"
                if exp.never
                else "real pods must preempt placeholders"
            )
            out.append(
                Finding(
                    Severity.ERROR,
                    "priority-classes",
                    f"PriorityClass {name} has preemptionPolicy {policy}; set it to "
                    f"{policy_wanted} ({why}). preemptionPolicy is immutable: delete and recreate "
                    "the class",
                )
            )
        if value != exp.value:
            out.append(
                Finding(
                    Severity.WARNING,
                    "priority-classes",
                    f"PriorityClass {name} has value {value}, expected {exp.value}; only the order "
                    "matters, but check that no other workload sits between the classes",
                )
            )
        if pc.get("globalDefault"):
            out.append(
                Finding(
                    Severity.ERROR,
                    "priority-classes",
                    f"PriorityClass {name} is globalDefault: every pod without a class would get "
                    f"value {value}; set globalDefault: false",
                )
            )
    if len(values) == len(LADDER):
        out.extend(_ladder_findings(values, names))
    return out


#: The ladder's rules: (lower, higher, strict). Real pods preempt only placeholders and never
#: each other, so runner and workflow pods share one value (see labels.DEFAULT_PRIORITY_CLASSES
#: for why the reference design's runner-below-workflow order fails jobs).
LADDER_RULES = (
    ("runner_placeholder", "workflow_placeholder", True),
    ("workflow_placeholder", "runner", True),
    ("runner", "workflow", False),
    ("workflow", "runner", False),
)
LADDER_TEXT = "runner placeholder < workflow placeholder < runner = workflow"


def _ladder_findings(values: Mapping[str, int], names: PriorityClassNames) -> list[Finding]:
    out = []
    for low, high, strict in LADDER_RULES:
        broken = values[low] >= values[high] if strict else values[low] > values[high]
        if broken:
            relation = "lower than" if strict else "at most"
            out.append(
                Finding(
                    Severity.ERROR,
                    "priority-classes",
                    f"PriorityClass {getattr(names, low)} ({values[low]}) must be {relation} "
                    f"{getattr(names, high)} ({values[high]}); fix the values so that "
                    f"{LADDER_TEXT}",
                )
            )
    return out


def container_mode(spec: Mapping[str, Any]) -> str:
    """``kubernetes-novolume``, ``kubernetes-scheduler``, ``kubernetes``, or ``none``."""
    env = container_env(runner_container(spec))
    hooks = env.get(HOOKS_ENV, "")
    if not hooks:
        return "none"
    if "novolume" in hooks:
        return "kubernetes-novolume"
    if env.get(KUBE_SCHEDULER_ENV, "").lower() == "true":
        return "kubernetes-scheduler"
    return "kubernetes"


def check_runner_template(ers: Mapping[str, Any], names: PriorityClassNames) -> list[Finding]:
    ers_name = (ers.get("metadata") or {}).get("name", "?")
    spec = ((ers.get("spec") or {}).get("ephemeralRunnerSpec") or {}).get("spec") or {}
    out: list[Finding] = []
    if spec.get("priorityClassName") != names.runner:
        out.append(
            Finding(
                Severity.ERROR,
                "runner-template",
                f"the runner pods of EphemeralRunnerSet {ers_name} use priorityClassName "
                f"{spec.get('priorityClassName') or '(none)'}; set "
                f"template.spec.priorityClassName: {names.runner} in the AutoscalingRunnerSet "
                "(Helm value template.spec) so runner pods preempt runner placeholders",
            )
        )
    return out + check_container_mode(spec)


def check_container_mode(spec: Mapping[str, Any]) -> list[Finding]:
    """Check 3 on a runner pod spec: an ERROR unless workflow pods go through kube-scheduler
    (``kubernetes-novolume``, or ``kubernetes`` with ``ACTIONS_RUNNER_USE_KUBE_SCHEDULER=true``
    on the runner container)."""
    mode = container_mode(spec)
    if mode == "kubernetes":
        return [
            Finding(
                Severity.ERROR,
                "container-mode",
                "containerMode kubernetes pins the workflow pod to the runner's node "
                "(spec.nodeName): it never preempts a workflow placeholder and the kubelet "
                "rejects it when the node is full. Use containerMode.type: "
                f"kubernetes-novolume, or set {KUBE_SCHEDULER_ENV}=true on the runner container",
            )
        ]
    if mode == "none":
        return [
            Finding(
                Severity.ERROR,
                "container-mode",
                f"the runner container sets no {HOOKS_ENV}: jobs run inside the runner pod "
                "(dind or default mode), so there is no workflow pod for the workflow "
                "placeholder to stand in for. Use containerMode.type: kubernetes-novolume",
            )
        ]
    return []


def runner_spec_from_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The runner pod spec the gha-runner-scale-set chart renders from Helm ``values``, as
    far as check 3 reads it: the runner container's env, plus the chart's
    ``ACTIONS_RUNNER_CONTAINER_HOOKS`` for a ``kubernetes`` mode unless the user set it."""
    spec = (values.get("template") or {}).get("spec") or {}
    runner = dict(runner_container(spec))
    env = [dict(e) for e in runner.get("env") or ()]
    hooks = CHART_HOOKS.get(((values.get("containerMode") or {}).get("type")) or "")
    if hooks and not any(e.get("name") == HOOKS_ENV for e in env):
        env.append({"name": HOOKS_ENV, "value": hooks})
    return {"containers": [{**runner, "name": "runner", "env": env}]}


def check_min_runners(min_runners: int) -> list[Finding]:
    if min_runners <= 0:
        return []
    return [
        Finding(
            Severity.WARNING,
            "min-runners",
            f"minRunners is {min_runners}: those idle runners hold no room for their workflow "
            "pods and are paid for around the clock. Set minRunners: 0 and use "
            "capacityAware.proactiveCapacity for warm capacity (hotRunners for idle runners "
            "whose workflow pod's room is held)",
        )
    ]


def check_nodepool_types(source: ObjectSource, pair: PairShape, max_runners: int) -> list[Finding]:
    """NodePools that host the workflow half, whose ``spec.limits`` hold fewer than
    ``max_runners`` pairs (so the limit can bind), and that allow types holding few workflow
    pods for their size (:mod:`providers.kubernetes.placement.capped_pools`).

    The workflow placeholders prefer the well-fitting types, so the pairs the listener
    requests get them while the limit has room for one; real pods that come alone (a job's
    runner pod in room a finished job freed) still get the cheapest type.
    """
    fits = capped_fits(
        list_if_known(source, "NodePool"),
        pair.workflow_requests,
        pair.runner_requests,
        pair.workflow_placement.get("nodeSelector") or {},
        pair.runner_placement.get("nodeSelector") or {},
        max_runners,
    )
    prefer = pair.prefers_fitting_types
    return [_poor_fit(fit, pair.workflow_requests, prefer) for fit in fits if fit.poor]


def _poor_fit(fit: CappedFit, workflow: Mapping[str, Decimal], prefer: bool) -> Finding:
    asks = ", ".join(f"{format_quantity(v)} {r}" for r, v in sorted(workflow.items()))
    worst, best = fit.poor[0], fit.best
    who = (
        f"; workflow placeholders prefer {', '.join(f.instance_type for f in fit.good)}, but "
        "real pods that come alone get the poor fit"
        if prefer
        else " (preferFittingTypes is off), so pairs and real pods that come alone get the poor fit"
    )
    return Finding(
        Severity.WARNING,
        "nodepool-types",
        f"NodePool {fit.pool} limits {fit.limits_text}, less than maxRunners pairs ask for, "
        f"and allows {', '.join(f.instance_type for f in fit.poor)}: one {worst.instance_type} "
        f"holds {worst.pairs} of this scale set's workflow pods ({asks}) using {worst.share:.0%} "
        f"of it, one {best.instance_type} {best.pairs} using {best.share:.0%}. Karpenter buys "
        f"the cheapest type for the pods it sees at once{who}, and at the limit those nodes "
        "run fewer jobs. Where the limit binds, allow only types that hold workflow pods like "
        f"{best.instance_type} "
        "(docs/operations.md#instance-types-for-a-capped-nodepool)",
    )


def run_startup_checks(
    source: ObjectSource,
    target: ScaleSetTarget,
    names: PriorityClassNames,
    pair: PairShape | None = None,
) -> list[Finding]:
    """All checks, errors first. Needs the cache to have synced. ``pair``: the placeholder
    builder, when the runner template could size placeholders (check 5 needs it)."""
    out = check_priority_classes(source, names)
    ers = next(
        (
            o
            for o in source.list("EphemeralRunnerSet", target.runner_namespace)
            if (o.get("metadata") or {}).get("name") == target.ers_name
        ),
        None,
    )
    if ers is None:
        out.append(
            Finding(
                Severity.ERROR,
                "runner-template",
                f"EphemeralRunnerSet {target.runner_namespace}/{target.ers_name} not found: check "
                "ephemeral_runner_set_name / ephemeral_runner_set_namespace in the listener config "
                "and that the listener may get/list/watch ephemeralrunnersets there",
            )
        )
    else:
        out.extend(check_runner_template(ers, names))
    max_runners, min_runners = live_limits(source, target, ers)
    out.extend(check_min_runners(min_runners))
    if pair is not None:
        out.extend(check_nodepool_types(source, pair, max_runners))
    return sorted(out, key=lambda f: f.severity != Severity.ERROR)


def errors(findings: Sequence[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity is Severity.ERROR]
