"""Sizing: how many pairs decide wants, from the snapshot and the settings. Pure numbers.

1. ``max_runners_headroom``  maxRunners minus the real runners that hold or will take room
                             of their own (a Pending runner a Running runner placeholder is
                             there to absorb takes a pair's place, not room beside it);
                             ``handover_headroom`` adds, while jobs wait, the bound runners
                             whose workflow half nothing backs yet.
2. ``desired_pairs``         proactiveCapacity + queued jobs + the slots assigned jobs take
                             from READY pairs (``pairs_taken``; none without a warm pool;
                             free room left out only while some READY pair is free)
                             within that headroom (the warm
                             pairs on top of it while jobs wait), at most maxRunners; a
                             failed demand source falls back to the configured floor.
3. ``packed_target``         the pairs needing new nodes (beyond the free slots pairs in
                             flight have not taken) rounded up to node-sized groups
                             (``group_size``) while jobs are queued and the NodePool limit
                             binds before maxRunners does.
"""

from __future__ import annotations

from reconciler.config import ReconcilerConfig
from reconciler.max_runners import clamp_max_runners
from reconciler.snapshot import ClusterSnapshot


def desired_pairs(
    snapshot: ClusterSnapshot,
    config: ReconcilerConfig,
    headroom: int | None = None,
    unserved_runners: int = 0,
    free_slots: int = 0,
    *,
    ready_pairs: int | None = None,
    standing: bool = False,
) -> int:
    """proactiveCapacity + queued jobs, within maxRunners headroom, never above maxRunners;
    while jobs are queued the warm pairs may stand on top of the headroom. ``standing``: the
    count that keeps pairs already there rather than one that requests new ones.
    ``ready_pairs``: the READY pairs now, for the spoken-for rule below (None: not known).

    A pair for a job GitHub cannot hand out only costs a node, so the queued part never passes the
    headroom. But when running jobs fill maxRunners and more wait, the next job is handed out the
    moment one finishes: warm READY pairs beside the headroom are where it starts at once, instead
    of waiting for a pair to be confirmed in the room the finished job freed
    (docs/design.md#decisions: hand-over pairs). Without a queue nothing is handed over, and the
    warm pool stays within the headroom as before. The ledger still caps what is advertised at
    maxRunners, and ``maxRunners: 0`` still means no pair at all.
    """
    queued = snapshot.demand.queued_jobs
    if queued is None or snapshot.demand.error:
        # A source failed (all of them: no answer at all): fail open to at least the
        # configured floor, never to 0 and never to "unlimited".
        queued = max(queued or 0, config.hud_fallback_queued_jobs)
    room = max_runners_headroom(snapshot) if headroom is None else headroom
    # Jobs assigned whose runner has not bound yet will take READY pairs within seconds;
    # GitHub already counts those slots as taken. Counting them here refills the warm pool
    # at the assignment instead of after the runner pod's preemption lands: a merge-queue
    # batch otherwise outruns a pool refilled late (docs/design.md#decisions).
    # So will a runner that bound into free room with no lone workflow half reserved for it
    # (``unserved_runners``): the ledger's workflow side holds its slot with a READY pair's
    # workflow half until its workflow pod binds, 8-11 s later.
    # While jobs wait, a pair in free room is how that room gets advertised to the next job;
    # with no queue it only confirms room the assigned job's own pods will bind into. Jobs
    # may wait unseen too: while every READY pair is spoken for by an assigned job no slot is
    # free, GitHub sends no message for a job queued now and the demand cannot show it (a
    # merge-queue batch: a job a second, each holding its pair for 8-11 s).
    slots_taken = snapshot.slots_taken_from_pairs(unserved_runners)
    spoken_for = ready_pairs is not None and slots_taken > 0 and slots_taken >= ready_pairs
    free = 0 if queued > 0 or spoken_for else free_slots
    taken = pairs_taken(slots_taken, free)
    # The refill keeps proactiveCapacity slots free for the next jobs, however many assigned
    # jobs still hold pairs: capped at proactiveCapacity, a merge-queue batch (8-11 s from
    # assignment to the workflow pod's binding, a job a second) left no free slot and each
    # next job waited for its own pair. With proactiveCapacity 0 there is no warm pool to
    # refill: a job's pair was requested for it while queued, and counting its slot again at
    # the assignment made extra pairs and nodes on scale-to-zero (a queue count that still
    # holds the assigned job, e.g. the HUD's 30 s poll, is the likely double count). A pair
    # already standing for an assigned job is still kept until the job's pods bind: released
    # at the assignment, the room GitHub was told about was free for any other pod.
    if config.proactive_capacity == 0 and not standing:
        taken = 0
    proactive, queued = config.proactive_capacity, max(0, queued) + taken
    # While jobs wait beyond the headroom, the warm pairs stay on top of it (hand-over pairs).
    ceiling = room + proactive if queued > 0 else room
    return max(0, min(proactive + queued, ceiling, clamp_max_runners(snapshot.max_runners)))


def pairs_taken(slots_taken: int, free_slots: int) -> int:
    """Of the slots GitHub counts as taken that pairs still hold, those whose real pods will
    take a READY pair: the rest bind into free room on existing nodes (``free_slots``, the fit
    estimate's pairs that fit there less the pairs in flight that will take that room first).

    The scheduler preempts only where no node fits the pod, so a runner pod (and its workflow
    pod) with free room to bind into leaves the READY pairs standing; a refill for it confirms
    that room with a pair that is released once the job's pods bind there (churn: one
    short-lived pair per job on drain, extra node launches on scale-to-zero and the merge
    queue)."""
    return max(0, slots_taken - max(0, free_slots))


def free_pair_slots(snapshot: ClusterSnapshot, unbound_in_flight: int) -> int:
    """Pairs that fit free allocatable on existing nodes, less the pairs in flight still
    waiting for a node (they take that room first); 0 without a fit estimate."""
    on_existing = snapshot.fit.on_existing_nodes if snapshot.fit is not None else 0
    return max(0, on_existing - unbound_in_flight)


def max_runners_headroom(snapshot: ClusterSnapshot) -> int:
    """maxRunners minus the real runners that hold or will take room of their own.

    Pairs beyond it could never be handed a job. A runner still Pending while Running runner
    placeholders stand will preempt one of them (real pods outrank every placeholder), so it
    takes a pair's place rather than adding to it: subtracting it here too would release a
    pair in flight for every job GitHub assigns, then request a new one once the preemption
    lands (docs/design.md#decisions: pending runners in the headroom).
    """
    bound = pending = 0
    for runner in snapshot.runner_pods:
        if runner.alive:
            if runner.node_name is None:
                pending += 1
            else:
                bound += 1
    if pending:
        halves = sum(
            1 for pods in snapshot.placeholders.values() if pods.runner and pods.runner.counts
        )
        pending = max(0, pending - halves)
    return max(0, clamp_max_runners(snapshot.max_runners) - bound - pending)


def handover_headroom(snapshot: ClusterSnapshot, unserved_runners: int) -> int:
    """The maxRunners headroom plus, while jobs are queued or pairs hold slots GitHub counts
    as taken (:meth:`~reconciler.snapshot.ClusterSnapshot.slots_taken_from_pairs`: issue
    31's merge queue), ``unserved_runners``: bound runner
    pods that will create their workflow pod and that no reserved lone workflow half serves
    (``Survivors.unserved``).

    The ledger advertises ``min(runner side, workflow side)``. A runner that bound into room a
    finished job freed (no placeholder preempted) fills the runner side, but its workflow side is
    still to come; counting it as a whole slot released a READY pair, the workflow side stayed one
    short of maxRunners, and the next queued job waited for a new pair to be confirmed instead of
    being handed out when a job finished. A runner whose job just finished counts too for the second
    between its workflow pod's deletion and its own end: the pair that will replace it is requested
    that much earlier. Without a queue and with no slot taken from a pair (no assigned job
    waiting for its pods) nobody waits for that slot, so no pair is kept for it; nor where the
    NodePool limit binds (the fit estimate's new pairs fall short): there the pair only
    holds capped room while it waits for more, and the workflow pod takes room of its own anyway
    (figures for both: docs/design.md#decisions, unserved runners).
    """
    headroom = max_runners_headroom(snapshot)
    wider = headroom + unserved_runners
    waiting = snapshot.demand.queued_jobs or snapshot.slots_taken_from_pairs(unserved_runners)
    if not waiting or nodepool_limit_binds(snapshot, wider):
        return headroom
    return wider


def nodepool_limit_binds(snapshot: ClusterSnapshot, pairs: int) -> bool:
    """The NodePool limit binds before ``pairs`` do: the fit estimate's new pairs fall short
    of them (never without an estimate)."""
    return snapshot.fit is not None and snapshot.fit.new_pairs < pairs


def group_size(snapshot: ClusterSnapshot, config: ReconcilerConfig) -> int:
    """Pairs one new node of the best-fitting allowed type holds (1 without an estimate)."""
    if config.launch_group_size is not None:
        return config.launch_group_size
    return max(1, snapshot.fit.pairs_per_node) if snapshot.fit is not None else 1


def packed_target(
    want: int,
    live: int,
    snapshot: ClusterSnapshot,
    config: ReconcilerConfig,
    headroom: int | None = None,
    unbound_in_flight: int = 0,
) -> int:
    """Round the pairs that need *new* nodes up to whole node-sized groups.

    A lone pair makes Karpenter pick the smallest type that fits it; under a NodePool vCPU limit,
    small nodes hold fewer slots (and cost more per slot). So the rounding applies only while jobs
    are queued and the NodePool limit binds before maxRunners does (the fit estimate's new pairs <
    maxRunners headroom): there slots per vCPU of the limit decide how many jobs run. Where the pool
    has room for every pair the scale set may still need, Karpenter sizes nodes to the demand it
    sees: a lone queued job gets one pair on the type that fits it (rounding it up bought a node
    twice the size stock ARC bought; figures for both sides: docs/design.md#decisions, node-sized
    groups). The warm pool alone (``proactiveCapacity``) is kept exactly as configured, scale to
    zero stays zero, and the rounding never passes maxRunners headroom.

    Free slots on existing nodes are the fit estimate's less ``unbound_in_flight``, the pairs
    in flight still waiting for a node, as in the ramp: the estimate is refreshed every 10 s
    (``PlacementBounds``), so between refreshes its free slots include room that pairs
    requested since have taken. Counted as free, each pair a job needed was requested alone
    and Karpenter sized a node for it alone, a small one holding fewer workflow halves
    (docs/design.md#decisions: pairs in flight against free slots).
    """
    group = group_size(snapshot, config)
    free_slots = free_pair_slots(snapshot, unbound_in_flight)
    needing_nodes = want - live - free_slots
    room = max_runners_headroom(snapshot) if headroom is None else headroom
    limit_binds = nodepool_limit_binds(snapshot, room)
    if not snapshot.demand.queued_jobs or not limit_binds or group <= 1 or needing_nodes <= 0:
        return want
    return min(room, want + (-needing_nodes) % group)
