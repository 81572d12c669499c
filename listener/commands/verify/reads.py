"""The reading half of ``verify``: nothing is created (dry-run creates persist nothing).

In order, one row each:

1. ``settings``: the capacityAware block was found and turns capacity-aware mode on.
2. ``priority-classes``, ``runner-template``, ``container-mode``, ``min-runners``,
   ``nodepool-types``: the start-up checks of ``run`` (providers/kubernetes/checks.py), over
   live objects. A warning passes and is shown; an error fails. ``nodepool-types`` is
   skipped when the runner template cannot size placeholders.
3. ``permissions``: every permission ``run`` needs (providers/kubernetes/permissions.py),
   asked for the listener's ServiceAccount with SubjectAccessReviews.
4. ``workflow-resources``: the hook template's workflow pod has the workflow class and
   requests no more than ``workflowResources`` (else the placeholder protects too little).
5. ``limit-ranges`` and ``resource-quotas``: what would change or refuse placeholder and
   runner pods (:mod:`.limits`).
6. ``dry-run``: server-side dry-run creates (``dryRun=All``) of both placeholders and of pods
   shaped like the runner and workflow pods: admission webhooks and policies answer here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from listener.commands.rbac import RbacError, find_listener_service_account
from listener.commands.verify.cluster import REQUEST_TIMEOUT, ApiSource, ScaleSet, body, items
from listener.commands.verify.limits import limit_range_problems, quota_problems
from listener.commands.verify.report import Row, failed, passed, skipped
from listener.commands.verify.shapes import Shapes, shortfall
from providers.kubernetes.checks import Finding, Severity, run_startup_checks
from providers.kubernetes.permissions import Permission, required_permissions
from providers.kubernetes.placement.resources import (
    QuantityError,
    effective_requests,
    resource_list,
)
from providers.kubernetes.pods.hook_template import (
    HookTemplate,
    HookTemplateError,
    read_hook_template,
)
from reconciler.settings import CapacityAwareSettings

Obj = dict[str, Any]
STARTUP_ROWS = ("priority-classes", "runner-template", "container-mode", "min-runners")
#: Needs placeholders sized (``Shapes``); skipped when the runner template cannot size them.
POOL_ROW = "nodepool-types"
FIX_RBAC = "arc-capacity-listener rbac --scale-set {name} --namespace {ns} --apply"


def timed(check: str, work: Callable[[], Row | list[Row]]) -> list[Row]:
    """Run one check, stamping its duration; an API error fails the row, naming the call."""
    started = time.monotonic()
    try:
        out = work()
    except ApiException as exc:
        out = failed(check, f"the API answered HTTP {exc.status} {exc.reason}", _api_fix(exc))
    rows = out if isinstance(out, list) else [out]
    seconds = time.monotonic() - started
    return [Row(r.check, r.status, r.seen, r.seconds or seconds, r.fix) for r in rows]


def _api_fix(exc: ApiException) -> str:
    if exc.status in (401, 403):
        return "run verify with credentials that may read the scale set, nodes and pods"
    return "check that the API server is reachable and retry"


def settings_row(settings: CapacityAwareSettings, where: str) -> Row:
    if not settings.enabled:
        return failed(
            "settings",
            f"capacityAware from {where} has enabled: false (or is missing)",
            "apply config/capacity-aware-configmap.yaml (enabled: true) or pass --config FILE",
        )
    return passed("settings", f"capacityAware from {where}")


def startup_rows(
    api: k8s.ApiClient,
    scale: ScaleSet,
    settings: CapacityAwareSettings,
    shapes: Shapes | None = None,
) -> list[Row]:
    pair = shapes.builder if shapes is not None else None
    findings = run_startup_checks(ApiSource(api), scale.target, settings.priority_classes, pair)
    rows = []
    for check in STARTUP_ROWS:
        mine = [f for f in findings if f.check == check]
        rows.append(_findings_row(check, mine))
    if pair is None:
        rows.append(skipped(POOL_ROW, "placeholders cannot be sized (see runner-template)"))
    else:
        rows.append(_findings_row(POOL_ROW, [f for f in findings if f.check == POOL_ROW]))
    return rows


def _findings_row(check: str, findings: Sequence[Finding]) -> Row:
    errors = [f.message for f in findings if f.severity is Severity.ERROR]
    warnings = [f.message for f in findings if f.severity is Severity.WARNING]
    if errors:
        return failed(check, errors[0], " | ".join(errors))
    if warnings:
        return passed(check, "warning: " + " | ".join(warnings))
    return passed(check, "as expected")


def permissions_row(api: k8s.ApiClient, scale: ScaleSet) -> Row:
    target = scale.target
    name, ns = target.ars_name or target.ers_name, target.runner_namespace
    fix = FIX_RBAC.format(name=name, ns=ns)
    try:
        sa_ns, sa_name = find_listener_service_account(k8s.CoreV1Api(api), name, ns)
    except RbacError as exc:
        return failed(
            "permissions", str(exc), "install the scale set (ARC creates it), then " + fix
        )
    namespaces = [target.runner_namespace, target.placeholder_namespace]
    needed = required_permissions(namespaces, optional=True)
    missing = missing_for(api, f"system:serviceaccount:{sa_ns}:{sa_name}", sa_ns, needed)
    required = [p for p in missing if not p.optional]
    if required:
        shown = "; ".join(str(p) for p in required)
        return failed("permissions", f"ServiceAccount {sa_ns}/{sa_name} may not: {shown}", fix)
    account = f"ServiceAccount {sa_ns}/{sa_name}"
    if missing:
        shown = "; ".join(str(p) for p in missing)
        return passed(
            "permissions",
            f"warning: {account} may not: {shown}; it runs without, but places workflow "
            f"placeholders like the runner pod instead of by the hook template: {fix}",
        )
    return passed("permissions", f"{account}: all {len(needed)} granted")


def missing_for(
    api: k8s.ApiClient, user: str, sa_namespace: str, needed: Sequence[Permission]
) -> list[Permission]:
    """``needed`` minus what RBAC grants ``user`` (one SubjectAccessReview each)."""
    authz = k8s.AuthorizationV1Api(api)
    groups = ["system:serviceaccounts", f"system:serviceaccounts:{sa_namespace}"]
    missing = []
    for p in needed:
        review = k8s.V1SubjectAccessReview(
            spec=k8s.V1SubjectAccessReviewSpec(
                user=user,
                groups=[*groups, "system:authenticated"],
                resource_attributes=k8s.V1ResourceAttributes(
                    verb=p.verb, group=p.group, resource=p.resource, namespace=p.namespace
                ),
            )
        )
        answer = authz.create_subject_access_review(review, _request_timeout=REQUEST_TIMEOUT)
        if not (answer.status and answer.status.allowed):
            missing.append(p)
    return missing


def hook_template(api: k8s.ApiClient, scale: ScaleSet) -> HookTemplate:
    configmaps = items(
        k8s.CoreV1Api(api).list_namespaced_config_map(
            scale.target.runner_namespace,
            _preload_content=False,
            _request_timeout=REQUEST_TIMEOUT,
        )
    )
    by_name = {c["metadata"]["name"]: c for c in configmaps}
    return read_hook_template(scale.runner_template, by_name)


@dataclass(frozen=True, slots=True)
class HookRead:
    """The hook template as verify read it, once per run: the template, or why not. An API
    error is kept to be raised where the reading rows meet it, after the start-up and
    permission rows, as when those rows read the template themselves."""

    hook: HookTemplate | None = None
    error: str | None = None
    api_error: ApiException | None = None

    @property
    def pod_spec(self) -> Mapping[str, Any] | None:
        """What the workflow half is placed by (None: placed like the runner)."""
        return self.hook.spec if self.hook is not None else None


def read_hook(api: k8s.ApiClient, scale: ScaleSet) -> HookRead:
    try:
        return HookRead(hook=hook_template(api, scale))
    except HookTemplateError as exc:
        return HookRead(error=str(exc))
    except ApiException as exc:
        return HookRead(api_error=exc)


def workflow_resources_row(
    hook: HookTemplate | None, hook_error: str | None, settings: CapacityAwareSettings
) -> Row:
    check = "workflow-resources"
    if hook is None:
        return failed(
            check,
            f"no hook template: {hook_error}; workflow pods then get no class "
            f"{settings.priority_classes.workflow} and never take the workflow placeholder",
            "apply config/hook-template.yaml and mount it as in config/values-capacity-aware.yaml "
            "(arc-capacity-listener values does it)",
        )
    try:
        wanted = effective_requests(hook.job_spec(settings.image), where=hook.where)
        reserved = resource_list(settings.workflow_resources, where="workflowResources")
    except QuantityError as exc:
        return failed(check, str(exc), "fix the quantity")
    short = shortfall(wanted, reserved)
    pc = hook.spec.get("priorityClassName")
    if pc != settings.priority_classes.workflow:
        return failed(
            check,
            f"{hook.where}: workflow pods get priorityClassName {pc or '(none)'}",
            f"set spec.priorityClassName: {settings.priority_classes.workflow} in the hook "
            "template",
        )
    if short:
        shown = ", ".join(f"{k} {v}" for k, v in short.items())
        return failed(
            check,
            f"the workflow pod ({hook.where}) asks for more than workflowResources: {shown}",
            "raise capacityAware.workflowResources to the hook template's $job requests (or "
            "lower those): the placeholder must reserve the whole workflow pod",
        )
    return passed(check, f"{hook.where}: $job requests fit workflowResources")


def limits_rows(api: k8s.ApiClient, namespace: str, pods: Sequence[Obj]) -> list[Row]:
    core = k8s.CoreV1Api(api)
    kwargs: dict[str, Any] = {"_preload_content": False, "_request_timeout": REQUEST_TIMEOUT}
    ranges = items(core.list_namespaced_limit_range(namespace, **kwargs))
    quotas = items(core.list_namespaced_resource_quota(namespace, **kwargs))
    rows = []
    problems = limit_range_problems(ranges, pods)
    fix = "exempt the placeholder and runner pods, or size them within the LimitRange"
    rows.append(
        failed("limit-ranges", "; ".join(problems), fix)
        if problems
        else passed("limit-ranges", f"{len(ranges)} LimitRange(s): nothing changed or refused")
    )
    problems = quota_problems(quotas, pods[:2])
    fix = "raise the ResourceQuota by at least one pair, or lower proactiveCapacity"
    rows.append(
        failed("resource-quotas", "; ".join(problems), fix)
        if problems
        else passed("resource-quotas", f"{len(quotas)} ResourceQuota(s) leave room for a pair")
    )
    return rows


def dry_run_row(api: k8s.ApiClient, namespace: str, pods: Sequence[Obj]) -> Row:
    core = k8s.CoreV1Api(api)
    refused, changed = [], []
    for pod in pods:
        name = pod["metadata"]["name"]
        sent: Any = pod  # a plain dict body, sent as is
        try:
            answer: Any = core.create_namespaced_pod(
                namespace,
                sent,
                dry_run="All",
                _preload_content=False,
                _request_timeout=REQUEST_TIMEOUT,
            )
        except ApiException as exc:
            refused.append(f"{name}: HTTP {exc.status} {_message(exc)}")
            continue
        admitted = body(answer)
        if _resources(admitted) != _resources(pod):
            changed.append(f"{name}: admission changed its requests/limits")
    if refused or changed:
        return failed(
            "dry-run",
            "; ".join(refused + changed),
            "allow these pods in your admission policies (Kyverno/Gatekeeper/webhooks): "
            "placeholders run capacityAware.image with the shown requests",
        )
    return passed("dry-run", f"{len(pods)} pods admitted unchanged (dryRun=All)")


def _message(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body or "{}").get("message") or exc.reason)
    except (ValueError, AttributeError):
        return str(exc.reason)


def _resources(pod: Obj) -> list[Any]:
    return [c.get("resources") for c in (pod.get("spec") or {}).get("containers") or ()]


def read_rows(
    api: k8s.ApiClient,
    scale: ScaleSet,
    settings: CapacityAwareSettings,
    shapes: Shapes | None,
    read: HookRead,
) -> Iterator[Row]:
    """Every reading check, in order (see module doc), each as soon as it is done."""
    yield from timed("startup", lambda: startup_rows(api, scale, settings, shapes))
    yield from timed("permissions", lambda: permissions_row(api, scale))
    if read.api_error is not None:
        raise read.api_error
    hook, hook_error = read.hook, read.error
    yield from timed(
        "workflow-resources", lambda: workflow_resources_row(hook, hook_error, settings)
    )
    ns = scale.target.placeholder_namespace
    if shapes is None:
        why = "placeholders cannot be sized (see runner-template)"
        yield from (skipped(check, why) for check in ("limit-ranges", "resource-quotas", "dry-run"))
        return
    pods = shapes.dry_run_pods(scale.runner_template, hook)
    yield from timed("limit-ranges", lambda: limits_rows(api, ns, pods))
    yield from timed("dry-run", lambda: dry_run_row(api, ns, pods))
