"""LimitRanges and ResourceQuotas that would change or refuse verify's pods (pure).

Upstream's LimitRanger admission (plugin/pkg/admission/limitranger): for ``type: Container``
items, ``defaultRequest`` / ``default`` fill requests / limits a container does not set (a
change), and ``min`` / ``max`` refuse a container whose request / limit is outside them; for
``type: Pod`` items the same bounds apply to the sum over containers. The ResourceQuota
admission refuses a pod that would take ``status.used`` past ``status.hard`` (``cpu`` and
``requests.cpu`` count requests, ``limits.cpu`` limits, ``pods`` one per pod).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from providers.kubernetes.placement.resources import QuantityError, format_quantity, quantity

Obj = Mapping[str, Any]


def _amounts(raw: Mapping[str, Any] | None) -> dict[str, Decimal]:
    out = {}
    for name, value in (raw or {}).items():
        try:
            out[name] = quantity(value, where=name)
        except QuantityError:
            continue  # the API server would have refused it; nothing to judge
    return out


def _containers(pod: Obj) -> list[Obj]:
    return list((pod.get("spec") or {}).get("containers") or ())


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", "?"))


def _bounds(where: str, kind: str, amounts: Mapping[str, Decimal], item: Obj) -> list[str]:
    out = []
    for name, low in _amounts(item.get("min")).items():
        if name in amounts and amounts[name] < low:
            out.append(f"{where}: {kind} {name} {format_quantity(amounts[name])} < min")
    for name, high in _amounts(item.get("max")).items():
        if name in amounts and amounts[name] > high:
            out.append(f"{where}: {kind} {name} {format_quantity(amounts[name])} > max")
    return out


def limit_range_problems(ranges: Iterable[Obj], pods: Sequence[Obj]) -> list[str]:
    """One line per change or refusal, naming the LimitRange and the pod."""
    problems = []
    for lr in ranges:
        for item in (lr.get("spec") or {}).get("limits") or ():
            for pod in pods:
                where = f"LimitRange {_name(lr)} on pod {_name(pod)}"
                if item.get("type") == "Container":
                    problems += _container_item(where, item, pod)
                elif item.get("type") == "Pod":
                    problems += _pod_item(where, item, pod)
    return problems


def _container_item(where: str, item: Obj, pod: Obj) -> list[str]:
    out = []
    for c in _containers(pod):
        resources = c.get("resources") or {}
        requests, limits = _amounts(resources.get("requests")), _amounts(resources.get("limits"))
        added = [n for n in _amounts(item.get("defaultRequest")) if n not in requests]
        added += [n for n in _amounts(item.get("default")) if n not in limits]
        if added:
            out.append(f"{where}: defaults add {', '.join(sorted(set(added)))}")
        out += _bounds(where, "request", requests, item)
        out += _bounds(where, "limit", limits, item)
    return out


def _pod_item(where: str, item: Obj, pod: Obj) -> list[str]:
    totals: dict[str, dict[str, Decimal]] = {"request": {}, "limit": {}}
    for c in _containers(pod):
        resources = c.get("resources") or {}
        for kind, key in (("request", "requests"), ("limit", "limits")):
            for name, amount in _amounts(resources.get(key)).items():
                totals[kind][name] = totals[kind].get(name, Decimal(0)) + amount
    return _bounds(where, "request", totals["request"], item) + _bounds(
        where, "limit", totals["limit"], item
    )


def _pod_usage(pods: Sequence[Obj]) -> dict[str, Decimal]:
    """What ``pods`` add to a quota's ``used``, under every key a quota may name."""
    usage: dict[str, Decimal] = {"pods": Decimal(len(pods)), "count/pods": Decimal(len(pods))}
    for pod in pods:
        for c in _containers(pod):
            resources = c.get("resources") or {}
            for name, amount in _amounts(resources.get("requests")).items():
                for key in (name, f"requests.{name}"):
                    usage[key] = usage.get(key, Decimal(0)) + amount
            for name, amount in _amounts(resources.get("limits")).items():
                key = f"limits.{name}"
                usage[key] = usage.get(key, Decimal(0)) + amount
    return usage


def quota_problems(quotas: Iterable[Obj], pair: Sequence[Obj]) -> list[str]:
    """Quotas without room for one more pair (``pair``: both placeholder pods)."""
    need = _pod_usage(pair)
    problems = []
    for quota in quotas:
        status = quota.get("status") or {}
        hard = _amounts(status.get("hard") or (quota.get("spec") or {}).get("hard"))
        used = _amounts(status.get("used"))
        for name, limit in sorted(hard.items()):
            wanted = need.get(name)
            if wanted is None:
                continue
            left = limit - used.get(name, Decimal(0))
            if wanted > left:
                problems.append(
                    f"ResourceQuota {_name(quota)}: {name} has {format_quantity(left)} left, "
                    f"a pair needs {format_quantity(wanted)}"
                )
    return problems
