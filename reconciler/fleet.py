"""The fleet view and this cluster's share of it (pure: a view in, a share out).

Several clusters serve one runner label (a *fleet*); each cluster's listener sees every queued
job of that label, so each alone builds pairs for all of them and keeps its own full warm pool:
both clusters launch nodes for one job (docs/fleet.md). With ``fleetView`` on, a listener
reads the fleet's rows (one per cluster, from the shared store's recording rules) and builds
pairs only for its share of the queued jobs, and keeps only its share of the warm pool: a job
that misses this cluster's pool lands in another's, since GitHub assigns jobs to any scale set
of the label that advertises room.

The share (docs/design.md#fleet-view, the decision row): **an even split across the healthy
clusters**, this one always counted. ``share = 1 / healthy``, where a cluster is healthy when
its row is fresh and reports no capacity trouble. Not "free confirmed slots / the fleet's":
that share feeds on itself (a cluster with no free slot gets no share, so builds no pair, so
never gets a free slot), and a cluster that lost its capacity would hand its share to no one
until its free slots said so. A cluster in trouble drops out, so the others' shares grow at
once to cover its jobs.

Fails safe: no view, an unreadable one, or one whose own row is older than ``max_age`` gives
no share (``share is None``): the listener acts alone, exactly as with the view off.
Queued jobs and the warm pool are both split exactly: the parts sum to the queue and to
``proactiveCapacity`` (the first clusters by name take what is left over), so the fleet keeps
one warm pool, not one per cluster. A cluster whose part is 0 advertises nothing while idle;
GitHub sends the job to a cluster that advertises room, the pool the fleet keeps for it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from reconciler.snapshot import Demand, FleetPart


@dataclass(frozen=True, slots=True)
class ClusterRow:
    """One cluster's row of the fleet view (the recording rules of config/monitoring/)."""

    cluster: str
    #: Wall time the row's newest series was sampled (the rule evaluation's timestamp).
    sampled_at: float
    free_slots: float = 0.0
    in_flight: float = 0.0
    queued: float = 0.0
    #: 1 while the cluster is short of capacity (failing closed, claimed jobs without a
    #: node, pairs timing out), else 0.
    trouble: float = 0.0


@dataclass(frozen=True, slots=True)
class FleetView:
    """The rows of one fleet as last read; ``error`` when the read failed (rows then empty)."""

    rows: tuple[ClusterRow, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class FleetShare:
    """This cluster's share, or why there is none (then the listener acts alone)."""

    #: In (0, 1]; None: act alone (view off, stale, unreachable, or this cluster missing).
    share: float | None
    reason: str
    #: Age of this cluster's own row (None: no row).
    age: float | None = None
    #: The healthy clusters, sorted by name (this one included).
    healthy: tuple[str, ...] = ()
    #: This cluster's place among them: who builds the jobs an even split leaves over.
    rank: int = 0

    @property
    def fresh(self) -> bool:
        return self.share is not None


def fleet_share(view: FleetView | None, *, cluster: str, now: float, max_age: float) -> FleetShare:
    """This cluster's share of the fleet's queued jobs and warm pool (module doc).

    1. No view, or the read failed: no share.
    2. This cluster's own row missing, or older than ``max_age``: no share (the store or the
       path to it is behind; the other rows are at least as old as what we would compare).
    3. Healthy clusters: this one, plus every other whose row is within ``max_age`` and
       reports no trouble. ``share = 1 / len(healthy)``.
    """
    if view is None:
        return FleetShare(None, "fleet view not read yet")
    if view.error is not None:
        return FleetShare(None, f"fleet view unreadable: {view.error}")
    own = next((r for r in view.rows if r.cluster == cluster), None)
    if own is None:
        return FleetShare(None, f"cluster {cluster!r} has no row in the fleet view")
    age = max(0.0, now - own.sampled_at)
    if age > max_age:
        return FleetShare(None, f"fleet view stale: {age:.0f}s old > maxAge {max_age:g}s", age)
    others = sorted(
        r.cluster
        for r in view.rows
        if r.cluster != cluster and now - r.sampled_at <= max_age and r.trouble <= 0
    )
    healthy = tuple(sorted((cluster, *others)))
    return FleetShare(
        1.0 / len(healthy),
        f"even split across {len(healthy)} healthy cluster(s)",
        age,
        healthy,
        rank=healthy.index(cluster),
    )


def split_of(count: int, rank: int, members: int) -> int:
    """Member ``rank``'s part of ``count`` split evenly over ``members``: the parts sum to
    ``count`` exactly, the first ``count mod members`` members (by name) take one more."""
    if members <= 1 or count <= 0:
        return max(0, count)
    base, left = divmod(count, members)
    return base + (1 if rank < left else 0)


def with_share(demand: Demand, share: FleetShare) -> Demand:
    """The demand decide sees: this cluster's part of the queued jobs, carrying its part of the
    fleet for the warm pool (``Demand.fleet``). A failing demand (None) stays failing: the
    floor is this cluster's own.

    Queued jobs are split exactly (:func:`split_of`), not rounded up in every cluster: one
    queued job rounded up is a pair in each cluster for it, the duplication the view is for.
    Clusters whose views disagree for a moment (one sees a peer in trouble, the other not)
    may cover a job twice or, briefly, not at all; the warm pools still take it."""
    if share.share is None:
        return demand
    members = len(share.healthy) or 1
    queued = (
        None if demand.queued_jobs is None else split_of(demand.queued_jobs, share.rank, members)
    )
    return replace(demand, queued_jobs=queued, fleet=FleetPart(share.rank, members))
