"""Which pod watch events can raise the capacity ledger, so the reconciler runs at once.

Most watch events only matter to the next step and are debounced (``watchDebounce``). A pod
that starts to count in the ledger (reconciler/capacity.py) can *raise*
``X-ScaleSetMaxCapacity`` while a job waits for it:

- a placeholder turned Running: its pair may now be READY;
- a real runner or workflow pod bound to a node: from the moment GitHub assigns a job until
  its pods are bound, the job holds a slot the ledger cannot attribute; once they are bound
  the slot is either the pair they took or the pair stays and backs the next job (the pods
  landed on room a finished job freed, which is most jobs of a busy day).

Debouncing these held every such rise back by up to ``watchDebounce``. They now run a step at
once, at most one per ``min_gap`` (reconciler/loop.py). The rule is shared by the production
cache (providers/kubernetes/cache.py) and the simulated world's cache view, so both see the
same triggers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.kubernetes import labels as L


def counts_in_ledger(pod: Mapping[str, Any] | None) -> bool:
    """The pod backs a side of the ledger: a placeholder bound, Running, not leaving and not
    a DisruptionTarget; a real runner or workflow pod bound and not leaving."""
    if pod is None:
        return False
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    status = pod.get("status") or {}
    phase = status.get("phase")
    alive = (
        bool((pod.get("spec") or {}).get("nodeName"))
        and not meta.get("deletionTimestamp")
        and phase not in ("Succeeded", "Failed")
    )
    if L.LABEL_SCALE_SET in labels:
        disrupted = any(
            c.get("type") == "DisruptionTarget" and c.get("status") == "True"
            for c in status.get("conditions") or ()
        )
        return alive and phase == "Running" and not disrupted
    real = labels.get(L.LABEL_EPHEMERAL_RUNNER) == "True" or L.LABEL_WORKFLOW_RUNNER_POD in labels
    return alive and real


def raises_capacity(event_type: str, pod: Mapping[str, Any], *, counted_before: bool) -> bool:
    """The event made a pod count in the ledger that did not before."""
    return event_type != "DELETED" and not counted_before and counts_in_ledger(pod)
