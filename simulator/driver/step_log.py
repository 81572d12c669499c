"""Measurement only: the ``reconcile_step`` event the capacity-aware driver emits after each
step (issue 13, bench/wait_breakdown.py).

Kept apart from the driver (simulator/driver/capacity_aware.py) so the reconciler side can
change independently. It reads the reconciler's store and the snapshot after a step; it
decides nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from reconciler.reconciler import StepResult
from reconciler.snapshot import ClusterSnapshot
from simulator.engine.eventlog import EventLog
from state_machine.states import PairState

if TYPE_CHECKING:  # the driver imports this module
    from simulator.driver.capacity_aware import CapacityAwareDriver


def launch_limit(
    *,
    queued_pairs: int,
    in_flight_before: int,
    fit_new_pairs: int | None,
    max_in_flight: int | None,
    max_per_step: int | None,
    wanted: int,
    headroom: int,
) -> str:
    """Why pairs the reconciler wants are not requested, as the current ``decide.launch`` rule
    reads (an inference until the reconciler reports its own limit):

    - ``"nodepool"``: pairs wait in QUEUED and the fit estimate (NodePool limits + free room)
      allowed fewer requests than the ramp did;
    - ``"ramp"``: pairs wait in QUEUED because of the in-flight / per-step caps;
    - ``"max_runners"``: nothing waits in QUEUED but demand + proactive capacity exceeds the
      maxRunners headroom, so fewer pairs are wanted than the queue asks for;
    - ``"none"``: nothing holds launches back.
    """
    if queued_pairs > 0:
        ramp = min(
            max_per_step if max_per_step is not None else queued_pairs,
            max(0, max_in_flight - in_flight_before) if max_in_flight is not None else queued_pairs,
        )
        if fit_new_pairs is not None and fit_new_pairs < ramp:
            return "nodepool"
        return "ramp"
    if wanted > headroom:
        return "max_runners"
    return "none"


class StepLog:
    """Emits ``reconcile_step`` after every step, skipping steps that changed none of its
    fields (the state is piecewise constant between the events that are written).

    Fields: ``desired`` (live pairs after the step: QUEUED + REQUESTED + PARTIAL + READY),
    ``queued_pairs``, ``in_flight`` (REQUESTED + PARTIAL), ``ready``, ``advertised`` (the value
    the step left in the capacity gate), ``demand`` (queued jobs the driver has seen; null when
    the HUD failed), ``launch_limited_by`` (the step result's own answer when it names a limit:
    "ramp", "nodepool", "in-flight cap", "per-step cap"; else :func:`launch_limit`) and
    ``headroom`` (maxRunners - live runners, the clamp on what the reconciler may want)."""

    def __init__(self, log: EventLog, scale_set: str) -> None:
        self.log = log
        self.scale_set = scale_set
        self._last: tuple[Any, ...] | None = None

    @staticmethod
    def in_flight(driver: CapacityAwareDriver) -> int:
        counts: Mapping[PairState, int] = driver.reconciler.store.counts()
        return counts.get(PairState.REQUESTED, 0) + counts.get(PairState.PARTIAL, 0)

    def emit(
        self,
        driver: CapacityAwareDriver,
        snapshot: ClusterSnapshot,
        in_flight_before: int,
        result: StepResult | None = None,
    ) -> None:
        """``result``: the step's StepResult; its ``launch_limited_by`` (the reconciler's own
        answer) wins over the inference of :func:`launch_limit` when it names a limit."""
        counts = driver.reconciler.store.counts()
        queued = counts.get(PairState.QUEUED, 0)
        in_flight = counts.get(PairState.REQUESTED, 0) + counts.get(PairState.PARTIAL, 0)
        ready = counts.get(PairState.READY, 0)
        demand = driver.demand.queued_jobs
        config = driver.config
        live_runners = sum(1 for p in snapshot.runner_pods if p.alive)
        headroom = max(0, snapshot.max_runners - live_runners)
        fit = snapshot.fit
        limited_by = launch_limit(
            queued_pairs=queued,
            in_flight_before=in_flight_before,
            fit_new_pairs=fit.new_pairs if fit is not None else None,
            max_in_flight=config.max_pairs_in_flight,
            max_per_step=config.max_requests_per_step,
            wanted=config.proactive_capacity + max(0, demand if demand is not None else 0),
            headroom=headroom,
        )
        reported = result.launch_limited_by if result is not None else None
        if reported is not None:
            limited_by = reported
        fields = (
            queued + in_flight + ready,
            queued,
            in_flight,
            ready,
            driver.ctx.listener.gate.value,
            demand,
            limited_by,
            headroom,
        )
        if fields == self._last:
            return
        self._last = fields
        self.log.emit(
            "reconcile_step",
            scale_set=self.scale_set,
            desired=fields[0],
            queued_pairs=queued,
            in_flight=in_flight,
            ready=ready,
            advertised=fields[4],
            demand=demand,
            launch_limited_by=limited_by,
            headroom=headroom,
        )
