"""The scrape job prometheus-operator renders for config/monitoring/podmonitor.yaml, for a
real Prometheus without Kubernetes service discovery.

The operator turns each ``podMetricsEndpoints`` entry into a ``kubernetes_sd_configs`` (role
pod) job whose relabeling sets the target labels ``namespace`` (the pod's namespace), ``pod``,
``container``, ``endpoint`` and ``job`` (``<PodMonitor namespace>/<name>``), then appends the
endpoint's own ``relabelings``; ``honorLabels`` becomes ``honor_labels``. Here the discovered
pod is a static target carrying the ``__meta_kubernetes_*`` labels service discovery would
give it, and the same relabeling runs in Prometheus itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tests.monitoring.promtool import ROOT

PODMONITOR = ROOT / "config" / "monitoring" / "podmonitor.yaml"


def load(path: Path = PODMONITOR) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def _meta_label(pod_label: str) -> str:
    """The discovery label of a pod label, e.g. ``actions.github.com/scale-set-name`` ->
    ``__meta_kubernetes_pod_label_actions_github_com_scale_set_name``."""
    return "__meta_kubernetes_pod_label_" + re.sub(r"[^a-zA-Z0-9_]", "_", pod_label)


def _relabeling(rule: Mapping[str, Any]) -> dict[str, Any]:
    """A PodMonitor RelabelConfig (camelCase) as Prometheus config (snake_case)."""
    names = {"sourceLabels": "source_labels", "targetLabel": "target_label"}
    return {names.get(k, k): v for k, v in rule.items()}


def scrape_job(
    monitor: Mapping[str, Any],
    *,
    target: str,
    pod_namespace: str,
    pod_name: str,
    pod_labels: Mapping[str, str],
    container: str = "listener",
    interval: str = "1s",
) -> dict[str, Any]:
    """The first endpoint of ``monitor`` as the operator would render it, for one pod."""
    meta = monitor["metadata"]
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    port = endpoint.get("port") or str(endpoint.get("portNumber", ""))
    discovered = {
        "__meta_kubernetes_namespace": pod_namespace,
        "__meta_kubernetes_pod_name": pod_name,
        "__meta_kubernetes_pod_container_name": container,
        "__meta_kubernetes_pod_container_port_name": port,
        **{_meta_label(k): v for k, v in pod_labels.items()},
    }
    operator_relabelings: list[dict[str, Any]] = [
        {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
        {"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"},
        {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
        {"target_label": "job", "replacement": f"{meta['namespace']}/{meta['name']}"},
        {"target_label": "endpoint", "replacement": port},
    ]
    return {
        "job_name": f"podMonitor/{meta['namespace']}/{meta['name']}/0",
        "honor_labels": bool(endpoint.get("honorLabels", False)),
        "scrape_interval": interval,
        "metrics_path": endpoint.get("path", "/metrics"),
        "static_configs": [{"targets": [target], "labels": discovered}],
        "relabel_configs": operator_relabelings
        + [_relabeling(r) for r in endpoint.get("relabelings", [])],
    }
