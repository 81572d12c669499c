"""One reconcile step: sync, then decide, then commit; the result says what to publish.

:func:`reconcile` is the pure core (records + snapshot + config + now in, a plan out).
:class:`Reconciler` owns the store and runs one step for the scale-set controller
(reconciler/controller.py, the only engine: it decides when to step and turns the result
into an ``Output``; drivers carry that out):

1. Plan: ``sync`` (passive moves proven by the snapshot), applied to a scratch view, then
   ``decide`` (active moves and maintenance commands) on that view.
2. Commit the whole plan to the store (validated against the table first: an invalid plan
   raises and changes nothing; the controller publishes the confirmed capacity instead).
3. Return the committed events (the pairs', then the hot slots'), the commands and the
   ledger. The ledger counts what the
   snapshot confirms minus what this step is releasing (pairs it deleted or timed out, pods
   it swept), so a slot being deleted is never advertised, not even for one step.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace

from reconciler.capacity import CapacityLedger, compute_ledger
from reconciler.config import ReconcilerConfig
from reconciler.decide import decide
from reconciler.decision import DecideInput
from reconciler.fleet import split_of
from reconciler.hot_slots import HotTimings, assigned_net_of_hot, hot_wanted, split_reserve
from reconciler.hot_step import HotKeeper, HotStep
from reconciler.ports import Command, DeleteOrphan
from reconciler.snapshot import ClusterSnapshot, FleetPart
from reconciler.sync import sync
from reconciler.warm_pool import WarmPoolSize, WarmPoolWindow, warm_pairs
from state_machine.events import AnyTransition
from state_machine.record import PairRecord
from state_machine.states import PairState
from state_machine.store import Change, Observed, PairStore
from state_machine.table import RELEASED

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Plan:
    changes: tuple[Change, ...]
    commands: tuple[Command, ...]
    #: Why QUEUED pairs were left waiting (decide's launch budget), or None.
    launch_limited_by: str | None = None
    #: The records after sync's changes (what decide read); the commit reuses them.
    synced: Mapping[str, PairRecord] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StepResult:
    #: The pairs' committed events, then the hot slots' (one per move, inserts included).
    events: tuple[AnyTransition, ...]
    commands: tuple[Command, ...]
    ledger: CapacityLedger
    launch_limited_by: str | None = None
    #: The warm pool size kept this step (fixed, auto estimate or schedule), with its reason.
    warm_pool: WarmPoolSize | None = None
    #: The hot slots' step (None while no hot slot is wanted or held).
    hot: HotStep | None = None

    @property
    def hot_runners(self) -> int:
        """Idle runners the scaler keeps on top of the assigned jobs (live hot slots)."""
        return self.hot.hot_runners if self.hot is not None else 0


def reconcile(
    records: Mapping[str, PairRecord],
    snapshot: ClusterSnapshot,
    config: ReconcilerConfig,
    *,
    now: float,
    instance: str,
    first_step: bool,
    ids: Iterator[str],
) -> Plan:
    """The pure step: what should change, given what we hold and what we observe."""
    synced = sync(records.values(), snapshot)
    view = dict(records)
    for change in synced:
        record = view[change.pair_id]
        if isinstance(change, Observed):
            view[change.pair_id] = record.observed(change.roles)
        else:
            view[change.pair_id] = record.moved(change.target, now, change.reason)
    decision = decide(
        DecideInput(view, snapshot, config, now, instance, first_step),
        ids,
    )
    return Plan(
        (*synced, *decision.changes),
        tuple(decision.commands),
        decision.launch_limited_by,
        view,
    )


class Reconciler:
    """The store of one scale set and the step that changes it (driven by the controller)."""

    def __init__(
        self,
        config: ReconcilerConfig,
        *,
        started_at: float,
        instance: str = "i0",
        store: PairStore | None = None,
    ) -> None:
        self.config = config
        self.instance = instance
        self.store = store or PairStore(config.scale_set)
        self.steps = 0
        self._seq = itertools.count(1)
        # Fed with every committed event, so switching to ``auto`` later has history.
        window = config.warm_pool.window if config.warm_pool is not None else 900.0
        self.warm_window = WarmPoolWindow(window, started_at=started_at)
        self.warm_pool = WarmPoolSize(config.proactive_capacity, "static")
        self.hot = HotKeeper(config.scale_set, instance)
        #: Idle runners the last step asked the scaler to keep (its target adds them to the
        #: assigned jobs, so the ERS replicas the snapshot reads include them).
        self._hot_in_target = 0

    def _ids(self) -> Iterator[str]:
        while True:
            yield f"{self.instance}-{next(self._seq)}"

    def _step_config(self, now: float, fleet: FleetPart | None = None) -> ReconcilerConfig:
        """The config of this step: with a warm pool policy, its size replaces the fixed one;
        with a fleet part (reconciler/fleet.py), the pool kept is this cluster's part of an
        exact split of it (a job that misses this cluster's pool lands in another's)."""
        policy = self.config.warm_pool
        if policy is None:
            size = WarmPoolSize(self.config.proactive_capacity, "static")
        else:
            members = fleet.members if fleet is not None else 1
            size = warm_pairs(policy, self.warm_window.observation(now), now, members)
        if fleet is not None:
            part = split_of(size.pairs, fleet.rank, fleet.members)
            size = replace(
                size,
                pairs=part,
                reason=f"{size.reason}; part {fleet.rank + 1} of {fleet.members} of the fleet's",
            )
        if size.pairs != self.warm_pool.pairs:
            log.info("warm pool %s: %d pairs (%s)", self.config.scale_set, size.pairs, size.reason)
        self.warm_pool = size
        if size.pairs == self.config.proactive_capacity:
            return self.config
        return replace(self.config, proactive_capacity=size.pairs)

    def _hot_step(
        self, snapshot: ClusterSnapshot, config: ReconcilerConfig, now: float
    ) -> tuple[ReconcilerConfig, HotStep | None]:
        """Split this step's reserve into hot slots and warm pairs (reconciler/hot_slots.py),
        and step the hot slots; the pairs' config keeps only the warm part."""
        split = split_reserve(config.proactive_capacity, config.hot_runners)
        if not split.hot and not self.hot.slots and not snapshot.hot_placeholders:
            return config, None
        assigned = sum(1 for p in snapshot.runner_pods if p.alive) - len(snapshot.idle_runner_names)
        wanted = hot_wanted(split.hot, max_runners=snapshot.max_runners, assigned_jobs=assigned)
        hot = self.hot.step(
            snapshot,
            wanted=wanted,
            now=now,
            timings=HotTimings(config.placeholder_ready_timeout, config.survivor_window),
            placeholder_ttl=config.placeholder_ttl,
        )
        return replace(config, proactive_capacity=split.warm), hot

    def step(self, snapshot: ClusterSnapshot, *, now: float) -> StepResult:
        """One step at ``now``; raises (changing nothing) if the plan cannot be made or is
        invalid."""
        # Registered idle runners (named only while hot slots are kept) wait for a job: they
        # hold no job's slot, so they are not starting runners for the warm pool's estimate.
        self.warm_window.observe_runners(
            (p.name for p in snapshot.runner_pods if p.alive),
            now,
            starting=max(0, snapshot.starting_runners - len(snapshot.idle_runner_names)),
        )
        # The ERS replicas the assigned jobs are read from include the idle runners the last
        # step asked the scaler to keep: they are no job's.
        assigned = assigned_net_of_hot(snapshot.assigned_jobs, self._hot_in_target)
        if assigned != snapshot.assigned_jobs:
            snapshot = replace(snapshot, assigned_jobs=assigned)
        config, hot = self._hot_step(snapshot, self._step_config(now, snapshot.demand.fleet), now)
        plan = reconcile(
            self.store.view(),
            snapshot,
            config,
            now=now,
            instance=self.instance,
            first_step=self.steps == 0,
            ids=self._ids(),
        )
        events = tuple(self.store.commit(plan.changes, now, built=plan.synced))
        self.steps += 1
        self.warm_window.observe(events)
        self._hot_in_target = hot.hot_runners if hot is not None else 0
        if hot is not None:
            self.warm_window.observe_hot(hot.opened, hot.confirmed_now, hot.jobs_started, now)
        ledger = compute_ledger(
            snapshot,
            self.store.count([PairState.READY]),
            releasing={e.pair_id for e in events if e.target in RELEASED},
            released_pods={c.pod.name for c in plan.commands if isinstance(c, DeleteOrphan)},
            hot_workflow_halves=self.hot.workflow_halves(snapshot),
        )
        return StepResult(
            (*events, *(hot.events if hot is not None else ())),
            (*plan.commands, *(hot.commands if hot is not None else ())),
            ledger,
            launch_limited_by=plan.launch_limited_by,
            warm_pool=self.warm_pool,
            hot=hot,
        )

    def owned_ids(self) -> set[str]:
        """The pair label values of every placeholder this instance holds, created or adopted:
        the pairs in the store and the hot slots (a hot placeholder's pair label is its slot's
        id). The shutdown deletes these; a hot slot is not in the store, so reading only the
        store left adopted hot placeholders behind."""
        return {r.pair_id for r in self.store.records()} | set(self.hot.slots)

    def ledger(self, snapshot: ClusterSnapshot) -> CapacityLedger:
        """The ledger of ``snapshot`` with no decision (a failed step, a drop check)."""
        return compute_ledger(
            snapshot,
            self.store.count([PairState.READY]),
            hot_workflow_halves=self.hot.workflow_halves(snapshot),
        )
