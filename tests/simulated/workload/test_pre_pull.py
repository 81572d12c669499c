"""``prePullImages`` in the simulated world: the workflow placeholder pulls the job image onto
its node, so the workflow pod that takes its room there starts without the pull."""

from __future__ import annotations

import statistics
from typing import Any

from simulator.workload.container_hook import WORKFLOW_IMAGE

from .builders import events, run, scale_set, scenario


def world(pre_pull: list[str], *, auto: bool = True) -> dict[str, Any]:
    data = scenario(
        duration="2h",
        scale_sets=[scale_set("cpu-east", "east", gpu=False)],
        jobs=[{"labels": ["linux"], "per_hour": 6, "duration": {"median": "3m", "sigma": 0.3}}],
    )
    data["strategies"]["capacity_aware"].update(
        proactiveCapacity=1,
        workflowResources={"cpu": "2", "memory": "4Gi"},
        prePullImages=pre_pull,
        prePullAuto=auto,
    )
    return data


def workflow_starts(w: Any) -> list[float]:
    """bound -> Running of every real workflow pod (the kubelet's part: pulls and start)."""
    created = {e["pod"] for e in events(w, "pod_created") if e.get("role") == "workflow"}
    bound = {e["pod"]: e["t"] for e in events(w, "pod_bound") if e["pod"] in created}
    running = {e["pod"]: e["t"] for e in events(w, "pod_running") if e["pod"] in bound}
    return [running[p] - bound[p] for p in running]


def test_a_pre_pulled_job_image_spares_the_workflow_pod_its_pull() -> None:
    """Without ``prePullImages`` the first workflow pod on each new node pulls the job image
    (10-30 s in the world); with it, the warm pair's workflow placeholder already pulled it
    there, so every workflow pod starts in the 1-3 s start plus the ``:latest`` round trip."""
    plain = run(world([], auto=False), "capacity-aware")
    plain.run()
    pre = run(world([WORKFLOW_IMAGE], auto=False), "capacity-aware")
    results = pre.run()
    assert results["jobs_failed"] == 0 and results["over_advertised_slot_seconds"] == 0
    without, with_pull = workflow_starts(plain), workflow_starts(pre)
    assert max(without) >= 10.0  # some workflow pod pulled the image
    assert max(with_pull) < 5.0  # none did: resolve (<= 1 s) + start (<= 3 s)
    assert statistics.mean(with_pull) < statistics.mean(without)


def test_a_learned_job_image_spares_every_later_workflow_pod_its_pull() -> None:
    """``prePullAuto`` (default), nothing declared: the first workflow pod pulls the job image
    and teaches it to the listener; every workflow half built after that pulls it first, so
    no later workflow pod waits for the pull. Without it, each new node's first workflow pod
    pulls the image again."""
    off = run(world([], auto=False), "capacity-aware")
    off.run()
    auto = run(world([]), "capacity-aware")
    results = auto.run()
    assert results["jobs_failed"] == 0 and results["over_advertised_slot_seconds"] == 0
    pulled_off = [s for s in workflow_starts(off) if s >= 10.0]
    starts = workflow_starts(auto)
    assert len(pulled_off) > 1
    assert starts[0] >= 10.0  # nothing learned yet
    assert max(starts[1:]) < 5.0
