"""Which pod watch events run the reconciler at once: a placeholder turning Running.

Most watch events only matter to the next step and are debounced (``watchDebounce``). A
placeholder that starts to count in the capacity ledger (reconciler/capacity.py) may have made
its pair READY: one more slot for ``X-ScaleSetMaxCapacity`` while a job may be waiting for it
(a cold job's pair, a refill of the warm pool). Debouncing held every such rise back by up to
``watchDebounce``; it now runs a step at once, at most one per ``min_gap``
(reconciler/schedule.py).

Real runner and workflow pods that bind on free room raise the ledger too (the job that held
a slot since its assignment gives the pair back). Triggering on them as well let about 14%
fewer ice-failover jobs wait for a slot, but over 10 seeds of shared-nodepool (three teams in
one capped NodePool) 15% more jobs never started (939 vs 818) and its burst k-th ratio went
from 2.92 to 4.58. With the fit estimate's waiting pods (fit.py) real workflow pods alone still
cost it 11% (835 vs 751 never started); measured, not explained, so real pods keep the
debounce.

The rule is shared by the production cache (providers/kubernetes/watch/cache.py) and the simulated
world's cache view, so both see the same triggers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.kubernetes.observe.translate import NO_NODE_CHECK, placeholder_pod
from providers.kubernetes.pods import labels as L


def placeholder_counts(pod: Mapping[str, Any] | None) -> bool:
    """A placeholder the ledger counts, judged as the snapshot judges it
    (:func:`~providers.kubernetes.observe.translate.placeholder_pod`): bound, Running, not
    terminating, not a DisruptionTarget, not ended. Its node is not checked here (the
    cache does not join pods with nodes): a blocked node only makes a trigger run a step
    that finds nothing new. False for any other pod."""
    if pod is None or L.LABEL_SCALE_SET not in ((pod.get("metadata") or {}).get("labels") or {}):
        return False
    parsed = placeholder_pod(pod, NO_NODE_CHECK)
    return parsed is not None and parsed.counts
