"""ARC in the simulated world: object shapes, the container hook, failures, runner lifecycle."""

from __future__ import annotations

import pytest

from providers.kubernetes.pods import labels as L
from providers.kubernetes.pods.hook_template import read_hook_template
from simulator.engine.world import World
from tests.simulated.workload.builders import (
    cluster_spec,
    events,
    load,
    run,
    scale_set,
    scenario,
)

ALWAYS_ICE = [{"instance_type": "g5.xlarge", "start": 0, "end": 86_400}]


def _first(world: World, kind: str) -> dict:
    found = events(world, kind)
    assert found, f"no {kind} event"
    return found[0]


def test_runner_and_workflow_pods_have_the_shapes_arc_and_the_hook_give_them() -> None:
    world = World(load(scenario()), "capacity-aware")
    loop = world.loop
    while not events(world, "job_running"):
        loop.run_until(loop.now() + 30)
    store = world.clusters["east"].store
    running = _first(world, "job_running")
    workflow = store.get("Pod", "arc-runners", running["pod"])
    runner_name = workflow["metadata"]["labels"][L.LABEL_WORKFLOW_RUNNER_POD]
    runner = store.get("Pod", "arc-runners", runner_name)
    er = store.get("EphemeralRunner", "arc-runners", runner_name)

    assert runner["metadata"]["labels"][L.LABEL_EPHEMERAL_RUNNER] == "True"
    assert runner["metadata"]["labels"][L.LABEL_ARC_SCALE_SET_NAME] == "gpu-east"
    owner = runner["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "EphemeralRunner",
        runner_name,
        er["metadata"]["uid"],
    )
    assert runner["spec"]["priorityClassName"] == "arc-runner"
    assert runner["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "500m",
        "memory": "1Gi",
    }
    assert er["status"]["phase"] == "Running" and er["status"]["jobId"]
    assert er["metadata"]["ownerReferences"][0]["kind"] == "EphemeralRunnerSet"

    assert workflow["metadata"]["name"] == runner_name[:54] + "-workflow"
    assert workflow["spec"]["priorityClassName"] == "arc-workflow"
    assert workflow["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "1"
    assert workflow["spec"]["nodeSelector"] == {"pool": "gpu"}
    assert "nodeName" in workflow["spec"]  # bound by the scheduler (novolume mode)
    ers = store.get("EphemeralRunnerSet", "arc-runners", "gpu-east")
    assert ers["spec"]["replicas"] >= 1 and "patchID" in ers["spec"]


def test_stock_arc_pods_carry_no_priority_class() -> None:
    world = World(load(scenario()), "baseline")
    loop = world.loop
    while not events(world, "job_running"):
        loop.run_until(loop.now() + 30)
    store = world.clusters["east"].store
    workflow = store.get("Pod", "arc-runners", _first(world, "job_running")["pod"])
    assert "priorityClassName" not in workflow["spec"]
    assert workflow["spec"]["priority"] == 0


def test_a_workflow_pod_not_running_within_the_prepare_job_timeout_fails_its_job() -> None:
    data = scenario(
        duration="40m",
        clusters=[{"name": "east", "spec": cluster_spec(ice=ALWAYS_ICE)}],
        arc={"prepare_job_timeout": "5m"},
    )
    world = run(data, "baseline")
    failed = events(world, "job_failed")
    assert failed and all(e["reason"].startswith("prepare-job timeout") for e in failed)
    created = {e["job"]: e["t"] for e in events(world, "pod_created") if e["role"] == "workflow"}
    for e in failed:  # the back-off's summed sleeps pass 300 s at 311 s (see test_hook.py)
        assert abs(e["t"] - created[e["job"]] - 311.0) < 0.01
    assert world.run()["jobs_completed"] == 0


def test_classic_mode_pins_the_workflow_pod_to_the_runner_node_and_a_rejection_fails_at_once() -> (
    None
):
    too_big = scale_set(
        "cpu",
        "east",
        gpu=False,
        container_mode="kubernetes",
        workflow={"requests": {"cpu": "6", "memory": "4Gi"}, "node_selector": {"pool": "runners"}},
    )
    data = scenario(
        duration="20m",
        scale_sets=[too_big],
        jobs=[{"labels": ["linux"], "per_hour": 20, "duration": {"median": "5m"}}],
    )
    world = run(data, "baseline")
    failed = events(world, "job_failed")
    assert failed and all("workflow pod failed: OutOfcpu" in e["reason"] for e in failed)
    created = {e["job"]: e["t"] for e in events(world, "pod_created") if e["role"] == "workflow"}
    assert all(e["t"] - created[e["job"]] < 1.0 for e in failed)  # no 10-minute wait
    store = world.clusters["east"].store
    assert store.writes["create"] > 0
    bound = [e for e in events(world, "pod_bound") if e["pod"].endswith("-workflow")]
    assert bound == []  # never bound: the kubelet refused it


def test_classic_mode_runs_a_job_whose_workflow_pod_fits_beside_its_runner() -> None:
    fits = scale_set("cpu", "east", gpu=False, container_mode="kubernetes")
    data = scenario(
        duration="30m",
        scale_sets=[fits],
        jobs=[
            {
                "labels": ["linux"],
                "bursts": [{"at": "1m", "count": 1}],
                "duration": {"median": "5m"},
            }
        ],
    )
    world = run(data, "baseline")
    result = world.run()
    assert result["jobs_failed"] == 0 and result["jobs_completed"] == 1
    nodes = {e["pod"]: e["node"] for e in events(world, "pod_bound")}
    for e in events(world, "job_running"):
        runner = e["pod"].removesuffix("-workflow")
        assert nodes[e["pod"]] == nodes[runner]


def test_a_finished_job_leaves_no_runner_pod_or_ephemeral_runner_behind() -> None:
    data = scenario(
        duration="1h",
        jobs=[
            {
                "labels": ["linux-gpu"],
                "bursts": [{"at": 0, "count": 3}],
                "duration": {"median": "2m", "sigma": 0},
            }
        ],
    )
    world = run(data, "baseline")
    assert world.run()["jobs_completed"] == 3
    store = world.clusters["east"].store
    assert store.list("EphemeralRunner") == []
    assert [p for p in store.list("Pod", "arc-runners")] == []
    assert len(events(world, "runner_registered")) == 3


@pytest.mark.parametrize(
    ("broker", "assigned_at", "failed"),
    [
        # the service fills a scale set only up to what it advertised: 0, so nothing
        ("capacity", [], 0),
        # the older world: minRunners keeps 2 idle runners on top of the assigned jobs, so each
        # job an idle runner takes brings a fresh idle runner, the whole burst drains into a
        # scale set that advertises 0 and every job fails at the prepare-job timeout
        ("idle-runners", [300.0, 300.0], 4),
    ],
)
def test_idle_runners_kept_by_min_runners_take_jobs_past_the_header_only_under_idle_runners(
    broker: str, assigned_at: list[float], failed: int
) -> None:
    """No GPU node can start, so no pair is ever READY and 0 is advertised throughout
    (docs/design.md#capacity-ledger); what reaches minRunners' two idle runners is the
    broker's (docs/semantics.md, Actions service)."""
    data = scenario(
        duration="20m",
        clusters=[{"name": "east", "spec": cluster_spec(ice=ALWAYS_ICE)}],
        scale_sets=[scale_set("gpu-east", "east", min_runners=2)],
        jobs=[
            {
                "labels": ["linux-gpu"],
                "bursts": [{"at": "5m", "count": 4}],
                "duration": {"median": "5m"},
            }
        ],
        actions={"broker": broker},
    )
    world = run(data, "capacity-aware")
    advertised = {e["value"] for e in events(world, "capacity_advertised")}
    assert advertised == {0}
    assigned = events(world, "job_assigned")
    assert [e["t"] for e in assigned[:2]] == assigned_at
    assert len(assigned) == (4 if failed else 0)
    assert len(events(world, "job_failed")) == failed


def test_workflow_placeholders_are_placed_by_the_hook_template_the_world_mounts() -> None:
    """Runners in the CPU pool, GPU workflow pods in the tainted GPU pool. The world installs
    the hook template as a cluster has it (a ConfigMap the runner template mounts, holding the
    workflow pods' placement), and the listener's reader places workflow placeholders from it:
    a workflow placeholder placed like the runner would never get a GPU."""
    world = World(load(scenario()), "capacity-aware")
    loop = world.loop
    store = world.clusters["east"].store
    ers = store.get("EphemeralRunnerSet", "arc-runners", "gpu-east")
    hook = read_hook_template(
        ers["spec"]["ephemeralRunnerSpec"]["spec"],
        lambda name: store.find("ConfigMap", "arc-runners", name),
    )
    assert hook.spec["nodeSelector"] == {"pool": "gpu"}
    assert hook.spec["priorityClassName"] == "arc-workflow"
    while not events(world, "job_running"):
        loop.run_until(loop.now() + 30)
    placeholders = [
        p for p in store.list("Pod", "arc-runners") if L.LABEL_ROLE in p["metadata"]["labels"]
    ]
    by_role = {p["metadata"]["labels"][L.LABEL_ROLE]: p["spec"] for p in placeholders}
    assert by_role["workflow"]["nodeSelector"] == {"pool": "gpu"}
    assert by_role["workflow"]["tolerations"] == hook.spec["tolerations"]
    assert by_role["runner"]["nodeSelector"] == {"pool": "runners"}
    workflow = store.get("Pod", "arc-runners", _first(world, "job_running")["pod"])
    assert workflow["spec"]["nodeSelector"] == by_role["workflow"]["nodeSelector"]
