"""Placeholders prefer the nodes this scale set's jobs keep busy, the busiest most."""

from __future__ import annotations

import pytest

from providers.kubernetes.placement.busy_nodes import MAX_NAMES, MAX_WEIGHT, busy_nodes, busy_terms
from reconciler.ports import PairSpec
from reconciler.snapshot import ClusterSnapshot, PodPhase, RunnerPod, WorkflowPod
from tests.providers.kubernetes import objects as o
from tests.providers.kubernetes.pods.test_placeholders import builder, pair


def runner(
    name: str, node: str | None, phase: PodPhase = PodPhase.RUNNING, **kw: bool
) -> RunnerPod:
    return RunnerPod(name, node, phase, **kw)


def workflow(name: str, node: str | None, phase: PodPhase = PodPhase.RUNNING) -> WorkflowPod:
    return WorkflowPod(name, f"{name}-runner", node, phase)


def snapshot(*pods: RunnerPod | WorkflowPod) -> ClusterSnapshot:
    return ClusterSnapshot(
        taken_at=o.T0,
        max_runners=10,
        runner_pods=tuple(p for p in pods if isinstance(p, RunnerPod)),
        workflow_pods=tuple(p for p in pods if isinstance(p, WorkflowPod)),
    )


@pytest.mark.parametrize(
    ("pods", "busy"),
    [
        pytest.param((), (), id="no-jobs"),
        pytest.param(
            (runner("r1", "a"), workflow("w1", "a"), runner("r2", "b")),
            (("a", 2), ("b", 1)),
            id="the-busiest-first",
        ),
        pytest.param(
            (runner("r1", "b"), runner("r2", "a")), (("a", 1), ("b", 1)), id="ties-by-name"
        ),
        pytest.param((runner("r1", None, PodPhase.PENDING),), (), id="unbound-holds-no-node"),
        pytest.param(
            (runner("r1", "a", PodPhase.SUCCEEDED), workflow("w1", "b", PodPhase.FAILED)),
            (),
            id="ended-pods-keep-no-node",
        ),
        pytest.param((runner("r1", "a", deleting=True),), (), id="a-pod-going-away"),
    ],
)
def test_busy_nodes_are_those_running_the_scale_sets_jobs(
    pods: tuple[RunnerPod | WorkflowPod, ...], busy: tuple[tuple[str, int], ...]
) -> None:
    assert busy_nodes(snapshot(*pods)) == busy


def test_the_busiest_node_weighs_most_and_the_weight_is_capped() -> None:
    """NodeAffinity normalizes over the feasible nodes: a node running more jobs must score
    higher, and a very busy one must not outweigh a binding NodePool's type preference (100)."""
    terms = busy_terms((("a", 9), ("b", 2), ("c", 1), ("d", 1)))
    assert [(t["weight"], t["preference"]["matchFields"][0]["values"]) for t in terms] == [
        (MAX_WEIGHT, ["a"]),
        (20, ["b"]),
        (10, ["c"]),
        (10, ["d"]),
    ]
    assert all(t["preference"].keys() == {"matchFields"} for t in terms)


def test_every_busy_node_term_names_one_node_as_the_api_server_requires() -> None:
    """kube-apiserver v1.36.3 (pkg/apis/core/validation/validation.go,
    ValidateNodeFieldSelectorRequirement) rejects a matchFields In / NotIn with more than
    one value; the real control plane answered 422 to every placeholder created while two
    nodes ran this scale set's jobs equally (docs/real-vs-simulated.md)."""
    terms = busy_terms(tuple((f"node-{i}", 1) for i in range(5)))
    assert len(terms) == 5
    assert all(len(t["preference"]["matchFields"][0]["values"]) == 1 for t in terms)


def test_the_preference_names_at_most_max_names_nodes() -> None:
    pods = [runner(f"r{i}", f"node-{i:03}") for i in range(MAX_NAMES + 10)]
    assert len(busy_nodes(snapshot(*pods))) == MAX_NAMES


def test_both_halves_prefer_busy_nodes_after_the_template_s_own_preferences() -> None:
    """The template's preferred terms keep their place (Karpenter tries the heaviest first,
    the template's on a tie); a matchFields-only term adds no requirement for Karpenter."""
    own = {
        "weight": 1,
        "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
    }
    b = builder(
        o.runner_template(
            affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [own]}}
        )
    )
    b.observe(snapshot(runner("r1", "node-a")))
    for half in b.build(pair()):
        preferred = half["spec"]["affinity"]["nodeAffinity"][
            "preferredDuringSchedulingIgnoredDuringExecution"
        ]
        assert preferred[0] == own
        assert preferred[-1]["preference"]["matchFields"][0]["values"] == ["node-a"]


def test_without_busy_nodes_placeholders_carry_no_node_preference() -> None:
    b = builder(o.runner_template())
    b.observe(snapshot())
    assert all("affinity" not in half["spec"] for half in b.build(pair()))


def test_a_hot_slots_workflow_placeholder_does_not_prefer_busy_nodes() -> None:
    """A hot slot's job lands on its idle runner, already placed; only its workflow pod takes
    the placeholder's room. Packed onto busy nodes those placeholders cost the hot pool's p95
    (merge-queue, 3 seeds: 33.7 -> 51.5 s; docs/benchmarks.md), so they keep the scheduler's
    own spread."""
    b = builder(o.runner_template())
    b.observe(snapshot(runner("r1", "node-a")))
    hot = PairSpec("hot-abcde-1", o.ERS, "", "arc-runners-hot-1-w", o.T0 + 60, workflow_only=True)
    (workflow,) = b.build_pods(hot)
    assert "affinity" not in workflow["spec"]
    assert all("affinity" in half["spec"] for half in b.build(pair()))
