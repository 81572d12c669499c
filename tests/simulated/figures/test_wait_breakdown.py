"""The wait breakdown charges every second a job waits to exactly one cause."""

from __future__ import annotations

from typing import Any

import pytest

from simulator.driver.step_log import launch_limit
from simulator.measurement.breakdown import attribute, table


def ev(t: float, kind: str, **fields: Any) -> dict[str, Any]:
    return {"t": t, "type": kind, "strategy": "capacity-aware", **fields}


def step(t: float, **fields: Any) -> dict[str, Any]:
    base = {
        "scale_set": "ss",
        "desired": 0,
        "queued_pairs": 0,
        "in_flight": 0,
        "ready": 0,
        "advertised": 0,
        "demand": 0,
        "launch_limited_by": "none",
        "headroom": 10,
    }
    return ev(t, "reconcile_step", **{**base, **fields})


def start() -> list[dict[str, Any]]:
    return [
        ev(0, "scale_set_registered", scale_set="ss", labels=["linux"]),
        ev(0, "capacity_advertised", scale_set="ss", value=0),
        step(0),
    ]


def test_a_three_job_burst_is_charged_stage_by_stage_and_adds_up_to_the_waits() -> None:
    log = [
        *start(),
        *(ev(10, "job_queued", job=j, labels=["linux"]) for j in (1, 2, 3)),
        # The HUD has not shown the jobs yet: all three wait on the statistics (3 x 10 s).
        step(20, desired=3, demand=3, queued_pairs=1, in_flight=2, launch_limited_by="ramp"),
        # Two pairs launching (2 x 30 s for nodes), one held by the ramp (30 s).
        step(50, desired=3, demand=3, in_flight=1, ready=2, advertised=2),
        # Two READY pairs, header still 0 for 2 s (2 x 2 s); the third job waits for its node.
        ev(52, "capacity_advertised", scale_set="ss", value=2),
        ev(52, "job_assigned", job=1, scale_set="ss"),
        ev(52, "job_assigned", job=2, scale_set="ss"),
        ev(60, "job_running", job=1, scale_set="ss"),
        ev(70, "job_running", job=2, scale_set="ss"),
        step(80, desired=1, demand=1, ready=1, advertised=3),
        ev(85, "capacity_advertised", scale_set="ss", value=3),
        ev(85, "job_assigned", job=3, scale_set="ss"),
        ev(100, "job_running", job=3, scale_set="ss"),
        ev(100, "run_ended"),
    ]
    b = attribute(log)
    charged = {cause: s for cause, s in b.seconds.items() if s}
    assert charged == {
        "hud_statistics_lag": 30.0,
        "ramp_limit": 30.0,
        "waiting_for_nodes": 60.0 + 2.0 + 8.0 + 10.0 + 10.0,
        "ready_not_advertised": 4.0 + 5.0,
        "after_assignment": 8.0 * 2 + 10.0 + 15.0,
    }
    assert b.total_wait == (60 - 10) + (70 - 10) + (100 - 10)
    assert b.jobs == 3


def test_a_job_that_never_starts_is_charged_until_the_end() -> None:
    log = [
        *start(),
        ev(10, "job_queued", job=1, labels=["linux"]),
        step(10, desired=2, demand=1, queued_pairs=2, launch_limited_by="nodepool"),
        ev(70, "run_ended"),
    ]
    b = attribute(log)
    assert b.seconds["nodepool_full"] == 60.0
    assert b.total_wait == 60.0


def test_jobs_beyond_the_max_runners_headroom_are_charged_to_max_runners_not_to_the_hud() -> None:
    log = [
        *start(),
        *(ev(0, "job_queued", job=j, labels=["linux"]) for j in range(5)),
        step(0, desired=2, demand=1, in_flight=2, headroom=2),
        ev(10, "run_ended"),
    ]
    b = attribute(log)
    assert b.seconds["waiting_for_nodes"] == 20.0
    assert b.seconds["max_runners"] == 30.0
    assert b.seconds["hud_statistics_lag"] == 0.0


def test_without_pair_state_unassigned_time_is_reported_as_such() -> None:
    log = [
        ev(0, "scale_set_registered", scale_set="ss", labels=["linux"]),
        ev(0, "capacity_advertised", scale_set="ss", value=0),
        ev(5, "job_queued", job=1, labels=["linux"]),
        ev(15, "capacity_advertised", scale_set="ss", value=1),
        ev(15, "job_assigned", job=1, scale_set="ss"),
        ev(40, "job_failed", job=1, scale_set="ss", reason="prepare_job_timeout"),
        ev(50, "run_ended"),
    ]
    b = attribute(log)
    assert {c: s for c, s in b.seconds.items() if s} == {
        "unassigned": 10.0,
        "after_assignment": 25.0,
    }
    assert "unassigned" in table({"baseline": b})


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"queued_pairs": 3, "fit_new_pairs": 0}, "nodepool"),
        ({"queued_pairs": 3, "fit_new_pairs": 10}, "ramp"),
        ({"queued_pairs": 3, "fit_new_pairs": None}, "ramp"),
        ({"queued_pairs": 0, "wanted": 12, "headroom": 10}, "max_runners"),
        ({"queued_pairs": 0}, "none"),
    ],
)
def test_the_launch_limit_names_what_holds_the_queued_pairs(
    kwargs: dict[str, Any], expected: str
) -> None:
    args: dict[str, Any] = {
        "queued_pairs": 0,
        "in_flight_before": 18,
        "fit_new_pairs": None,
        "max_in_flight": 20,
        "max_per_step": 5,
        "wanted": 3,
        "headroom": 10,
    }
    args.update(kwargs)
    assert launch_limit(**args) == expected
