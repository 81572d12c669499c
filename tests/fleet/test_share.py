"""This cluster's share of its fleet (reconciler/fleet.py): an even split across the healthy
clusters, this one always counted; no share (act alone) when the view is missing, unreadable
or stale."""

from __future__ import annotations

import pytest

from reconciler.fleet import ClusterRow, FleetView, fleet_share, split_of, with_share
from reconciler.snapshot import Demand, FleetPart

NOW = 10_000.0
MAX_AGE = 180.0


def row(cluster: str, age: float = 30.0, trouble: float = 0.0) -> ClusterRow:
    return ClusterRow(cluster=cluster, sampled_at=NOW - age, trouble=trouble)


@pytest.mark.parametrize(
    ("view", "share", "healthy"),
    [
        # The view missing, unreadable, or without this cluster: act alone.
        (None, None, ()),
        (FleetView(error="connect: refused"), None, ()),
        (FleetView(rows=(row("west"),)), None, ()),
        # Own row: fresh exactly at maxAge, stale one second beyond.
        (FleetView(rows=(row("east", age=MAX_AGE),)), 1.0, ("east",)),
        (FleetView(rows=(row("east", age=MAX_AGE + 1), row("west"))), None, ()),
        # Two and three healthy clusters.
        (FleetView(rows=(row("east"), row("west"))), 0.5, ("east", "west")),
        (
            FleetView(rows=(row("east"), row("west"), row("north"))),
            1 / 3,
            ("east", "north", "west"),
        ),
        # A peer in trouble or stale drops out: this cluster's share grows at once.
        (FleetView(rows=(row("east"), row("west", trouble=1))), 1.0, ("east",)),
        (FleetView(rows=(row("east"), row("west", age=MAX_AGE + 1))), 1.0, ("east",)),
        (FleetView(rows=(row("east"), row("west", age=MAX_AGE))), 0.5, ("east", "west")),
        # This cluster in trouble still counts itself (its own ledger says what it can hold).
        (FleetView(rows=(row("east", trouble=1), row("west"))), 0.5, ("east", "west")),
    ],
    ids=[
        "not-read",
        "unreadable",
        "own-row-missing",
        "own-row-at-max-age",
        "own-row-stale",
        "two-healthy",
        "three-healthy",
        "peer-in-trouble",
        "peer-stale",
        "peer-at-max-age",
        "self-in-trouble",
    ],
)
def test_the_share_is_an_even_split_across_healthy_clusters(
    view: FleetView | None, share: float | None, healthy: tuple[str, ...]
) -> None:
    got = fleet_share(view, cluster="east", now=NOW, max_age=MAX_AGE)
    assert got.share == (pytest.approx(share) if share is not None else None)
    assert got.healthy == healthy
    assert got.fresh is (share is not None)


@pytest.mark.parametrize("clusters", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("queued", [0, 1, 2, 3, 5, 11, 100])
def test_the_fleets_parts_of_the_queue_sum_to_the_queue(clusters: int, queued: int) -> None:
    """Rounded up in every cluster, one queued job was a pair in each cluster. Split
    exactly, the parts cover every job once, and no two parts differ by more than one."""
    parts = [split_of(queued, rank, clusters) for rank in range(clusters)]
    assert sum(parts) == queued
    assert max(parts) - min(parts) <= 1
    assert parts == sorted(parts, reverse=True)  # the first clusters by name take the rest


@pytest.mark.parametrize(
    ("cluster", "queued", "expected"),
    [("east", 1, 1), ("west", 1, 0), ("east", 5, 3), ("west", 5, 2), ("west", 0, 0)],
)
def test_a_cluster_builds_its_part_of_the_queue(cluster: str, queued: int, expected: int) -> None:
    view = FleetView(rows=(row("east"), row("west")))
    share = fleet_share(view, cluster=cluster, now=NOW, max_age=MAX_AGE)
    assert with_share(Demand(queued_jobs=queued), share).queued_jobs == expected


def test_the_demand_is_shared_only_while_the_view_is_fresh() -> None:
    fresh = fleet_share(FleetView(rows=(row("east"), row("west"))), cluster="east", now=NOW,
                        max_age=MAX_AGE)  # fmt: skip
    stale = fleet_share(FleetView(error="timeout"), cluster="east", now=NOW, max_age=MAX_AGE)
    demand = Demand(queued_jobs=5, source="statistics")
    assert with_share(demand, fresh) == Demand(
        queued_jobs=3, source="statistics", fleet=FleetPart(rank=0, members=2)
    )
    assert with_share(demand, stale) is demand
    # A failing demand stays failing: the floor is this cluster's own.
    failing = Demand(queued_jobs=None, error="no statistics", source="statistics")
    assert with_share(failing, fresh).queued_jobs is None
