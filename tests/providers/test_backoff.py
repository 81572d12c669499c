"""The one back-off rule (providers/backoff.py) every retry loop waits by."""

from __future__ import annotations

import pytest

from listener.arc.statistics_refresh import MAX_BACKOFF
from listener.process.supervise import Backoff as RestartBackoff
from providers.actions.retry import RetryPolicy, backoff_delay
from providers.backoff import Backoff


@pytest.mark.parametrize(
    ("retry", "wait"),
    [(-1, 1.0), (0, 1.0), (1, 2.0), (2, 4.0), (4, 16.0), (5, 30.0), (6, 30.0)],
)
def test_the_wait_doubles_from_first_up_to_the_cap(retry: int, wait: float) -> None:
    assert Backoff(1.0, 30.0).delay(retry) == wait


def test_a_loop_failing_for_days_waits_the_cap_instead_of_overflowing() -> None:
    """Regression: ``first * 2.0**n`` raises OverflowError from n = 1024, which would have
    ended the statistics refresher or the task supervisor after ~1 000 failures in a row."""
    assert Backoff(5.0, 300.0).delay(10_000) == 300.0


def test_a_cap_below_the_first_wait_keeps_the_first_wait() -> None:
    assert Backoff(120.0, 60.0).delay(3) == 120.0


def test_a_negative_wait_is_refused_with_what_was_given() -> None:
    with pytest.raises(ValueError, match="first >= 0"):
        Backoff(-1.0, 30.0)


def test_every_retry_loop_waits_by_the_same_rule() -> None:
    """The Actions client, the task supervisor and the statistics refresher: one rule, each
    with its own first wait and cap (supervise counts restarts from 1)."""
    policy = RetryPolicy(wait_min=1.0, wait_max=30.0)
    assert [backoff_delay(policy, n) for n in range(7)] == [
        Backoff(1.0, 30.0).delay(n) for n in range(7)
    ]
    restart = RestartBackoff(first=1.0, cap=30.0)
    assert [restart.delay(n) for n in range(1, 8)] == [
        Backoff(1.0, 30.0).delay(n) for n in range(7)
    ]
    assert Backoff(10.0, MAX_BACKOFF).delay(1) == 20.0
