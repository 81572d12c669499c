"""One window's figures (simulator/measurement/fleet_window.py) on small hand-made logs:
clusters a and b, one scale set each, the window [100, 200) s of a run that ends at 1000 s."""

from __future__ import annotations

import math
from typing import Any

import pytest

from simulator.measurement.fleet_window import ClusterWindow, WindowError, window_figures

Event = dict[str, Any]
START, END, RUN_END = 100.0, 200.0, 1000.0
INF = math.inf


def registered(cluster: str) -> Event:
    return {
        "t": 0.0,
        "type": "scale_set_registered",
        "scale_set": f"ss-{cluster}",
        "cluster": cluster,
    }


def queued(t: float, n: int) -> Event:
    return {"t": t, "type": "job_queued", "job": n, "labels": ["x"]}


def assigned(t: float, n: int, cluster: str) -> Event:
    return {"t": t, "type": "job_assigned", "job": n, "cluster": cluster}


def running(t: float, n: int) -> Event:
    return {"t": t, "type": "job_running", "job": n}


def failed(t: float, n: int) -> Event:
    return {"t": t, "type": "job_failed", "job": n}


def pair(t: float, name: str, cluster: str) -> list[Event]:
    return [
        {"t": t, "type": "pod_created", "pod": f"{name}-{h}", "role": role, "cluster": cluster}
        for h, role in (("r", "placeholder-runner"), ("w", "placeholder-workflow"))
    ]


def pause(t: float, pod: str, cluster: str) -> Event:
    return {
        "t": t,
        "type": "pod_created",
        "pod": pod,
        "role": "placeholder-runner",
        "cluster": cluster,
    }


def step(t: float, cluster: str, ready: int) -> Event:
    return {"t": t, "type": "reconcile_step", "scale_set": f"ss-{cluster}", "ready": ready}


def figures(*stories: Event | list[Event]) -> Any:
    events: list[Event] = [registered("a"), registered("b")]
    for story in stories:
        events.extend(story if isinstance(story, list) else [story])
    events.sort(key=lambda e: e["t"])  # the log's own order
    events.append({"t": RUN_END, "type": "run_ended"})
    return window_figures(events, START, END)


@pytest.mark.parametrize(
    ("story", "waits"),
    [
        # queued at the window's start counts; queued at its end is the next window's
        ([queued(START, 1), running(START + 30, 1)], (30.0,)),
        ([queued(END, 1), running(END + 5, 1)], ()),
        ([queued(START - 1, 1), running(START + 5, 1)], ()),
        # a job started after the window still counts, with its whole wait
        ([queued(150, 1), running(400, 1)], (250.0,)),
        # fair: failed (even after running) and never started are infinitely late
        ([queued(150, 1), running(160, 1), failed(170, 1)], (INF,)),
        ([queued(150, 1), failed(155, 1)], (INF,)),
        ([queued(150, 1)], (INF,)),
        # queue order
        ([queued(120, 7), queued(110, 8), running(130, 7), running(300, 8)], (190.0, 10.0)),
    ],
)
def test_the_jobs_queued_in_the_window_and_their_fair_waits(
    story: list[Event], waits: tuple[float, ...]
) -> None:
    result = figures(*story)
    assert result.waits == waits
    assert result.jobs_queued == len(waits)


def test_a_cluster_took_the_window_jobs_it_was_given_whenever() -> None:
    result = figures(
        [queued(110, 1), assigned(120, 1, "a")],
        [queued(130, 2), assigned(500, 2, "b")],  # given after the window: still b's
        [queued(140, 3), assigned(150, 3, "b")],
        [queued(90, 4), assigned(150, 4, "a")],  # queued before the window: not counted
        queued(160, 5),  # never given: the fleet's, no cluster's
    )
    assert [(c.cluster, c.jobs_taken) for c in result.clusters] == [("a", 1), ("b", 2)]
    assert result.jobs_queued == 4


@pytest.mark.parametrize(
    ("story", "created"),
    [
        (pair(START, "p1", "a"), {"a": 1, "b": 0}),  # two halves, one pair
        (pair(END, "p1", "a"), {"a": 0, "b": 0}),
        (pair(START - 1, "p1", "a"), {"a": 0, "b": 0}),
        ([*pair(120, "p1", "a"), *pair(130, "p2", "b"), *pair(140, "p3", "b")], {"a": 1, "b": 2}),
        # a half recreated in the window belongs to a pair created before it
        ([*pair(50, "p1", "a"), pair(150, "p1", "a")[0]], {"a": 0, "b": 0}),
        # a warm pool's pause pod is a unit alone
        ([pause(150, "pause-1", "b")], {"a": 0, "b": 1}),
    ],
)
def test_pairs_created_in_the_window(story: list[Event], created: dict[str, int]) -> None:
    result = figures(story)
    assert {c.cluster: c.pairs_created for c in result.clusters} == created


@pytest.mark.parametrize(
    ("story", "ready"),
    [
        # held all window (set before it)
        ([step(10, "a", 4)], {"a": 4.0, "b": 0.0}),
        # changed mid-window: 2 for 50 s, then 6 for 50 s
        ([step(10, "a", 2), step(150, "a", 6)], {"a": 4.0, "b": 0.0}),
        # changed after the window: only the value in force counts
        ([step(10, "a", 2), step(250, "a", 9)], {"a": 2.0, "b": 0.0}),
        # first step mid-window: 0 before it
        ([step(175, "b", 4)], {"a": 0.0, "b": 1.0}),
    ],
)
def test_mean_ready_is_the_time_weighted_mean_over_the_window(
    story: list[Event], ready: dict[str, float]
) -> None:
    result = figures(story)
    assert {c.cluster: c.mean_ready for c in result.clusters} == pytest.approx(ready)


def test_a_log_without_steps_has_no_ready_figure() -> None:
    """Stock ARC and the warm pool write no reconcile_step: 0 would read as "held nothing"."""
    assert figures(queued(150, 1)).clusters == (
        ClusterWindow("a", 0, 0, None),
        ClusterWindow("b", 0, 0, None),
    )


@pytest.mark.parametrize(
    ("start", "end", "events", "message"),
    [
        (200.0, 100.0, [], r"need 0 <= start < end"),
        (100.0, 100.0, [], r"need 0 <= start < end"),
        (-1.0, 100.0, [], r"need 0 <= start < end"),
        (0.0, INF, [], r"need 0 <= start < end"),
        (100.0, 200.0, [registered("a")], r"no run_ended event"),
        (100.0, 2000.0, [{"t": RUN_END, "type": "run_ended"}], r"ends after the run \(1000 s\)"),
    ],
)
def test_a_window_the_log_cannot_answer_is_refused(
    start: float, end: float, events: list[Event], message: str
) -> None:
    with pytest.raises(WindowError, match=message):
        window_figures(events, start, end)
