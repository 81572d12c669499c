"""The warm path read from an event log (simulator/measurement/warm_path.py, issue 31)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from simulator.measurement.warm_path import JOB_STEPS, batch_p50s, paths


def _job_log(job: int, at: float, runner: str, marks: dict[str, float]) -> list[dict[str, Any]]:
    wf = f"{runner}-workflow"
    rows = [
        {"t": at, "type": "job_queued", "job": job},
        {"t": marks["assigned"], "type": "job_assigned", "job": job},
        {"t": marks["runner bound"], "type": "pod_bound", "pod": runner},
        {"t": marks["runner Running"], "type": "pod_running", "pod": runner},
        {"t": marks["registered"], "type": "runner_registered", "runner": runner},
        {"t": marks["acquired"], "type": "job_started", "job": job, "runner": runner},
        {"t": marks["workflow created"], "type": "pod_created", "pod": wf, "role": "workflow"},
        {"t": marks["workflow bound"], "type": "pod_bound", "pod": wf},
        {"t": marks["workflow Running"], "type": "pod_running", "pod": wf},
        {"t": marks["started"], "type": "job_running", "job": job},
    ]
    return sorted(rows, key=lambda e: e["t"])


MARKS = {
    "assigned": 12.0,
    "runner bound": 13.0,
    "runner Running": 16.0,
    "registered": 20.0,
    "acquired": 20.0,
    "workflow created": 23.0,
    "workflow bound": 23.0,
    "workflow Running": 26.0,
    "started": 27.0,
}


def test_a_job_s_steps_are_the_gaps_between_its_milestones_and_add_up_to_its_wait() -> None:
    found = paths(_job_log(1, 10.0, "r1", MARKS))
    (job,) = found.jobs
    assert dict(zip(JOB_STEPS, job.steps, strict=True)) == {
        "assigned": 2.0,
        "runner bound": 1.0,
        "runner Running": 3.0,
        "registered": 4.0,
        "acquired": 0.0,
        "workflow created": 3.0,
        "workflow bound": 0.0,
        "workflow Running": 3.0,
        "started": 1.0,
    }
    assert job.wait == 17.0 and not found.unfinished


def test_an_idle_runner_up_before_the_assignment_gives_zero_length_runner_steps() -> None:
    """Without the clipping the runner steps would be negative and the sum would not be the
    job's wait."""
    early = dict(MARKS, **{"runner bound": 1.0, "runner Running": 3.0, "registered": 7.0})
    (job,) = paths(_job_log(1, 10.0, "r1", early)).jobs
    assert job.steps[1:4] == (0.0, 0.0, 0.0)
    assert job.wait == 17.0


def test_a_job_that_never_ran_is_unfinished_and_infinitely_late_in_its_batch() -> None:
    log = [*_job_log(1, 10.0, "r1", MARKS), {"t": 11.0, "type": "job_queued", "job": 2}]
    found = paths(sorted(log, key=lambda e: e["t"]))
    assert found.unfinished == (11.0,)
    # one batch with a 17 s job and a never-started one: the fair median is infinite
    assert batch_p50s(found, [(0.0, 60.0)]) == ([None], None)
    per, between = batch_p50s(found, [(0.0, 10.5)])
    assert per == [17.0] and between is None


@pytest.mark.parametrize(
    ("events", "steps"),
    [
        # both halves bound at 1 and 2, Running at 4 and 5, header at 2.5: (2, 3, 0.5)
        (
            [
                ("pod_bound", "p-1-r", 1.0),
                ("pod_bound", "p-1-w", 2.0),
                ("capacity_advertised", None, 2.5),
                ("pod_running", "p-1-r", 4.0),
                ("pod_running", "p-1-w", 5.0),
            ],
            (2.0, 3.0, 0.5),
        ),
        # taken before it ran: no Running step; still a header after binding
        (
            [
                ("pod_bound", "p-1-r", 1.0),
                ("pod_bound", "p-1-w", 1.0),
                ("capacity_advertised", None, 3.0),
            ],
            (1.0, None, 2.0),
        ),
        # one half never bound: nothing after "requested"
        ([("pod_bound", "p-1-r", 1.0)], (None, None, None)),
    ],
)
def test_a_pair_s_steps(
    events: list[tuple[str, str | None, float]], steps: tuple[Any, ...]
) -> None:
    log: list[dict[str, Any]] = [
        {"t": 0.0, "type": "pod_created", "pod": "p-1-r", "role": "placeholder-runner"},
        {"t": 0.0, "type": "pod_created", "pod": "p-1-w", "role": "placeholder-workflow"},
    ]
    for kind, pod, t in events:
        log.append({"t": t, "type": kind, "pod": pod} if pod else {"t": t, "type": kind})
    (pair,) = paths(log).pairs
    assert pair.requested == 0.0
    assert all(
        (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b))
        for a, b in zip(pair.steps, steps, strict=True)
    )
