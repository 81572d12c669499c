"""The hot slots of one scale set, stepped with the pairs (docs/design.md#hot-runners).

:class:`HotKeeper` holds the slots (state_machine/hot.py) and, once per reconcile step, turns
the snapshot into observations, applies :func:`~reconciler.hot_slots.sync_hot` then
:func:`~reconciler.hot_slots.decide_hot`, and returns one transition event per move
(:class:`~state_machine.events.HotTransitionEvent`, published with the pairs' to the same
subscribers: the log line, the counters) and the commands (create a slot's workflow
placeholder, delete one) the placeholder subscriber carries out. On its first step it adopts
the hot placeholders a previous listener left through the table's adoption edge (each enters
WARMING and pairs with an idle runner again), so a restart neither drops nor duplicates them.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from reconciler.hot_slots import (
    GONE,
    HotMove,
    HotSlot,
    HotTimings,
    PlaceholderSeen,
    RunnerSeen,
    apply,
    backs_workflow_side,
    confirmed_hot,
    decide_hot,
    enter,
    entered_event,
    moved_event,
    scaler_hot_runners,
    sync_hot,
)
from reconciler.ports import Command, CreatePlaceholder, DeleteOrphan, PairSpec, PodRef
from reconciler.snapshot import ClusterSnapshot, PlaceholderPod
from state_machine.events import HotTransitionEvent, Kind
from state_machine.hot import HotState
from state_machine.record import HOT_PREFIX, hot_placeholder_name


@dataclass(frozen=True, slots=True)
class HotStep:
    commands: tuple[Command, ...]
    moves: tuple[HotMove, ...]
    #: One per state change, inserts included (new and adopted slots), in the order applied.
    events: tuple[HotTransitionEvent, ...]
    #: Idle runners the scaler keeps (live slots) and slots advertised (confirmed) after it.
    hot_runners: int
    confirmed: int
    #: Slots this step released: their placeholders are not counted, even for this step.
    released: frozenset[str]
    #: Slots by state after the step, and jobs that started on a hot slot in it.
    by_state: Mapping[HotState, int]
    jobs_started: int
    #: Slots whose placeholder was requested this step (new or mended), and slots confirmed
    #: in it: the refills the warm pool estimator times (reconciler/warm_pool.py).
    opened: tuple[str, ...] = ()
    confirmed_now: tuple[str, ...] = ()


class HotKeeper:
    def __init__(self, scale_set: str, instance: str) -> None:
        self.scale_set = scale_set
        self.instance = instance
        self.slots: dict[str, HotSlot] = {}
        self._seq = itertools.count(1)
        self.steps = 0

    def _names(self) -> Iterator[str]:
        while True:
            yield f"{HOT_PREFIX}{self.instance}-{next(self._seq)}"

    def step(
        self,
        snapshot: ClusterSnapshot,
        *,
        wanted: int,
        now: float,
        timings: HotTimings,
        placeholder_ttl: float,
    ) -> HotStep:
        commands: list[Command] = []
        events: list[HotTransitionEvent] = []
        if self.steps == 0:
            self._adopt(snapshot, now, events)
        self.steps += 1
        moves = list(sync_hot(list(self.slots.values()), _runners(snapshot), self._seen(snapshot)))
        self._apply(moves, now, snapshot, commands, events)
        active, fresh = decide_hot(
            list(self.slots.values()),
            wanted=wanted,
            now=now,
            timings=timings,
            new_name=self._names(),
        )
        # decide names new placeholders by a fresh id; the pod is named after the scale set.
        active = tuple(
            replace(m, placeholder=self._pod(m.placeholder)) if m.placeholder else m for m in active
        )
        fresh = tuple(replace(s, placeholder=self._pod(s.slot_id)) for s in fresh)
        self._apply(active, now, snapshot, commands, events)
        for slot in fresh:
            self._insert(slot.slot_id, slot.placeholder, Kind.ACTIVE, "wanted", now, events)
            commands.append(self._create(slot.slot_id, slot.placeholder, now, placeholder_ttl))
        for move in active:
            if move.placeholder is not None:
                commands.append(self._create(move.slot_id, move.placeholder, now, placeholder_ttl))
        held = {s.placeholder for s in self.slots.values()}
        held |= {c.pod.name for c in commands if isinstance(c, DeleteOrphan)}  # already going
        for name, pod in snapshot.hot_placeholders.items():
            if name not in held and not pod.deleting:
                commands.append(DeleteOrphan(self._ref(pod), "no hot slot holds it"))
        released = frozenset(m.slot_id for m in (*moves, *active) if m.target is HotState.RELEASED)
        return HotStep(
            tuple(commands),
            (*moves, *active),
            tuple(events),
            scaler_hot_runners(self.slots.values()),
            confirmed_hot(self.slots.values()),
            released,
            Counter(s.state for s in self.slots.values()),
            sum(1 for m in moves if m.target is HotState.TAKEN),
            opened=(*(s.slot_id for s in fresh), *(m.slot_id for m in active if m.placeholder)),
            confirmed_now=tuple(m.slot_id for m in moves if m.target is HotState.HOT),
        )

    def workflow_halves(self, snapshot: ClusterSnapshot) -> int:
        """Hot placeholders that back the workflow side now (``backs_workflow_side``: a
        confirmed slot's while its runner is idle, a taken slot's until its job's workflow
        pod is bound): the ledger adds them, for a step and for a drop check alike."""
        runners = _runners(snapshot)
        seen = self._seen(snapshot)
        return sum(
            1
            for s in self.slots.values()
            if backs_workflow_side(
                s,
                runners.get(s.runner) if s.runner is not None else None,
                seen.get(s.placeholder, GONE),
            )
        )

    def _adopt(
        self, snapshot: ClusterSnapshot, now: float, events: list[HotTransitionEvent]
    ) -> None:
        """Hot placeholders an earlier instance left enter through the adoption edge."""
        for name, pod in sorted(snapshot.hot_placeholders.items()):
            if pod.deleting or pod.pair_id in self.slots:
                continue
            reason = f"adopted placeholder {name} from instance {pod.instance or '?'}"
            self._insert(pod.pair_id, name, Kind.PASSIVE, reason, now, events)

    def _insert(
        self,
        slot_id: str,
        placeholder: str,
        kind: Kind,
        reason: str,
        now: float,
        events: list[HotTransitionEvent],
    ) -> None:
        slot = enter(slot_id, placeholder, kind, now)
        self.slots[slot_id] = slot
        events.append(entered_event(self.scale_set, slot, kind, reason, now))

    def _apply(
        self,
        moves: Sequence[HotMove],
        now: float,
        snapshot: ClusterSnapshot,
        out: list[Command],
        events: list[HotTransitionEvent],
    ) -> None:
        """Apply ``moves``; a placeholder left behind (released, or replaced by a mend) is
        deleted when the snapshot shows it (one not seen yet is swept as an orphan later).
        A move that changes the state is a transition event; a new runner pairing in the
        same state is not."""
        for move in moves:
            slot = self.slots[move.slot_id]
            after = apply(slot, move, now)
            if move.target is not slot.state:
                events.append(moved_event(self.scale_set, slot, move, after, now))
            if after is None:
                del self.slots[slot.slot_id]
            else:
                self.slots[slot.slot_id] = after
            kept = after is not None and after.placeholder == slot.placeholder
            pod = None if kept else snapshot.hot_placeholders.get(slot.placeholder)
            if pod is not None and not pod.deleting:
                out.append(DeleteOrphan(self._ref(pod), f"hot slot {slot.slot_id}: {move.reason}"))

    def _pod(self, token: str) -> str:
        return hot_placeholder_name(self.scale_set, token)

    def _create(self, slot_id: str, name: str, now: float, ttl: float) -> CreatePlaceholder:
        spec = PairSpec(
            pair_id=slot_id,
            scale_set=self.scale_set,
            runner_pod="",
            workflow_pod=name,
            expires_at=now + ttl,
            workflow_only=True,
        )
        return CreatePlaceholder(spec, "hot slot wanted")

    def _ref(self, pod: PlaceholderPod) -> PodRef:
        return PodRef(pod.namespace, pod.name, pod.uid or None)

    def _seen(self, snapshot: ClusterSnapshot) -> Mapping[str, PlaceholderSeen]:
        return {
            s.placeholder: _placeholder_seen(snapshot.hot_placeholders.get(s.placeholder))
            for s in self.slots.values()
        }


def _placeholder_seen(pod: PlaceholderPod | None) -> PlaceholderSeen:
    if pod is None:
        return PlaceholderSeen(counts=False, gone=True)
    return PlaceholderSeen(counts=pod.counts, gone=pod.lost)


def _runners(snapshot: ClusterSnapshot) -> dict[str, RunnerSeen]:
    """Idle runners, and busy ones: a jobId, or a workflow pod for its runner pod (ARC names
    the runner pod after its EphemeralRunner); ``started`` where that pod holds a slot."""
    busy = set(snapshot.busy_runner_names) | {w.runner_pod for w in snapshot.workflow_pods}
    started = {w.runner_pod for w in snapshot.workflow_pods if w.holds_slot}
    names = set(snapshot.idle_runner_names) | busy
    idle = snapshot.idle_runner_names
    return {
        n: RunnerSeen(n, idle=n in idle and n not in busy, busy=n in busy, started=n in started)
        for n in names
    }
