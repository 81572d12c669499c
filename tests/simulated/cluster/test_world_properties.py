"""Whole-cluster properties over a busy simulated morning: determinism, exact accounting,
no overcommit, and robustness to subscribers that write from inside store callbacks."""

from __future__ import annotations

import random
from typing import Any

from simulator.cluster import ClusterSpec, IceWindow, NodePoolSpec
from simulator.cluster.pods import pod_requests
from simulator.cluster.quantity import Resources
from simulator.engine.store import Obj
from tests.simulated.cluster.builders import NS, World, pod, world

HOURS = 2


def busy_world(seed: int) -> World:
    base = ClusterSpec.default()
    pools = tuple(
        NodePoolSpec(**{**p.model_dump(), "consolidate_after": 120.0}) for p in base.nodepools
    )
    spec = base.model_copy(
        update={
            "nodepools": pools,
            "ice_windows": (IceWindow(instance_type="m5.large", start=600, end=3000),),
        }
    )
    w = world(spec, seed=seed)
    rng = random.Random(seed * 31 + 1)
    placeholders: dict[str, str] = {}
    jobs: dict[str, dict[str, Any]] = {}  # runner pod -> job, until its workflow pod exists
    running: dict[str, dict[str, Any]] = {}  # workflow pod -> job
    counter = [0]

    def name(prefix: str) -> str:
        counter[0] += 1
        return f"{prefix}-{counter[0]}"

    def top_up() -> None:
        while sum(1 for r in placeholders.values() if r == "r") < 4:
            n = name("ph")
            placeholders[n + "-r"], placeholders[n + "-w"] = "r", "w"
            w.create(
                pod(
                    n + "-r",
                    cpu=1,
                    memory="2Gi",
                    priority=-10,
                    labels={"app.kubernetes.io/component": "placeholder"},
                )
            )
            w.create(
                pod(
                    n + "-w",
                    cpu=2,
                    memory="4Gi",
                    priority=10,
                    labels={"app.kubernetes.io/component": "placeholder"},
                )
            )

    def arrive() -> None:
        for _ in range(rng.randint(1, 8)):
            runner = name("runner")
            jobs[runner] = {"duration": rng.uniform(60, 900)}
            w.create(pod(runner, cpu=1, memory="2Gi", priority=0, grace=30))
        if w.loop.elapsed < HOURS * 3600 - 600:
            w.loop.call_later(rng.expovariate(1 / 40), arrive)

    def on_pod(event: str, obj: Obj) -> None:
        pod_name = obj["metadata"]["name"]
        if event == "DELETED":
            if placeholders.pop(pod_name, None):
                w.loop.call_soon(top_up)
            return
        conditions = {c["type"]: c for c in obj.get("status", {}).get("conditions") or ()}
        seen = (obj["metadata"].get("annotations") or {}).get("seen-disruption")
        if "DisruptionTarget" in conditions and pod_name.startswith("runner") and not seen:
            # A subscriber that writes synchronously from inside the callback (nested write).
            w.store.mutate(
                "Pod",
                NS,
                pod_name,
                lambda o: (
                    o["metadata"].setdefault("annotations", {}).update({"seen-disruption": "yes"})
                ),
            )
            return
        if obj.get("status", {}).get("phase") != "Running" or obj["metadata"].get(
            "deletionTimestamp"
        ):
            return
        job = jobs.pop(pod_name, None)
        if job is not None:
            workflow = pod_name + "-workflow"
            running[workflow] = job
            w.loop.call_later(
                5, w.create, pod(workflow, cpu=2, memory="4Gi", priority=20, grace=30)
            )
        elif pod_name in running:
            w.loop.call_later(running.pop(pod_name)["duration"], finish, pod_name)

    def finish(workflow: str) -> None:
        runner = workflow.removesuffix("-workflow")
        for p in (workflow, runner):
            w.cluster.finish_pod(NS, p)
            if w.pod(p) is not None:
                w.store.delete("Pod", NS, p)

    def lose_one() -> None:
        karpenter_nodes = [n for n in w.nodes() if not n.startswith("system")]
        if karpenter_nodes:
            w.cluster.lose_node(karpenter_nodes[0])

    w.store.subscribe(on_pod, ["Pod"])
    top_up()
    w.loop.call_later(1, arrive)
    w.loop.call_later(3600, lose_one)
    return w


def check_accounting(w: World) -> None:
    """The incremental per-node sums equal a recount from the store; nothing overcommits."""
    for node_obj in w.store.list("Node"):
        name = node_obj["metadata"]["name"]
        allocatable = Resources.from_api(node_obj["status"]["allocatable"])
        total = Resources()
        for p in w.store.list("Pod"):
            if p["spec"].get("nodeName") == name and p.get("status", {}).get("phase") not in (
                "Succeeded",
                "Failed",
            ):
                total = total + pod_requests(p["spec"])
        info = w.cluster.state.nodes[name]
        assert total == info.requested(), name
        assert total.fits_in(allocatable), name


def test_a_busy_morning_is_deterministic_and_accounting_stays_exact() -> None:
    logs = []
    for _ in range(2):
        w = busy_world(seed=5)
        for _ in range(HOURS * 6):
            w.run(600)
            check_accounting(w)
        logs.append(list(w.log.lines()))
        stats = w.cluster.stats()
        assert stats.nodes_launched > 0 and stats.preemptions > 0
        # The m5.large ICE window was hit; the fleet fell back to another override each time.
        assert w.cluster.lifecycle.fleet_errors > 0
        assert w.events("node_removed")
    assert logs[0] == logs[1]
    other = busy_world(seed=6)
    other.run(HOURS * 3600)
    assert list(other.log.lines()) != logs[0]


def test_usage_integrals_match_the_event_log() -> None:
    w = busy_world(seed=3)
    w.run(HOURS * 3600)
    stats = w.cluster.stats()
    # Recompute node-seconds from the log: static nodes from 0, Karpenter from launch.
    alive: dict[str, float] = {}
    total = 0.0
    for e in w.events():
        if e["type"] == "node_added" and e.get("static"):
            alive[e["node"]] = e["t"]
        elif e["type"] == "nodeclaim_launched":
            alive[e["nodeclaim"]] = e["t"]
        elif e["type"] == "node_removed":
            total += e["t"] - alive.pop(e["node"])
    total += sum(HOURS * 3600 - t for t in alive.values())
    assert abs(stats.node_seconds - total) < 1.0  # the log rounds times to milliseconds
    assert stats.requested_cpu_core_seconds["workload"] > 0
    assert stats.requested_cpu_core_seconds["placeholder"] > 0
    assert stats.cpu_core_seconds > sum(stats.requested_cpu_core_seconds.values())


def test_the_scheduler_memo_changes_no_outcome() -> None:
    """Re-checking a failed pod class only on nodes that released resources since is an
    optimisation: with it off, every binding, nomination and eviction is the same."""

    def outcome(memo: bool) -> list[str]:
        w = busy_world(seed=9)
        w.cluster.scheduler.memo = memo
        w.run(3600)
        # Messages may differ (reason counts of nodes not re-checked); nothing else may.
        return [line for line in w.log.lines() if '"pod_unschedulable"' not in line]

    with_memo = outcome(True)
    assert with_memo == outcome(False)
    assert any('"pod_nominated"' in line for line in with_memo)


def test_machine_dollars_and_every_claims_end_come_from_the_event_log_alone() -> None:
    """What a cost report needs from the log (no ClusterStats): each NodeClaim is created
    (``nodeclaim_created``: nodeclaim, nodepool, planned instance_type / zone /
    capacity_type, candidate instance_types), billed from ``nodeclaim_launched`` (the
    CreateFleet call returned: instance_type, zone, capacity_type, price) and ends exactly
    once with ``nodeclaim_deleted`` (reason); an ICE'd one has ``nodeclaim_failed`` and no
    launch."""
    w = busy_world(seed=4)
    w.run(HOURS * 3600)
    end = HOURS * 3600
    created = {e["nodeclaim"]: e for e in w.events("nodeclaim_created")}
    launched = {e["nodeclaim"]: e for e in w.events("nodeclaim_launched")}
    deleted = [e["nodeclaim"] for e in w.events("nodeclaim_deleted")]
    failed = {e["nodeclaim"] for e in w.events("nodeclaim_failed")}
    assert len(deleted) == len(set(deleted))
    assert set(launched) | failed == set(created) and not set(launched) & failed
    assert failed <= set(deleted)
    alive = {c["metadata"]["name"] for c in w.store.list("NodeClaim")}
    assert set(created) == set(deleted) | alive and not set(deleted) & alive
    for e in created.values():
        assert {"nodepool", "instance_type", "zone", "capacity_type", "instance_types"} <= set(e)
    ended = {e["nodeclaim"]: e["t"] for e in w.events("nodeclaim_deleted")}
    dollars = sum(
        e["price"] * (ended.get(name, end) - e["t"]) / 3600 for name, e in launched.items()
    )
    static = w.cluster.stats().cost - dollars  # static nodes are billed from the start
    static_nodes = [e for e in w.events("node_added") if e.get("static")]
    assert static_nodes
    price = w.cluster.spec.instance_type("m5.xlarge").price
    assert abs(static - len(static_nodes) * price * HOURS) < 0.01
