"""The e2e checker's judgement, from samples alone (e2e/observe.py)."""

from __future__ import annotations

from typing import Any

import pytest

from e2e.observe import (
    JobOutcome,
    Poll,
    Sample,
    confirmed_pairs,
    judge,
    over_advertised,
    violations,
)


def pod(
    pair: str,
    role: str,
    phase: str = "Running",
    node: str | None = "n1",
    deleting: bool = False,
    confirm_at: str | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "labels": {"arc-capacity.dev/pair": pair, "arc-capacity.dev/role": role},
        "annotations": {"arc-capacity.dev/confirm-at": confirm_at} if confirm_at else {},
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    return {"metadata": metadata, "status": {"phase": phase}, "spec": {"nodeName": node}}


def sample(at: float, confirmed: int, busy: int = 0) -> Sample:
    return Sample(at, confirmed, busy, 0, 0, 0, 0, 0)


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        ([pod("a", "runner"), pod("a", "workflow")], 1),
        ([pod("a", "runner"), pod("a", "workflow", phase="Pending", node=None)], 0),
        ([pod("a", "runner"), pod("a", "workflow", deleting=True)], 0),
        ([pod("a", "runner"), pod("b", "workflow")], 1),
        ([pod("a", "runner"), pod("b", "runner"), pod("c", "workflow")], 1),
        ([pod(p, r) for p in "abc" for r in ("runner", "workflow")], 3),
        ([pod("a", "runner"), pod("a", "workflow", phase="Pending", confirm_at="binding")], 1),
        ([pod("a", "runner"), pod("a", "workflow", phase="Pending", confirm_at="running")], 0),
        ([pod("a", "runner"), pod("a", "workflow", node="not-ready", confirm_at="binding")], 0),
        ([pod("a", "runner"), pod("a", "workflow", phase="Failed", confirm_at="binding")], 0),
    ],
    ids=[
        "both-running",
        "workflow-pending",
        "workflow-deleting",
        "halves-of-two-pairs-back-one-slot",
        "two-runner-halves-one-workflow-half",
        "three",
        "bound-half-confirmed-at-binding",
        "bound-half-that-waits-for-running",
        "bound-to-a-node-not-ready",
        "failed-half",
    ],
)
def test_a_slot_is_the_fewer_of_confirmed_runner_and_workflow_halves(
    pods: list[Any], expected: int
) -> None:
    assert confirmed_pairs(pods, {"n1"}) == expected


@pytest.mark.parametrize(
    ("poll_at", "capacity", "over"),
    [
        (10.0, 2, False),  # 2 confirmed at 10
        (10.0, 3, True),  # one more than anything sampled
        (11.9, 4, False),  # 4 = 2 confirmed + 2 busy sampled at 11.5
        (13.5, 4, False),  # 11.5 is within the 2 s grace
        (14.0, 4, True),  # 11.5 is 2.5 s before: only 1 confirmed since
    ],
)
def test_a_poll_may_advertise_only_what_was_confirmed_or_busy_just_before_it(
    poll_at: float, capacity: int, over: bool
) -> None:
    samples = [
        sample(9.0, 2),
        sample(10.0, 2),
        sample(11.5, 2, busy=2),
        sample(12.0, 1),
        sample(13.0, 1),
    ]
    found = over_advertised([Poll(poll_at, capacity)], samples)
    assert bool(found) is over


def test_a_sample_after_the_poll_never_excuses_it() -> None:
    """A job the header attracted counts as busy after the poll; it must not excuse the poll."""
    samples = [sample(9.0, 1), sample(10.5, 1, busy=1)]
    assert over_advertised([Poll(10.0, 2)], samples) == [{"at": 10.0, "advertised": 2, "bound": 1}]


def test_judge_counts_stuck_and_unrunnable_jobs_and_leftovers() -> None:
    outcomes = [
        JobOutcome(1, 0.0, True, 1.0, 5.0),
        JobOutcome(2, 0.0, True, 1.0, None),
        JobOutcome(3, 0.0, False, None, None),
    ]
    figures = judge(outcomes, [], [], ["ph-1"], workflow_ran={1: True, 2: False})
    assert (figures["jobs"], figures["completed"], figures["stuck"]) == (3, 1, 2)
    assert figures["claimed_unrunnable"] == 1
    assert figures["placeholders_left_behind"] == 1
    assert violations(figures) == ["stuck=2", "claimed_unrunnable=1", "placeholders_left_behind=1"]


def test_a_poll_before_any_sample_may_advertise_nothing() -> None:
    """With no sample yet nothing was confirmed: a poll advertising 1 then is over."""
    assert over_advertised([Poll(1.0, 0), Poll(2.0, 1)], [sample(5.0, 3)]) == [
        {"at": 2.0, "advertised": 1, "bound": 0}
    ]
