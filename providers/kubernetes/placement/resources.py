"""Resource quantities and the kube-scheduler's "effective requests" arithmetic.

Quantities are parsed with the kubernetes client's own ``parse_quantity`` (exact
``Decimal``), memoised per string because the same few strings repeat across thousands of
pods. :func:`effective_requests` follows ``k8s.io/component-helpers/resource.PodRequests``:

    max( sum(app containers) + sum(sidecars),
         max over init containers i of (request_i + sum(sidecars started before i)) )
    + spec.overhead

where a *sidecar* is an init container with ``restartPolicy: Always`` (it keeps running
beside the app containers, so it is added to both terms). A container that sets a limit but
no request gets request = limit (the API server's defaulting, which has not run on a pod
*template*). Pod-level ``spec.resources.requests`` (PodLevelResources, alpha in 1.32)
override the container sum for the resources they name, as the scheduler does when the
feature is on.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from functools import lru_cache
from typing import Any

from kubernetes.utils import parse_quantity

Resources = dict[str, Decimal]

_BINARY_SUFFIXES = (("Ti", 1024**4), ("Gi", 1024**3), ("Mi", 1024**2))


class QuantityError(ValueError):
    """A resource quantity string could not be parsed; names where it came from."""


@lru_cache(maxsize=4096)
def _parse(text: str) -> Decimal:
    return Decimal(parse_quantity(text))


def quantity(value: Any, *, where: str = "quantity") -> Decimal:
    """Parse ``"500m"``, ``"2Gi"``, ``2``... into an exact Decimal; raise QuantityError."""
    try:
        return _parse(str(value).strip())
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise QuantityError(
            f"{where}: {value!r} is not a Kubernetes quantity (e.g. '500m', '2', '4Gi')"
        ) from exc


def format_quantity(value: Decimal) -> str:
    """Canonical-ish text for a Decimal: ``2``, ``1500m``, ``4Gi``, ``123456789``."""
    if value == value.to_integral_value():
        whole = int(value)
        for suffix, size in _BINARY_SUFFIXES:
            if whole >= size and whole % size == 0:
                return f"{whole // size}{suffix}"
        return str(whole)
    milli = value * 1000
    # Quantities below 1m do not exist in Kubernetes; round up so a request never shrinks.
    whole_milli = int(milli.to_integral_value(rounding="ROUND_CEILING"))
    return f"{whole_milli}m"


def resource_list(raw: Mapping[str, Any] | None, *, where: str) -> Resources:
    return {name: quantity(value, where=f"{where}.{name}") for name, value in (raw or {}).items()}


def container_requests(container: Mapping[str, Any], *, where: str = "container") -> Resources:
    """Requests of one container, limits standing in for missing requests."""
    res = container.get("resources") or {}
    out = resource_list(res.get("limits"), where=f"{where}.resources.limits")
    out.update(resource_list(res.get("requests"), where=f"{where}.resources.requests"))
    return out


def add_into(total: Resources, more: Mapping[str, Decimal]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, Decimal(0)) + value


def max_into(total: Resources, other: Mapping[str, Decimal]) -> None:
    for name, value in other.items():
        if value > total.get(name, Decimal(0)):
            total[name] = value


def effective_requests(pod_spec: Mapping[str, Any], *, where: str = "spec") -> Resources:
    """What the scheduler reserves for a pod with this spec (see the module docstring)."""
    app: Resources = {}
    for i, container in enumerate(pod_spec.get("containers") or ()):
        add_into(app, container_requests(container, where=f"{where}.containers[{i}]"))
    sidecars: Resources = {}
    init_peak: Resources = {}
    for i, container in enumerate(pod_spec.get("initContainers") or ()):
        req = container_requests(container, where=f"{where}.initContainers[{i}]")
        if container.get("restartPolicy") == "Always":
            add_into(app, req)
            add_into(sidecars, req)
            max_into(init_peak, sidecars)
        else:
            step = dict(sidecars)
            add_into(step, req)
            max_into(init_peak, step)
    pod_level = (pod_spec.get("resources") or {}).get("requests")
    if pod_level:
        app.update(resource_list(pod_level, where=f"{where}.resources.requests"))
    max_into(app, init_peak)
    add_into(app, resource_list(pod_spec.get("overhead"), where=f"{where}.overhead"))
    return {name: value for name, value in app.items() if value != 0}
