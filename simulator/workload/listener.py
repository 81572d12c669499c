"""The ARC listener of one scale set, in virtual time (docs/protocol.md#listener-loop,
docs/protocol.md#scaler).

The production pieces run unchanged: ARC's scaler (:class:`listener.arc.scaler.Scaler`, writing
its exact merge-patch bytes through :class:`StoreScalerWriter`), the job message models of
:mod:`providers.actions.models`, and the capacity gate
(:class:`listener.arc.message_loop.CapacityGate`:
the reconciler's ``CapacitySink``, clamped to the live ``maxRunners``). Only the asyncio long
poll of :class:`listener.arc.message_loop.Listener` is replaced by its discrete-event equivalent
here,
with the same order of steps: poll with the gate's value, acquire ``JobAvailable``, handle
``JobStarted`` then ``JobCompleted``, scale from ``totalAssignedJobs``.

Long-poll model: the service holds the capacity of the latest poll and fills the session up
to it as jobs arrive; a poll "returns" as soon as messages are waiting (plus a handling
latency) or after ``long_poll`` seconds with nothing (202). A capacity change cuts the open
poll short by the rule ``CapacityGate`` uses (listener/arc/poll_cut.py: ``cut_on_drop`` /
``cut_on_rise``, ``debounce`` after the first change, direction re-checked when it fires);
otherwise it takes effect at the next poll.

A ``maxRunners`` change on the AutoscalingRunnerSet restarts the listener (ARC recreates the
listener pod) after ``restart_delay``: new session, new scaler (first patch authoritative).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from listener.arc.gate import CapacityGate
from listener.arc.scaler import RunnerNotFound, Scaler, WriteConflict
from listener.arc.version import ArcVersion
from providers.actions.models import JobCompleted, JobStarted
from providers.demand.statistics import needs_refresh
from simulator.engine.loop import EventLoop, Timer
from simulator.engine.store import NotFound, Obj, ObjectStore
from simulator.workload.actions import ActionsService
from simulator.workload.service_records import ScaleSet


@dataclass(frozen=True, slots=True)
class ListenerTimings:
    long_poll: float = 50.0
    handling_latency: float = 0.05
    restart_delay: float = 5.0


def merge_patch(target: dict[str, Any], patch: dict[str, Any]) -> None:
    """RFC 7386 JSON merge patch, in place (``null`` removes a key)."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            current = target.get(key)
            if not isinstance(current, dict):
                current = target[key] = {}
            merge_patch(current, value)
        else:
            target[key] = value


class StoreScalerWriter:
    """``listener.arc.scaler.ScalerWriter`` over the ObjectStore (the bytes ARC would PATCH)."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self.patches = 0
        self.reads = 0

    def patch_ephemeral_runner_set(self, namespace: str, name: str, body: bytes) -> None:
        self._patch("EphemeralRunnerSet", namespace, name, body)

    def patch_ephemeral_runner_status(self, namespace: str, name: str, body: bytes) -> None:
        try:
            self._patch("EphemeralRunner", namespace, name, body)
        except NotFound:
            raise RunnerNotFound(f"ephemeralrunners {namespace}/{name} not found") from None

    def get_ephemeral_runner(self, namespace: str, name: str) -> dict[str, Any]:
        """ARC 0.15's read before the JobStarted patch (a copy, as a GET would give)."""
        obj = self.store.find("EphemeralRunner", namespace, name)
        if obj is None:
            raise RunnerNotFound(f"ephemeralrunners {namespace}/{name} not found")
        self.reads += 1
        return copy.deepcopy(obj)

    def _patch(self, kind: str, namespace: str, name: str, body: bytes) -> None:
        patch = json.loads(body)
        wanted = (patch.get("metadata") or {}).get("resourceVersion")

        def change(obj: Obj) -> None:
            # The API server's merge-patch precondition: a stale resourceVersion is a 409.
            if wanted is not None and wanted != obj["metadata"].get("resourceVersion"):
                raise WriteConflict(f"{kind} {namespace}/{name}: the object has been modified")
            merge_patch(obj, patch)

        self.store.mutate(kind, namespace, name, change, verb="patch")
        self.patches += 1


class CurrentScaler:
    """``scaleset.ports.ScalerControls`` of the listener's current scaler (a restart builds a
    new one): what a capacity-aware step's output sets on it, through the same carry-out as
    the production listener (scaleset/carry_out.py). The hot runners and switched-off are
    kept for a restarted scaler; its maxRunners is the restart's own."""

    def __init__(self, model: ListenerModel) -> None:
        self.model = model

    def set_max_runners(self, max_runners: int) -> None:
        self.model.scaler.set_max_runners(max_runners)

    def set_hot_runners(self, hot_runners: int) -> None:
        """The reconciler's live hot slots: the scaler's next ERS patch keeps that many idle
        runners (it patches after each poll)."""
        self.model.hot_runners = hot_runners
        self.model.scaler.set_hot_runners(hot_runners)

    def set_switched_off(self, switched_off: bool) -> None:
        """ARC switched the set off: the scaler's next ERS patch asks for no runner."""
        self.model.switched_off = switched_off
        self.model.scaler.set_switched_off(switched_off)


class ListenerModel:
    def __init__(
        self,
        *,
        loop: EventLoop,
        service: ActionsService,
        scale_set: ScaleSet,
        store: ObjectStore,
        namespace: str,
        ers_name: str,
        min_runners: int,
        max_runners: int,
        timings: ListenerTimings,
        gate: CapacityGate | None = None,
        arc_version: ArcVersion | None = None,
    ) -> None:
        self.loop = loop
        self.service = service
        self.scale_set = scale_set
        self.timings = timings
        self.namespace = namespace
        self.ers_name = ers_name
        self.min_runners = min_runners
        self.max_runners = max_runners
        #: None: the scaler learns the ARC version from the runners it reads (production's way).
        self.arc_version = arc_version
        self.writer = StoreScalerWriter(store)
        #: Idle runners kept for hot slots (the reconciler's count; docs/design.md#hot-runners).
        self.hot_runners = 0
        #: ARC switched the scale set off, as the capacity side last saw it.
        self.switched_off = False
        self.scaler = self._scaler()
        #: What a capacity-aware step's output sets on the scaler (scaleset/ports.py).
        self.scaler_controls = CurrentScaler(self)
        #: X-ScaleSetMaxCapacity source. Without a reconciler nobody sets it, so it reads the
        #: live maxRunners: stock ARC's static capacity.
        self.gate = gate or CapacityGate(max_runners, cut_on_drop=False, cut_on_rise=False)
        self._timer: Timer | None = None
        self._cut_timer: Timer | None = None
        self._restarting = False
        self.polls = 0
        self.cuts = 0
        self.sessions = 0
        #: Called with the statistics the real listener would receive: the session's, and
        #: those carried by every message (a 202 "no message" carries none).
        self.statistics_observers: list[Callable[[dict[str, int]], None]] = []
        #: The latest statistics observers saw, and when (the refresh rule reads both).
        self.latest_statistics: dict[str, int] | None = None
        self.statistics_at = loop.now()
        #: Session refreshes made only to read statistics (PATCH, see refresh_statistics).
        self.statistics_refreshes = 0

    def _statistics(self) -> dict[str, int]:
        stats = self.service.statistics(self.scale_set.id)
        self.latest_statistics = stats
        self.statistics_at = self.loop.now()
        for observer in self.statistics_observers:
            observer(stats)
        return stats

    def refresh_statistics(self, interval: float, busy_interval: float | None = None) -> bool:
        """A capacity-aware listener's statistics refresh (listener/arc/statistics_refresh.py): a
        session refresh whose answer carries statistics, made only when
        :func:`~providers.demand.statistics.needs_refresh` says no message can bring them.
        True when it refreshed."""
        latest = self.latest_statistics
        if self._restarting or latest is None:
            return False
        if not needs_refresh(
            advertised=self.gate.value,
            assigned_jobs=latest["totalAssignedJobs"],
            age=self.loop.now() - self.statistics_at,
            interval=interval,
            busy_interval=busy_interval,
        ):
            return False
        self.statistics_refreshes += 1
        self._statistics()
        return True

    def _scaler(self) -> Scaler:
        scaler = Scaler(
            self.writer,
            namespace=self.namespace,
            name=self.ers_name,
            min_runners=min(self.min_runners, self.max_runners),
            max_runners=self.max_runners,
            arc_version=self.arc_version,
        )
        scaler.set_hot_runners(self.hot_runners)
        scaler.set_switched_off(self.switched_off)
        return scaler

    def start(self) -> None:
        self.scale_set.wake = self._wake
        self._new_session()

    def _new_session(self) -> None:
        self.sessions += 1
        stats = self._statistics()
        self.scaler.handle_desired_runner_count(stats["totalAssignedJobs"])
        self._poll_at(self.loop.now())

    # --- scheduling ---------------------------------------------------------------------------

    def _poll_at(self, at: float) -> None:
        if self._restarting:
            return
        if self._timer is not None and self._timer.active:
            if self._timer.at <= at:
                return
            self._timer.cancel()
        self._timer = self.loop.call_at(at, self._poll)

    def _wake(self) -> None:
        """Messages are waiting: the open long poll returns."""
        self._poll_at(self.loop.now() + self.timings.handling_latency)

    def capacity_changed(self) -> None:
        """The gate's value changed: arm a cut when the shared rule says so
        (listener/arc/poll_cut.py, as ``CapacityGate`` does with asyncio timers)."""
        if self._cut_timer is None and self.gate.cut_rule.changed(self.gate.value):
            self._cut_timer = self.loop.call_later(self.gate.cut_rule.debounce, self._fire_cut)

    def _fire_cut(self) -> None:
        self._cut_timer = None
        if self.gate.cut_rule.fire(self.gate.value):
            self.cuts += 1
            self._poll_at(self.loop.now())

    def set_max_runners(self, max_runners: int) -> None:
        """The AutoscalingRunnerSet changed: the controller restarts the listener, whose
        exit deletes its message session (so no job is assigned against the old capacity
        while the new listener starts)."""
        self.service.close_session(self.scale_set.id)
        self._restarting = True
        self.gate.end_poll()
        for timer in (self._timer, self._cut_timer):
            if timer is not None:
                timer.cancel()
        self._timer = self._cut_timer = None
        self.loop.call_later(self.timings.restart_delay, self._restart, max_runners)

    def _restart(self, max_runners: int) -> None:
        self._restarting = False
        self.max_runners = max_runners
        self.gate.set_live_max_runners(max_runners)
        self.scaler = self._scaler()
        self._new_session()

    # --- one long poll ------------------------------------------------------------------------

    def _poll(self) -> None:
        self._timer = None
        if self._cut_timer is not None:
            self._cut_timer.cancel()
            self._cut_timer = None
        self.polls += 1
        ss_id = self.scale_set.id
        latest = self.latest_statistics
        header = self.gate.begin_poll(latest["totalAssignedJobs"] if latest else None)
        messages = self.service.poll(ss_id, header)
        if messages:
            available = [
                m["runnerRequestId"] for m in messages if m["messageType"] == "JobAvailable"
            ]
            if available:
                self.service.acquire(ss_id, available)
            for message in messages:
                if message["messageType"] == "JobStarted":
                    self.scaler.handle_job_started(JobStarted.model_validate(message))
            for message in messages:
                if message["messageType"] == "JobCompleted":
                    self.scaler.handle_job_completed(JobCompleted.model_validate(message))
        stats = self._statistics() if messages else self.service.statistics(ss_id)
        self.scaler.handle_desired_runner_count(stats["totalAssignedJobs"])
        if self.scale_set.outbox:
            self._poll_at(self.loop.now() + self.timings.handling_latency)
        else:
            self._poll_at(self.loop.now() + self.timings.long_poll)
