"""Recent Karpenter capacity failures, read from Events: they only explain TIMED_OUT reasons."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from providers.kubernetes.observe.object_fields import metadata_of, parse_timestamp
from providers.kubernetes.observe.scale_set import ObjectSource

Obj = Mapping[str, Any]
#: Most capacity signals kept in a snapshot (they only explain reasons).
MAX_SIGNALS = 10


def capacity_signals_from(
    source: ObjectSource, now: float, window: float = 600.0
) -> tuple[str, ...]:
    """Recent InsufficientCapacity failures, newest first, as short strings (explanations only).

    From Events with reason ``InsufficientCapacityError`` within ``window`` seconds of
    ``now``: that Event (on the NodeClaim) is the only trace Karpenter leaves - its launch
    path (kubernetes-sigs/karpenter pkg/controllers/nodeclaim/lifecycle/launch.go) publishes it
    and deletes the NodeClaim at once, and never writes an InsufficientCapacity condition. A
    source that does not hold Events contributes nothing.
    """
    found: list[tuple[float, str]] = []
    for event in list_if_known(source, "Event"):
        if event.get("reason") != "InsufficientCapacityError":
            continue
        at = (
            parse_timestamp(event.get("lastTimestamp"))
            or parse_timestamp(event.get("eventTime"))
            or parse_timestamp(metadata_of(event).get("creationTimestamp"))
        )
        if at is None or now - at > window:
            continue
        involved = event.get("involvedObject") or {}
        message = (event.get("message") or "").strip().splitlines()
        first = message[0] if message else ""
        # Karpenter prefixes "NodeClaim <name> event: " (already in our text) and the EC2 part
        # naming the instance type and zone comes last: drop the prefix before truncating.
        first = first.split(" event: ", 1)[-1][:200]
        found.append(
            (
                at,
                f"InsufficientCapacityError {involved.get('kind', '?').lower()}/"
                f"{involved.get('name', '?')}: {first}".rstrip(": "),
            )
        )
    found.sort(key=lambda item: -item[0])
    seen: dict[str, None] = {}
    for _, text in found:
        seen.setdefault(text, None)
        if len(seen) >= MAX_SIGNALS:
            break
    return tuple(seen)


def list_if_known(source: ObjectSource, kind: str) -> Iterable[Obj]:
    """The objects of ``kind``, or none when the source does not hold that kind at all."""
    try:
        return source.list(kind)
    except KeyError:
        # A source that does not know the kind at all (e.g. a store without Events).
        return ()
