"""Drive the production engine in unit tests: the scale-set controller, stepped on demand.

Tests build a :class:`Stepper` instead of a bare reconciler so they exercise the only path
production takes (``ScaleSetController.step`` -> ``Output``) and assert on the ``Output``:
its events, commands and the capacity it publishes. The stepper carries the output out with
the function every driver calls (scaleset/carry_out.py: subscribers notified in order) and
re-raises a failed step so a test sees the error instead of a silently retried step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from reconciler.clock import Clock
from reconciler.config import ReconcilerConfig
from reconciler.controller import Output, ScaleSetController
from reconciler.ports import Subscriber
from reconciler.reconciler import Reconciler
from reconciler.schedule import Timings
from reconciler.snapshot import ClusterSnapshot
from scaleset.carry_out import Effects, carry_out
from state_machine.store import PairStore

#: Steps run when a test asks; the schedule is the controller's own business (test_controller).
TIMINGS = Timings(interval=30.0)


class Stepper:
    """One scale set's controller, stepped at ``clock.now()`` with the snapshot a test builds."""

    def __init__(
        self,
        config: ReconcilerConfig,
        clock: Clock,
        subscribers: Sequence[Subscriber] = (),
        *,
        instance: str = "i0",
    ) -> None:
        self.clock = clock
        self.controller = ScaleSetController(
            config, TIMINGS, instance=instance, started_at=clock.now()
        )
        self.subscribers = list(subscribers)

    @property
    def reconciler(self) -> Reconciler:
        return self.controller.reconciler

    @property
    def store(self) -> PairStore:
        return self.controller.reconciler.store

    def reconfigure(self, config: ReconcilerConfig) -> None:
        """A settings change between steps (as a reloaded configuration would bring)."""
        self.controller.reconciler.config = config

    def step(self, snapshot: ClusterSnapshot) -> Output:
        """A step now, on ``snapshot`` taken now; subscribers notified; a failure re-raised."""
        now = self.clock.now()
        output = self.controller.step(now, replace(snapshot, taken_at=now), stale_for=0.0)
        carry_out(output, Effects(self.subscribers))
        if output.error is not None:
            raise output.error
        return output
