"""Pair breaks by cause and the warm pool's priced reserve, counted on small hand-made logs.

Each log is a short story of one or two warm pairs (``<pair>-r`` / ``<pair>-w``) and the pods
that take them, in the event log's own shape.
"""

from __future__ import annotations

from typing import Any

import pytest

from simulator.measurement.pair_breaks import halves_taken, pair_report
from simulator.measurement.reserve_cost import reserve_cost

Event = dict[str, Any]


def created(t: float, pod: str, role: str, cpu: float = 1.0, gpu: int = 0) -> Event:
    return {"t": t, "type": "pod_created", "pod": pod, "role": role, "cpu": cpu, "gpu": gpu}


def pair(t: float, name: str) -> list[Event]:
    return [
        created(t, f"{name}-r", "placeholder-runner", 0.5),
        created(t, f"{name}-w", "placeholder-workflow", 2.0),
    ]


def bound(t: float, pod: str, node: str = "n1") -> Event:
    return {"t": t, "type": "pod_bound", "pod": pod, "node": node}


def taken(t: float, pod: str, by: str) -> Event:
    return {"t": t, "type": "pod_disrupted", "pod": pod, "reason": "preempted", "by": by}


def disrupted(t: float, pod: str, reason: str) -> Event:
    return {"t": t, "type": "pod_disrupted", "pod": pod, "reason": reason}


def deleted(t: float, pod: str) -> Event:
    return {"t": t, "type": "pod_deleted", "pod": pod, "reason": "deleted"}


def ended(t: float, pod: str) -> Event:
    return {"t": t, "type": "pod_ended", "pod": pod, "phase": "Failed"}


JOBS = [
    created(0, "job-a", "runner"),
    created(0, "job-a-workflow", "workflow"),
    created(0, "job-b", "runner"),
    created(0, "job-b-workflow", "workflow"),
]


def story(*events: Event | list[Event]) -> list[Event]:
    out = list(JOBS)
    for e in events:
        out += e if isinstance(e, list) else [e]
    return out


def test_one_job_taking_both_halves_uses_the_pair_whole() -> None:
    report = pair_report(
        story(pair(0, "p1"), taken(10, "p1-r", "job-a"), taken(20, "p1-w", "job-a-workflow"))
    )
    assert report.pairs == 1
    assert report.fates == {"both halves taken by one job": 1}
    assert report.broken == 0


def test_two_jobs_each_taking_a_half_of_their_kind_is_a_use_not_a_break() -> None:
    # kube-scheduler picks victims per node, not per pair: the ledger counts halves.
    report = pair_report(
        story(pair(0, "p1"), taken(10, "p1-r", "job-a"), taken(20, "p1-w", "job-b-workflow"))
    )
    assert report.fates == {"halves taken by the pods of two jobs": 1}
    assert report.broken == 0


@pytest.mark.parametrize(
    ("events", "cause"),
    [
        (
            [taken(10, "p1-r", "job-a"), deleted(130, "p1-w")],
            "runner took the runner half; the other half went unused",
        ),
        (
            [taken(20, "p1-w", "job-a-workflow"), deleted(140, "p1-r")],
            "workflow pod took the workflow half; the other half went unused",
        ),
        (
            [taken(10, "p1-r", "job-a-workflow"), taken(30, "p1-w", "job-b-workflow")],
            "workflow pod took the runner half",
        ),
        ([taken(10, "p1-w", "job-a"), deleted(15, "p1-r")], "runner took the workflow half"),
        (
            [disrupted(5, "p1-r", "consolidated"), taken(10, "p1-w", "job-a-workflow")],
            "disrupted: consolidated",
        ),
        ([ended(14_400, "p1-w"), deleted(14_401, "p1-r")], "expired"),
    ],
    ids=[
        "runner-half-only",
        "workflow-half-only",
        "wrong-kind",
        "runner-on-workflow-half",
        "karpenter",
        "expired",
    ],
)
def test_a_broken_pair_is_counted_once_under_its_first_cause(
    events: list[Event], cause: str
) -> None:
    report = pair_report(story(pair(0, "p1"), *events))
    assert report.broken_by_cause == {cause: 1}


def test_a_workflow_pod_evicting_four_runner_halves_breaks_four_pairs() -> None:
    names = [f"p{i}" for i in range(1, 5)]
    log = story(
        *[pair(0, n) for n in names],
        *[taken(10, f"{n}-r", "job-a-workflow") for n in names],
        *[deleted(130, f"{n}-w") for n in names],
    )
    report = pair_report(log)
    assert report.broken_by_cause == {"workflow pod took the runner half": 4}
    assert halves_taken(log) == {"workflow pod took the runner half": 4}


@pytest.mark.parametrize(
    ("events", "fate"),
    [
        (
            [bound(5, "p1-r"), bound(5, "p1-w"), deleted(60, "p1-r"), deleted(60, "p1-w")],
            "runner half: released; workflow half: released",
        ),
        ([bound(5, "p1-r")], "runner half: held; workflow half: held"),
    ],
    ids=["released-unused", "held-at-end"],
)
def test_a_pair_nobody_took_is_not_broken(events: list[Event], fate: str) -> None:
    report = pair_report(story(pair(0, "p1"), *events))
    assert report.fates == {fate: 1}
    assert report.broken == 0


def test_warm_pool_pause_pods_count_as_halves_taken_but_are_not_pairs() -> None:
    log = story(
        created(0, "ci-overprov-1-r", "placeholder-runner", 0.5),
        created(0, "ci-overprov-2-w", "placeholder-workflow", 2.0),
        taken(10, "ci-overprov-1-r", "job-a"),
        disrupted(20, "ci-overprov-2-w", "consolidated"),
    )
    assert pair_report(log).pairs == 0
    assert halves_taken(log) == {"runner took the runner half": 1, "disrupted: consolidated": 1}


# --- the warm pool's idle reserve, priced --------------------------------------------------

CATALOG = {"c5.4xlarge": (16.0, 0), "g5.xlarge": (4.0, 1), "x9.weird": (8.0, 0)}


def node(name: str, instance_type: str) -> Event:
    return {"t": 0, "type": "node_added", "node": name, "instance_type": instance_type}


def test_a_placeholder_pays_its_dominant_share_of_its_node_while_it_holds_it() -> None:
    log = [
        node("cpu-node", "c5.4xlarge"),
        node("gpu-node", "g5.xlarge"),
        created(0, "p1-w", "placeholder-workflow", cpu=2.0),
        bound(0, "p1-w", "cpu-node"),
        deleted(3600, "p1-w"),  # 2/16 of a $0.68 node for one hour
        created(0, "g1-w", "placeholder-workflow", cpu=3.0, gpu=1),
        bound(1800, "g1-w", "gpu-node"),
        taken(3600, "g1-w", "job-a-workflow"),  # disruption alone does not end the hold
        deleted(3600, "g1-w"),  # the whole GPU (share 1 > 3/4 cpu) of $1.006 for half an hour
        created(0, "job-a", "runner", cpu=0.5),
        bound(0, "job-a", "cpu-node"),  # real pods are not reserve
    ]
    cost = reserve_cost(log, CATALOG)
    assert cost.cpu_hours == pytest.approx(2.0 + 1.5)
    assert cost.usd == pytest.approx(round(0.68 * 2 / 16 + 1.006 / 2, 2))
    assert cost.unpriced == ()


def test_a_placeholder_still_held_is_charged_until_the_run_ends() -> None:
    log = [
        node("cpu-node", "c5.4xlarge"),
        created(0, "p1-r", "placeholder-runner", cpu=0.5),
        bound(600, "p1-r", "cpu-node"),
        {"t": 7800, "type": "run_ended"},
    ]
    assert reserve_cost(log, CATALOG).cpu_hours == pytest.approx(0.5 * 2)


def test_an_unpriced_node_adds_no_dollars_and_is_named() -> None:
    log = [
        node("odd", "x9.weird"),
        created(0, "p1-w", "placeholder-workflow", cpu=2.0),
        bound(0, "p1-w", "odd"),
        deleted(3600, "p1-w"),
    ]
    cost = reserve_cost(log, CATALOG)
    assert (cost.cpu_hours, cost.usd, cost.unpriced) == (2.0, 0.0, ("x9.weird",))


def test_a_mended_pair_is_not_broken_and_its_loss_is_counted_as_a_mend() -> None:
    """A workflow pod took the runner half; the listener created the runner half again under
    the same name (a mend) and both halves were then used: the pair is whole again, so its
    fate is the later use and the first loss counts as a mend, not a break."""
    log = story(
        pair(0, "p1"),
        taken(10, "p1-r", "job-a-workflow"),
        created(12, "p1-r", "placeholder-runner", 0.5),
        taken(40, "p1-r", "job-b"),
        taken(50, "p1-w", "job-b-workflow"),
    )
    report = pair_report(log)
    assert report.broken == 0
    assert report.fates == {"both halves taken by one job": 1}
    assert report.mended_by_cause == {"workflow pod took the runner half": 1}
