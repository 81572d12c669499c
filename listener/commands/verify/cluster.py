"""Where the scale set lives and how ``verify`` reads the cluster.

- :class:`ApiSource`: the API as an ``ObjectSource`` (providers/kubernetes/observe/translate.py), so
  the start-up checks and the snapshot translation of ``run`` read live objects unchanged.
  Every request carries a timeout; optional kinds (Karpenter) read as empty when absent.
- :func:`find_scale_set`: the AutoscalingRunnerSet and its EphemeralRunnerSet (ARC names the
  ERS ``<ars>-<hash>`` and labels it ``actions.github.com/scale-set-name``).
- :func:`load_settings`: the capacityAware block, from ``--config``, else ``$CAPACITY_AWARE_*``
  (what ``run`` reads), else the ConfigMap labelled for this scale set in the cluster.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from listener.process.capacity_config import ENV_FILE, ENV_JSON, load_capacity_aware
from providers.kubernetes.observe.scale_set import ScaleSetTarget
from providers.kubernetes.pods import labels as L
from providers.kubernetes.watch.targets import WatchTarget, list_call
from reconciler.settings import CapacityAwareSettings
from reconciler.settings_types import SettingsError

Obj = dict[str, Any]
#: Seconds one API request may take.
REQUEST_TIMEOUT = 10.0
OPTIONAL_KINDS = frozenset({"NodePool", "NodeClaim", "AutoscalingRunnerSet", "Event"})
PART_OF = "app.kubernetes.io/part-of=arc-capacity-listener"


class VerifyError(Exception):
    """Verify cannot go on (no such scale set, unusable settings): one line, exit 1."""


def items(response: Any) -> list[Obj]:
    """The items of a list answer read with ``_preload_content=False`` (plain dicts); the
    connection goes back to the pool."""
    return list(body(response).get("items") or [])


def body(response: Any) -> Obj:
    """The JSON body of an answer read with ``_preload_content=False``."""
    try:
        return dict(json.loads(response.data))
    finally:
        response.release_conn()


class ApiSource:
    """``ObjectSource`` over the API. ``selectors`` narrow a kind's list (label selector)."""

    def __init__(self, api: k8s.ApiClient, selectors: Mapping[str, str] | None = None) -> None:
        self.api = api
        self.selectors = dict(selectors or {})

    def list(self, kind: str, namespace: str | None = None) -> Iterable[Obj]:
        call = list_call(self.api, WatchTarget(kind, namespace))
        kwargs: dict[str, Any] = {"_preload_content": False, "_request_timeout": REQUEST_TIMEOUT}
        if kind in self.selectors:
            kwargs["label_selector"] = self.selectors[kind]
        try:
            return items(call(**kwargs))
        except ApiException as exc:
            if exc.status == 404 and kind in OPTIONAL_KINDS:
                return []
            raise


@dataclass(frozen=True, slots=True)
class ScaleSet:
    ars: Obj | None
    ers: Obj
    target: ScaleSetTarget

    @property
    def runner_template(self) -> Mapping[str, Any]:
        return ((self.ers.get("spec") or {}).get("ephemeralRunnerSpec") or {}).get("spec") or {}


def find_scale_set(
    api: k8s.ApiClient, name: str, namespace: str, settings: CapacityAwareSettings
) -> ScaleSet:
    source = ApiSource(api)
    ars = next(
        (o for o in source.list("AutoscalingRunnerSet", namespace) if _name(o) == name), None
    )
    candidates = [
        o
        for o in source.list("EphemeralRunnerSet", namespace)
        if _name(o) == name
        or (o.get("metadata") or {}).get("labels", {}).get(L.LABEL_ARC_SCALE_SET_NAME) == name
    ]
    if ars is not None:
        uid = ars["metadata"].get("uid")
        owned = [
            o
            for o in candidates
            if any(r.get("uid") == uid for r in o["metadata"].get("ownerReferences") or ())
        ]
        candidates = owned or candidates
    if not candidates:
        raise VerifyError(
            f"no EphemeralRunnerSet of scale set {name} in namespace {namespace} (looked for "
            f"name {name} or label {L.LABEL_ARC_SCALE_SET_NAME}={name}); check --scale-set "
            "(the AutoscalingRunnerSet name, i.e. the Helm release's runnerScaleSetName) and "
            "--namespace (the runners' namespace)"
        )
    ers = max(candidates, key=lambda o: o["metadata"].get("creationTimestamp") or "")
    spec = (ars or {}).get("spec") or {}
    target = ScaleSetTarget(
        ers_name=_name(ers),
        runner_namespace=namespace,
        placeholder_namespace=settings.placeholder_namespace or namespace,
        max_runners=int(spec.get("maxRunners") or 0) if ars is not None else 0,
        min_runners=int(spec.get("minRunners") or 0) if ars is not None else 0,
        ars_name=name,
    )
    return ScaleSet(ars, ers, target)


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def load_settings(
    api: k8s.ApiClient, scale_set: str, config: Path | None, env: Mapping[str, str]
) -> tuple[CapacityAwareSettings, str]:
    """(settings, where they came from). Bad settings raise VerifyError with the reason."""
    try:
        if config is not None:
            return load_capacity_aware({ENV_FILE: str(config)}), str(config)
        if env.get(ENV_FILE) or env.get(ENV_JSON):
            where = f"${ENV_FILE}" if env.get(ENV_FILE) else f"${ENV_JSON}"
            return load_capacity_aware(env), where
    except SettingsError as exc:
        raise VerifyError(str(exc)) from None
    return _settings_from_cluster(api, scale_set)


def _settings_from_cluster(api: k8s.ApiClient, scale_set: str) -> tuple[CapacityAwareSettings, str]:
    """The capacityAware ConfigMap of config/capacity-aware-configmap.yaml, found by its labels
    in any namespace; defaults when there is none (said in the report)."""
    selector = f"{PART_OF},{L.LABEL_ARC_SCALE_SET_NAME}={scale_set}"
    try:
        found = items(
            k8s.CoreV1Api(api).list_config_map_for_all_namespaces(
                label_selector=selector, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
            )
        )
    except ApiException as exc:
        if exc.status not in (401, 403):
            raise
        raise VerifyError(
            f"cannot look for the capacityAware ConfigMap (listing ConfigMaps in all namespaces: "
            f"HTTP {exc.status}); pass --config FILE or set ${ENV_FILE}"
        ) from None
    if not found:
        return load_capacity_aware({}), f"defaults (no ConfigMap labelled {selector})"
    if len(found) > 1:
        names = ", ".join(f"{c['metadata']['namespace']}/{c['metadata']['name']}" for c in found)
        raise VerifyError(f"several capacityAware ConfigMaps match ({names}); pass --config FILE")
    configmap = found[0]
    where = f"ConfigMap {configmap['metadata']['namespace']}/{configmap['metadata']['name']}"
    data = configmap.get("data") or {}
    if len(data) != 1:
        raise VerifyError(f"{where}: expected one key (capacityAware.yaml), found {len(data)}")
    (text,) = data.values()
    return _parse_text(text, where), where


def _parse_text(text: str, where: str) -> CapacityAwareSettings:
    """Through ``run``'s own loader (size, alias and depth limits), naming the ConfigMap."""
    fd, path = tempfile.mkstemp(suffix=".yaml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        return load_capacity_aware({ENV_FILE: path})
    except SettingsError as exc:
        raise VerifyError(str(exc).replace(path, where)) from None
    finally:
        os.unlink(path)
