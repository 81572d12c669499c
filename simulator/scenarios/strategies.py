"""The three ways a scale set can advertise capacity, on the same simulated world.

- ``baseline``: stock ARC. ``X-ScaleSetMaxCapacity`` = the static ``maxRunners``; no
  placeholders; runner and workflow pods carry no PriorityClass (priority 0), as in a stock
  install. Nodes appear only after jobs were assigned and their pods went Pending.
- ``overprovision``: the cluster-overprovisioner pattern. A fixed number of *warm slots*
  per scale set, each made of two pause pods at priority ``overprovisioning`` (-1, below every
  real pod): one sized and placed like the runner pod, one sized and placed like the workflow
  pod. A Deployment keeps the count: a pod that is preempted, evicted or ends is replaced
  after ``recreate_delay``. Capacity is still the static ``maxRunners`` (the pool only makes
  nodes exist before they are needed).
- ``capacity-aware``: this project. The production :class:`reconciler.reconciler.Reconciler`
  with its :class:`reconciler.subscribers.PlaceholderSubscriber`, fed by
  :func:`providers.kubernetes.observe.translate.build_snapshot` (and ``fit_estimate``) over
  :class:`simulator.driver.store_view.StoreCacheView` (the store seen through the
  production cache's selectors), creating pods built by
  :class:`providers.kubernetes.pods.placeholders.PlaceholderPodBuilder` through
  :class:`~simulator.driver.store_view.StorePlaceholderWriter`, stepped on the schedule of
  :class:`reconciler.schedule.Schedule` (periodic ``recalculateInterval`` with jitter, plus
  debounced triggers on relevant changes). Its capacity goes to the listener's
  :class:`listener.arc.message_loop.CapacityGate`; demand comes from the HUD every
  ``hud.pollInterval``
  (an outage gives ``Demand(None, error)``: the reconciler falls back). Runner and workflow
  pods use the product's PriorityClasses (``arc-runner`` / ``arc-workflow``,
  docs/design.md#priority-ladder). It lives in :mod:`simulator.driver.capacity_aware`; this module
  has the shared strategy interface and the two references.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from providers.kubernetes.pods import labels as L
from simulator.engine.eventlog import EventLog
from simulator.engine.loop import EventLoop
from simulator.engine.store import Obj, ObjectStore
from simulator.workload.arc import ArcScaleSet
from simulator.workload.arc_spec import ScaleSetSpec
from simulator.workload.hud import Hud
from simulator.workload.listener import ListenerModel
from simulator.workload.pods import (
    LABEL_SIM_ROLE,
    LABEL_SIM_SCALE_SET,
    ROLE_PH_RUNNER,
    ROLE_PH_WORKFLOW,
    PodRouter,
)

BASELINE = "baseline"
OVERPROVISION = "overprovision"
CAPACITY_AWARE = "capacity-aware"
STRATEGIES = (BASELINE, OVERPROVISION, CAPACITY_AWARE)

OVERPROVISIONING_CLASS = "overprovisioning"
OVERPROVISIONING_PRIORITY = -1


@dataclass
class ScaleSetContext:
    """Everything a strategy may attach to, for one scale set."""

    loop: EventLoop
    store: ObjectStore
    router: PodRouter
    arc: ArcScaleSet
    listener: ListenerModel
    spec: ScaleSetSpec
    hud: Hud
    log: EventLog
    rng: random.Random
    #: The scenario's name of the cluster the scale set runs in (its ``cluster`` label).
    cluster: str = ""


class Strategy:
    name = ""
    #: PriorityClasses of runner and workflow pods under this strategy (None: no class).
    runner_priority_class: str | None = None
    workflow_priority_class: str | None = None

    def attach(self, ctx: ScaleSetContext) -> None:
        """Wire this strategy into one scale set before the world runs."""

    def stats(self) -> dict[str, int]:
        """Extra counters for results.json."""
        return {}

    def listener_writes(self) -> int:
        """Kubernetes API writes the listener process makes besides ARC's scaler patches."""
        return 0


class Baseline(Strategy):
    name = BASELINE


# --- overprovision ---------------------------------------------------------------------------


def overprovisioning_priority_class() -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": OVERPROVISIONING_CLASS},
        "value": OVERPROVISIONING_PRIORITY,
        "globalDefault": False,
        "preemptionPolicy": "Never",
        "description": "cluster-overprovisioner pause pods: evicted by any real pod",
    }


class WarmPool:
    """A Deployment-like fixed set of pause pods for one scale set (see module doc)."""

    def __init__(self, ctx: ScaleSetContext, slots: int, *, recreate_delay: float) -> None:
        self.ctx = ctx
        self.slots = slots
        self.recreate_delay = recreate_delay
        self.created = 0
        self._seq = 0
        spec = ctx.spec
        self._halves = (
            ("r", ROLE_PH_RUNNER, dict(spec.runner_requests), dict(spec.runner_placement)),
            ("w", ROLE_PH_WORKFLOW, dict(spec.workflow_requests), dict(spec.workflow_placement)),
        )

    def start(self) -> None:
        for _ in range(self.slots):
            for half in self._halves:
                self._create(half)

    def _create(self, half: tuple[str, str, dict[str, str], dict[str, Any]]) -> None:
        suffix, role, requests, placement = half
        self._seq += 1
        name = f"{self.ctx.spec.name[:40]}-overprov-{self._seq}-{suffix}"
        ns = self.ctx.spec.namespace
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": {
                    "app": "overprovisioning",
                    L.LABEL_COMPONENT: L.COMPONENT_PLACEHOLDER,
                    LABEL_SIM_ROLE: role,
                    LABEL_SIM_SCALE_SET: self.ctx.spec.name,
                },
            },
            "spec": {
                "containers": [
                    {
                        "name": "pause",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": dict(requests), "limits": dict(requests)},
                    }
                ],
                "priorityClassName": OVERPROVISIONING_CLASS,
                "terminationGracePeriodSeconds": 0,
                "restartPolicy": "Always",
                **placement,
            },
        }
        state = {"replaced": False}

        def on_change(event_type: str, obj: Obj) -> None:
            status = obj.get("status") or {}
            gone = (
                event_type == "DELETED"
                or obj["metadata"].get("deletionTimestamp")
                or status.get("phase") in ("Succeeded", "Failed")
                or any(
                    c.get("type") == "DisruptionTarget" and c.get("status") == "True"
                    for c in status.get("conditions") or ()
                )
            )
            if gone and not state["replaced"]:
                # A terminating or disrupted pod no longer counts toward the replicas.
                state["replaced"] = True
                self.ctx.loop.call_later(self.recreate_delay, self._create, half)

        self.ctx.router.watch(ns, name, on_change)
        self.ctx.store.create(pod)
        self.created += 1


class Overprovision(Strategy):
    name = OVERPROVISION

    def __init__(self, slots_for: Callable[[str], int], *, recreate_delay: float = 1.0) -> None:
        self.slots_for = slots_for
        self.recreate_delay = recreate_delay
        self.pools: list[WarmPool] = []

    def attach(self, ctx: ScaleSetContext) -> None:
        if ctx.store.find("PriorityClass", None, OVERPROVISIONING_CLASS) is None:
            ctx.store.create(overprovisioning_priority_class())
        pool = WarmPool(ctx, self.slots_for(ctx.spec.name), recreate_delay=self.recreate_delay)
        self.pools.append(pool)
        ctx.loop.call_soon(pool.start)

    def stats(self) -> dict[str, int]:
        return {"placeholder_writes": sum(p.created for p in self.pools)}


# --- capacity-aware --------------------------------------------------------------------------
