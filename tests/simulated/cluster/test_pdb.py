"""PodDisruptionBudgets in the simulated kube-scheduler, disruption controller and Karpenter.

Upstream sources (each test names the one it pins):
- kubernetes/kubernetes pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go
  (SelectVictimsOnNode, filterPodsWithPDBViolation) and its default_preemption_test.go case
  "preemption with violation of same pdb";
- kubernetes/kubernetes pkg/scheduler/framework/preemption/preemption.go
  (pickOneNodeForPreemption: fewest PDB violations first);
- kubernetes/kubernetes pkg/controller/disruption/disruption.go (getExpectedPodCount,
  countHealthyPods, updatePdbStatus);
- kubernetes-sigs/karpenter pkg/utils/pdb/pdb.go (CanEvictPods).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from providers.kubernetes.pods.placeholders import PlaceholderPodBuilder
from reconciler.settings import parse_capacity_aware
from simulator.cluster.pdb import Budget, disruptions_allowed, selector_matches, split_by_violation
from simulator.cluster.preemption import candidate_key, select_victims_on_node
from simulator.cluster.quantity import Resources
from simulator.scenarios.placeholder_pdb import placeholder_pdb
from tests.providers.kubernetes import objects as o
from tests.providers.kubernetes.pods.test_placeholders import pair
from tests.simulated.cluster.builders import NS, pod
from tests.simulated.cluster.test_karpenter import mixed_world
from tests.simulated.cluster.test_preemption_tables import P, preempt, table_world


def fake_pod(
    name: str,
    priority: int,
    cpu: int,
    labels: dict[str, str] | None = None,
    *,
    phase: str = "Running",
    terminating: bool = False,
    controlled: bool = False,
    seq: int = 0,
) -> Any:
    meta: dict[str, Any] = {"name": name, "labels": labels or {}}
    if controlled:
        meta["ownerReferences"] = [{"kind": "ReplicaSet", "name": "rs", "controller": True}]
    return SimpleNamespace(
        name=name,
        namespace=NS,
        obj={"metadata": meta},
        priority=priority,
        requests=Resources(cpu=cpu, memory=cpu, gpu=0, pods=1),
        bound_at=0.0,
        created_at=0.0,
        seq=seq,
        phase=phase,
        terminating=terminating,
        terminal=phase in ("Succeeded", "Failed"),
        reschedulable=not terminating and phase not in ("Succeeded", "Failed"),
    )


def budget(allowed: int, labels: dict[str, str]) -> Budget:
    return Budget(NS, "pdb", {"matchLabels": labels}, allowed, always_allow_unhealthy=False)


FOO = {"app": "foo"}


def test_preemption_with_violation_of_same_pdb() -> None:
    """Upstream case of TestDryRunPreemption: two medium pods under one budget allowing one
    disruption; a very large preemptor needs both gone, so both are victims and one of them
    is a violation. Prevents counting a budget's allowance per pod instead of per budget."""
    node = SimpleNamespace(
        name="node1",
        pods={
            "p1.1": fake_pod("p1.1", 100, 200, FOO, seq=1),
            "p1.2": fake_pod("p1.2", 100, 200, FOO, seq=2),
        },
    )
    preemptor = fake_pod("p", 1000, 500)
    found = select_victims_on_node(preemptor, node, (100, 100, 0, 30), [budget(1, FOO)])
    assert found is not None
    victims, violations = found
    assert [v.name for v in victims] == ["p1.1", "p1.2"] and violations == 1


@pytest.mark.parametrize(
    ("with_budget", "victim", "violations"),
    [
        (False, "low", 0),  # priority alone: the most important (mid) is reprieved first
        (True, "mid", 0),  # the covered pod is reprieved first, whatever its priority
    ],
)
def test_victims_whose_budget_allows_nothing_are_reprieved_first(
    with_budget: bool, victim: str, violations: int
) -> None:
    """SelectVictimsOnNode reprieves PDB-violating pods before the others. Prevents the model
    from picking victims by priority alone when a budget protects the cheaper pod."""
    node = SimpleNamespace(
        name="n",
        pods={
            "low": fake_pod("low", 0, 300, FOO, seq=1),
            "mid": fake_pod("mid", 100, 300, seq=2),
        },
    )
    pdbs = [budget(0, FOO)] if with_budget else []
    found = select_victims_on_node(fake_pod("p", 1000, 300), node, (0, 0, 0, 30), pdbs)
    assert found is not None
    assert [v.name for v in found[0]] == [victim] and found[1] == violations


def test_the_node_with_fewest_violations_wins_before_any_priority() -> None:
    """pickOneNodeForPreemption: PDB violations rank first. Prevents a node whose victims
    have a lower priority but break more budgets from winning."""
    cheap = SimpleNamespace(name="a")
    dear = SimpleNamespace(name="b")
    four_cheap = [fake_pod(f"r{i}", -10, 100) for i in range(4)]
    one_dear = [fake_pod("w", 10, 400)]
    assert candidate_key(dear, one_dear, 1) < candidate_key(cheap, four_cheap, 4)
    assert candidate_key(cheap, four_cheap, 0) < candidate_key(dear, one_dear, 0)


@pytest.mark.parametrize(
    ("spec", "pods", "allowed"),
    [
        # maxUnavailable over bare pods: no controller adds to the expected count -> 0.
        ({"maxUnavailable": 0}, [("Running", False, False)] * 3, 0),
        ({"maxUnavailable": 1}, [("Running", False, False)] * 3, 0),
        # integer minAvailable: expected = matching pods, allowed = healthy - minAvailable.
        ({"minAvailable": 1}, [("Running", False, False)] * 3, 2),
        ({"minAvailable": 5}, [("Running", False, False)] * 3, 0),
        # a terminating or not-yet-Running pod is not healthy.
        ({"minAvailable": 1}, [("Running", True, False), ("Pending", False, False)], 0),
        # percentages need the controllers' scale: not modelled, fail safe to 0.
        ({"minAvailable": "50%"}, [("Running", False, False)] * 4, 0),
        ({"maxUnavailable": 1}, [("Running", False, True)] * 3, 0),
    ],
)
def test_disruptions_allowed_follows_the_disruption_controller(
    spec: dict[str, Any], pods: list[tuple[str, bool, bool]], allowed: int
) -> None:
    """updatePdbStatus: allowed = healthy - desired, 0 when expected <= 0. Prevents a budget
    over our bare placeholder pods from allowing disruptions the real controller would not."""
    objs = [
        fake_pod(f"p{i}", 0, 100, FOO, phase=ph, terminating=t, controlled=c)
        for i, (ph, t, c) in enumerate(pods)
    ]
    assert disruptions_allowed({"spec": spec}, objs) == allowed


def test_split_by_violation_is_stable_and_spends_each_allowance_once() -> None:
    """filterPodsWithPDBViolation decrements the matching budget per pod, in order."""
    pods = [fake_pod(f"p{i}", 0, 100, FOO, seq=i) for i in range(3)] + [fake_pod("x", 0, 100)]
    violating, ok = split_by_violation(pods, [budget(1, FOO)])
    assert [p.name for p in violating] == ["p1", "p2"]
    assert [p.name for p in ok] == ["p0", "x"]


def labelled_budget() -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "ph", "namespace": NS},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"ph": "yes"}}},
    }


@pytest.mark.parametrize(
    ("with_budget", "node", "victims"),
    [
        (False, "n1", {"r0", "r1", "r2", "r3"}),  # the ladder alone: four -10 victims win
        (True, "n2", {"w"}),  # one violation beats four
    ],
)
def test_a_budget_over_placeholders_makes_a_big_pod_take_one_placeholder_not_four(
    with_budget: bool, node: str, victims: set[str]
) -> None:
    """The storm's pair breaker, end to end through the simulated scheduler: a 400m pod at
    priority 20 finds n1 full of four 100m runner-sized placeholders (-10) and n2 holding one
    400m workflow-sized placeholder (10). Without a budget kube-scheduler takes the four
    (lowest highest-victim priority); with maxUnavailable 0 over both it takes the one."""
    w = table_world(
        ["n1", "n2"],
        [
            *(P(f"r{i}", "n1", -10, 100) for i in range(4)),
            P("w", "n2", 10, 400),
            P("fill1", "n1", 20, 100),
            P("fill2", "n2", 20, 100),
        ],
    )
    for name in ("r0", "r1", "r2", "r3", "w"):
        w.store.mutate(
            "Pod", NS, name, lambda o: o["metadata"].setdefault("labels", {}).update({"ph": "yes"})
        )
    if with_budget:
        w.create(labelled_budget())
    nominated, disrupted = preempt(w, 20, 400)
    assert nominated == node and disrupted == victims


@pytest.mark.parametrize("with_budget", [False, True])
def test_karpenter_does_not_consolidate_a_node_whose_pod_a_budget_protects(
    with_budget: bool,
) -> None:
    """CanEvictPods: a reschedulable pod under a budget allowing 0 disruptions blocks
    consolidation of its node ("pdb prevents pod evictions"). Prevents measuring the
    placeholder budget without its cost: the nodes it pins."""
    w = mixed_world(consolidate_after=60.0)
    w.create(pod("filler", cpu="3500m", priority=20))
    w.create(pod("mover", cpu=1, labels={"ph": "yes"}))
    if with_budget:
        w.create(labelled_budget())
    w.run(100)
    node = w.node_of("mover")
    assert node is not None and node != "sys-0"
    w.cluster.finish_pod(NS, "filler")  # now "mover" would fit on sys-0
    w.run(500)
    assert (node in w.nodes()) is with_budget


def test_the_shipped_manifest_selects_both_halves_of_its_scale_set_and_nothing_else() -> None:
    """config/placeholder-pdb.yaml against the labels the product's builder writes. Prevents
    a selector that drifts from those labels: it would protect nothing (kube-scheduler goes
    back to four runner halves for one workflow pod) or protect another scale set's pods."""
    ers = o.ers(uid="ers-uid-1")
    settings = parse_capacity_aware({}, where="t")
    builder = PlaceholderPodBuilder(settings, ers, instance=o.INSTANCE, namespace=o.NS, owner=ers)
    runner_half, workflow_half = builder.build(pair())
    other = PlaceholderPodBuilder(
        settings, o.ers(name="other", uid="u2"), instance=o.INSTANCE, namespace=o.NS, owner=None
    ).build(pair(scale_set="other"))[0]
    pdb = placeholder_pdb(o.NS, o.ERS)
    selector = pdb["spec"]["selector"]
    assert selector_matches(selector, runner_half["metadata"]["labels"])
    assert selector_matches(selector, workflow_half["metadata"]["labels"])
    assert not selector_matches(selector, other["metadata"]["labels"])
    assert not selector_matches(selector, {"actions-ephemeral-runner": "True"})
    assert pdb["metadata"] == {
        "name": f"{o.ERS}-placeholders",
        "namespace": o.NS,
        "labels": {"app.kubernetes.io/managed-by": "arc-capacity-listener"},
    }
    # maxUnavailable 0 over bare pods: the disruption controller allows no disruption.
    assert pdb["spec"]["maxUnavailable"] == 0
