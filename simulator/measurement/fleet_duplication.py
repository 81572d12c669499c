"""Fleet duplication: warm capacity one cluster builds or holds for jobs another cluster ran.

Several clusters may serve one label. Each capacity-aware listener reads the same fleet-wide
backlog (``totalAvailableJobs`` counts every queued job no scale set has room for) and builds
pairs for all of it, but GitHub gives each job to one scale set. This module counts, from one
strategy's event log, what that costs, per cluster.

**Units.** A capacity-aware *pair* (its two placeholder halves, ``<pair>-r`` / ``<pair>-w``,
named as :mod:`simulator.measurement.pair_breaks` reads them) or, for any other placeholder
(a warm pool's pause pod), the pod alone. A unit belongs to the cluster and scale set its
``pod_created`` names; it is *created* at its first ``pod_created`` and *ends* at the last end
(``pod_disrupted`` / ``pod_ended`` / ``pod_deleted``) of its pods, or at ``run_ended`` while
one is still there. A unit is **used** when a runner or workflow pod took one of its pods
(a ``pod_disrupted`` with reason ``preempted`` by a pod whose ``pod_created`` role is
``runner`` or ``workflow``): a job of its own cluster used the room.

**Jobs another cluster took.** A job *fits* a unit when its labels are a subset of the unit's
scale set's (``scale_set_registered``). It is *in the backlog* from its ``job_queued`` until
its ``job_assigned`` (the backlog every listener's demand reads); it is *taken by* the cluster
its ``job_assigned`` names.

**Duplicate pair** (demand-driven units only: capacity-aware pairs). An unused unit of
cluster C created at ``c`` and ended at ``e`` is a duplicate when it can be matched to a job J
that fits it, was in the backlog at ``c`` (queued at or before ``c``, assigned after ``c``)
and was taken by another cluster at or before ``e``: the pair was built while J was queued,
and released unused after J went elsewhere. The matching is one to one within C (a job
explains at most one unit of each cluster; two clusters may each duplicate it): units in
creation order, each taking the earliest-queued unmatched candidate. So duplicates in C never
exceed the jobs the other clusters took.

**Warm reserve for another cluster's jobs.** Every unused unit not matched as a duplicate
(all unused units when the strategy is not demand-driven) is matched, the same way, to a job
that fits it and that another cluster took while it stood (``c <= assigned <= e``), the
earliest such job first: warm room held in C while the work went to another cluster.

What the counts cost:

- **launches**: a NodeClaim whose creating provisioner batch placed only duplicate halves on
  it (``all``), or some (``part``). Attribution comes from the simulated provisioner
  (``launches``: claim -> the pods its batch placed on it; see
  ``simulator.cluster.provisioner.Provisioner.on_claim``); the log itself does not say it.
- **dollars of those launches**: the claim billed as results.json bills it (from
  ``nodeclaim_created`` to its ``node_removed`` / ``nodeclaim_deleted`` or the run's end, at
  the list price of the launched type, :mod:`simulator.measurement.prices`), only for claims
  that launched. Two figures bracket what the duplication cost: ``usd`` the node's whole life
  (it may later have run real jobs), ``usd_before_work`` until the first runner or workflow
  pod bound on it (or its removal).
- **reserve**: each placeholder pod's dominant share of its node from ``pod_bound`` to its end,
  priced as :mod:`simulator.measurement.reserve_cost` prices it, summed per cluster over
  duplicate units, warm-for-other units, and all units.

Limits, stated: the matching is greedy, not a maximum matching (a later unit may miss a job an
earlier one took); a unit created while a fitting job was in the backlog is attributed to the
backlog even where the listener built it for its warm pool (the log does not say which pair
answers which demand); node names shared by clusters (static nodes) are assumed to be of one
instance type.

Only the standard library is used (like the checker), so a log can be read anywhere.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from simulator.measurement.pair_breaks import PLACEHOLDER_HALF
from simulator.measurement.prices import hourly_price
from simulator.measurement.reserve_cost import PLACEHOLDER_ROLES, dominant_share

JOB_ROLES = ("runner", "workflow")


class FleetLogError(ValueError):
    """The log cannot be read as one strategy's run (the message names the event)."""


@dataclass(frozen=True, slots=True)
class ClusterDuplication:
    """What one cluster built or held for jobs other clusters ran (see the module doc)."""

    cluster: str
    units: int = 0
    used: int = 0
    duplicate: int = 0
    warm_for_other: int = 0
    launches: int = 0
    duplicate_launches: int = 0
    duplicate_launches_part: int = 0
    duplicate_node_hours: float = 0.0
    duplicate_usd: float = 0.0
    duplicate_usd_before_work: float = 0.0
    reserve_cpu_hours: float = 0.0
    reserve_usd: float = 0.0
    duplicate_reserve_cpu_hours: float = 0.0
    duplicate_reserve_usd: float = 0.0
    warm_reserve_cpu_hours: float = 0.0
    warm_reserve_usd: float = 0.0
    jobs_taken: int = 0
    #: NodeClaims launched in this cluster without an attribution record.
    unattributed_launches: int = 0


@dataclass(slots=True)
class _Unit:
    name: str
    cluster: str
    scale_set: str
    created: float
    pods: set[str] = field(default_factory=set)
    live: set[str] = field(default_factory=set)
    ended: float | None = None
    used: bool = False
    kind: str = ""  # "duplicate", "warm" or ""


@dataclass(slots=True)
class _Job:
    id: int
    labels: frozenset[str]
    queued: float
    assigned: float | None = None
    cluster: str | None = None


@dataclass(slots=True)
class _Claim:
    created: float
    cluster: str | None = None  # of the first pod bound on its node
    launched_type: str | None = None
    removed: float | None = None
    worked: float | None = None  # first runner/workflow pod bound on its node


@dataclass(slots=True)
class _Replay:
    clusters: list[str] = field(default_factory=list)
    scale_sets: dict[str, tuple[str, frozenset[str]]] = field(default_factory=dict)
    units: dict[str, _Unit] = field(default_factory=dict)
    unit_of: dict[str, _Unit] = field(default_factory=dict)  # placeholder pod -> unit
    roles: dict[str, str] = field(default_factory=dict)
    pod_cluster: dict[str, str] = field(default_factory=dict)
    jobs: dict[int, _Job] = field(default_factory=dict)
    claims: dict[str, _Claim] = field(default_factory=dict)
    node_type: dict[str, str] = field(default_factory=dict)
    held: dict[str, tuple[float, str]] = field(default_factory=dict)  # pod -> (bound, node)
    reserve: dict[str, list[float]] = field(default_factory=dict)  # unit -> [cpu-s, usd]
    requests: dict[str, tuple[float, float]] = field(default_factory=dict)  # pod -> (cpu, gpu)
    end: float = 0.0


def unit_name(pod: str, role: str) -> str:
    """The unit a placeholder pod belongs to: its pair (``-r`` / ``-w`` stripped) or itself."""
    half = PLACEHOLDER_HALF.get(role)
    if half is not None and pod.endswith("-" + half[0]):
        return pod[:-2]
    return pod


def _replay(
    events: Iterable[Mapping[str, Any]], capacity: Mapping[str, tuple[float, int]]
) -> _Replay:
    r = _Replay()
    for event in events:
        kind, t = event.get("type"), float(event.get("t", 0.0))
        pod = str(event.get("pod", ""))
        if kind == "scale_set_registered":
            cluster = str(event["cluster"])
            r.scale_sets[event["scale_set"]] = (cluster, frozenset(event["labels"]))
            if cluster not in r.clusters:
                r.clusters.append(cluster)
        elif kind == "job_queued":
            r.jobs[int(event["job"])] = _Job(int(event["job"]), frozenset(event["labels"]), t)
        elif kind == "job_assigned":
            job = r.jobs.get(int(event["job"]))
            if job is None:
                raise FleetLogError(f"job_assigned at t={t}: job {event['job']} was never queued")
            job.assigned, job.cluster = t, str(event["cluster"])
        elif kind == "pod_created":
            _created(r, event, pod, t)
        elif kind == "pod_bound":
            _bound(r, event, pod, t)
        elif kind in ("pod_disrupted", "pod_ended", "pod_deleted"):
            _pod_end(r, event, pod, t, capacity)
        elif kind == "node_added":
            r.node_type[event["node"]] = event.get("instance_type") or ""
        elif kind == "nodeclaim_created":
            name = event["nodeclaim"]
            if name in r.claims:
                raise FleetLogError(
                    f"nodeclaim_created at t={t}: {name} created twice (two clusters named "
                    "a claim alike: the log cannot say which launch is whose)"
                )
            r.claims[name] = _Claim(t)
        elif kind == "nodeclaim_launched" and event["nodeclaim"] in r.claims:
            r.claims[event["nodeclaim"]].launched_type = event.get("instance_type")
        elif kind in ("node_removed", "nodeclaim_deleted"):
            claim = r.claims.get(event.get("nodeclaim") or "")
            if claim is not None and claim.removed is None:
                claim.removed = t
        elif kind == "run_ended":
            r.end = t
            for open_pod in list(r.held):
                _close_reserve(r, open_pod, t, capacity)
            for unit in r.units.values():
                if unit.live:
                    unit.ended = t
    if not r.end:
        raise FleetLogError("no run_ended event: the log is not a whole run")
    return r


def _created(r: _Replay, event: Mapping[str, Any], pod: str, t: float) -> None:
    role = str(event.get("role", ""))
    r.roles[pod] = role
    cluster = event.get("cluster")
    if cluster is not None:
        r.pod_cluster[pod] = str(cluster)
    if role not in PLACEHOLDER_ROLES:
        return
    name = unit_name(pod, role)
    unit = r.units.get(name)
    if unit is None:
        unit = r.units[name] = _Unit(name, str(cluster or ""), str(event.get("scale_set") or ""), t)
    unit.pods.add(pod)
    unit.live.add(pod)
    r.unit_of[pod] = unit
    r.requests[pod] = (float(event.get("cpu") or 0.0), float(event.get("gpu") or 0))


def _bound(r: _Replay, event: Mapping[str, Any], pod: str, t: float) -> None:
    node = event["node"]
    if pod in r.unit_of and pod not in r.held:
        r.held[pod] = (t, node)
    claim = r.claims.get(node)
    if claim is None:
        return
    if claim.cluster is None:
        claim.cluster = r.pod_cluster.get(pod)
    if claim.worked is None and r.roles.get(pod) in JOB_ROLES:
        claim.worked = t


def _pod_end(
    r: _Replay,
    event: Mapping[str, Any],
    pod: str,
    t: float,
    capacity: Mapping[str, tuple[float, int]],
) -> None:
    unit = r.unit_of.get(pod)
    if unit is None:
        return
    if (
        event.get("type") == "pod_disrupted"
        and event.get("reason") == "preempted"
        and r.roles.get(str(event.get("by", ""))) in JOB_ROLES
    ):
        unit.used = True
    if event.get("type") != "pod_disrupted" and pod in r.held:
        _close_reserve(r, pod, t, capacity)
    if pod in unit.live:
        unit.live.discard(pod)
        if not unit.live:
            unit.ended = t


def _close_reserve(
    r: _Replay, pod: str, t: float, capacity: Mapping[str, tuple[float, int]]
) -> None:
    """The reserve one placeholder held (reserve_cost's rule: bound until ended or deleted)."""
    since, node = r.held.pop(pod)
    seconds = max(0.0, t - since)
    unit = r.unit_of[pod]
    cpu, gpu = r.requests[pod]
    acc = r.reserve.setdefault(unit.name, [0.0, 0.0])
    acc[0] += seconds * cpu
    kind = r.node_type.get(node, "")
    price = hourly_price(kind)
    if price is not None and kind in capacity:
        acc[1] += seconds / 3600.0 * price * dominant_share(cpu, gpu, capacity[kind])


def _match_duplicates(units: Sequence[_Unit], jobs: Sequence[_Job], cluster: str) -> set[int]:
    """Mark units matched to a backlog job another cluster took; returns the jobs used.

    Units in creation order; the backlog at a unit's creation is swept forward in time (jobs
    queued at or before it, not yet assigned), so each unit looks at the queue only."""
    matched: set[int] = set()
    by_queue = sorted(jobs, key=lambda j: (j.queued, j.id))
    backlog: list[_Job] = []
    nxt = 0
    for unit in sorted(units, key=lambda u: (u.created, u.name)):
        while nxt < len(by_queue) and by_queue[nxt].queued <= unit.created:
            backlog.append(by_queue[nxt])
            nxt += 1
        backlog = [j for j in backlog if j.assigned is None or j.assigned > unit.created]
        ended = unit.ended if unit.ended is not None else float("inf")
        for job in backlog:  # queue order: the earliest-queued candidate first
            if (
                job.id not in matched
                and job.cluster not in (None, cluster)
                and job.assigned is not None
                and job.assigned <= ended
            ):
                matched.add(job.id)
                unit.kind = "duplicate"
                break
    return matched


def _match_warm(units: Sequence[_Unit], jobs: Sequence[_Job], taken: set[int]) -> None:
    """Mark units matched to a job another cluster took while they stood (``jobs``: those
    jobs, of other clusters, sorted by assignment; ``taken``: jobs already matched here,
    grown in place). A skip list over taken jobs keeps each look-up near constant."""
    times = [j.assigned or 0.0 for j in jobs]
    skip = list(range(len(jobs) + 1))  # index -> an index at or after it that may be free

    def free_from(i: int) -> int:
        root = i
        while skip[root] != root:
            root = skip[root]
        while skip[i] != root:  # path compression
            skip[i], i = root, skip[i]
        return root

    for i, job in enumerate(jobs):
        if job.id in taken:
            skip[i] = i + 1
    for unit in sorted(units, key=lambda u: (u.created, u.name)):
        ended = unit.ended if unit.ended is not None else float("inf")
        i = free_from(bisect.bisect_left(times, unit.created))
        if i < len(jobs) and times[i] <= ended:
            taken.add(jobs[i].id)
            skip[i] = i + 1
            unit.kind = "warm"


def _fits(job: _Job, labels: frozenset[str]) -> bool:
    return job.labels <= labels


def fleet_duplication(
    events: Iterable[Mapping[str, Any]],
    capacity: Mapping[str, tuple[float, int]],
    launches: Mapping[str, Sequence[str]] | None = None,
    *,
    demand_driven: bool = True,
) -> list[ClusterDuplication]:
    """Per cluster (in the order the log registers them), what it built or held for jobs
    other clusters ran (definitions: the module doc).

    ``capacity``: instance type -> (cpu, gpu). ``launches``: NodeClaim -> the pods its
    provisioner batch placed on it (None: launch figures are not attributed and every
    launch counts as unattributed). ``demand_driven``: the strategy builds units for queued
    jobs (capacity-aware); otherwise no unit is a duplicate, they are all warm reserve.
    """
    r = _replay(events, capacity)
    out = []
    for cluster in r.clusters:
        mine = [u for u in r.units.values() if u.cluster == cluster]
        unused = [u for u in mine if not u.used]
        labels_of = {name: labels for name, (c, labels) in r.scale_sets.items() if c == cluster}
        taken: set[int] = set()
        for scale_set, labels in labels_of.items():
            group = [u for u in unused if u.scale_set == scale_set]
            fitting = [j for j in r.jobs.values() if _fits(j, labels)]
            if demand_driven:
                taken |= _match_duplicates(group, fitting, cluster)
            others = sorted(
                (j for j in fitting if j.cluster not in (None, cluster)),
                key=lambda j: (j.assigned or 0.0, j.id),
            )
            _match_warm([u for u in group if not u.kind], others, taken)
        out.append(_cluster_figures(r, cluster, mine, launches))
    return out


def _cluster_figures(
    r: _Replay,
    cluster: str,
    units: Sequence[_Unit],
    launches: Mapping[str, Sequence[str]] | None,
) -> ClusterDuplication:
    def reserve(kind: str | None) -> tuple[float, float]:
        picked = [r.reserve.get(u.name, [0.0, 0.0]) for u in units if kind in (None, u.kind)]
        return (
            round(sum(a[0] for a in picked) / 3600.0, 2),
            round(sum(a[1] for a in picked), 2),
        )

    duplicate_pods = {p for u in units if u.kind == "duplicate" for p in u.pods}
    launched = whole = part = unattributed = 0
    hours = usd = before = 0.0
    for name, claim in r.claims.items():
        if claim.launched_type is None:
            continue
        pods = list(launches.get(name, ())) if launches is not None else []
        owner = next((r.pod_cluster[p] for p in pods if p in r.pod_cluster), claim.cluster)
        if owner != cluster:
            continue
        launched += 1
        if not pods:
            unattributed += 1
            continue
        dup = sum(p in duplicate_pods for p in pods)
        part += dup > 0
        if dup == len(pods):
            whole += 1
            until = claim.removed if claim.removed is not None else r.end
            worked = min(until, claim.worked) if claim.worked is not None else until
            price = hourly_price(claim.launched_type) or 0.0
            hours += max(0.0, until - claim.created) / 3600.0
            usd += max(0.0, until - claim.created) / 3600.0 * price
            before += max(0.0, worked - claim.created) / 3600.0 * price
    total, dup_reserve, warm = reserve(None), reserve("duplicate"), reserve("warm")
    return ClusterDuplication(
        cluster=cluster,
        units=len(units),
        used=sum(u.used for u in units),
        duplicate=sum(u.kind == "duplicate" for u in units),
        warm_for_other=sum(u.kind == "warm" for u in units),
        launches=launched,
        duplicate_launches=whole,
        duplicate_launches_part=part,
        duplicate_node_hours=round(hours, 2),
        duplicate_usd=round(usd, 2),
        duplicate_usd_before_work=round(before, 2),
        reserve_cpu_hours=total[0],
        reserve_usd=total[1],
        duplicate_reserve_cpu_hours=dup_reserve[0],
        duplicate_reserve_usd=dup_reserve[1],
        warm_reserve_cpu_hours=warm[0],
        warm_reserve_usd=warm[1],
        jobs_taken=sum(j.cluster == cluster for j in r.jobs.values()),
        unattributed_launches=unattributed,
    )
