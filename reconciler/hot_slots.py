"""Hot slots, decided (docs/design.md#hot-runners): pure functions over explicit inputs.

- :func:`split_reserve`: warm pairs and hot slots are two forms of one reserve. The reserve is
  what ``proactiveCapacity`` sizes (a number, ``auto``'s estimate, or a schedule entry);
  ``hotRunners`` says how much of it is held as hot slots, the rest stays warm pairs.
- :func:`hot_wanted`: the slots wanted now, within maxRunners headroom (0 while maxRunners
  is 0: a drain releases every slot).
- :func:`enter` and :func:`apply`: a slot entering the table, and one move, both checked
  against the table (state_machine/hot.py), kind included; :func:`entered_event` and
  :func:`moved_event` are their transition events.
- :func:`sync_hot`: the passive moves one snapshot proves (state_machine/hot.py), pairing
  free idle runners with slots that wait for one.
- :func:`decide_hot`: the active moves (time out, release, mend) and the new slots.
- :func:`scaler_hot_runners`: what the scaler adds to its EphemeralRunnerSet target.
- :func:`assigned_net_of_hot`: the assigned jobs the target's replicas say, less those.
- :func:`confirmed_hot`: the slots advertised like READY pairs.
- :func:`backs_workflow_side`: whether a slot's placeholder is on the ledger's workflow side.

Nothing here reads a clock or does I/O; the caller passes ``now`` and the observations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from state_machine.events import HotTransitionEvent, Kind
from state_machine.hot import HOT, HOT_CONFIRMED, HOT_INITIAL, HOT_LIVE, HOT_TERMINAL, HotState

W, H, T, L, X = HotState.WARMING, HotState.HOT, HotState.TAKEN, HotState.LOST, HotState.RELEASED
HotSetting = int | Literal["auto"]
#: Slots whose placeholder may back the workflow side of the ledger: a confirmed slot, and a
#: taken one (its placeholder is held for the job's workflow pod): see backs_workflow_side.
BACKING = frozenset((H, T))


@dataclass(frozen=True, slots=True)
class ReserveSplit:
    """How one reserve is held: ``hot`` slots and ``warm`` pairs (``hot + warm`` = reserve)."""

    hot: int
    warm: int


def split_reserve(reserve: int, hot_runners: HotSetting) -> ReserveSplit:
    """``auto``: the whole reserve is hot (a hot slot holds the same resources as a warm pair,
    a runner-sized pod and a workflow-sized one, and starts a job without any pod start).
    A number ``N``: ``min(N, reserve)`` hot, the rest warm. ``N`` above a fixed
    ``proactiveCapacity`` is refused by the settings; under ``auto`` the estimate caps it."""
    if reserve < 0:
        raise ValueError(f"reserve must be >= 0, got {reserve}")
    hot = reserve if hot_runners == "auto" else min(max(0, hot_runners), reserve)
    return ReserveSplit(hot=hot, warm=reserve - hot)


def hot_wanted(hot: int, *, max_runners: int, assigned_jobs: int) -> int:
    """Hot slots wanted now: the scaler's target is ``assigned + hot`` within maxRunners, as
    ARC's minRunners, so no more than maxRunners headroom; 0 when maxRunners is 0."""
    return max(0, min(hot, max_runners - assigned_jobs))


def assigned_net_of_hot(assigned_jobs: int | None, hot_in_target: int) -> int | None:
    """The jobs assigned to the scale set, from ``assigned_jobs`` as read off the
    EphemeralRunnerSet's replicas (less minRunners: providers/kubernetes/observe/translate.py) when
    the scaler's target held ``hot_in_target`` idle runners for hot slots on top of them
    (listener/arc/scaler.py: ``min(minRunners + hot + jobs, maxRunners)``). Never below 0:
    maxRunners may have cut the hot runners out of the target. None (unknown) stays None."""
    if hot_in_target < 0:
        raise ValueError(f"hot_in_target must be >= 0, got {hot_in_target}")
    if assigned_jobs is None:
        return None
    return max(0, assigned_jobs - hot_in_target)


@dataclass(frozen=True, slots=True)
class HotSlot:
    """One hot slot (immutable; replaced per change)."""

    slot_id: str
    state: HotState
    #: Name of its workflow placeholder pod (a new one per mend).
    placeholder: str
    #: The EphemeralRunner paired with it, or None while it waits for one.
    runner: str | None
    #: When it entered its state, and when its current placeholder was requested.
    entered_at: float
    requested_at: float


@dataclass(frozen=True, slots=True)
class RunnerSeen:
    """One EphemeralRunner of this scale set as the snapshot shows it.

    ``idle``: registered (``status.ready``), no job, not finished and not being deleted. Not
    ``phase == Running``: ARC 0.15 leaves an idle runner's phase Pending (PR #4646);
    providers/kubernetes/observe/scale_set.py reads it the same way for every version.
    ``busy``: it has a job (``status.jobId``, written by the listener's JobStarted patch in
    0.13-0.15), or its workflow pod exists (the hook created it: a job runs).
    ``started``: its job's workflow pod is bound (holds a slot): the job holds room of its own,
    and a placeholder held for it backs nothing any more."""

    name: str
    idle: bool
    busy: bool
    started: bool = False


@dataclass(frozen=True, slots=True)
class PlaceholderSeen:
    """The slot's workflow placeholder: ``counts`` = Running, bound, not lost, usable node
    (``PlaceholderPod.counts``); ``gone`` = absent or lost (terminating, disrupted, ended)."""

    counts: bool
    gone: bool


GONE = PlaceholderSeen(counts=False, gone=True)


@dataclass(frozen=True, slots=True)
class HotMove:
    """One change of one slot: a move along an edge, or a new runner pairing (same state)."""

    slot_id: str
    target: HotState
    kind: Kind
    reason: str
    runner: str | None
    placeholder: str | None = None


def enter(
    slot_id: str, placeholder: str, kind: Kind, now: float, state: HotState = HOT_INITIAL
) -> HotSlot:
    """A slot entering the table through an insert edge into ``state``: active when decide
    wants it, passive when adopted from an earlier instance. Raises ``InvalidTransition``
    for an insert the table does not have."""
    HOT.check(slot_id, None, state, kind)
    return HotSlot(slot_id, state, placeholder, None, now, now)


def apply(slot: HotSlot, move: HotMove, now: float) -> HotSlot | None:
    """The slot after ``move``; None when it is released. Raises ``InvalidTransition`` for a
    move off the table or of the wrong kind (the table's own check, as a pair's commit)."""
    if move.target is not slot.state:
        HOT.check(slot.slot_id, slot.state, move.target, move.kind)
    if move.target in HOT_TERMINAL:
        return None
    placeholder = move.placeholder or slot.placeholder
    return replace(
        slot,
        state=move.target,
        runner=move.runner,
        placeholder=placeholder,
        entered_at=now if move.target is not slot.state else slot.entered_at,
        requested_at=now if placeholder != slot.placeholder else slot.requested_at,
    )


def entered_event(
    scale_set: str, slot: HotSlot, kind: Kind, reason: str, now: float
) -> HotTransitionEvent:
    """The event of ``slot`` entering the table (:func:`enter`)."""
    return HotTransitionEvent(
        slot.slot_id, scale_set, None, slot.state, kind, reason, now, slot.runner, slot.placeholder
    )


def moved_event(
    scale_set: str, slot: HotSlot, move: HotMove, after: HotSlot | None, now: float
) -> HotTransitionEvent:
    """The event of ``move`` taking ``slot`` to ``after`` (:func:`apply`; None: released,
    shown with the runner and placeholder it held)."""
    shown = after if after is not None else replace(slot, runner=move.runner)
    return HotTransitionEvent(
        slot.slot_id,
        scale_set,
        slot.state,
        move.target,
        move.kind,
        move.reason,
        now,
        shown.runner,
        shown.placeholder,
    )


def sync_hot(
    slots: Sequence[HotSlot],
    runners: Mapping[str, RunnerSeen],
    placeholders: Mapping[str, PlaceholderSeen],
) -> tuple[HotMove, ...]:
    """The passive moves the snapshot proves, oldest slot first. Free idle runners (held by
    no slot) are paired, by name, with the slots that wait for one."""
    held = {s.runner for s in slots if s.runner is not None and s.state is not X}
    free = sorted(n for n, r in runners.items() if r.idle and not r.busy and n not in held)
    moves: list[HotMove] = []
    for slot in sorted(slots, key=lambda s: (s.requested_at, s.slot_id)):
        seen = runners.get(slot.runner) if slot.runner is not None else None
        ph = placeholders.get(slot.placeholder, GONE)
        move = _observe(slot, seen, ph, free)
        if move is not None:
            moves.append(move)
    return tuple(moves)


def _observe(
    slot: HotSlot, seen: RunnerSeen | None, ph: PlaceholderSeen, free: list[str]
) -> HotMove | None:
    def move(target: HotState, reason: str, runner: str | None) -> HotMove:
        return HotMove(slot.slot_id, target, Kind.PASSIVE, reason, runner)

    if seen is not None and seen.busy and slot.state in HOT_LIVE:
        return move(T, f"runner {seen.name} took a job", slot.runner)
    if slot.state is T:
        if ph.gone:
            return move(X, "the placeholder is gone (the job's workflow pod took it)", None)
        if seen is not None and seen.started:
            return move(X, f"the workflow pod of runner {seen.name}'s job is bound", None)
        return None
    paired = seen is not None and seen.idle
    if slot.state is H:
        if not paired:
            return move(W, f"runner {slot.runner} is gone or no longer registered and idle", None)
        if not ph.counts:
            return move(L, f"placeholder {slot.placeholder} lost or no longer counts", slot.runner)
        return None
    if slot.state is W:
        runner = slot.runner if paired else (free.pop(0) if free else None)
        if runner is not None and ph.counts:
            return move(H, f"runner {runner} registered and idle, placeholder Running", runner)
        if runner != slot.runner:  # paired or unpaired: no state change yet
            return move(W, "runner pairing changed", runner)
    return None


@dataclass(frozen=True, slots=True)
class HotTimings:
    ready_timeout: float
    survivor_window: float


def decide_hot(
    slots: Sequence[HotSlot],
    *,
    wanted: int,
    now: float,
    timings: HotTimings,
    new_name: Iterable[str],
) -> tuple[tuple[HotMove, ...], tuple[HotSlot, ...]]:
    """Active moves and new slots. ``new_name`` yields fresh placeholder/slot names (a mend
    creates a new placeholder; the old one may still be terminating).

    Order: time out WARMING slots past placeholderReadyTimeout and TAKEN placeholders past
    survivorWindow; release live slots beyond ``wanted`` (LOST first, then WARMING newest
    first, HOT last: confirmed slots are the last to go); mend LOST slots still wanted; open
    new WARMING slots up to ``wanted``."""
    names = iter(new_name)
    moves: list[HotMove] = []
    kept: list[HotSlot] = []
    for slot in slots:
        age = now - slot.entered_at
        if slot.state is W and now - slot.requested_at >= timings.ready_timeout:
            moves.append(_active(slot, X, "not HOT within placeholderReadyTimeout"))
        elif slot.state is T and age >= timings.survivor_window:
            moves.append(_active(slot, X, "placeholder outlived survivorWindow"))
        elif slot.state in HOT_LIVE:
            kept.append(slot)
    order = {L: 0, W: 1, H: 2}
    kept.sort(key=lambda s: (order[s.state], -s.requested_at, s.slot_id))
    surplus = max(0, len(kept) - max(0, wanted))
    for slot in kept[:surplus]:
        moves.append(_active(slot, X, "no longer wanted (reserve shrank or maxRunners lowered)"))
    for slot in kept[surplus:]:
        if slot.state is L:
            moves.append(
                HotMove(slot.slot_id, W, Kind.ACTIVE, "mend: new placeholder", slot.runner,
                        placeholder=next(names))
            )  # fmt: skip
    fresh = tuple(
        HotSlot(name, W, name, None, now, now)
        for name in (next(names) for _ in range(max(0, wanted - len(kept))))
    )
    return tuple(moves), fresh


def _active(slot: HotSlot, target: HotState, reason: str) -> HotMove:
    return HotMove(slot.slot_id, target, Kind.ACTIVE, reason, slot.runner)


def scaler_hot_runners(slots: Iterable[HotSlot]) -> int:
    """Idle runners the scaler keeps on top of the assigned jobs: one per live slot."""
    return sum(1 for s in slots if s.state in HOT_LIVE)


def confirmed_hot(slots: Iterable[HotSlot]) -> int:
    """Slots advertised like READY pairs."""
    return sum(1 for s in slots if s.state in HOT_CONFIRMED)


def backs_workflow_side(
    slot: HotSlot, runner: RunnerSeen | None, placeholder: PlaceholderSeen
) -> bool:
    """Is the slot's placeholder counted on the ledger's workflow side now? Only a confirmed
    or taken slot's counted placeholder, and only while its runner is registered and idle
    (the slot is free) or has a job whose workflow pod holds no room yet (the placeholder is
    held for that pod). Read from the snapshot, not the slot's state alone, so a drop check
    between steps applies it too.

    Once the job's workflow pod is bound (it preempted another placeholder or found free
    room), the job holds room of its own; with its runner gone (the job over) the placeholder
    backs no runner. Counted then, the placeholder was a slot nothing reserved: a taken slot
    was counted both for its busy runner's job and as free room beside another runner."""
    if slot.state not in BACKING or not placeholder.counts or runner is None:
        return False
    return runner.idle or (runner.busy and not runner.started)
