"""A whole world under a fault plan: :class:`WorldChaos` and its crash / restart machinery."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from reconciler.ports import PlaceholderWriter
from simulator.faults.cluster import (
    consolidate_placeholder_nodes,
    delete_placeholders,
    lose_placeholder_nodes,
)
from simulator.faults.fleet import fleet_store_handlers
from simulator.faults.listener_view import (
    ApiFaultGate,
    DemandFaults,
    FaultyWriter,
    SkewClock,
    StaleSource,
)
from simulator.faults.plan import Fault, FaultKind, FaultPlan
from simulator.faults.processes import (
    KillSignal,
    KillSwitch,
    _LateSource,
    _SecondListener,
    loop_elapsed,
)
from simulator.faults.schedule import FaultHandler, FaultScheduler, Hook

# --- a whole world -----------------------------------------------------------------------------


#: Seconds a watch-fed cache is stale after a dropped watch: the informer's reconnect
#: (backoff 0.5 s x 2^n, first retry within 0.25-0.5 s; one more for a relist after a 410).
WATCH_RECONNECT = 1.0


@dataclass
class ChaosRecord:
    """What :class:`WorldChaos` did, for reports: (elapsed seconds, fault label, detail)."""

    events: list[tuple[float, str, str]] = field(default_factory=list)
    crashes: int = 0
    restarts: int = 0


class WorldChaos:
    """Wires a fault plan into a ``World`` running the ``capacity-aware`` strategy.

    For every capacity-aware driver of the world (one per scale set) it installs, in this
    order: a :class:`SkewClock` as the reconciler's clock, a :class:`StaleSource` in front of
    the driver's cache view, a :class:`FaultyWriter` (API faults) and a :class:`KillSwitch`
    (crashes) around the placeholder writer, and :class:`DemandFaults` on the HUD demand.
    ``fleet_store_down`` takes the world's fleet store down (:mod:`simulator.faults.fleet`).
    Then :class:`FaultScheduler` puts the plan on the world's loop.

    It goes through public surfaces only: :meth:`World.capacity_drivers` and
    :meth:`World.cluster_of`, each driver's ``hooks`` (source, step) and ``hud_filter``, ``pause`` /
    ``resume``, and its public ``reconciler``, ``writer``, ``builder`` and ``instance`` (a
    restart replaces them: new instance id, same store); :meth:`World.fleet_store`.
    ``actions_*`` kinds are not applied in virtual time (the simulated listener has no HTTP):
    they are skipped and reported, and covered by the HTTP fault tests instead; so is
    ``fleet_store_down`` in a world without a fleet store.
    """

    def __init__(self, world: Any, plan: FaultPlan, *, seed: int = 0) -> None:
        self.world = world
        self.plan = plan
        self.rng = random.Random(f"{seed}/chaos")
        self.record = ChaosRecord()
        self.drivers = world.capacity_drivers()
        if not self.drivers:
            raise ValueError("WorldChaos needs a world running the capacity-aware strategy")
        self.gate = ApiFaultGate(random.Random(self.rng.random()))
        self.demand = DemandFaults()
        self.clocks: list[SkewClock] = []
        self.stale: list[StaleSource] = []
        self.kills: list[KillSwitch] = []
        self.seconds: list[Any] = []  # second listeners (reconcilers) while active
        self.on_restart: list[Callable[[Any], None]] = []
        self._pending_kill: dict[int, Fault] = {}
        self._armed_by: dict[int, Fault] = {}

    # --- installation -------------------------------------------------------------------

    def install(self) -> FaultScheduler:
        loop = self.world.loop
        for index, driver in enumerate(self.drivers):
            self._wrap(driver, index)
        handlers: dict[FaultKind, FaultHandler] = {
            FaultKind.K8S_5XX: self.gate,
            FaultKind.K8S_429: self.gate,
            FaultKind.K8S_TIMEOUT: self.gate,
            FaultKind.K8S_SLOW: self.gate,
            FaultKind.K8S_WATCH_DROP: Hook(self._watch_drops),
            FaultKind.K8S_GONE: Hook(self._gone),
            FaultKind.HUD_DOWN: self.demand,
            FaultKind.HUD_SLOW: self.demand,
            FaultKind.HUD_MALFORMED: self.demand,
            FaultKind.HUD_ABSURD: self.demand,
            FaultKind.NODE_LOSS: Hook(self._node_loss),
            FaultKind.PLACEHOLDER_DELETED: Hook(self._delete_placeholders),
            FaultKind.CONSOLIDATION: Hook(self._consolidate),
            FaultKind.LISTENER_CRASH: Hook(self._crash),
            FaultKind.SECOND_LISTENER: Hook(self._second_start, self._second_end),
            FaultKind.CLOCK_JUMP: Hook(self._clock_jump),
            # No handler without a fleet store (fleetView off): the scheduler skips the fault.
            **fleet_store_handlers(self.world),
        }
        scheduler = FaultScheduler(loop, self.plan, handlers)
        scheduler.schedule()
        self.scheduler = scheduler
        return scheduler

    def _wrap(self, driver: Any, index: int) -> None:
        loop = self.world.loop
        clock = SkewClock(loop)
        self.clocks.append(clock)
        self._set_clock(driver, clock)
        stale = StaleSource(_LateSource(driver), clock=loop)
        self.stale.append(stale)
        kill = KillSwitch(FaultyWriter(driver.writer, self.gate, loop))
        self.kills.append(kill)
        self._set_writer(driver, kill)

        def guarded_step(
            step: Callable[[], None], driver: Any = driver, index: int = index
        ) -> None:
            fault = self._pending_kill.pop(index, None)
            if fault is not None:
                self.kills[index].arm(fault.params.after_writes or 0)
                self._armed_by[index] = fault
            try:
                step()
            except KillSignal:
                self._died(driver, index, self._armed_by.pop(index, None))

        # The driver's public fault hooks (capacity_aware.DriverHooks, hud_filter): every step
        # reads the stale-able view, HUD faults rewrite each HUD answer, a crash raises
        # inside a step.
        driver.hooks.source = lambda view, stale=stale: stale
        driver.hud_filter = self.demand.filter
        driver.hooks.step = guarded_step

    @staticmethod
    def _set_clock(driver: Any, clock: SkewClock) -> None:
        driver.wall = clock
        for sub in driver.subscribers:
            if hasattr(sub, "clock"):
                sub.clock = clock

    @staticmethod
    def _set_writer(driver: Any, writer: PlaceholderWriter) -> None:
        for sub in driver.subscribers:
            if hasattr(sub, "writer"):
                sub.writer = writer

    # --- fault actions ----------------------------------------------------------------------

    def _note(self, fault: Fault, detail: str) -> None:
        loop = self.world.loop
        self.record.events.append((loop.now() - loop.start, fault.label(), detail))

    def _each(self) -> Iterable[tuple[Any, Any]]:
        for driver in self.drivers:
            yield driver, self.world.cluster_of(driver.target.ers_name)

    def _node_loss(self, fault: Fault) -> None:
        for driver, handle in self._each():
            lost = lose_placeholder_nodes(
                handle.cluster, handle.store, self.rng, driver.target.ers_name, fault.params.count
            )
            self._note(fault, f"lost nodes {lost}")

    def _delete_placeholders(self, fault: Fault) -> None:
        for driver, handle in self._each():
            gone = delete_placeholders(
                handle.store, self.rng, driver.target.ers_name, fault.params.count
            )
            self._note(fault, f"deleted {gone}")

    def _consolidate(self, fault: Fault) -> None:
        for driver, handle in self._each():
            nodes = consolidate_placeholder_nodes(
                handle.cluster, handle.store, self.rng, driver.target.ers_name, fault.params.count
            )
            self._note(fault, f"consolidated {nodes}")

    def _freeze(self, fault: Fault) -> None:
        for stale in self.stale:
            stale.freeze(fault)
        self._note(fault, "cache stale (watches down)")

    def _thaw(self, fault: Fault) -> None:
        for stale in self.stale:
            stale.thaw(fault)
        self._note(fault, "watches back: relisted")

    def _watch_drops(self, fault: Fault) -> None:
        """Watches are cut every ``every`` seconds (default 60) until ``end``; each cut leaves
        the cache stale for ``hold`` seconds (default :data:`WATCH_RECONNECT`, the informer's
        reconnect time: it resumes from its last resourceVersion without a relist, see the
        HTTP tests). A long ``hold`` models an API server the watches cannot reach."""
        loop = self.world.loop
        every = fault.params.every or 60.0
        hold = fault.params.hold or WATCH_RECONNECT
        end = loop.start + (fault.end if fault.end is not None else fault.start)
        at = loop.now()
        drops = 0
        while at < end and drops < 10_000:
            loop.call_at(at, self._freeze_for, fault, hold)
            at += every
            drops += 1
        self._note(fault, f"{drops} watch drop(s), {hold:g}s stale each")

    def _freeze_for(self, fault: Fault, seconds: float) -> None:
        for stale in self.stale:
            stale.freeze(fault)
        self.world.loop.call_later(seconds, self._thaw_quietly, fault)

    def _thaw_quietly(self, fault: Fault) -> None:
        for stale in self.stale:
            stale.thaw(fault)

    def _gone(self, fault: Fault) -> None:
        # A 410 on resume makes the cache relist: stale from the drop until the relist lands
        # (one LIST call per kind after the reconnect).
        self._freeze(fault)
        self.world.loop.call_later(2 * WATCH_RECONNECT, self._thaw, fault)

    def _clock_jump(self, fault: Fault) -> None:
        for clock in self.clocks:
            clock.jump(fault.params.seconds or 0.0)
        self._note(fault, f"clock offset now {self.clocks[0].offset:+g}s")

    def _crash(self, fault: Fault) -> None:
        """Arm a kill inside the next step of every driver (at the given write)."""
        for index, driver in enumerate(self.drivers):
            self._pending_kill[index] = fault
            driver.trigger()
        self._note(fault, f"armed: die after {fault.params.after_writes or 0} writes")

    def _died(self, driver: Any, index: int, fault: Fault | None) -> None:
        self.record.crashes += 1
        loop = self.world.loop
        self.record.events.append(
            (
                loop.now() - loop.start,
                fault.label() if fault else "?",
                f"died in a step of instance {driver.instance}",
            )
        )
        # The process is gone and its long poll with it; modelled as the service holding 0
        # for this scale set until the new pod's first poll (which sends 0 until its first
        # step confirms capacity: CapacityGate(initial=0)). Through the sink, so the
        # simulated listener re-polls at once like a cut.
        driver.set_capacity(0)
        driver.subscribers = []  # the dead process does nothing more
        restart = (fault.params.restart_after if fault is not None else None) or 5.0
        self._step_paused(driver, True)
        loop.call_later(restart, self._restart, driver, index)

    @staticmethod
    def _step_paused(driver: Any, paused: bool) -> None:
        if paused:
            driver.pause()
        else:
            driver.resume()

    def _restart(self, driver: Any, index: int) -> None:
        self.record.restarts += 1
        alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
        instance = "".join(self.rng.choice(alphabet) for _ in range(5))
        builder, writer = driver.process_writer(instance)
        kill = KillSwitch(FaultyWriter(writer, self.gate, self.world.loop))
        self.kills[index] = kill
        driver.writer = writer
        driver.restart(instance, builder, kill, self.clocks[index])
        self._step_paused(driver, False)
        driver.trigger()
        self.record.events.append(
            (loop_elapsed(self.world.loop), "restart", f"instance {instance} started")
        )
        for callback in self.on_restart:
            callback(driver)

    def _second_start(self, fault: Fault) -> None:
        """A second listener pod for the same scale set (a rolling update, a stuck pod): its
        session is refused (409) so it advertises nothing, but its reconciler runs."""
        from scaleset.assembly import ScaleSetPorts, assemble_scale_set

        for driver in self.drivers:
            instance = "".join(self.rng.choice("abcdefghij0123456789") for _ in range(5))
            _, writer = driver.process_writer(instance)
            # The same assembly as every listener, without metrics (it advertises nothing).
            runtime = assemble_scale_set(
                driver.settings,
                ScaleSetPorts(
                    target=driver.target,
                    writer=writer,
                    snapshots=driver.snapshots,
                    demand=driver.scale_set_demand,
                    clock=self.world.loop,
                    instance=instance,
                ),
            )
            second = _SecondListener(
                driver,
                runtime.controller,
                list(runtime.subscribers),
                interval=driver.settings.recalculate_interval,
            )
            self.seconds.append(second)
            second.start()
        self._note(fault, f"{len(self.drivers)} second listener(s) started")

    def _second_end(self, fault: Fault) -> None:
        for second in self.seconds:
            second.stop()
            self._note(
                fault,
                f"second listener exited after {second.steps} steps "
                f"({second.errors} failed), holding {len(second.controller.reconciler.store)} "
                "pairs",
            )
        self.seconds = []
