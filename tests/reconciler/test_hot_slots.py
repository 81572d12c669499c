"""Hot slots (``hotRunners``): what one snapshot proves, what decide chooses, how the reserve is
shared with warm pairs, what the scaler keeps and what is advertised (reconciler/hot_slots.py,
state_machine/hot.py, docs/design.md#hot-runners)."""

from __future__ import annotations

import pytest

from reconciler.hot_slots import (
    GONE,
    HotMove,
    HotSlot,
    HotTimings,
    PlaceholderSeen,
    ReserveSplit,
    RunnerSeen,
    apply,
    assigned_net_of_hot,
    backs_workflow_side,
    confirmed_hot,
    decide_hot,
    hot_wanted,
    scaler_hot_runners,
    split_reserve,
    sync_hot,
)
from state_machine.events import Kind
from state_machine.hot import HotState, InvalidHotMove

S = HotState
RUNNING = PlaceholderSeen(counts=True, gone=False)
PENDING = PlaceholderSeen(counts=False, gone=False)
IDLE = RunnerSeen("r1", idle=True, busy=False)
BUSY = RunnerSeen("r1", idle=False, busy=True)
STARTING = RunnerSeen("r1", idle=False, busy=False)  # pod up, runner not registered yet
STARTED = RunnerSeen("r1", idle=False, busy=True, started=True)  # its workflow pod is bound
TIMINGS = HotTimings(ready_timeout=300.0, survivor_window=120.0)


def slot(
    state: HotState, runner: str | None = "r1", *, at: float = 0.0, sid: str = "s1"
) -> HotSlot:
    return HotSlot(sid, state, f"{sid}-wf", runner, at, at)


# --- the reserve -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reserve", "hot_runners", "expected"),
    [
        (6, 0, ReserveSplit(hot=0, warm=6)),  # default: every slot of the reserve a warm pair
        (6, 2, ReserveSplit(hot=2, warm=4)),
        (6, 6, ReserveSplit(hot=6, warm=0)),
        (3, 6, ReserveSplit(hot=3, warm=0)),  # under auto the estimate caps a fixed N
        (6, "auto", ReserveSplit(hot=6, warm=0)),
        (0, "auto", ReserveSplit(hot=0, warm=0)),
    ],
)
def test_warm_pairs_and_hot_slots_share_one_reserve(
    reserve: int, hot_runners: int | str, expected: ReserveSplit
) -> None:
    split = split_reserve(reserve, hot_runners)  # type: ignore[arg-type]
    assert split == expected
    assert split.hot + split.warm == reserve


def test_a_negative_reserve_is_refused() -> None:
    with pytest.raises(ValueError, match="reserve must be >= 0, got -1"):
        split_reserve(-1, 2)


@pytest.mark.parametrize(
    ("hot", "max_runners", "assigned", "expected"),
    [
        (3, 10, 0, 3),
        (3, 10, 8, 2),  # within maxRunners, as ARC's minRunners: target = min(assigned + hot, max)
        (3, 10, 10, 0),
        (3, 10, 12, 0),  # maxRunners lowered below the assigned jobs
        (3, 0, 0, 0),  # drain: maxRunners 0 releases every slot
    ],
)
def test_hot_slots_wanted_stay_within_max_runners(
    hot: int, max_runners: int, assigned: int, expected: int
) -> None:
    assert hot_wanted(hot, max_runners=max_runners, assigned_jobs=assigned) == expected


@pytest.mark.parametrize(
    ("read", "hot_in_target", "expected"),
    [
        (None, 2, None),  # no ERS: unknown stays unknown
        (None, 0, None),
        (5, 0, 5),  # no hot slot: the replicas' count as read
        (5, 2, 3),  # 2 idle runners kept on top of 3 jobs
        (2, 2, 0),  # only the hot runners: no job
        (1, 2, 0),  # maxRunners cut the target below the hot runners: never negative
        (0, 3, 0),
    ],
)
def test_assigned_jobs_are_the_replicas_less_the_hot_runners_in_the_target(
    read: int | None, hot_in_target: int, expected: int | None
) -> None:
    assert assigned_net_of_hot(read, hot_in_target) == expected


def test_a_negative_hot_count_is_refused() -> None:
    with pytest.raises(ValueError, match="hot_in_target must be >= 0, got -1"):
        assigned_net_of_hot(3, -1)


# --- sync: what one snapshot proves ----------------------------------------------------------

SYNC_CASES = [
    # (name, slot, runners seen, placeholder seen, expected (target, kind, runner) or None)
    ("warming pairs an idle runner and confirms when the placeholder runs",
     slot(S.WARMING, None), {"r1": IDLE}, RUNNING, (S.HOT, "r1")),
    ("warming pairs an idle runner but waits for a Pending placeholder",
     slot(S.WARMING, None), {"r1": IDLE}, PENDING, (S.WARMING, "r1")),
    ("a runner not registered yet is not paired",
     slot(S.WARMING, None), {"r1": STARTING}, RUNNING, None),
    ("warming: the paired runner took a job before the slot was confirmed",
     slot(S.WARMING), {"r1": BUSY}, PENDING, (S.TAKEN, "r1")),
    ("warming: the paired runner vanished, the slot waits for another",
     slot(S.WARMING), {}, PENDING, (S.WARMING, None)),
    ("hot stays hot", slot(S.HOT), {"r1": IDLE}, RUNNING, None),
    ("a job landing on a hot slot: the runner is busy",
     slot(S.HOT), {"r1": BUSY}, RUNNING, (S.TAKEN, "r1")),
    ("hot: placeholder lost (ICE, preemption, eviction) while the runner is idle",
     slot(S.HOT), {"r1": IDLE}, GONE, (S.LOST, "r1")),
    ("hot: placeholder on a cordoned node stops counting",
     slot(S.HOT), {"r1": IDLE}, PENDING, (S.LOST, "r1")),
    ("hot: ARC scaled the idle runner down", slot(S.HOT), {}, RUNNING, (S.WARMING, None)),
    ("hot: a job wins over a lost placeholder (the job's pod took it)",
     slot(S.HOT), {"r1": BUSY}, GONE, (S.TAKEN, "r1")),
    ("lost: the runner is handed a job anyway (idle runners take jobs whatever is advertised)",
     slot(S.LOST), {"r1": BUSY}, GONE, (S.TAKEN, "r1")),
    ("lost stays lost until decide mends it", slot(S.LOST), {"r1": IDLE}, RUNNING, None),
    ("taken: the workflow pod preempted the placeholder",
     slot(S.TAKEN), {"r1": BUSY}, GONE, (S.RELEASED, None)),
    ("taken: the placeholder still waits for the workflow pod",
     slot(S.TAKEN), {"r1": BUSY}, RUNNING, None),
    ("taken: the workflow pod is bound elsewhere (free room, another placeholder preempted)",
     slot(S.TAKEN), {"r1": STARTED}, RUNNING, (S.RELEASED, None)),
    ("taken: the runner is gone (job over): kept until survivorWindow, in case it comes back",
     slot(S.TAKEN), {}, RUNNING, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "one", "runners", "ph", "expected"), SYNC_CASES, ids=[c[0] for c in SYNC_CASES]
)
def test_sync(
    name: str,
    one: HotSlot,
    runners: dict[str, RunnerSeen],
    ph: PlaceholderSeen,
    expected: tuple[HotState, str | None] | None,
) -> None:
    moves = sync_hot([one], runners, {one.placeholder: ph})
    if expected is None:
        assert moves == ()
        return
    (move,) = moves
    assert (move.target, move.runner, move.kind) == (*expected, Kind.PASSIVE)
    after = apply(one, move, now=5.0)  # every passive move is on the table
    assert (after is None) is (move.target is S.RELEASED)


def test_a_runner_is_paired_with_one_slot_only() -> None:
    """Two WARMING slots and one idle runner: only the older slot is confirmed, so a single
    idle runner never backs two advertised slots."""
    older, newer = slot(S.WARMING, None, at=1.0, sid="a"), slot(S.WARMING, None, at=2.0, sid="b")
    moves = sync_hot([newer, older], {"r1": IDLE}, {"a-wf": RUNNING, "b-wf": RUNNING})
    assert [(m.slot_id, m.target, m.runner) for m in moves] == [("a", S.HOT, "r1")]


def test_a_runner_held_by_a_slot_is_not_paired_again() -> None:
    held = slot(S.LOST, "r1", sid="a")
    waiting = slot(S.WARMING, None, sid="b")
    moves = sync_hot([held, waiting], {"r1": IDLE}, {"b-wf": RUNNING})
    assert moves == ()


# --- decide: time out, release, mend, open -----------------------------------------------------


def names() -> list[str]:
    return [f"n{i}" for i in range(1, 20)]


@pytest.mark.parametrize(
    ("name", "slots", "wanted", "now", "expected_moves", "new"),
    [
        ("open up to wanted", [], 2, 0.0, [], 2),
        ("a WARMING slot times out 1 s after placeholderReadyTimeout, not 1 s before",
         [slot(S.WARMING, at=0.0)], 1, 299.0, [], 0),
        ("timed out at the timeout, replaced by a new slot",
         [slot(S.WARMING, at=0.0)], 1, 300.0, [("s1", S.RELEASED, Kind.ACTIVE)], 1),
        ("a TAKEN placeholder is kept 1 s before survivorWindow",
         [slot(S.TAKEN, at=0.0)], 0, 119.0, [], 0),
        ("a TAKEN placeholder is released at survivorWindow",
         [slot(S.TAKEN, at=0.0)], 0, 120.0, [("s1", S.RELEASED, Kind.ACTIVE)], 0),
        ("a TAKEN slot does not count: a new one keeps the reserve",
         [slot(S.TAKEN, at=0.0)], 1, 10.0, [], 1),
        ("a lost slot still wanted is mended",
         [slot(S.LOST)], 1, 10.0, [("s1", S.WARMING, Kind.ACTIVE)], 0),
        ("drain (wanted 0): every live slot is released, HOT last",
         [slot(S.HOT, sid="h"), slot(S.LOST, sid="l"), slot(S.WARMING, sid="w")], 0, 10.0,
         [("l", S.RELEASED, Kind.ACTIVE), ("w", S.RELEASED, Kind.ACTIVE),
          ("h", S.RELEASED, Kind.ACTIVE)], 0),
        ("reserve shrank by one: the lost slot goes, the confirmed one stays",
         [slot(S.HOT, sid="h"), slot(S.LOST, sid="l")], 1, 10.0,
         [("l", S.RELEASED, Kind.ACTIVE)], 0),
        ("reserve shrank by one: the newest WARMING slot goes before an older one",
         [slot(S.WARMING, sid="old", at=1.0), slot(S.WARMING, sid="new", at=2.0)], 1, 10.0,
         [("new", S.RELEASED, Kind.ACTIVE)], 0),
    ],
)  # fmt: skip
def test_decide(
    name: str,
    slots: list[HotSlot],
    wanted: int,
    now: float,
    expected_moves: list[tuple[str, HotState, Kind]],
    new: int,
) -> None:
    moves, fresh = decide_hot(slots, wanted=wanted, now=now, timings=TIMINGS, new_name=names())
    assert [(m.slot_id, m.target, m.kind) for m in moves] == expected_moves
    assert len(fresh) == new
    assert all(s.state is S.WARMING and s.runner is None and s.entered_at == now for s in fresh)
    by_id = {s.slot_id: s for s in slots}
    for move in moves:  # every active move is on the table
        apply(by_id[move.slot_id], move, now)


def test_a_mend_creates_a_new_placeholder_and_restarts_the_ready_timeout() -> None:
    lost = HotSlot("s1", S.LOST, "s1-wf", "r1", 50.0, 0.0)
    (mend,), _ = decide_hot([lost], wanted=1, now=60.0, timings=TIMINGS, new_name=["s1-wf-2"])
    after = apply(lost, mend, 60.0)
    assert after is not None
    assert (after.state, after.placeholder, after.runner, after.requested_at) == (
        S.WARMING, "s1-wf-2", "r1", 60.0
    )  # fmt: skip


def test_a_move_off_the_table_is_refused() -> None:
    with pytest.raises(InvalidHotMove, match="LOST -> HOT"):
        apply(slot(S.LOST), HotMove("s1", S.HOT, Kind.PASSIVE, "", "r1"), 1.0)


# --- what the scaler keeps and what is advertised ----------------------------------------------


def test_the_scaler_keeps_a_runner_per_live_slot_and_only_hot_ones_are_advertised() -> None:
    slots = [slot(s, sid=s.value) for s in (S.WARMING, S.HOT, S.HOT, S.LOST, S.TAKEN)]
    assert scaler_hot_runners(slots) == 4  # TAKEN: its runner is busy, counted as assigned
    assert confirmed_hot(slots) == 2


BACKS_CASES = [
    # (name, slot, runner seen, placeholder seen, counted on the workflow side)
    ("a confirmed slot: idle runner, placeholder Running", slot(S.HOT), IDLE, RUNNING, True),
    ("a confirmed slot whose placeholder stopped counting", slot(S.HOT), IDLE, PENDING, False),
    ("a job landed on a HOT slot between two steps: held for its workflow pod",
     slot(S.HOT), BUSY, RUNNING, True),
    ("taken: held for the job's workflow pod, not created or not bound yet",
     slot(S.TAKEN), BUSY, RUNNING, True),
    ("taken: the job's workflow pod is bound, the job holds its own room",
     slot(S.TAKEN), STARTED, RUNNING, False),
    ("a HOT slot whose job's workflow pod bound before the step saw the job",
     slot(S.HOT), STARTED, RUNNING, False),
    ("taken: its runner is gone (the job is over), the placeholder backs no runner",
     slot(S.TAKEN), None, RUNNING, False),
    ("hot: ARC scaled the runner down between two steps", slot(S.HOT), None, RUNNING, False),
    ("hot: the runner deregistered", slot(S.HOT), STARTING, RUNNING, False),
    ("warming: never counted, even with both halves there", slot(S.WARMING), IDLE, RUNNING, False),
    ("lost: never counted", slot(S.LOST), IDLE, RUNNING, False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "one", "seen", "ph", "expected"), BACKS_CASES, ids=[c[0] for c in BACKS_CASES]
)
def test_which_placeholders_back_the_workflow_side(
    name: str, one: HotSlot, seen: RunnerSeen | None, ph: PlaceholderSeen, expected: bool
) -> None:
    """A slot's placeholder is counted only while it backs one runner's slot: a free one
    (the runner idle) or a taken one's (the runner's job has no room of its own yet), never
    both a busy runner's job and free room (issue 43)."""
    assert backs_workflow_side(one, seen, ph) is expected
