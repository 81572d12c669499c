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

It never changes ``containerMode``: switching to ``kubernetes-novolume`` is a migration
(docs/migrate-kubernetes-novolume.md); a warning says so when the current mode is another.
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from listener.rbac import OWN_TOKEN, TOKEN_MOUNT_PATH

HOOK_ENV = "ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE"
HOOK_DIR = "/home/runner/hook-template"
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
#: The chart's default runner container, used when the values define none.
DEFAULT_RUNNER = {
    "name": "runner",
    "image": "ghcr.io/actions/actions-runner:latest",
    "command": ["/home/runner/run.sh"],
}


class ValuesError(ValueError):
    """The current values cannot be read or have an unexpected shape."""


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
    token_secret: str | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Pure: (the overlay, warnings) for the scale set's ``current`` values."""
    warnings = []
    mode = ((current.get("containerMode") or {}).get("type")) or ""
    if mode != "kubernetes-novolume":
        warnings.append(
            f"containerMode.type is {mode or 'unset'!r}: the listener refuses to start until the "
            "scale set runs kubernetes-novolume (a migration: docs/migrate-kubernetes-novolume.md)"
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
        # Run as the install's fixed ServiceAccount (listener/rbac.py own_service_account):
        # ARC ignores serviceAccountName here, so its token replaces the pod's own.
        listener["volumeMounts"] = _merge_named(
            listener["volumeMounts"],
            [{"name": TOKEN_VOLUME, "mountPath": TOKEN_MOUNT_PATH, "readOnly": True}],
        )
    if not listener.get("resources"):
        listener["resources"] = copy.deepcopy(LISTENER_RESOURCES)
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
    runner["env"] = _merge_named(
        runner.get("env"), [{"name": HOOK_ENV, "value": f"{HOOK_DIR}/workflow-pod.yaml"}]
    )
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


def main(argv: Sequence[str] | None = None) -> int:
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
    args = parser.parse_args(argv)
    try:
        text = Path(args.current).read_text(encoding="utf-8")
        current = yaml.safe_load(text) or {}
        if not isinstance(current, dict):
            raise ValuesError(f"{args.current}: expected a YAML mapping of Helm values")
        result, warnings = overlay(
            current,
            image=args.image,
            configmap=f"{args.scale_set}-capacity-aware",
            hook_configmap=f"{args.scale_set}-hook-template",
            token_secret=f"{args.scale_set}-{OWN_TOKEN}" if args.own_service_account else None,
        )
    except (OSError, yaml.YAMLError, ValuesError) as exc:
        print(f"arc-capacity-listener values: {exc}", file=sys.stderr)
        return 1
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    rendered = "# helm upgrade --reuse-values -f <this file> (arc-capacity-listener values)\n"
    rendered += yaml.safe_dump(result, sort_keys=False)
    if args.output:
        Path(args.output).write_text(rendered, encoding="utf-8")
    else:
        sys.stdout.write(rendered)
    return 0
