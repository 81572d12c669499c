"""Fault injection: a fault plan loadable from a scenario's sidecar file, and the hooks that
apply each fault to the simulated world (virtual time) or to its HTTP faces (real time).

Modules: :mod:`.plan` (kinds, parameters, loading), :mod:`.schedule` (a plan on the event
loop), :mod:`.listener_view` (clock, API errors, stale cache, HUD demand), :mod:`.cluster`
(nodes and placeholders), :mod:`.fleet` (the fleet's shared metric store), :mod:`.http` (the
faces' knobs), :mod:`.processes` (crashes, a second listener) and :mod:`.chaos`
(:class:`WorldChaos`). Everything is re-exported here.

A plan is a list of ``{kind, start, end, params}``: ``start``/``end`` are offsets from the
start of the run (seconds or ``"30s"``, ``"5m"``, ``"1h"``); ``end`` omitted means an instant
fault (node loss, crash, clock jump) or "until the end of the run" for a window fault.
``params`` are checked per kind (unknown keys and out-of-range values are errors).

The scenario model (:mod:`simulator.scenarios.scenario`) forbids unknown keys and has no
``faults`` key, so a scenario's plan lives beside it: ``<name>.faults.yaml``
(:func:`sidecar_path`, :func:`plan_for_scenario`); a document with a top-level ``faults`` key
or a bare list is accepted too. A bad plan raises :class:`FaultPlanError`, one line per
problem: ``<file>: faults[2].params.status: <reason> (got <value>)``.

Where each kind is applied (see :data:`KIND_INFO` for the one-line meaning of each):

- ``k8s_*``: over HTTP by :class:`simulator.faces.fault_proxy.K8sFaultProxy` in front
  of the Kubernetes face; in virtual time by :class:`ApiFaultGate` (writes fail or are slow)
  and :class:`StaleSource` (a dropped watch or a 410 leaves the cache stale until it relists).
- ``actions_*``: over HTTP by :func:`apply_actions_fault` (the Actions face's own knobs). The
  virtual-time listener has no HTTP, so these are not applied in virtual time.
- ``hud_*``: over HTTP by :func:`apply_hud_fault` (the HUD face's knobs); in virtual time by
  :class:`DemandFaults`, which turns them into what :class:`providers.hud.client.HudDemandSource`
  reports for them (``Demand(None, error)``; a slow answer keeps the previous demand).
- cluster faults (``node_loss``, ``placeholder_deleted``, ``karpenter_consolidation``): in
  virtual time by :func:`lose_placeholder_nodes`, :func:`delete_placeholders`,
  :func:`consolidate_placeholder_nodes`.
- ``fleet_store_down``: in virtual time by :class:`StoreOutage` (:func:`fleet_store_handlers`),
  which takes the world's :class:`simulator.driver.fleet_store.FleetStore` down for the window;
  a world without one (``fleetView`` off, another strategy) gets no handler, so the scheduler
  lists the fault as skipped.
- ``listener_crash``, ``second_listener``, ``clock_jump``: in virtual time by
  :class:`WorldChaos` (crash = the reconciler object is dropped mid-step and a new instance
  starts after ``restart_after``; clock jump = :class:`SkewClock`).

:class:`FaultScheduler` puts a plan on the world's :class:`EventLoop`; :class:`WorldChaos` wires
a plan into a :class:`simulator.engine.world.World` running the ``capacity-aware`` strategy.
``WorldChaos`` uses the world's public fault surface: :meth:`World.capacity_drivers`, the
drivers' :class:`simulator.driver.capacity_aware.DriverHooks` (source, step), ``hud_filter`` and
``pause``/``resume``, and their public ``reconciler``/``writer``/``builder``/``instance``.
"""

from __future__ import annotations

from simulator.faults.chaos import (
    ChaosRecord,
    KillSignal,
    KillSwitch,
    WorldChaos,
)
from simulator.faults.cluster import (
    consolidate_placeholder_nodes,
    delete_placeholders,
    lose_placeholder_nodes,
    placeholder_pods,
)
from simulator.faults.fleet import StoreOutage, fleet_store_handlers
from simulator.faults.http import (
    apply_actions_fault,
    apply_hud_fault,
    clear_actions_fault,
)
from simulator.faults.listener_view import (
    ApiFaultGate,
    DemandFaults,
    FaultyWriter,
    SimulatedApiError,
    SkewClock,
    StaleSource,
)
from simulator.faults.plan import (
    ACTIONS_ROUTES,
    KIND_INFO,
    Fault,
    FaultKind,
    FaultParams,
    FaultPlan,
    FaultPlanError,
    load_fault_plan,
    parse_fault_plan,
    plan_for_scenario,
    sidecar_path,
)
from simulator.faults.schedule import FaultHandler, FaultScheduler, Hook

__all__ = [
    "ACTIONS_ROUTES",
    "KIND_INFO",
    "ApiFaultGate",
    "ChaosRecord",
    "DemandFaults",
    "Fault",
    "FaultHandler",
    "FaultKind",
    "FaultParams",
    "FaultPlan",
    "FaultPlanError",
    "FaultScheduler",
    "FaultyWriter",
    "Hook",
    "KillSignal",
    "KillSwitch",
    "SimulatedApiError",
    "SkewClock",
    "StaleSource",
    "StoreOutage",
    "WorldChaos",
    "apply_actions_fault",
    "apply_hud_fault",
    "clear_actions_fault",
    "consolidate_placeholder_nodes",
    "delete_placeholders",
    "fleet_store_handlers",
    "load_fault_plan",
    "lose_placeholder_nodes",
    "parse_fault_plan",
    "placeholder_pods",
    "plan_for_scenario",
    "sidecar_path",
]
