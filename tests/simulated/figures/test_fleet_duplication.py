"""Fleet duplication counted on small hand-made logs: clusters a, b (and c) serve label x.

Each story is a pair (or a warm-pool pod) in cluster a and the jobs of the fleet, in the
event log's own shape; the figures asked for are cluster a's.
"""

from __future__ import annotations

from typing import Any

import pytest

from simulator.measurement.fleet_duplication import (
    ClusterDuplication,
    FleetLogError,
    fleet_duplication,
)

Event = dict[str, Any]
END = 10_000.0
CAPACITY = {"m5.2xlarge": (8.0, 0)}


def registered(cluster: str, labels: tuple[str, ...] = ("x",)) -> Event:
    return {
        "t": 0.0,
        "type": "scale_set_registered",
        "scale_set": f"ss-{cluster}",
        "cluster": cluster,
        "labels": list(labels),
    }


def created(t: float, pod: str, role: str, cluster: str = "a", cpu: float = 1.0) -> Event:
    return {
        "t": t,
        "type": "pod_created",
        "pod": pod,
        "role": role,
        "cluster": cluster,
        "cpu": cpu,
        "gpu": 0,
        "scale_set": f"ss-{cluster}",
    }


def pair(t: float, name: str = "p1", cluster: str = "a") -> list[Event]:
    return [
        created(t, f"{name}-r", "placeholder-runner", cluster, 0.5),
        created(t, f"{name}-w", "placeholder-workflow", cluster, 2.0),
    ]


def released(t: float, name: str = "p1") -> list[Event]:
    return [
        {"t": t, "type": "pod_deleted", "pod": f"{name}-{h}", "reason": "deleted"} for h in "rw"
    ]


def job(t_queued: float, t_assigned: float | None, cluster: str, n: int = 1) -> list[Event]:
    out: list[Event] = [{"t": t_queued, "type": "job_queued", "job": n, "labels": ["x"]}]
    if t_assigned is not None:
        out.append({"t": t_assigned, "type": "job_assigned", "job": n, "cluster": cluster})
    return out


def runner_took(t: float, half: str = "p1-r") -> list[Event]:
    return [
        created(t - 1, "run-1", "runner"),
        {"t": t, "type": "pod_disrupted", "pod": half, "reason": "preempted", "by": "run-1"},
    ]


def log(*parts: list[Event], clusters: str = "ab") -> list[Event]:
    events = [registered(c) for c in clusters]
    for part in parts:
        events += part
    events.sort(key=lambda e: e["t"])  # stable: a story's order within an instant is kept
    return [*events, {"t": END, "type": "run_ended"}]


def of(
    events: list[Event],
    cluster: str = "a",
    launches: dict[str, tuple[str, ...]] | None = None,
    *,
    demand_driven: bool = True,
) -> ClusterDuplication:
    result = fleet_duplication(events, CAPACITY, launches, demand_driven=demand_driven)
    return next(c for c in result if c.cluster == cluster)


@pytest.mark.parametrize(
    ("story", "events", "duplicate", "warm", "used"),
    [
        (
            "built while the job was queued, released after b took it: a duplicate",
            log(job(10, 100, "b"), pair(20), released(200)),
            1,
            0,
            0,
        ),
        (
            "the job went to a itself: nothing another cluster ran",
            log(job(10, 100, "a"), pair(20), released(200)),
            0,
            0,
            0,
        ),
        (
            "released before b took the job: the pair did not outlive the decision",
            log(job(10, 300, "b"), pair(20), released(200)),
            0,
            0,
            0,
        ),
        (
            "a runner of a took a half: the pair was used, wherever the queued job went",
            log(job(10, 100, "b"), pair(20), runner_took(150), released(200)),
            0,
            0,
            1,
        ),
        (
            "built with nothing queued, b took a job while it stood: warm reserve for b's job",
            log(pair(5), job(10, 100, "b"), released(200)),
            0,
            1,
            0,
        ),
        (
            "assigned at the instant the pair was created: not in the backlog then, warm",
            log(job(10, 20, "b"), pair(20), released(200)),
            0,
            1,
            0,
        ),
        (
            "queued at the instant the pair was created: in the backlog, a duplicate",
            log(job(20, 100, "b"), pair(20), released(200)),
            1,
            0,
            0,
        ),
        (
            "two pairs, one queued job: one job explains one pair of a cluster",
            log(
                job(10, 100, "b"),
                pair(20, "p1"),
                pair(20, "p2"),
                released(200, "p1"),
                released(200, "p2"),
            ),
            1,
            0,
            0,
        ),
        (
            "still standing at the run's end: the end closes it",
            log(job(10, 100, "b"), pair(20)),
            1,
            0,
            0,
        ),
    ],
)
def test_pairs_are_counted_by_what_became_of_the_job_they_could_serve(
    story: str, events: list[Event], duplicate: int, warm: int, used: int
) -> None:
    figures = of(events)
    assert (figures.duplicate, figures.warm_for_other, figures.used) == (duplicate, warm, used), (
        story
    )
    assert figures.units == 1 + ("two pairs" in story)


def test_a_job_that_fits_no_unit_explains_none() -> None:
    events = log(pair(20), released(200))
    events.insert(2, {"t": 10, "type": "job_queued", "job": 1, "labels": ["x", "gpu"]})
    events.insert(3, {"t": 100, "type": "job_assigned", "job": 1, "cluster": "b"})
    assert (of(events).duplicate, of(events).warm_for_other) == (0, 0)


def test_a_warm_pool_that_is_not_built_for_demand_holds_warm_reserve_never_duplicates() -> None:
    events = log(job(10, 100, "b"), pair(20), released(200))
    figures = of(events, demand_driven=False)
    assert (figures.duplicate, figures.warm_for_other) == (0, 1)


def test_a_job_a_third_cluster_took_is_duplicated_in_each_of_the_other_two() -> None:
    events = log(
        job(10, 100, "c"),
        pair(20, "pa", "a"),
        pair(20, "pb", "b"),
        released(200, "pa"),
        released(200, "pb"),
        clusters="abc",
    )
    counts = {c.cluster: c.duplicate for c in fleet_duplication(events, CAPACITY, {})}
    assert counts == {"a": 1, "b": 1, "c": 0}
    assert of(events, "c").jobs_taken == 1


def claim(t: float, name: str, launched: bool = True) -> list[Event]:
    out: list[Event] = [{"t": t, "type": "nodeclaim_created", "nodeclaim": name}]
    if launched:
        out.append(
            {
                "t": t + 2,
                "type": "nodeclaim_launched",
                "nodeclaim": name,
                "instance_type": "m5.2xlarge",
            }
        )
        out.append({"t": t + 60, "type": "node_added", "node": name, "instance_type": "m5.2xlarge"})
    return out


def bound(t: float, pod: str, node: str) -> Event:
    return {"t": t, "type": "pod_bound", "pod": pod, "node": node}


def removed(t: float, name: str) -> Event:
    return {
        "t": t,
        "type": "node_removed",
        "node": name,
        "nodeclaim": name,
        "reason": "consolidated",
    }


def test_a_node_launched_for_a_duplicate_pair_is_billed_to_the_duplication() -> None:
    # Launched at 20 for both halves, bound 80, released 200; a runner binds at 1 820;
    # removed at 3 620: 1 h of m5.2xlarge billed, 0.5 h of it before any job's pod.
    events = log(
        job(10, 100, "b"),
        pair(20),
        claim(20, "ci-1"),
        [bound(80, "p1-r", "ci-1"), bound(80, "p1-w", "ci-1")],
        released(200),
        [created(1800, "run-9", "runner"), bound(1820, "run-9", "ci-1")],
        [removed(3620, "ci-1")],
    )
    figures = of(events, launches={"ci-1": ("p1-w", "p1-r")})
    assert (figures.launches, figures.duplicate_launches, figures.duplicate_launches_part) == (
        1,
        1,
        1,
    )
    assert figures.duplicate_node_hours == 1.0
    assert figures.duplicate_usd == 0.38  # 0.384 $/h
    assert figures.duplicate_usd_before_work == 0.19
    # Reserve: (0.5 + 2) cpu for 120 s; dominant shares 0.5/8 + 2/8 of 0.384 $/h.
    assert (
        figures.duplicate_reserve_cpu_hours
        == figures.reserve_cpu_hours
        == round(2.5 * 120 / 3600, 2)
    )
    assert figures.duplicate_reserve_usd == round(120 / 3600 * 0.384 * (0.5 + 2) / 8, 2)


@pytest.mark.parametrize(
    ("story", "placed", "launched", "whole", "part", "unattributed"),
    [
        ("a duplicate half and a runner: partly", ("p1-w", "run-1"), True, 0, 1, 0),
        ("a runner only: not the duplication's", ("run-1",), True, 0, 0, 0),
        ("never launched (ICE): no node, no launch", ("p1-w", "p1-r"), False, 0, 0, 0),
        ("no attribution record: counted apart", (), True, 0, 0, 1),
    ],
)
def test_launches_are_the_duplications_by_the_pods_their_batch_placed(
    story: str, placed: tuple[str, ...], launched: bool, whole: int, part: int, unattributed: int
) -> None:
    events = log(
        job(10, 100, "b"),
        pair(20),
        [created(19, "run-1", "runner")],
        claim(20, "ci-1", launched),
        [bound(80, "p1-w", "ci-1")] if launched else [],
        released(200),
    )
    figures = of(events, launches={"ci-1": placed} if placed else {})
    assert (
        figures.duplicate_launches,
        figures.duplicate_launches_part,
        figures.unattributed_launches,
        figures.launches,
    ) == (whole, part, unattributed, int(launched)), story


@pytest.mark.parametrize(
    ("story", "events", "message"),
    [
        ("no run_ended", log(pair(20))[:-1], "no run_ended"),
        ("one claim name twice", log(claim(20, "ci-1"), claim(30, "ci-1")), "created twice"),
        (
            "assigned, never queued",
            log([{"t": 5, "type": "job_assigned", "job": 7, "cluster": "b"}]),
            "never queued",
        ),
    ],
)
def test_a_log_that_is_not_one_whole_run_is_refused_with_the_event_named(
    story: str, events: list[Event], message: str
) -> None:
    with pytest.raises(FleetLogError, match=message):
        fleet_duplication(events, CAPACITY, {})
