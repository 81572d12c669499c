"""A container-hook template the scale set already has, merged with what capacity-aware mode
needs instead of replaced.

A scale set may already point ``ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE`` at a template of its
own (tolerations, a nodeSelector, volumes, the ``$job`` container's resources...). Repointing
the variable at config/hook-template.yaml would silently drop all of that from every workflow
pod. ``values`` therefore refuses until it is given that template (``--hook-template``), and
then writes a ConfigMap holding the user's template plus our two additions, each named:

- ``spec.priorityClassName: arc-workflow``: the workflow pod preempts its workflow placeholder
  (a template that sets another class is refused: the ladder would not hold);
- ``metadata.labels["app.kubernetes.io/component"]: workflow``.

Everything else is kept as written.
"""

from __future__ import annotations

import copy
import dataclasses
import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from listener.commands.chart_values import Values, ValuesError, load_values, model_problems

HOOK_ENV = "ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE"
HOOK_DIR = "/home/runner/hook-template"
HOOK_KEY = "workflow-pod.yaml"
HOOK_PATH = f"{HOOK_DIR}/{HOOK_KEY}"
WORKFLOW_CLASS = "arc-workflow"
COMPONENT_LABEL = "app.kubernetes.io/component"


@dataclass(frozen=True, slots=True)
class UserHook:
    """The hook template the runner container already names (not ours)."""

    path: str
    #: The ConfigMap mounted where ``path`` lives, when the values say so.
    configmap: str | None


def user_hook(runner: dict[str, Any], spec: dict[str, Any]) -> UserHook | None:
    """The runner's own hook template, or None when it has none or it is already ours."""
    value = next(
        (e.get("value") for e in runner.get("env") or () if e.get("name") == HOOK_ENV), None
    )
    if not value or value == HOOK_PATH:
        return None
    directory = posixpath.dirname(str(value))
    mount = next(
        (m for m in runner.get("volumeMounts") or () if m.get("mountPath") == directory), None
    )
    volume = next(
        (v for v in spec.get("volumes") or () if mount and v.get("name") == mount.get("name")),
        None,
    )
    configmap = ((volume or {}).get("configMap") or {}).get("name")
    return UserHook(str(value), str(configmap) if configmap else None)


def refusal(hook: UserHook, current_file: str) -> str:
    source = (
        f"kubectl get configmap {hook.configmap} -n <runner namespace> -o yaml > hook.yaml"
        if hook.configmap
        else "the file it names"
    )
    return (
        f"{current_file}: the runner container already sets {HOOK_ENV}={hook.path} (a hook "
        "template of your own); pass it with --hook-template FILE (" + source + ") so its "
        "pod spec is kept and arc-workflow is merged into it, or remove the variable to use "
        "config/hook-template.yaml"
    )


def read_hook_template(file: str, hook: UserHook | None) -> tuple[dict[str, Any], str]:
    """(the pod template, where it came from): a ConfigMap manifest or the template itself."""
    try:
        text = Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValuesError(f"{file}: cannot read the hook template ({exc})") from None
    document = load_values(file, text)
    data = document.data
    if data.get("kind") == "ConfigMap":
        entries = data.get("data") or {}
        key = posixpath.basename(hook.path) if hook else None
        if key not in entries:
            if len(entries) != 1:
                wanted = key or "the template"
                raise ValuesError(f"{file}: the ConfigMap has no key {wanted!r}")
            key = next(iter(entries))
        document = load_values(f"{file} (data.{key})", str(entries[key]))
    document = dataclasses.replace(document, special_names=frozenset({"$job"}))
    _check_template(document)
    return document.data, document.file


def _check_template(template: Values) -> None:
    found = []
    for key, value in template.data.items():
        if key == "spec":
            found += list(model_problems(value, "V1PodSpec", ("spec",), template))
        elif key == "metadata":
            found += list(model_problems(value, "V1ObjectMeta", ("metadata",), template))
        else:
            found.append(f"{template.where((key,))}: a hook template has metadata and spec only")
    if found:
        raise ValuesError(found[0])


def merge(template: dict[str, Any], where: str) -> tuple[dict[str, Any], list[str], list[str]]:
    """(the merged template, the additions, warnings). Pure."""
    merged = copy.deepcopy(template)
    spec = merged.setdefault("spec", {}) or {}
    merged["spec"] = spec
    added, warnings = [], []
    current_class = spec.get("priorityClassName")
    if current_class not in (None, WORKFLOW_CLASS):
        raise ValuesError(
            f"{where}: spec.priorityClassName is {current_class!r}; workflow pods need "
            f"{WORKFLOW_CLASS} to preempt their placeholders: remove it (values adds it)"
        )
    if current_class is None:
        spec["priorityClassName"] = WORKFLOW_CLASS
        added.append(f"spec.priorityClassName: {WORKFLOW_CLASS}")
    metadata = merged.setdefault("metadata", {}) or {}
    merged["metadata"] = metadata
    labels = metadata.setdefault("labels", {}) or {}
    metadata["labels"] = labels
    if COMPONENT_LABEL not in labels:
        labels[COMPONENT_LABEL] = "workflow"
        added.append(f"metadata.labels.{COMPONENT_LABEL}: workflow")
    job = next((c for c in spec.get("containers") or () if c.get("name") == "$job"), None)
    if not ((job or {}).get("resources") or {}).get("requests"):
        warnings.append(
            f"{where}: the $job container has no resource requests: set them to "
            "capacityAware.workflowResources so a workflow pod fits where its placeholder was"
        )
    return merged, added, warnings


def configmap(name: str, namespace: str | None, template: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "labels": {"app.kubernetes.io/part-of": "arc-capacity-listener"},
    }
    if namespace:
        metadata["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata,
        "data": {HOOK_KEY: yaml.safe_dump(template, sort_keys=False)},
    }


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings as ``|`` blocks, so the template in the ConfigMap reads as YAML."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str)


def dump(manifest: dict[str, Any]) -> str:
    return yaml.dump(manifest, Dumper=_BlockDumper, sort_keys=False)
