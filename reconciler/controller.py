"""The scale-set controller: one sans-IO object that the listener and the simulator both drive.

Everything that decides *when* to act and *what to publish* lives here, once; the drivers only
move bytes (Karpenter's provisioner is one object in production and in tests; Ray v2's
reconciler takes every input as an argument). The controller never reads a clock, sleeps,
touches the network or calls a subscriber: time comes in as ``now``, observations as
arguments, and effects go out as an :class:`Output`.

Inputs:
1. :meth:`~ScaleSetController.changed` with a :class:`Trigger`: the cache saw a change that
   decisions read (a debounced trigger), a placeholder that started to count or a demand
   source's answer changed (``leading``: a step at once, see
   :class:`~reconciler.schedule.Schedule`), or a pod stopped backing capacity (``lost``: a
   drop check before the debounce).
2. :meth:`~ScaleSetController.due` at ``now``: which work is due, and
   :meth:`~ScaleSetController.next_wake`: when to ask again.
3. :meth:`~ScaleSetController.step` / :meth:`~ScaleSetController.check_drop` with the
   snapshot the driver built for that work and how long its watches have been down.

What the controller owns, each in one place:
- the schedule (periodic fallback, debounce, leading triggers, the not-synced retry);
- fail-closed: while the watches have been down for more than one ``recalculateInterval`` a
  placeholder lost meanwhile may still look counted, so only
  :func:`~reconciler.capacity.fail_closed_capacity` is published and nothing is decided;
- the drop guard: a falling ledger is published between steps (drops must reach the wire
  fast; rises wait for a full step, the only path that may grow what GitHub is told);
- the published value, which every one of those paths goes through, so the drop guard never
  compares with a value an outage overwrote.

Effects (:class:`Output`, the only way out of a step): the step's transition events and
commands for the subscribers (create, delete, renew placeholders; logs; metrics), the capacity
to publish, what ARC's scaler and the gate follow (:class:`ScalerTarget`) and the placement
fact the snapshot carried. One function carries an Output out, for every driver
(scaleset/carry_out.py).
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, replace
from enum import Enum

from reconciler.capacity import CapacityLedger, fail_closed_capacity
from reconciler.config import ReconcilerConfig
from reconciler.ports import Command
from reconciler.reconciler import Reconciler, StepResult
from reconciler.schedule import Schedule, Timings
from reconciler.snapshot import ClusterSnapshot
from state_machine.events import AnyTransition

log = logging.getLogger(__name__)

#: How long to wait before looking again while the caches are not synced or failing closed.
NOT_SYNCED_RETRY = 1.0


class Work(Enum):
    """What a driver must do now: build a full snapshot and step, or a cheap one and check."""

    STEP = "step"
    DROP_CHECK = "drop-check"


@dataclass(frozen=True, slots=True)
class Trigger:
    """Why a driver should look again: its one input from watches and demand sources.

    Neither flag: a change decisions read (debounced). ``leading``: a step at once (a
    placeholder started to count, a demand source's answer changed). ``lost``: a pod stopped
    backing capacity, or the live maxRunners fell (a drop check before the debounce)."""

    leading: bool = False
    lost: bool = False


#: A change decisions read: the next step after the debounce.
CHANGED = Trigger()
#: A demand source's answer changed: a cold job's pair is requested at once.
DEMAND_CHANGED = Trigger(leading=True)


@dataclass(frozen=True, slots=True)
class ScalerTarget:
    """What ARC's scaler and the listener's gate follow, as the snapshot of this work saw it."""

    #: ARC switched the scale set off (its runners ``Outdated``): the scaler asks for none.
    switched_off: bool
    #: The live maxRunners a step saw (0 is a drain): caps the gate and the scaler's target.
    #: None outside a step (a drop check, failing closed, a failed step): left as it is.
    max_runners: int | None = None
    #: Live hot slots: idle runners the scaler keeps on top of the assigned jobs (None: as
    #: ``max_runners``).
    hot_runners: int | None = None


@dataclass(frozen=True, slots=True)
class Output:
    """The effects of one piece of work, carried out in this order (scaleset/carry_out.py):
    notify the subscribers of ``events`` and ``commands``, publish ``capacity`` (if not
    None), then hand ``scaler`` to ARC's scaler and the gate."""

    capacity: int | None = None
    result: StepResult | None = None
    #: True while the watches are down: the value published is the fail-closed one.
    failing_closed: bool = False
    #: A step that raised (logged once here; the next due time retries it).
    error: Exception | None = None
    #: What the scaler and the gate follow (None: this work read no snapshot).
    scaler: ScalerTarget | None = None
    #: Whether workflow placeholders are placed by the hook template, as the snapshot said
    #: (None: unknown, no snapshot or no placeholder builder yet).
    placed_by_hook_template: bool | None = None

    @property
    def ledger(self) -> CapacityLedger | None:
        """The step's ledger (None outside a step)."""
        return self.result.ledger if self.result is not None else None

    @property
    def events(self) -> tuple[AnyTransition, ...]:
        return self.result.events if self.result is not None else ()

    @property
    def commands(self) -> tuple[Command, ...]:
        return self.result.commands if self.result is not None else ()


class ScaleSetController:
    """One scale set's reconciler, its schedule, fail-closed rule and drop guard (see module
    docstring). ``stale_after``: the watches may be down this long before failing closed."""

    def __init__(
        self,
        config: ReconcilerConfig,
        timings: Timings,
        *,
        instance: str,
        started_at: float,
        rng: random.Random | None = None,
    ) -> None:
        self.timings = timings
        self.stale_after = timings.interval
        self.reconciler = Reconciler(config, started_at=started_at, instance=instance)
        self.schedule = Schedule(timings, rng or random.Random(0))
        #: The capacity last published (None before the first publication).
        self.published: int | None = None
        self.failing_closed = False
        self.drop_pending = False
        self.drops = 0
        self.steps = 0
        self.errors = 0
        #: Not before this time (not synced, or failing closed: look again shortly).
        self._hold_until = float("-inf")

    # --- inputs ----------------------------------------------------------------------------

    def changed(self, now: float, trigger: Trigger = CHANGED) -> None:
        """A watch event decisions read or a demand change (see :class:`Trigger`)."""
        self.schedule.trigger(now, leading=trigger.leading)
        if trigger.lost:
            self.drop_pending = True

    def due(self, now: float) -> Work | None:
        if now >= self._step_due_at():
            return Work.STEP
        if self.drop_pending:
            return Work.DROP_CHECK
        return None

    def next_wake(self, now: float) -> float:
        """When :meth:`due` next answers something (``now`` while a drop check waits)."""
        return now if self.drop_pending else self._step_due_at()

    def _step_due_at(self) -> float:
        return max(self.schedule.due_at(), self._hold_until)

    # --- work ------------------------------------------------------------------------------

    def step(self, now: float, snapshot: ClusterSnapshot | None, *, stale_for: float) -> Output:
        """A full step on ``snapshot`` (None: the caches have not synced yet: no decision
        before every required kind was listed once)."""
        if snapshot is None:
            self._hold_until = now + NOT_SYNCED_RETRY
            return Output()
        self.drop_pending = False  # a step publishes the ledger anyway
        if self._fail_closed(stale_for):
            self._hold_until = now + NOT_SYNCED_RETRY
            return _seen(
                snapshot,
                Output(self._publish(fail_closed_capacity(snapshot)), failing_closed=True),
            )
        self._hold_until = float("-inf")
        try:
            # Pair timestamps are wall time (the snapshot's); the schedule may run on another clock.
            result = self.reconciler.step(snapshot, now=snapshot.taken_at)
        except Exception as exc:
            self.errors += 1
            log.exception("reconcile step failed; retrying at the next due time")
            return _seen(snapshot, Output(self._publish(self._confirmed(snapshot)), error=exc))
        finally:
            self.steps += 1
            self.schedule.ran(now)
        return Output(
            self._publish(result.ledger.capacity),
            result,
            scaler=ScalerTarget(
                snapshot.switched_off is not None, result.ledger.max_runners, result.hot_runners
            ),
            placed_by_hook_template=snapshot.placed_by_hook_template,
        )

    def check_drop(
        self, now: float, snapshot: ClusterSnapshot | None, *, stale_for: float
    ) -> Output:
        """Publish the ledger of ``snapshot`` (no fit needed) if it fell below the published
        value; nothing while failing closed (the fail-closed value is already out)."""
        self.drop_pending = False
        if snapshot is None:
            return Output(failing_closed=self.failing_closed)
        if self.published is None or self._fail_closed(stale_for):
            return _seen(snapshot, Output(failing_closed=self.failing_closed))
        capacity = self._confirmed(snapshot)
        if capacity >= self.published:
            return _seen(snapshot, Output())
        self.drops += 1
        return _seen(snapshot, Output(self._publish(capacity)))

    def observation_failed(self, now: float) -> None:
        """The driver could not build the snapshot (an API error): retry at the next due time."""
        self.errors += 1
        self.drop_pending = False
        self.schedule.ran(now)

    def _confirmed(self, snapshot: ClusterSnapshot) -> int:
        """The capacity ``snapshot`` confirms for the pairs and hot slots held now, outside a
        step."""
        return self.reconciler.ledger(snapshot).capacity

    def _fail_closed(self, stale_for: float) -> bool:
        stale = stale_for > self.stale_after
        if stale and not self.failing_closed:
            log.warning(
                "Kubernetes watches down for %.0fs: advertising only confirmed runners "
                "(assigned jobs keep running) until they recover",
                stale_for,
            )
        elif self.failing_closed and not stale:
            log.info("Kubernetes watches recovered; reconciling again")
        self.failing_closed = stale
        return stale

    def _publish(self, capacity: int) -> int:
        self.published = capacity
        return capacity


def _seen(snapshot: ClusterSnapshot, output: Output) -> Output:
    """``output`` with the facts ``snapshot`` carries outside a step: whether ARC switched
    the set off (the scaler follows at once, a drop check included) and the placement."""
    return replace(
        output,
        scaler=ScalerTarget(snapshot.switched_off is not None),
        placed_by_hook_template=snapshot.placed_by_hook_template,
    )
