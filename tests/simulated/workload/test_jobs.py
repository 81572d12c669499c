"""Job arrivals and the HUD feed."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from simulator.workload.actions import ActionsService
from simulator.workload.hud import Hud, HudUnavailable, Outage
from simulator.workload.jobs import (
    DurationDist,
    JobSpec,
    RateStep,
    TraceError,
    burst,
    load_trace,
    merge,
    poisson_stream,
)
from tests.simulated.workload.builders import bare_log

DIST = DurationDist(median=300.0, sigma=0.5, low=60.0, high=900.0)


def test_a_rate_schedule_gives_about_the_expected_number_of_jobs_per_step() -> None:
    jobs = poisson_stream(
        random.Random(1),
        [RateStep(0, 100), RateStep(3600, 1000)],
        until=7200,
        labels=("x",),
        duration=DIST,
        name="n",
        repository="o/r",
    )
    first = sum(j.at < 3600 for j in jobs)
    second = len(jobs) - first
    assert 70 <= first <= 130 and 900 <= second <= 1100
    assert all(60 <= j.duration <= 900 for j in jobs)
    assert [j.at for j in jobs] == sorted(j.at for j in jobs)


def test_a_burst_puts_its_jobs_inside_its_window_and_the_same_seed_repeats_it() -> None:
    a = burst(
        random.Random(7),
        at=100,
        count=50,
        over=60,
        labels=("x",),
        duration=DIST,
        name="n",
        repository="o/r",
    )
    b = burst(
        random.Random(7),
        at=100,
        count=50,
        over=60,
        labels=("x",),
        duration=DIST,
        name="n",
        repository="o/r",
    )
    assert len(a) == 50 and all(100 <= j.at <= 160 for j in a)
    assert a == b


def test_a_trace_is_read_and_a_bad_line_is_reported_with_file_and_line(tmp_path: Path) -> None:
    good = tmp_path / "trace.csv"
    good.write_text("queue_time,labels,duration\n10,gpu;linux,120\n5,,60\n", encoding="utf-8")
    jobs = load_trace(good, default_labels=("default",))
    assert [(j.at, j.labels, j.duration) for j in jobs] == [
        (10.0, ("gpu", "linux"), 120.0),
        (5.0, ("default",), 60.0),
    ]
    bad = tmp_path / "bad.csv"
    bad.write_text("queue_time,labels,duration\n10,gpu,120\nsoon,gpu,60\n", encoding="utf-8")
    with pytest.raises(
        TraceError, match=r"bad\.csv: line 3: queue_time and duration must be numbers"
    ):
        load_trace(bad)


def test_merge_orders_by_time_and_keeps_stream_order_on_ties() -> None:
    a = [JobSpec(5.0, ("a",), 1.0), JobSpec(9.0, ("a",), 1.0)]
    b = [JobSpec(5.0, ("b",), 1.0), JobSpec(1.0, ("b",), 1.0)]
    assert [j.labels[0] + str(j.at) for j in merge([a, sorted(b, key=lambda j: j.at)])] == [
        "b1.0",
        "a5.0",
        "b5.0",
        "a9.0",
    ]


def test_the_hud_reports_queued_jobs_and_fails_during_an_outage() -> None:
    loop, log = bare_log()
    svc = ActionsService(loop, log)
    svc.add_scale_set("a", ["gpu"], cluster="c")
    hud = Hud(loop, svc, log, [Outage(100.0, 200.0)])
    svc.submit(JobSpec(0.0, ("gpu",), 60.0))
    assert hud.queued_jobs(["gpu"]) == 1
    loop.run_until(loop.start + 150)
    with pytest.raises(HudUnavailable):
        hud.queued_jobs(["gpu"])
    loop.run_until(loop.start + 200)
    assert hud.queued_jobs(["gpu"]) == 1
    assert (hud.requests, hud.failures) == (3, 1)
