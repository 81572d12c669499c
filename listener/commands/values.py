"""``arc-capacity-listener values``: the Helm overlay that turns an installed scale set
capacity-aware without overwriting its values.

``helm upgrade --reuse-values -f overlay.yaml`` merges maps but *replaces* lists, so an
overlay that carries its own ``template.spec.containers`` would drop the user's runner
container settings. This command reads the scale set's current values (``helm get values``)
and writes an overlay whose lists are the user's lists plus our entries:

- ``listenerTemplate``: the ``listener`` container runs our image with the ``capacityAware``
  ConfigMap mounted (``CAPACITY_AWARE_CONFIG``), probes on the metrics port, the measured
  requests and memory limit unless it already has resources (:data:`LISTENER_RESOURCES`),
  and the pod keeps ``terminationGracePeriodSeconds: 60`` (placeholders are deleted on
  shutdown);
- ``template.spec``: ``priorityClassName: arc-runner``, and the ``runner`` container gets the
  container-hook template (workflow pods get ``arc-workflow``) as an env var and a mount.

- the listener pod runs as uid 65532 with a read-only root filesystem, no privilege escalation,
  no capabilities and RuntimeDefault seccomp, and gets a writable ``/tmp`` (as
  config/values-capacity-aware.yaml); a key the user set is kept.

It never changes ``containerMode``: switching to ``kubernetes-novolume`` is a migration
(docs/migrate-kubernetes-novolume.md). A warning says so when the listener's start-up check
(providers/kubernetes/checks.py, check 3, run on the runner pods these values render) will
refuse the mode: ``dind`` or no mode, or classic ``kubernetes`` without
``ACTIONS_RUNNER_USE_KUBE_SCHEDULER=true`` on the runner container (with it, workflow pods go
through kube-scheduler as in ``kubernetes-novolume``, and the mode is accepted).

Before writing anything it checks what it reads (listener/commands/chart_values.py: the chart's
values schema at 0.13-0.15) and its arguments (a non-empty image, a scale-set name the chart and
Kubernetes accept and equal to ``runnerScaleSetName``), and refuses with one line per problem.
A hook template the runner already names is merged, not replaced (listener/commands/hook_merge.py).
Listener resources below the measured need are kept, with a warning.
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from listener.commands import hook_merge
from listener.commands.chart_values import DNS_SUBDOMAIN, ValuesError, load_values, problems
from listener.commands.hook_merge import HOOK_DIR, HOOK_ENV, HOOK_PATH
from listener.commands.rbac import OWN_TOKEN, TOKEN_MOUNT_PATH
from providers.kubernetes.checks import check_container_mode, runner_spec_from_values
from providers.kubernetes.placement.resources import QuantityError, quantity

CONFIG_DIR = "/etc/capacity-aware"
GRACE_SECONDS = 60
TOKEN_VOLUME = "capacity-listener-token"
#: The listener container's resources when the current values set none. Measured with
#: bench/listener_footprint.py (docs/image.md, "Sizing"): idle 2m CPU / 98 MiB; a 200-job
#: storm 102m mean, 160m peak / 101 MiB; 10 000 pods in the namespace 48m / 222 MiB peak.
#: No CPU limit: throttling would delay the long-poll cut that withdraws capacity; the
#: memory limit leaves room above the 10 000-pod peak for a larger cluster and a relist.
LISTENER_RESOURCES: dict[str, dict[str, str]] = {
    "requests": {"cpu": "100m", "memory": "256Mi"},
    "limits": {"memory": "512Mi"},
}
#: What each of those figures is measured against (docs/image.md, "Sizing"), for the warning
#: when a user's own resources are below them.
MEASURED_NEED = {
    ("requests", "cpu"): "102m mean, 160m peak in a 200-job storm",
    ("requests", "memory"): "222 MiB peak with 10 000 pods in the namespace",
    ("limits", "memory"): "222 MiB peak with 10 000 pods in the namespace, plus a relist",
}
#: The chart refuses longer scale-set names ("Name must have up to 45 characters").
MAX_SCALE_SET_NAME = 45
#: The listener pod's and container's security settings (config/values-capacity-aware.yaml).
POD_SECURITY: dict[str, Any] = {
    "runAsNonRoot": True,
    "runAsUser": 65532,
    "runAsGroup": 65532,
    "seccompProfile": {"type": "RuntimeDefault"},
}
CONTAINER_SECURITY: dict[str, Any] = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
}
TMP_VOLUME = {"name": "tmp", "emptyDir": {"sizeLimit": "16Mi"}}
#: The chart's default runner container, used when the values define none.
DEFAULT_RUNNER = {
    "name": "runner",
    "image": "ghcr.io/actions/actions-runner:latest",
    "command": ["/home/runner/run.sh"],
}


def _by_name(items: list[dict[str, Any]], entry: dict[str, Any]) -> list[dict[str, Any]]:
    """``items`` with ``entry`` replacing the item of the same name, or appended."""
    if any(item.get("name") == entry["name"] for item in items):
        return [entry if item.get("name") == entry["name"] else item for item in items]
    return [*items, entry]


def _merge_named(items: Any, entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    result = list(items or [])
    for entry in entries:
        result = _by_name(result, entry)
    return result


def _container(
    containers: list[dict[str, Any]], name: str, default: dict[str, Any]
) -> dict[str, Any]:
    for container in containers:
        if container.get("name") == name:
            return copy.deepcopy(container)
    return copy.deepcopy(default)


def overlay(
    current: dict[str, Any],
    *,
    image: str,
    configmap: str,
    hook_configmap: str,
    metrics_port: int = 8080,
    merged_hook: bool = False,
    where: str = "values",
    token_secret: str | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Pure: (the overlay, warnings) for the scale set's ``current`` values.

    A hook template of the user's own is refused (:class:`ValuesError`) unless
    ``merged_hook`` says ``hook_configmap`` holds it merged with ours."""
    warnings = []
    mode = ((current.get("containerMode") or {}).get("type")) or ""
    for finding in check_container_mode(runner_spec_from_values(current)):
        warnings.append(
            f"containerMode.type is {mode or 'unset'!r}: the listener's start-up check will "
            f"refuse these runner pods: {finding.message} (switching the mode is a migration: "
            "docs/migrate-kubernetes-novolume.md)"
        )
    listener_spec = copy.deepcopy((current.get("listenerTemplate") or {}).get("spec") or {})
    containers = list(listener_spec.get("containers") or [])
    listener = _container(containers, "listener", {"name": "listener"})
    listener["image"] = image
    listener["command"] = ["arc-capacity-listener", "run"]
    listener["env"] = _merge_named(
        listener.get("env"),
        [{"name": "CAPACITY_AWARE_CONFIG", "value": f"{CONFIG_DIR}/capacityAware.yaml"}],
    )
    listener["volumeMounts"] = _merge_named(
        listener.get("volumeMounts"),
        [{"name": "capacity-aware", "mountPath": CONFIG_DIR, "readOnly": True}],
    )
    if token_secret:
        # Run as the install's fixed ServiceAccount (listener/commands/rbac.py own_service_account):
        # ARC ignores serviceAccountName here, so its token replaces the pod's own.
        listener["volumeMounts"] = _merge_named(
            listener["volumeMounts"],
            [{"name": TOKEN_VOLUME, "mountPath": TOKEN_MOUNT_PATH, "readOnly": True}],
        )
    if not listener.get("resources"):
        listener["resources"] = copy.deepcopy(LISTENER_RESOURCES)
    warnings += resource_warnings(listener["resources"])
    listener["securityContext"] = {**CONTAINER_SECURITY, **(listener.get("securityContext") or {})}
    if not any(m.get("mountPath") == "/tmp" for m in listener["volumeMounts"]):
        listener["volumeMounts"] = _merge_named(
            listener["volumeMounts"], [{"name": "tmp", "mountPath": "/tmp"}]
        )
        listener_spec["volumes"] = _merge_named(listener_spec.get("volumes"), [TMP_VOLUME])
    own_security = listener_spec.get("securityContext") or {}
    listener_spec["securityContext"] = {**POD_SECURITY, **own_security}
    listener["livenessProbe"] = {"httpGet": {"path": "/healthz", "port": metrics_port}}
    listener["readinessProbe"] = {"httpGet": {"path": "/readyz", "port": metrics_port}}
    listener_spec["containers"] = _by_name(containers, listener)
    volumes: list[dict[str, Any]] = [{"name": "capacity-aware", "configMap": {"name": configmap}}]
    if token_secret:
        volumes.append({"name": TOKEN_VOLUME, "secret": {"secretName": token_secret}})
    listener_spec["volumes"] = _merge_named(listener_spec.get("volumes"), volumes)
    grace = listener_spec.get("terminationGracePeriodSeconds") or 0
    listener_spec["terminationGracePeriodSeconds"] = max(int(grace), GRACE_SECONDS)

    runner_spec = copy.deepcopy((current.get("template") or {}).get("spec") or {})
    runner_containers = list(runner_spec.get("containers") or [])
    runner = _container(runner_containers, "runner", DEFAULT_RUNNER)
    own = hook_merge.user_hook(runner, runner_spec)
    if own is not None and not merged_hook:
        raise ValuesError(hook_merge.refusal(own, where))
    taken = [
        m
        for m in runner.get("volumeMounts") or ()
        if m.get("mountPath") == HOOK_DIR and m.get("name") != "hook-template"
    ]
    if taken:
        raise ValuesError(
            f"{where}: the runner container mounts volume {taken[0].get('name')!r} at {HOOK_DIR}, "
            "where the overlay mounts the hook template: move that mount"
        )
    runner["env"] = _merge_named(runner.get("env"), [{"name": HOOK_ENV, "value": HOOK_PATH}])
    runner["volumeMounts"] = _merge_named(
        runner.get("volumeMounts"),
        [{"name": "hook-template", "mountPath": HOOK_DIR, "readOnly": True}],
    )
    if not (runner.get("resources") or {}).get("requests"):
        warnings.append(
            "the runner container has no resource requests: the runner placeholder copies "
            "them, so set template.spec.containers[runner].resources"
        )
    runner_spec["containers"] = _by_name(runner_containers, runner)
    runner_spec["volumes"] = _merge_named(
        runner_spec.get("volumes"),
        [{"name": "hook-template", "configMap": {"name": hook_configmap}}],
    )
    runner_spec["priorityClassName"] = "arc-runner"
    return {
        "listenerTemplate": {"spec": listener_spec},
        "template": {"spec": runner_spec},
    }, warnings


def resource_warnings(resources: dict[str, Any]) -> list[str]:
    """A warning for each of the user's listener resources below :data:`LISTENER_RESOURCES`."""
    out = []
    for (section, name), need in MEASURED_NEED.items():
        value = (resources.get(section) or {}).get(name)
        if value is None:
            continue
        ours = LISTENER_RESOURCES[section][name]
        try:
            low = quantity(value) < quantity(ours)
        except QuantityError:
            out.append(f"listener resources.{section}.{name} {value!r} is not a quantity")
            continue
        if low:
            out.append(
                f"the listener's resources.{section}.{name} is {value}, below the measured need "
                f"({need}; docs/image.md, Sizing): kept as you set it; {ours} is recommended"
            )
    return out


def check_arguments(image: str, scale_set: str) -> None:
    """The image and the scale-set name, before any file is read (one line, exit 1)."""
    if not image.strip() or any(c.isspace() for c in image):
        raise ValuesError(
            f"--image {image!r}: expected an image reference such as "
            "registry.example.com/arc-capacity-listener:0.1.0"
        )
    if len(scale_set) > MAX_SCALE_SET_NAME or not DNS_SUBDOMAIN.match(scale_set):
        raise ValuesError(
            f"--scale-set {scale_set!r}: a runner scale set name is lowercase letters, digits, "
            f"'-' and '.', starting and ending with a letter or digit, at most "
            f"{MAX_SCALE_SET_NAME} characters (it names the ConfigMaps and ARC's objects)"
        )


def check_scale_set(current: dict[str, Any], scale_set: str, where: str) -> list[str]:
    """``--scale-set`` against the file's ``runnerScaleSetName``: refuses a mismatch, warns
    when the file names none."""
    named = current.get("runnerScaleSetName")
    if named and named != scale_set:
        raise ValuesError(
            f"{where}: runnerScaleSetName is {named!r} but --scale-set is {scale_set!r}: pass "
            f"--scale-set {named} (the ConfigMap names must match the scale set's)"
        )
    if not named:
        return [
            f"{where} sets no runnerScaleSetName, so the chart names the scale set after the Helm "
            f"release: check that the release is {scale_set!r}"
        ]
    return []


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arc-capacity-listener values",
        description="Write the Helm overlay (for helm upgrade --reuse-values -f) that makes an "
        "installed scale set capacity-aware, keeping its current values.",
    )
    parser.add_argument(
        "--current", required=True, help="output of `helm get values <release> -o yaml`"
    )
    parser.add_argument("--image", required=True, help="the arc-capacity-listener image")
    parser.add_argument(
        "--scale-set", required=True, help="runnerScaleSetName (names the ConfigMaps)"
    )
    parser.add_argument(
        "--own-service-account",
        action="store_true",
        help="run the listener as <scale set>-capacity-listener (config/install/, rbac "
        "--own-service-account) by mounting its token Secret",
    )
    parser.add_argument("--output", "-o", help="write here instead of stdout")
    parser.add_argument(
        "--hook-template",
        help="the hook template the runner already uses (the file, or its ConfigMap as YAML): "
        "merged with arc-workflow instead of replaced",
    )
    parser.add_argument(
        "--hook-output",
        help="where the merged hook-template ConfigMap goes (default: "
        "<scale-set>-hook-template.yaml)",
    )
    parser.add_argument(
        "--namespace", help="the runner namespace, written into the merged ConfigMap"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except ValuesError as exc:
        for line in str(exc).splitlines():
            print(f"arc-capacity-listener values: {line}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    check_arguments(args.image, args.scale_set)
    try:
        text = Path(args.current).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValuesError(f"{args.current}: cannot read the current values ({exc})") from None
    values = load_values(args.current, text)
    found = problems(values)
    if found:
        raise ValuesError("\n".join(found))
    warnings = check_scale_set(values.data, args.scale_set, args.current)
    hook_configmap = f"{args.scale_set}-hook-template"
    merged_note = ""
    if args.hook_template:
        merged_note = _write_merged_hook(args, values.data, hook_configmap, warnings)
    result, more = overlay(
        values.data,
        image=args.image,
        configmap=f"{args.scale_set}-capacity-aware",
        hook_configmap=hook_configmap,
        merged_hook=bool(args.hook_template),
        where=args.current,
        token_secret=f"{args.scale_set}-{OWN_TOKEN}" if args.own_service_account else None,
    )
    for warning in [*warnings, *more]:
        print(f"warning: {warning}", file=sys.stderr)
    rendered = "# helm upgrade --reuse-values -f <this file> (arc-capacity-listener values)\n"
    rendered += yaml.safe_dump(result, sort_keys=False)
    if args.output:
        Path(args.output).write_text(rendered, encoding="utf-8")
    else:
        sys.stdout.write(rendered)
    if merged_note:
        print(merged_note, file=sys.stderr)
    return 0


def _write_merged_hook(
    args: argparse.Namespace, current: dict[str, Any], name: str, warnings: list[str]
) -> str:
    """Merge the user's hook template, write its ConfigMap, and say what was added."""
    spec = (current.get("template") or {}).get("spec") or {}
    runner: dict[str, Any] = next(
        (c for c in spec.get("containers") or () if c.get("name") == "runner"), {}
    )
    template, where = hook_merge.read_hook_template(
        args.hook_template, hook_merge.user_hook(runner, spec)
    )
    merged, added, hook_warnings = hook_merge.merge(template, where)
    warnings += hook_warnings
    target = Path(args.hook_output or f"{args.scale_set}-hook-template.yaml")
    manifest = hook_merge.configmap(name, args.namespace, merged)
    header = f"# Your hook template ({where}) with: {'; '.join(added) or 'nothing added'}\n"
    target.write_text(header + hook_merge.dump(manifest), encoding="utf-8")
    apply = f"kubectl apply -n {args.namespace or '<runner namespace>'} -f {target}"
    kept = ", ".join(sorted((template.get("spec") or {}).keys())) or "nothing else"
    return (
        f"hook template: kept yours ({kept}); added {', '.join(added) or 'nothing'}; "
        f"wrote ConfigMap {name} to {target}: {apply}"
    )
