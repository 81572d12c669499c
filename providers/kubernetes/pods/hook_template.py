"""The container-hook template a scale set's workflow pods are made from, read through the API.

In ``kubernetes-novolume`` mode (and ``kubernetes`` with ``ACTIONS_RUNNER_USE_KUBE_SCHEDULER``)
the runner's hook builds each workflow pod from the file named by
``ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE`` and sends it through kube-scheduler: its placement
(nodeSelector, tolerations, node affinity, schedulerName) is the template's, not the runner
pod's (runner-container-hooks ``packages/k8s/src/k8s/index.ts``, ``createJobPod``; the
template's ``spec`` is merged into a pod spec that sets no placement of its own).

That file lives in the runner's filesystem; on ARC it comes from a ConfigMap volume the runner
template mounts (config/values-capacity-aware.yaml). Following the env variable to the mount,
the mount to the volume, the volume (and its ``items``) to a ConfigMap key gives the template
back from the API. The listener (providers/kubernetes/provider.py) reads it to place workflow
placeholders where workflow pods go; ``verify`` reads it to check the class and requests.

Pure: the caller hands in the runner pod template and looks ConfigMaps up.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

Obj = dict[str, Any]
HOOK_TEMPLATE_ENV = "ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE"


class HookTemplateError(Exception):
    """The hook template cannot be found or read; the message says where it looked."""


@dataclass(frozen=True, slots=True)
class HookSource:
    """Where the runner's hook template comes from: a key of a ConfigMap it mounts."""

    configmap: str
    key: str
    #: The path the runner reads (``ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE``).
    path: str

    @property
    def where(self) -> str:
        return f"ConfigMap {self.configmap} key {self.key}"


@dataclass(frozen=True, slots=True)
class HookTemplate:
    where: str
    spec: Mapping[str, Any]
    metadata: Mapping[str, Any]

    def job_spec(self, image: str) -> Obj:
        """The workflow pod as the hook would build it: ``$job`` becomes the job container."""
        spec = copy.deepcopy(dict(self.spec))
        for container in spec.get("containers") or ():
            if container.get("name") == "$job":
                container["name"] = "job"
            container.setdefault("image", image)
        return spec


def runner_container(template: Mapping[str, Any]) -> Mapping[str, Any]:
    """The container named ``runner`` (ARC's), else the first one (``{}`` when none)."""
    containers = template.get("containers") or [{}]
    return next((c for c in containers if c.get("name") == "runner"), containers[0])


def container_env(container: Mapping[str, Any]) -> dict[str, str]:
    """A container's literal env values by name (``valueFrom`` entries have none)."""
    return {
        e.get("name", ""): str(e.get("value", ""))
        for e in container.get("env") or ()
        if "value" in e
    }


def locate(template: Mapping[str, Any]) -> HookSource:
    """The ConfigMap key the runner pod template's hook template path is mounted from."""
    runner = runner_container(template)
    path = container_env(runner).get(HOOK_TEMPLATE_ENV)
    if not path:
        raise HookTemplateError(f"the runner container sets no {HOOK_TEMPLATE_ENV}")
    mount = next(
        (
            m
            for m in runner.get("volumeMounts") or ()
            if path.startswith(str(m.get("mountPath", "")).rstrip("/") + "/")
        ),
        None,
    )
    if mount is None:
        raise HookTemplateError(f"{HOOK_TEMPLATE_ENV}={path} is not under any volumeMount")
    volume: Mapping[str, Any] = next(
        (v for v in template.get("volumes") or () if v.get("name") == mount.get("name")), {}
    )
    source = volume.get("configMap") or {}
    key = path[len(str(mount["mountPath"]).rstrip("/")) + 1 :]
    for item in source.get("items") or ():
        if item.get("path") == key:
            key = item.get("key", key)
    name = source.get("name")
    if not name:
        raise HookTemplateError(f"volume {mount.get('name')} (holding {path}) is not a ConfigMap")
    return HookSource(str(name), str(key), str(path))


def parse(source: HookSource, configmap: Mapping[str, Any] | None) -> HookTemplate:
    """The template held in ``configmap`` (None: it does not exist) at ``source.key``."""
    text = ((configmap or {}).get("data") or {}).get(source.key)
    if text is None:
        raise HookTemplateError(f"{source.where} (mounted at {source.path}) does not exist")
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise HookTemplateError(f"{source.where} is not valid YAML: {exc}") from None
    if not isinstance(doc, Mapping):
        raise HookTemplateError(f"{source.where} is not a mapping")
    spec, metadata = doc.get("spec") or {}, doc.get("metadata") or {}
    if not isinstance(spec, Mapping) or not isinstance(metadata, Mapping):
        raise HookTemplateError(f"{source.where}: spec and metadata must be mappings")
    return HookTemplate(source.where, spec, metadata)


def placement_text(spec: Mapping[str, Any]) -> str:
    """The placement fields a pod spec sets, for a log line."""
    parts = []
    if spec.get("nodeSelector"):
        parts.append(f"nodeSelector {dict(spec['nodeSelector'])}")
    if spec.get("tolerations"):
        parts.append(f"{len(spec['tolerations'])} toleration(s)")
    if (spec.get("affinity") or {}).get("nodeAffinity"):
        parts.append("node affinity")
    if spec.get("schedulerName"):
        parts.append(f"schedulerName {spec['schedulerName']}")
    return ", ".join(parts) or "no placement of its own (any node whose taints it tolerates)"


def read_hook_template(
    template: Mapping[str, Any], configmaps: Mapping[str, Obj] | Callable[[str], Obj | None]
) -> HookTemplate:
    """The hook template the runner container names, from the ConfigMap it mounts there.
    ``configmaps``: the runner namespace's ConfigMaps by name, or a lookup by name."""
    source = locate(template)
    lookup = configmaps if callable(configmaps) else configmaps.get
    return parse(source, lookup(source.configmap))
