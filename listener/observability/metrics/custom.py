"""The ``metrics`` key of the listener config (ARS ``spec.listenerMetrics``,
docs/protocol.md#custom-metrics): which ARC families to register, with which labels and buckets."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from pydantic import BaseModel, ConfigDict, ValidationError

from listener.observability.metrics.families import (
    _ARC_BY_KIND,
    _SECTIONS,
    ARC_FAMILIES,
    DEFAULT_BUCKETS,
    Family,
)

log = logging.getLogger(__name__)


class MetricsConfigError(ValueError):
    """The ``metrics`` config (ARS ``spec.listenerMetrics``) cannot be installed."""


class _MetricSpec(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    labels: list[str] = []
    buckets: list[float] | None = None


class CustomMetricsConfig(BaseModel):
    """``{"counters": {name: {labels}}, "gauges": ..., "histograms": {...}}``"""

    model_config = ConfigDict(extra="ignore", frozen=True)
    counters: dict[str, _MetricSpec] | None = None
    gauges: dict[str, _MetricSpec] | None = None
    histograms: dict[str, _MetricSpec] | None = None


def parse_metrics_config(raw: Mapping[str, Any] | BaseModel | None) -> CustomMetricsConfig | None:
    """``None`` (or absent) = ARC's default set; a mapping (or the listener config's own
    pydantic model of the ``metrics`` key) replaces it."""
    if raw is None:
        return None
    data = raw.model_dump() if isinstance(raw, BaseModel) else dict(raw)
    try:
        return CustomMetricsConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"metrics.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors(include_url=False)
        )
        raise MetricsConfigError(
            f"listener config: {problems} (expected {{counters|gauges|histograms: "
            "{<gha_* name>: {labels: [...], buckets: [...]}}}})"
        ) from None


@dataclass(frozen=True, slots=True)
class _Installed:
    family: Family
    labels: tuple[str, ...]
    metric: Any  # Counter | Gauge | Histogram with ``labels`` as label names


def _selected_arc_families(
    config: CustomMetricsConfig | None,
) -> list[tuple[Family, tuple[str, ...], tuple[float, ...]]]:
    if config is None:
        return [(f, f.labels, f.buckets) for f in ARC_FAMILIES]
    chosen = []
    for section, kind in _SECTIONS.items():
        for name, spec in (getattr(config, section) or {}).items():
            family = _ARC_BY_KIND[kind].get(name)
            if family is None:
                # ARC logs and skips unknown names (and names listed under the wrong kind).
                log.error("unknown metric name %r in metrics.%s; skipped", name, section)
                continue
            buckets = tuple(spec.buckets) if spec.buckets else DEFAULT_BUCKETS
            chosen.append((family, tuple(spec.labels), buckets if kind == "histogram" else ()))
    return chosen


#: Classic Prometheus label names: what every scraper and query language accepts.
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def _check_label_names(metric: str, labels: tuple[str, ...]) -> None:
    bad = [label for label in labels if not _LABEL_NAME.match(label) or label.startswith("__")]
    if bad or len(set(labels)) != len(labels):
        problem = f"invalid label names {bad}" if bad else "a label is listed twice"
        raise MetricsConfigError(
            f"listener config: metrics: {metric}: {problem}; label names match "
            "[a-zA-Z_][a-zA-Z0-9_]* and do not start with '__'"
        )


def _make(
    family: Family, labels: tuple[str, ...], buckets: tuple[float, ...], registry: CollectorRegistry
) -> Any:
    common: dict[str, Any] = {"labelnames": labels, "registry": registry}
    if family.kind == "counter":
        return Counter(family.name, family.help, **common)
    if family.kind == "gauge":
        return Gauge(family.name, family.help, **common)
    return Histogram(family.name, family.help, buckets=buckets, **common)
