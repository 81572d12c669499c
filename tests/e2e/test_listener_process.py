"""End to end: the real listener process against the live simulated world (issue 6).

Story (times are seconds since the world started, see ``LiveSpec``):

- 0 s: the world starts with an empty NodePool; the listener starts with ``proactiveCapacity:
  2``. Karpenter launches a node for the two placeholder pairs; once they run, the listener
  advertises 2 (``X-ScaleSetMaxCapacity``) although no job exists yet.
- 20 s: the only instance type runs out of capacity (ICE) until 32 s, and the pool's node is
  lost at that moment, taking the READY placeholders with it. Nothing can replace them, so
  the listener must advertise 0 for the rest of the window.
- 24 s: a burst of 4 jobs is queued. Advertising 0, the scale set is assigned none of them:
  they wait in GitHub's queue instead of on runners that cannot start.
- 32 s: the window closes, Karpenter launches again, the pairs become READY, capacity rises,
  the burst is assigned, runs and completes.
- SIGTERM: the session is deleted, the placeholders are deleted, the process exits 0.

Everything is observed from the outside: the Actions face's record of each long poll, the
Kubernetes face through the real kubernetes client, and the listener's ``/metrics``. The
world's job table is the ground truth for "ran" and "stuck".
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client as k8s
from prometheus_client.parser import text_string_to_metric_families

from providers.kubernetes.pods.labels import LABEL_SCALE_SET
from simulator.faces.live_world import LiveWorld
from simulator.workload.service_records import JobState
from tests.e2e.conftest import ListenerProcess

PROACTIVE = 2
#: After the node loss, the listener needs a watch event, a debounced reconcile and a cut
#: long poll to advertise 0; polls received this long into the window must all say 0.
DROP_SETTLE = 3.0
#: After the window closes: ICE-cache expiry, launch, registration, pod start (about 6 s).
RECOVERY_BUDGET = 35.0
SHUTDOWN_TIMEOUT = 30.0


def capacity_aware(world: LiveWorld) -> dict[str, Any]:
    return world.capacity_aware(
        proactiveCapacity=PROACTIVE,
        recalculateInterval=2,
        placeholderReadyTimeout=30,
        survivorWindow=15,
        placeholderTtl=120,
        workflowResources=dict(world.spec.workflow_requests),
    )


def advertised(world: LiveWorld) -> list[tuple[float, int]]:
    """(seconds since start, X-ScaleSetMaxCapacity) of every long poll the face received."""
    return [
        (world.elapsed_at(r.received_at), r.capacity)
        for r in world.actions.requests_to("get_message")
        if r.capacity is not None
    ]


def samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    return [
        (s.name, dict(s.labels), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def metric_sum(parsed: list[tuple[str, dict[str, str], float]], name: str, **labels: str) -> float:
    return sum(
        value
        for sample, have, value in parsed
        if sample == name and all(have.get(k) == v for k, v in labels.items())
    )


def wait_metrics(
    listener: ListenerProcess, predicate: Callable[[list[Any]], bool], timeout: float
) -> list[Any]:
    """Scrape /metrics until ``predicate(samples)`` holds; bounded in count and time."""
    deadline = time.monotonic() + timeout
    parsed: list[Any] = []
    for _ in range(int(timeout / 0.25) + 1):
        status, body = listener.get("/metrics")
        if status == 200:
            parsed = samples(body)
            if predicate(parsed):
                return parsed
        if time.monotonic() >= deadline or not listener.running:
            break
        time.sleep(0.25)  # scrape interval of a bounded poll (the listener has no push)
    return parsed


def placeholder_pods(api: k8s.CoreV1Api, world: LiveWorld) -> list[str]:
    """Names of the scale set's placeholder pods, listed through the Kubernetes face.

    Read as raw JSON: the simulated kubelet's containerStatuses carry no ``image`` /
    ``imageID``, which the client's typed models require.
    """
    answer = api.list_namespaced_pod(
        world.spec.namespace,
        label_selector=f"{LABEL_SCALE_SET}={world.spec.scale_set}",
        _preload_content=False,
    )
    return sorted(pod["metadata"]["name"] for pod in json.loads(answer.data)["items"])


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_listener_process_rides_out_an_ice_window_and_shuts_down_cleanly(
    world: LiveWorld,
    listener_factory: Callable[[dict[str, Any]], ListenerProcess],
    core: k8s.CoreV1Api,
) -> None:
    spec = world.spec
    listener = listener_factory(capacity_aware(world))

    # 1. Warm pairs are advertised before any job exists, and before the ICE window opens.
    warm = world.actions.wait_until(
        lambda face: PROACTIVE in face.capacity_history or not listener.running,
        timeout=max(1.0, spec.ice_start - 1.0 - world.elapsed()),
    )
    assert listener.running, "the listener exited early"
    assert warm, (
        f"the listener did not advertise its {PROACTIVE} warm pairs before the ICE window "
        f"opened at {spec.ice_start}s (advertised: {world.actions.capacity_history})"
    )
    status, _ = listener.get("/readyz")
    assert status == 200

    # 2. The burst runs to completion once the window has closed.
    finished = world.wait_until(
        lambda w: w.all_jobs_finished() or not listener.running,
        timeout=spec.ice_end + RECOVERY_BUDGET - world.elapsed(),
    )
    assert listener.running, "the listener exited during the run"
    jobs = world.jobs()
    assert finished, f"jobs not finished: {world.job_counts()}"
    assert len(jobs) == spec.burst_count
    assert all(j.state is JobState.SUCCEEDED for j in jobs), [j for j in jobs if j.reason]
    # Queued during the window, none was assigned before it closed: the jobs waited in
    # GitHub's queue, not on runners that could not start (what stock ARC would do).
    assert all(j.assigned_at is not None and j.assigned_at >= spec.ice_end for j in jobs), jobs

    # 3. Advertised capacity: 2 warm pairs before the window, 0 during it, up again after.
    polls = advertised(world)
    before = [c for t, c in polls if t < spec.ice_start]
    during = [c for t, c in polls if spec.ice_start + DROP_SETTLE <= t < spec.ice_end]
    after = [c for t, c in polls if t >= spec.ice_end]
    assert max(before) == PROACTIVE, polls
    assert during and set(during) == {0}, polls
    assert max(after) >= PROACTIVE, polls

    # 4. /metrics: ARC's families and ours; every job started and completed, none stuck
    # (assigned but never started).
    parsed = wait_metrics(
        listener,
        lambda p: metric_sum(p, "gha_completed_jobs_total") >= spec.burst_count,
        timeout=15.0,
    )
    names = {name for name, _, _ in parsed}
    assert any(n.startswith("gha_") for n in names), sorted(names)
    assert any(n.startswith("arc_capacity_") for n in names), sorted(names)
    assert metric_sum(parsed, "gha_started_jobs_total") == spec.burst_count
    assert metric_sum(parsed, "gha_completed_jobs_total", job_result="succeeded") == (
        spec.burst_count
    ), [s for s in parsed if s[0] == "gha_completed_jobs_total"]
    assert metric_sum(parsed, "gha_assigned_jobs") == 0

    # 5. SIGTERM: exit 0, session deleted, no placeholder left (there were some to delete).
    assert len(placeholder_pods(core, world)) >= 2 * PROACTIVE
    session = world.actions.session_of(world.scale_set.id)
    assert session is not None
    code = listener.terminate(SHUTDOWN_TIMEOUT)
    assert code == 0, f"exit code {code} after SIGTERM"
    assert world.actions.session_of(world.scale_set.id) is None
    deleted = [r for r in world.actions.requests_to("delete_session") if r.status == 204]
    assert [r.path.rsplit("/", 1)[-1] for r in deleted] == [session]
    assert placeholder_pods(core, world) == []


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_a_scale_to_zero_listener_with_statistics_only_sees_jobs_through_the_refresh(
    world: LiveWorld,
    listener_factory: Callable[[dict[str, Any]], ListenerProcess],
) -> None:
    """Regression: with ``proactiveCapacity: 0`` and statistics as the only demand source the
    listener advertised 0, got no message, so no statistics, and never saw a job. Now it
    refreshes its session while blind (``demand.statisticsRefresh``) and runs the burst."""
    spec = world.spec
    listener = listener_factory(
        world.capacity_aware(
            proactiveCapacity=0,
            hud={},
            demand={"sources": ["statistics"], "statisticsRefresh": "1s"},
        )
    )
    finished = world.wait_until(
        lambda w: w.all_jobs_finished() or not listener.running,
        timeout=spec.ice_end + RECOVERY_BUDGET + 10 - world.elapsed(),
    )
    assert listener.running, listener.logs()
    assert finished, f"jobs not finished: {world.job_counts()}\n{listener.logs()}"
    assert all(j.state is JobState.SUCCEEDED for j in world.jobs())
    refreshes = world.actions.requests_to("refresh_session")
    assert refreshes and all(r.status == 200 for r in refreshes)
    # Scale to zero: nothing reserved (0 advertised) until the burst was queued.
    assert {c for t, c in advertised(world) if t < spec.burst_at} == {0}
    parsed = wait_metrics(
        listener,
        lambda p: metric_sum(p, "arc_capacity_statistics_refreshes_total", result="ok") > 0,
        timeout=10.0,
    )
    assert metric_sum(parsed, "arc_capacity_statistics_refreshes_total", result="error") == 0
    assert listener.terminate(SHUTDOWN_TIMEOUT) == 0
