"""PolledDemand, the loop every remote demand source (HUD, GitHub REST, HTTP) runs in."""

from __future__ import annotations

import asyncio
import logging

import pytest

from providers.demand.polling import DemandFetchError, PolledDemand


class Scripted:
    """A fetch answering from a list: an int, or an exception to raise."""

    def __init__(self, *answers: int | Exception) -> None:
        self.answers = list(answers)

    async def __call__(self) -> int:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def poll_all(source: PolledDemand, times: int) -> list[tuple[int | None, str | None]]:
    async def go() -> list[tuple[int | None, str | None]]:
        return [((d := await source.poll()).queued_jobs, d.error) for _ in range(times)]

    return asyncio.run(go())


def test_an_unexpected_fetch_error_is_an_outage_not_the_end_of_the_poller(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Regression: only the HUD source caught a bug in its fetch; a GitHub or HTTP source's
    poller died on one with its demand frozen at the last answer. Now every source reports
    Demand(None, error) (decide uses the floor), logs the traceback once, and polls on."""
    observed: list[str | None] = []
    source = PolledDemand(
        "github",
        Scripted(4, KeyError("total_count"), KeyError("total_count"), 6),
        observe=lambda _duration, kind: observed.append(kind),
    )
    caplog.set_level(logging.INFO)
    answers = poll_all(source, 4)
    assert answers[0] == (4, None)
    assert [q for q, _ in answers[1:3]] == [None, None]
    assert answers[1][1] == "internal: KeyError: 'total_count'"
    assert answers[3] == (6, None)
    assert observed == [None, "internal", "internal", None]
    tracebacks = [r for r in caplog.records if r.exc_info]
    assert len(tracebacks) == 1  # logged once, not once per poll
    assert "github demand is back after 2 failed poll(s): 6 queued jobs" in caplog.text


def test_a_fetch_failure_is_counted_under_its_kind_and_never_becomes_zero() -> None:
    observed: list[str | None] = []
    source = PolledDemand(
        "http",
        Scripted(DemandFetchError("HTTP 503", kind="http")),
        observe=lambda _duration, kind: observed.append(kind),
    )
    [(queued, error)] = poll_all(source, 1)
    assert queued is None and error == "HTTP 503"
    assert observed == ["http"]
    assert source._failures > 0  # in an outage: the next success logs the recovery


def test_only_a_changed_count_wakes_the_reconciler() -> None:
    wakes: list[int] = []
    source = PolledDemand(
        "http",
        Scripted(3, 3, DemandFetchError("timeout"), DemandFetchError("other text"), 3),
        on_change=lambda: wakes.append(1),
    )
    poll_all(source, 5)
    # None -> 3 (wake), 3 -> 3, 3 -> None (wake), None -> None (new text only), None -> 3 (wake)
    assert len(wakes) == 3
