"""Launched nodes' billed time split by what they held, on small hand-made logs.

One GPU machine ``gpu-aaaaa`` (g5.xlarge) of cluster ``a`` unless a story says otherwise:
requested at 0, launched at 10, registered at 100; the run ends at 3,700.
"""

from __future__ import annotations

from typing import Any

import pytest

from simulator.measurement.node_hours import (
    STATES,
    NodeHoursLogError,
    PoolNodeHours,
    node_hours,
)
from simulator.measurement.prices import hourly_price
from simulator.measurement.replay import StrategyReplay

Event = dict[str, Any]
END = 3_700.0
NODE = "gpu-aaaaa"
TYPE = "g5.xlarge"


def machine(
    name: str = NODE, pool: str = "gpu", *, created: float = 0.0, added: float | None = 100.0
) -> list[Event]:
    out: list[Event] = [
        {"t": created, "type": "nodeclaim_created", "nodeclaim": name, "nodepool": pool},
        {
            "t": created + 10,
            "type": "nodeclaim_launched",
            "nodeclaim": name,
            "nodepool": pool,
            "instance_type": TYPE,
        },
    ]
    if added is not None:
        out.append(
            {
                "t": added,
                "type": "node_added",
                "node": name,
                "nodeclaim": name,
                "nodepool": pool,
                "instance_type": TYPE,
                "zone": "us-east-1a",
            }
        )
    return out


def pod(t_bound: float, name: str, role: str, cluster: str = "a", node: str = NODE) -> list[Event]:
    return [
        {
            "t": t_bound,
            "type": "pod_created",
            "pod": name,
            "namespace": "ns",
            "cluster": cluster,
            "role": role,
            "cpu": 1.0,
            "gpu": 1,
        },
        {"t": t_bound, "type": "pod_bound", "pod": name, "namespace": "ns", "node": node},
    ]


def gone(t: float, name: str, kind: str = "pod_deleted") -> list[Event]:
    return [{"t": t, "type": kind, "pod": name, "namespace": "ns"}]


def removed(t: float, name: str = NODE) -> list[Event]:
    return [{"t": t, "type": "node_removed", "node": name, "nodeclaim": name, "nodepool": "gpu"}]


def log(*parts: list[Event]) -> list[Event]:
    events = [e for part in parts for e in part]
    events.sort(key=lambda e: e["t"])  # stable: a story's order within an instant is kept
    return [
        {"t": 0.0, "type": "run_started", "stuck_after": 600},
        *events,
        {"t": END, "type": "run_ended"},
    ]


def seconds(row: PoolNodeHours) -> dict[str, float]:
    return {s: round(getattr(row, f"{s}_node_hours") * 3600.0, 6) for s in STATES}


def split(**held: float) -> dict[str, float]:
    return {s: held.get(s, 0.0) for s in STATES}


STORIES = [
    pytest.param(log(machine()), split(booting=100, empty=3600), id="never-held-a-pod"),
    pytest.param(
        log(machine(), pod(100, "run-1", "runner"), gone(1000, "run-1", "pod_ended")),
        split(booting=100, real=900, empty=2700),
        id="runner-then-empty-until-the-end",
    ),
    pytest.param(
        log(
            machine(),
            pod(100, "ph-r", "placeholder-runner"),
            pod(500, "run-1", "runner"),
            gone(500, "ph-r", "pod_disrupted"),
            gone(1000, "run-1", "pod_ended"),
            removed(1600),
        ),
        split(booting=100, placeholder=400, real=500, empty=600),
        id="placeholder-preempted-by-a-runner-then-consolidated",
    ),
    pytest.param(
        log(
            machine(),
            pod(100, "ph-r", "placeholder-runner"),
            pod(200, "wf-1", "workflow"),
            gone(900, "wf-1"),
        ),
        split(booting=100, placeholder=100 + 2800, real=700),
        id="real-beats-placeholder-while-both-are-on",
    ),
    pytest.param(
        log(machine(), pod(300, "dns", "other"), gone(400, "dns")),
        split(booting=100, empty=200 + 3300, real=100),
        id="any-non-placeholder-role-is-real",
    ),
    pytest.param(
        log(machine(), pod(500, "run-1", "runner"), gone(500, "run-1")),
        split(booting=100, empty=3600),
        id="bound-and-gone-at-one-instant-adds-nothing",
    ),
    pytest.param(
        log(machine(), pod(200, "run-1", "runner"), removed(1000), gone(1000, "run-1")),
        split(booting=100, empty=100, real=800),
        id="node-removed-with-a-pod-on-it",
    ),
    pytest.param(
        log(machine(), pod(700, "ph-w", "placeholder-workflow")),
        split(booting=100, empty=600, placeholder=3000),
        id="still-up-at-run-end-billed-until-it",
    ),
    pytest.param(
        log(machine(added=None), removed(400)),
        split(booting=400),
        id="launched-and-removed-before-registering-is-all-booting",
    ),
]


@pytest.mark.parametrize(("events", "expected"), STORIES)
def test_one_machine_split_by_what_it_held(events: list[Event], expected: dict[str, float]) -> None:
    (row,) = node_hours(events)
    assert (row.nodepool, row.nodes) == ("gpu", 1)
    assert seconds(row) == expected
    price = hourly_price(TYPE)
    assert price is not None
    for s in STATES:
        assert getattr(row, f"{s}_usd") == pytest.approx(expected[s] / 3600.0 * price)


def test_a_claim_that_never_launched_costs_nothing() -> None:
    failed = {"t": 5.0, "type": "nodeclaim_failed", "nodeclaim": NODE, "nodepool": "gpu"}
    created = machine(added=None)[0]
    assert node_hours(log([created, failed])) == []


def test_a_machine_no_pod_touched_has_no_cluster_and_one_a_pod_nominated_onto_does() -> None:
    nominated = {"t": 50.0, "type": "pod_nominated", "pod": "run-1", "namespace": "ns"}
    events = log(
        machine(),
        machine("gpu-bbbbb"),
        pod(40, "run-1", "runner", cluster="b", node="elsewhere")[:1],
        [{**nominated, "node": "gpu-bbbbb"}],
    )
    assert [(r.cluster, r.empty_node_hours) for r in node_hours(events)] == [
        ("b", 1.0),
        (None, 1.0),
    ]


def test_same_named_machines_of_two_clusters_are_kept_apart() -> None:
    """Karpenter names are random per cluster: two clusters may hold ``gpu-aaaaa`` at once.
    Each pod's bind goes to its own cluster's machine, and each cluster keeps its hours."""
    events = log(
        machine(),
        machine(created=20, added=120),
        pod(200, "run-a", "runner", cluster="a"),
        pod(300, "run-b", "runner", cluster="b"),
        gone(400, "run-a"),
        pod(500, "run-a2", "runner", cluster="a"),
        gone(600, "run-a2"),
    )
    rows = {r.cluster: seconds(r) for r in node_hours(events)}
    assert rows == {
        "a": split(booting=100, empty=100 + 100 + 3100, real=200 + 100),
        "b": split(booting=100, empty=180, real=3400),
    }


def test_a_log_without_run_ended_is_refused() -> None:
    with pytest.raises(NodeHoursLogError, match="run_ended"):
        node_hours(log(machine())[:-1])


def test_the_states_sum_to_the_checkers_billed_hours_less_static_nodes() -> None:
    """The split must not invent or lose machine time: over a log with every kind of
    machine (failed claim, booting-only, removed, up at the end, a static node), the four
    states sum to what the independent checker bills, less the static node's own bill."""
    static = {
        "t": 0.0,
        "type": "node_added",
        "node": "system-0",
        "nodepool": None,
        "instance_type": "m5.xlarge",
        "static": True,
    }
    failed = [
        {"t": 30.0, "type": "nodeclaim_created", "nodeclaim": "gpu-fffff", "nodepool": "gpu"},
        {"t": 35.0, "type": "nodeclaim_failed", "nodeclaim": "gpu-fffff", "nodepool": "gpu"},
    ]
    events = log(
        [static],
        failed,
        machine(),
        pod(100, "ph-r", "placeholder-runner"),
        pod(400, "run-1", "runner"),
        gone(400, "ph-r", "pod_disrupted"),
        gone(900, "run-1", "pod_ended"),
        removed(1500),
        machine("gpu-bbbbb", created=200, added=None),
        removed(260, "gpu-bbbbb"),
        machine("cpu-ccccc", "cpu", created=50, added=110),
        pod(120, "run-2", "runner", cluster="b", node="cpu-ccccc"),
        pod(130, "pod-on-static", "other", node="system-0"),
    )
    replay = StrategyReplay()
    for e in events:
        replay.feed(e)
    billed = replay.figures()
    static_price = hourly_price("m5.xlarge")
    assert static_price is not None
    rows = node_hours(events)
    static_hours = END / 3600.0  # up all run
    assert sum(r.node_hours for r in rows) == pytest.approx(
        billed["billed_node_hours"] - static_hours
    )
    assert sum(r.usd for r in rows) == pytest.approx(
        billed["billed_cost_usd"] - static_hours * static_price
    )
    assert {(r.cluster, r.nodepool) for r in rows} == {("a", "gpu"), ("b", "cpu"), (None, "gpu")}
