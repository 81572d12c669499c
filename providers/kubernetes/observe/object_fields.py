"""Small readers of API objects (plain JSON dicts): metadata, labels, owners, RFC 3339
timestamps, conditions, the pod phase. No imports from the rest of the provider, so every
module can use them without an import cycle; they are public because the provider's modules
share them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from functools import lru_cache
from typing import Any

from reconciler.snapshot import PodPhase

Obj = Mapping[str, Any]

_PHASES = {p.value: p for p in PodPhase}


def metadata_of(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def labels_of(obj: Obj) -> Mapping[str, str]:
    return metadata_of(obj).get("labels") or {}


def owners_of(obj: Obj, kind: str) -> list[str]:
    references = metadata_of(obj).get("ownerReferences") or ()
    return [o.get("name", "") for o in references if o.get("kind") == kind]


def parse_timestamp(text: Any) -> float | None:
    """RFC 3339 (``2024-05-01T10:00:00Z``, fractional seconds allowed) -> epoch seconds."""
    if not isinstance(text, str) or not text:
        return None
    return _parse_timestamp(text)


@lru_cache(maxsize=8192)
def _parse_timestamp(text: str) -> float | None:
    # Memoised: creation timestamps have one-second resolution and repeat across pods.
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def float_or_none(value: Any) -> float | None:
    try:
        result = float(value)
    except (TypeError, ValueError):
        return None
    return result if math.isfinite(result) else None


def condition_of(obj: Obj, cond_type: str) -> Mapping[str, Any] | None:
    conditions: list[Mapping[str, Any]] = (obj.get("status") or {}).get("conditions") or []
    for cond in conditions:
        if cond.get("type") == cond_type:
            return cond
    return None


def pod_phase(pod: Obj) -> PodPhase:
    return _PHASES.get((pod.get("status") or {}).get("phase") or "Pending", PodPhase.UNKNOWN)
