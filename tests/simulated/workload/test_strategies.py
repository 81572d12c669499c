"""The strategies: the placeholder writer, the warm pool, the capacity-aware driver."""

from __future__ import annotations

import pytest

from providers.kubernetes.pods import labels as L
from providers.kubernetes.pods.placeholders import PlaceholderPodBuilder
from reconciler.ports import PairSpec, PodRef
from reconciler.settings import CapacityAwareSettings
from simulator.driver.store_view import StorePlaceholderWriter
from simulator.engine.store import ObjectStore
from simulator.engine.world import World
from state_machine.record import pod_names
from tests.simulated.workload.builders import cluster_spec, events, load, run, scenario

ERS = {
    "apiVersion": "actions.github.com/v1alpha1",
    "kind": "EphemeralRunnerSet",
    "metadata": {"name": "ss", "namespace": "arc", "uid": "ers-uid"},
    "spec": {
        "ephemeralRunnerSpec": {
            "spec": {
                "containers": [
                    {"name": "runner", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}
                ]
            }
        }
    },
}


@pytest.fixture
def writer() -> tuple[ObjectStore, StorePlaceholderWriter]:
    store = ObjectStore(lambda: 1_767_571_200.0)
    builder = PlaceholderPodBuilder(
        CapacityAwareSettings(), ERS, instance="abcde", namespace="arc", owner=None
    )
    return store, StorePlaceholderWriter(store, builder)


def _spec(pair: str) -> PairSpec:
    runner, workflow = pod_names("ss", pair)
    return PairSpec(pair, "ss", runner, workflow, expires_at=1_767_573_000.0)


def test_the_writer_is_idempotent_and_skips_pods_already_gone(writer) -> None:  # type: ignore[no-untyped-def]
    store, w = writer
    w.create_pair(_spec("abcde-1"))
    w.create_pair(_spec("abcde-1"))  # AlreadyExists is success
    assert store.count("Pod") == 2 and w.pods_created == 2
    runner, workflow = pod_names("ss", "abcde-1")
    uid = store.get("Pod", "arc", runner)["metadata"]["uid"]
    w.delete_pods([PodRef("arc", runner, "some-other-uid")])  # a different pod: untouched
    assert store.find("Pod", "arc", runner) is not None
    w.delete_pods([PodRef("arc", runner, uid), PodRef("arc", "never-existed")])
    assert store.find("Pod", "arc", runner) is None
    deletes_before = store.writes["delete"]
    w.delete_pods([PodRef("arc", runner, uid)])  # gone already: no API call
    assert store.writes["delete"] == deletes_before
    w.renew_lease([PodRef("arc", workflow)], 1_767_580_000.0)
    annotations = store.get("Pod", "arc", workflow)["metadata"]["annotations"]
    assert annotations[L.ANNOTATION_EXPIRES_AT] == "1767580000.000"


def test_the_warm_pool_replaces_a_pod_that_is_taken_away() -> None:
    world = World(
        load(
            scenario(
                duration="20m",
                jobs=[
                    {
                        "labels": ["linux-gpu"],
                        "bursts": [{"at": "19m", "count": 1}],
                        "duration": {"median": "1m"},
                    }
                ],
            )
        ),
        "overprovision",
    )
    loop, store = world.loop, world.clusters["east"].store
    loop.run_until(loop.start + 300)
    pool = sorted(p["metadata"]["name"] for p in store.list("Pod", "arc-runners"))
    assert len(pool) == 4  # 2 slots x (runner-sized, workflow-sized)
    store.delete("Pod", "arc-runners", pool[0])
    loop.run_until(loop.start + 302)
    now = sorted(p["metadata"]["name"] for p in store.list("Pod", "arc-runners"))
    assert len(now) == 4 and pool[0] not in now
    assert store.get("PriorityClass", None, "overprovisioning")["value"] == -1


def test_capacity_aware_advertises_nothing_before_pairs_are_ready_then_the_warm_pairs() -> None:
    world = run(
        scenario(
            duration="15m",
            jobs=[
                {
                    "labels": ["linux-gpu"],
                    "bursts": [{"at": "14m", "count": 1}],
                    "duration": {"median": "1m"},
                }
            ],
        ),
        "capacity-aware",
    )
    values = [(e["t"], e["value"]) for e in events(world, "capacity_advertised")]
    assert values[0] == (0.0, 0)
    ready = [e["t"] for e in events(world, "pod_running") if "-ph-" in e["pod"]]
    first_rise = next(t for t, v in values if v > 0)
    assert first_rise >= sorted(ready)[1]  # both halves of a pair Running first
    assert max(v for _, v in values) == 2  # proactiveCapacity
    result = world.run()
    assert result["reconcile_steps"] > 0 and result["reconcile_errors"] == 0


def test_capacity_aware_drops_to_zero_when_max_runners_goes_to_zero() -> None:
    data = scenario(
        duration="30m",
        clusters=[{"name": "east", "spec": cluster_spec()}],
        jobs=[{"labels": ["linux-gpu"], "per_hour": 10, "duration": {"median": "2m"}}],
    )
    data["scale_sets"][0]["changes"] = [{"at": "15m", "max_runners": 0}]
    world = run(data, "capacity-aware")
    after = [e["value"] for e in events(world, "capacity_advertised") if e["t"] >= 900]
    assert after and after[-1] == 0 and max(after) == 0
    store = world.clusters["east"].store
    assert [p for p in store.list("Pod", "arc-runners") if "-ph-" in p["metadata"]["name"]] == []
