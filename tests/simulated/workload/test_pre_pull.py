"""``prePullImages`` in the simulated world: the workflow placeholder pulls the job image onto
its node, so the workflow pod that takes its room there starts without the pull."""

from __future__ import annotations

import statistics
from typing import Any

from simulator.workload.container_hook import WORKFLOW_IMAGE

from .builders import events, run, scale_set, scenario


def world(pre_pull: list[str]) -> dict[str, Any]:
    data = scenario(
        duration="2h",
        scale_sets=[scale_set("cpu-east", "east", gpu=False)],
        jobs=[{"labels": ["linux"], "per_hour": 6, "duration": {"median": "3m", "sigma": 0.3}}],
    )
    data["strategies"]["capacity_aware"].update(
        proactiveCapacity=1, workflowResources={"cpu": "2", "memory": "4Gi"}, prePullImages=pre_pull
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
    plain = run(world([]), "capacity-aware")
    plain.run()
    pre = run(world([WORKFLOW_IMAGE]), "capacity-aware")
    results = pre.run()
    assert results["jobs_failed"] == 0 and results["over_advertised_slot_seconds"] == 0
    without, with_pull = workflow_starts(plain), workflow_starts(pre)
    assert max(without) >= 10.0  # some workflow pod pulled the image
    assert max(with_pull) < 5.0  # none did: resolve (<= 1 s) + start (<= 3 s)
    assert statistics.mean(with_pull) < statistics.mean(without)
