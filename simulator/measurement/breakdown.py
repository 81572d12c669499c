"""Where does a job's queue-to-start wait go? Charges every waiting second to one cause.

Input: the event log of one strategy (dicts, in log order). Each job waits from ``job_queued``
until ``job_running`` (or ``job_failed``, or the end of the run). Time-slicing over the log:
between two consecutive events nothing changes, so each slice is charged as a whole.

**After assignment** (``job_assigned`` .. Running): runner start, the container hook and the
workflow pod's scheduling: ``after_assignment``.

**Unassigned** (queued, not yet given to a scale set): the job belongs to the scale set that
later took it (or, if none did, the first registered scale set whose labels cover it). Its
scale set's unassigned jobs form a FIFO queue (GitHub hands out the oldest first); the job at
position ``p`` (1-based) waits for the ``p``-th slot the scale set will offer. Slots come
through a pipeline, and the job is charged to the first stage that holds its slot, given the
latest ``capacity_advertised`` (the header GitHub saw), the jobs assigned to the set and the
latest ``reconcile_step`` (the reconciler's pair counts):

1. ``assignment``: the header already has room (``advertised - assigned``) but GitHub has not
   handed the job over yet (it does so at the next poll; near zero).
2. ``ready_not_advertised``: READY capacity the reconciler counts (its ledger value) above the
   header GitHub saw: the header has not risen yet or GitHub has not polled.
3. ``waiting_for_nodes``: pairs requested and not READY (REQUESTED/PARTIAL): nodes launching,
   pods scheduling.
4. pairs the reconciler wants but has not requested (QUEUED), by ``launch_limited_by``:
   ``ramp_limit`` (launch rate / in-flight cap), ``nodepool_full`` (fit estimate: the pool is at
   its limit), ``max_runners`` (headroom), or ``queued_other`` (no limit reported).
5. beyond every pair the reconciler wants: ``max_runners`` when what it wants is clamped by
   the maxRunners headroom (``desired >= headroom``: a cap the user set, stock ARC obeys it
   too), else ``hud_statistics_lag`` when its demand (queued jobs it has seen) is smaller than
   the set's queue, else ``other``.

Strategies without ``reconcile_step`` events (stock ARC, the warm pool) have no pair state:
their unassigned time is charged to ``unassigned`` (still split from ``after_assignment``).
Every second of every wait is charged exactly once: the causes add up to the total wait.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

CAUSES = (
    "hud_statistics_lag",
    "ramp_limit",
    "nodepool_full",
    "max_runners",
    "queued_other",
    "waiting_for_nodes",
    "ready_not_advertised",
    "assignment",
    "other",
    "unassigned",
    "after_assignment",
)

#: launch_limited_by -> cause. The safety caps on pairs in flight / per step hold pairs back
#: exactly like the launch rate does, so they are charged to the ramp too.
_QUEUED_CAUSE = {
    "ramp": "ramp_limit",
    "in-flight cap": "ramp_limit",
    "per-step cap": "ramp_limit",
    "nodepool": "nodepool_full",
    "max_runners": "max_runners",
    # Launches held for one step while stuck runner halves take freed room (unblock).
    "unblocking": "ramp_limit",
}


@dataclass(frozen=True, slots=True)
class Step:
    """The fields of a ``reconcile_step`` event the attribution reads."""

    queued_pairs: int
    in_flight: int
    advertised: int
    demand: int | None
    launch_limited_by: str | None
    desired: int = 0
    headroom: int | None = None  # maxRunners - live runners; None in logs that lack it


@dataclass
class _SetState:
    labels: frozenset[str]
    header: int = 0
    assigned: int = 0  # jobs assigned to the set and not finished (GitHub's count for room)
    waiting: int = 0  # unassigned jobs whose home is this set
    step: Step | None = None


@dataclass
class Breakdown:
    """Seconds charged per cause, and the jobs and total wait they came from."""

    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CAUSES, 0.0))
    jobs: int = 0
    total_wait: float = 0.0

    def add(self, other: Breakdown) -> None:
        for cause, value in other.seconds.items():
            self.seconds[cause] += value
        self.jobs += other.jobs
        self.total_wait += other.total_wait


def slot_causes(state: _SetState) -> list[tuple[str, int | None]]:
    """The pipeline of a scale set, in the order its slots reach the queue's head.

    Each entry is (cause, how many queue positions it covers); None = all the rest.
    """
    free = max(0, state.header - state.assigned)
    step = state.step
    if step is None:
        return [("assignment", free), ("unassigned", None)]
    limit = _QUEUED_CAUSE.get(step.launch_limited_by or "", "queued_other")
    pipeline: list[tuple[str, int | None]] = [
        ("assignment", free),
        ("ready_not_advertised", max(0, step.advertised - state.header)),
        ("waiting_for_nodes", step.in_flight),
        (limit, step.queued_pairs),
    ]
    clamped = step.launch_limited_by == "max_runners" or (
        step.headroom is not None and step.desired >= step.headroom
    )
    if clamped:
        rest = "max_runners"
    elif step.demand is None or step.demand < state.waiting:
        rest = "hud_statistics_lag"
    else:
        rest = "other"
    pipeline.append((rest, None))
    return pipeline


def _charge(
    out: Breakdown,
    state: _SetState,
    dt: float,
    queue: list[Any] | None = None,
    per_job: dict[Any, dict[str, float]] | None = None,
) -> None:
    """Charge ``dt`` to the set's waiting jobs; with ``queue`` (its waiting jobs, oldest
    first) also to each job in ``per_job``."""
    left = state.waiting
    position = 0
    for cause, size in slot_causes(state):
        if left <= 0:
            return
        n = left if size is None else min(size, left)
        out.seconds[cause] += n * dt
        if per_job is not None and queue is not None:
            for job in queue[position : position + n]:
                charged = per_job.setdefault(job, {})
                charged[cause] = charged.get(cause, 0.0) + dt
        position += n
        left -= n


def _homes(events: list[Mapping[str, Any]]) -> dict[Any, str | None]:
    """Each job's scale set: the one that took it, else the first registered that could."""
    sets: list[tuple[str, frozenset[str]]] = []
    labels: dict[Any, frozenset[str]] = {}
    home: dict[Any, str | None] = {}
    for e in events:
        kind = e["type"]
        if kind == "scale_set_registered":
            sets.append((e["scale_set"], frozenset(e["labels"])))
        elif kind == "job_queued":
            labels[e["job"]] = frozenset(e["labels"])
        elif kind == "job_assigned":
            home[e["job"]] = e["scale_set"]
    for job, wanted in labels.items():
        if job not in home:
            home[job] = next((name for name, have in sets if have >= wanted), None)
    return home


def attribute(
    log: Iterable[Mapping[str, Any]], per_job: dict[Any, dict[str, float]] | None = None
) -> Breakdown:
    """Charge every job's wait (queued .. Running / failed / end) to its causes; with
    ``per_job``, the unassigned part of each job's wait is also charged to that job
    (job -> cause -> seconds), its place in its set's FIFO queue picking the cause."""
    events = list(log)
    home = _homes(events)
    out = Breakdown()
    sets: dict[str, _SetState] = {}
    waiting: dict[Any, str | None] = {}  # unassigned job -> home set
    after: set[Any] = set()  # assigned, not yet Running or finished
    assigned_to: dict[Any, str] = {}
    homeless = 0  # unassigned jobs no registered scale set could take
    last = 0.0
    for e in events:
        t = float(e["t"])
        dt = t - last
        if dt > 0:
            for set_name, state in sets.items():
                if state.waiting:
                    queue = _queue(waiting, set_name) if per_job is not None else None
                    _charge(out, state, dt, queue, per_job)
            out.seconds["other"] += dt * homeless
            out.seconds["after_assignment"] += dt * len(after)
            last = t
        kind = e["type"]
        job = e.get("job")
        if kind == "scale_set_registered":
            sets[e["scale_set"]] = _SetState(frozenset(e["labels"]))
        elif kind == "capacity_advertised":
            sets[e["scale_set"]].header = int(e["value"])
        elif kind == "reconcile_step":
            sets[e["scale_set"]].step = Step(
                int(e["queued_pairs"]),
                int(e["in_flight"]),
                int(e["advertised"]),
                None if e.get("demand") is None else int(e["demand"]),
                e.get("launch_limited_by"),
                int(e.get("desired", 0)),
                None if e.get("headroom") is None else int(e["headroom"]),
            )
        elif kind == "job_queued":
            out.jobs += 1
            waiting[job] = home.get(job)
            homeless += _adjust(sets, waiting[job], +1)
        elif kind == "job_assigned":
            homeless -= _adjust(sets, waiting.pop(job, None), -1)
            sets[e["scale_set"]].assigned += 1
            assigned_to[job] = e["scale_set"]
            after.add(job)
        elif kind == "job_running":
            after.discard(job)
        elif kind in ("job_completed", "job_failed"):
            after.discard(job)
            if job in waiting:
                homeless -= _adjust(sets, waiting.pop(job), -1)
            name = assigned_to.pop(job, None)
            if name is not None:
                sets[name].assigned -= 1
        elif kind == "run_ended":
            break
    out.total_wait = sum(out.seconds.values())
    return out


def _queue(waiting: Mapping[Any, str | None], name: str) -> list[Any]:
    """The set's unassigned jobs, oldest first (``waiting`` keeps queue order)."""
    return [job for job, home in waiting.items() if home == name]


def _adjust(sets: dict[str, _SetState], name: str | None, delta: int) -> int:
    """Count a job in or out of its set's queue; returns 1 when it has no set (homeless)."""
    if name is not None and name in sets:
        sets[name].waiting += delta
        return 0
    return 1


def table(breakdowns: Mapping[str, Breakdown]) -> str:
    """Seconds per cause (total, mean per job, share of all waiting), one block per label."""
    lines = []
    for label, b in breakdowns.items():
        lines.append(f"{label}: {b.jobs:,} jobs, {b.total_wait:,.0f} job-seconds of waiting")
        lines.append(f"  {'cause':<22} {'total s':>12} {'mean s/job':>11} {'share':>7}")
        for cause in CAUSES:
            seconds = b.seconds[cause]
            if seconds <= 0:
                continue
            mean = seconds / b.jobs if b.jobs else 0.0
            share = seconds / b.total_wait if b.total_wait else 0.0
            lines.append(f"  {cause:<22} {seconds:>12,.0f} {mean:>11,.1f} {share:>6.1%}")
    return "\n".join(lines)
