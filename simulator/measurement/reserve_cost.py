"""The price of the warm pool's own idle reserved capacity, from the event log alone.

Issue 24's cost promise is "dollars <= 1.1x stock ARC's + the price of the warm pool's idle
reserved capacity": the only premium a team pays is the warm capacity it asked for. This
module prices that capacity. A placeholder pod (either strategy's kind) holds room from its
``pod_bound`` until its ``pod_ended`` or ``pod_deleted`` (or ``run_ended``): the interval
``idle_reserved_cpu_hours`` integrates (:mod:`simulator.measurement.checker`). Over that
interval it is charged its **dominant share** of the node it is bound to, times the node's
hourly price: ``max(cpu / node cpu, gpu / node gpu)``. A 2-cpu placeholder on a 16-cpu
c5.4xlarge ($0.68/h) costs $0.085 per hour; a 1-GPU placeholder on a g5.xlarge costs the
whole $1.006.

Simplifications, stated: memory is not in the log's ``pod_created`` and is left out of the
share (the shipped scenarios ask at most 4 GiB per cpu, what an m5 has per vCPU, so cpu or
gpu dominates there); shares are of the instance type's capacity, not its allocatable (a
slight underestimate); prices are :mod:`simulator.measurement.prices` (on-demand list). A
node whose instance type has no price adds nothing and is named in ``unpriced``.

Only the standard library is used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from simulator.measurement.prices import hourly_price

PLACEHOLDER_ROLES = ("placeholder-runner", "placeholder-workflow")


@dataclass(frozen=True, slots=True)
class ReserveCost:
    cpu_hours: float
    usd: float
    unpriced: tuple[str, ...] = ()


def dominant_share(cpu: float, gpu: float, node: tuple[float, int]) -> float:
    node_cpu, node_gpu = node
    shares = [cpu / node_cpu if node_cpu > 0 else 0.0]
    if gpu and node_gpu:
        shares.append(gpu / node_gpu)
    return max(shares)


def reserve_cost(
    events: Iterable[Mapping[str, Any]], capacity: Mapping[str, tuple[float, int]]
) -> ReserveCost:
    """Idle reserved CPU-hours and their price in one strategy's log.

    ``capacity``: instance type -> (cpu, gpu) of the scenario's catalog.
    """
    node_type: dict[str, str] = {}
    pods: dict[str, tuple[float, float]] = {}  # placeholder -> (cpu, gpu)
    held: dict[str, tuple[float, str]] = {}  # placeholder -> (bound at, node)
    cpu_seconds = usd = 0.0
    unpriced: set[str] = set()

    def close(pod: str, t: float) -> None:
        nonlocal cpu_seconds, usd
        since, node = held.pop(pod)
        cpu, gpu = pods[pod]
        seconds = max(0.0, t - since)
        cpu_seconds += seconds * cpu
        kind = node_type.get(node, "")
        price = hourly_price(kind)
        if price is None or kind not in capacity:
            unpriced.add(kind or f"node {node}")
            return
        usd += seconds / 3600.0 * price * dominant_share(cpu, gpu, capacity[kind])

    for event in events:
        kind, pod, t = event.get("type"), str(event.get("pod", "")), float(event.get("t", 0.0))
        if kind == "node_added":
            node_type[event["node"]] = event.get("instance_type") or ""
        elif kind == "pod_created" and event.get("role") in PLACEHOLDER_ROLES:
            pods[pod] = (float(event.get("cpu") or 0.0), float(event.get("gpu") or 0))
        elif kind == "pod_bound" and pod in pods and pod not in held:
            held[pod] = (t, event["node"])
        elif kind in ("pod_ended", "pod_deleted") and pod in held:
            close(pod, t)
        elif kind == "run_ended":
            for open_pod in list(held):
                close(open_pod, t)
    return ReserveCost(round(cpu_seconds / 3600.0, 2), round(usd, 2), tuple(sorted(unpriced)))
