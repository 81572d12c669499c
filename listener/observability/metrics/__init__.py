"""Prometheus metrics of the listener: ARC's own families plus the capacity families.

What this package owns, in order, one module each:

1. :mod:`~.families`: **the ARC families** (docs/protocol.md#metrics), the twelve
   ``gha_*`` metrics of ARC's listener with the same names, types, help strings, label sets,
   buckets and label-value rules, so existing dashboards and alerts keep working when the image
   is swapped; and **the capacity families** (prefix ``arc_capacity_``): pairs by state, the
   ledger (advertised capacity, runner / workflow side, live maxRunners, READY pairs, starved
   and idle runners), the warm pool, transitions, reconcile timing, HUD health, long-poll cuts,
   placeholder API writes, orphan deletions and lease renewals. The capacity families are
   always registered and carry the scale-set labels so several listeners share one dashboard.
2. :mod:`~.labels`: the label values (scale-set identity, workflow refs, wire
   timestamps), and :mod:`~.custom`: the ``metrics`` key of the listener config
   (ARS ``spec.listenerMetrics``, docs/protocol.md#custom-metrics), which replaces the default ARC
   set: only the listed metrics are registered, each with exactly the listed labels; unknown names
   are logged and skipped; histogram buckets default to ARC's list.
3. :mod:`~.registry`: :class:`PrometheusMetrics`, one fresh
   :class:`~prometheus_client.CollectorRegistry` with no process/platform collectors (like
   ARC's), and the hook methods the listener loop calls (``record_statistics``,
   ``record_job_started``, ``record_job_completed``, ``record_desired_runners``,
   ``record_poll_cut``).
4. :mod:`~.subscriber`: :class:`MetricsSubscriber`, a reconciler subscriber and step
   observer (scaleset/carry_out.py). Counters come from transition events and commands;
   gauges come from each carried-out step's ledger, warm pool size and the store's counts
   (:meth:`MetricsSubscriber.observe`).
5. :mod:`~.doc`: ``python -m listener.observability.metrics [--check]``
   writes (or checks)
   ``docs/metrics.md``, generated from the family definitions, so the reference cannot drift
   from the code.

Label cardinality: transition reasons are free text, so the ``reason`` label is a bounded
category (:class:`ReasonCategory`, first matching rule of ``REASON_RULES``); the full reason
is in the log line of every transition. Every other label of the capacity families takes
values from a fixed set.
"""

from listener.observability.metrics.custom import MetricsConfigError
from listener.observability.metrics.doc import main, render_metrics_doc
from listener.observability.metrics.families import (
    ARC_FAMILIES,
    CAPACITY_FAMILIES,
    DEFAULT_BUCKETS,
    Family,
    ReasonCategory,
    reason_category,
)
from listener.observability.metrics.labels import ScaleSetIdentity, parse_workflow_ref, unix_seconds
from listener.observability.metrics.registry import PrometheusMetrics
from listener.observability.metrics.subscriber import MetricsSubscriber

__all__ = [
    "ARC_FAMILIES",
    "CAPACITY_FAMILIES",
    "DEFAULT_BUCKETS",
    "Family",
    "MetricsConfigError",
    "MetricsSubscriber",
    "PrometheusMetrics",
    "ReasonCategory",
    "ScaleSetIdentity",
    "main",
    "parse_workflow_ref",
    "reason_category",
    "render_metrics_doc",
    "unix_seconds",
]
