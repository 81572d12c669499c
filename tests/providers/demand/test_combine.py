"""Several demand sources as one: the first that answers, or the largest; the floor only when
all fail. Also the ``capacityAware.demand`` settings block."""

from __future__ import annotations

import pytest

from providers.demand import FailureMode
from providers.demand.combine import Combine, CombinedDemand, combine, discount
from providers.demand.statistics import StatisticsDemand
from reconciler.settings import parse_capacity_aware
from reconciler.settings_types import SettingsError
from reconciler.snapshot import Demand

HUD_DOWN = Demand(queued_jobs=None, error="HUD http error: 503", source="hud")
HUD_UP = Demand(queued_jobs=9, source="hud")
STATS = Demand(queued_jobs=4, source="statistics")


def test_first_takes_the_preferred_source_while_it_answers() -> None:
    assert combine([HUD_UP, STATS], Combine.FIRST) == HUD_UP


def test_first_falls_back_to_the_next_source_when_the_preferred_one_fails() -> None:
    result = combine([HUD_DOWN, STATS], Combine.FIRST)
    assert (result.queued_jobs, result.source) == (STATS.queued_jobs, "statistics")
    # ...and names the failing one, so decide still applies the floor underneath the answer.
    assert result.error == "hud: HUD http error: 503"


def test_a_source_that_cannot_see_the_queue_never_masks_another_ones_outage_as_zero() -> None:
    """Regression (issue 13, scale-to-zero): statistics said 0 (no message comes while 0 is
    advertised) and hid a HUD outage, so jobs queued in it waited for the HUD to come back."""
    blind = Demand(queued_jobs=0, source="statistics")
    result = combine([blind, HUD_DOWN], Combine.MAX)
    assert result.queued_jobs == 0
    assert result.error == "hud: HUD http error: 503"


def test_max_takes_the_largest_answer() -> None:
    assert combine([STATS, HUD_UP], Combine.MAX) == HUD_UP


def test_all_failing_is_a_failure_naming_every_source_so_decide_uses_the_floor() -> None:
    stats_down = Demand(queued_jobs=None, error="no statistics received yet", source="statistics")
    result = combine([HUD_DOWN, stats_down], Combine.MAX)
    assert result.queued_jobs is None
    assert result.error == "hud: HUD http error: 503; statistics: no statistics received yet"


def test_a_source_not_started_yet_counts_as_failing() -> None:
    combined = CombinedDemand(["github", "statistics"])
    stats = StatisticsDemand()
    combined.attach(stats)
    assert combined.current.error == "github: not started; statistics: no statistics received yet"
    stats.observe(3)
    assert combined.current == Demand(
        queued_jobs=3, error="github: not started", source="statistics"
    )
    assert combined.failure_mode is FailureMode.OPEN_TO_FLOOR


def test_attaching_a_source_that_was_not_configured_is_refused() -> None:
    with pytest.raises(ValueError, match="'hud' is not one of"):
        CombinedDemand(["statistics"]).attach(_Named("hud"))


@pytest.mark.parametrize(
    ("answer", "departed", "queued"),
    [
        (Demand(queued_jobs=3, source="hud"), 0, 3),
        (Demand(queued_jobs=3, source="hud"), 1, 2),
        (Demand(queued_jobs=3, source="hud"), 3, 0),
        (Demand(queued_jobs=3, source="hud"), 5, 0),  # never below 0
        (HUD_DOWN, 2, None),  # a failure stays a failure: the floor still applies
    ],
)
def test_discount_takes_the_jobs_seen_leaving_off_a_polled_answer(
    answer: Demand, departed: int, queued: int | None
) -> None:
    result = discount(answer, departed)
    assert (result.queued_jobs, result.source, result.error) == (
        queued,
        answer.source,
        answer.error,
    )


class _Polled:
    """A polled source: every poll replaces its answer, an unchanged count included."""

    failure_mode = FailureMode.OPEN_TO_FLOOR

    def __init__(self, name: str = "hud") -> None:
        self.name = name
        self.current = Demand(queued_jobs=None, error="not polled yet", source=name)

    def answer(self, queued: int) -> None:
        self.current = Demand(queued_jobs=queued, source=self.name)


def _hud_and_statistics() -> tuple[CombinedDemand, _Polled, StatisticsDemand]:
    combined = CombinedDemand(("hud", "statistics"), Combine.MAX)
    hud, stats = _Polled(), StatisticsDemand()
    combined.attach(hud)
    combined.attach(stats)
    return combined, hud, stats


def test_a_job_assigned_since_the_last_poll_is_no_longer_queued() -> None:
    """Regression (issue 31, scale-to-zero): the HUD's answer, 30 s old, still counted a job
    GitHub had assigned, so with proactiveCapacity 0 the half its workflow pod took from its
    pair was created again on a new node, consolidated empty minutes later."""
    combined, hud, stats = _hud_and_statistics()
    stats.observe(1)
    hud.answer(1)
    assert combined.current.queued_jobs == 1
    stats.observe(0)  # the job is assigned: JobAssigned carries the new statistics
    assert combined.current.queued_jobs == 0


def test_the_next_poll_is_taken_as_it_is_even_with_an_unchanged_count() -> None:
    combined, hud, stats = _hud_and_statistics()
    stats.observe(1)
    hud.answer(1)
    stats.observe(0)
    assert combined.current.queued_jobs == 0
    stats.observe(1)  # a second job, seen by both
    hud.answer(1)
    assert combined.current.queued_jobs == 1


def test_what_only_the_polled_source_sees_stands_while_statistics_see_nothing_leave() -> None:
    combined, hud, stats = _hud_and_statistics()
    stats.observe(0)
    hud.answer(2)
    stats.observe(0)
    assert combined.current.queued_jobs == 2
    stats.observe(1)  # a job arrives: a rise takes nothing off
    assert combined.current.queued_jobs == 2


def test_never_below_what_statistics_count_themselves() -> None:
    combined, hud, stats = _hud_and_statistics()
    stats.observe(3)
    hud.answer(3)
    stats.observe(1)
    stats.observe(4)  # two left, three came: the answer is read as 1, statistics say 4
    assert combined.current.queued_jobs == 4


def test_without_statistics_a_polled_answer_is_taken_as_it_is() -> None:
    combined = CombinedDemand(("hud",), Combine.MAX)
    hud = _Polled()
    combined.attach(hud)
    hud.answer(2)
    assert combined.current.queued_jobs == 2


def test_a_failing_polled_source_still_names_its_error_for_the_floor() -> None:
    combined, hud, stats = _hud_and_statistics()
    stats.observe(1)
    hud.current = HUD_DOWN
    stats.observe(0)
    result = combined.current
    assert (result.queued_jobs, result.error) == (0, "hud: HUD http error: 503")


class _Named:
    failure_mode = FailureMode.OPEN_TO_FLOOR

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def current(self) -> Demand:
        return Demand()


class TestSettings:
    def test_default_is_the_statistics_source_alone(self) -> None:
        settings = parse_capacity_aware({}, where="t")
        assert settings.demand.resolved_sources(settings.hud.url) == ("statistics",)

    def test_with_a_hud_url_hud_is_preferred_and_statistics_is_the_fallback(self) -> None:
        settings = parse_capacity_aware({"hud": {"url": "http://hud"}}, where="t")
        assert settings.demand.resolved_sources(settings.hud.url) == ("hud", "statistics")

    @pytest.mark.parametrize(
        ("block", "message"),
        [
            ({"demand": {"sources": ["hud"]}}, "demand.sources has 'hud' but hud.url is not set"),
            ({"demand": {"sources": ["http"]}}, "demand.http.url is not set"),
            ({"demand": {"sources": ["statistics", "statistics"]}}, "lists a source twice"),
            ({"demand": {"sources": ["queue"]}}, "capacityAware.demand.sources.0: got 'queue'"),
            ({"demand": {"github": {"repositories": ["octo"]}}}, "'octo' is not 'owner/repo'"),
            ({"demand": {"combine": "sum"}}, "capacityAware.demand.combine: got 'sum'"),
        ],
    )
    def test_bad_blocks_are_one_clear_error(self, block: dict[str, object], message: str) -> None:
        with pytest.raises(SettingsError, match=message.replace(".", r"\.").replace("(", r"\(")):
            parse_capacity_aware(block, where="t")
