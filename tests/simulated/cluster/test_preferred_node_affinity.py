"""preferredDuringSchedulingIgnoredDuringExecution node affinity in the simulated world, written
from the upstream sources:

- kubernetes/kubernetes pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go (Score:
  the weights of the matching terms; NormalizeScore: ``DefaultNormalizeScore(100, false)``),
  pkg/scheduler/apis/config/v1/default_plugins.go (NodeAffinity weight 2, NodeResourcesFit 1),
  pkg/scheduler/framework/runtime/framework.go (``RunScorePlugins``: weighted sum per node);
- kubernetes-sigs/karpenter pkg/scheduling/requirements.go (``NewPodRequirements``: the
  heaviest preferred term is a requirement), pkg/controllers/provisioning/scheduling/
  preferences.go (``removePreferredNodeAffinityTerm``: drop the heaviest) and scheduler.go
  (``trySchedule``: relax on the pod's own turn, since v1.4.0).
"""

from __future__ import annotations

from typing import Any

from simulator.cluster import (
    ClusterSpec,
    IceWindow,
    NodePoolSpec,
    StaticNodeGroup,
)
from simulator.cluster.matching import compile_placement
from tests.simulated.cluster.builders import (
    NS,
    World,
    latencies,
    pod,
    small_type,
    static_world,
    world,
)

INSTANCE_TYPE = "node.kubernetes.io/instance-type"
PREFERRED = ("c5.4xlarge", "m5.4xlarge")


def prefer(*terms: tuple[int, dict[str, list[str]]]) -> dict[str, Any]:
    """Preferred node affinity: (weight, {label: values allowed}) per term."""
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": weight,
                    "preference": {
                        "matchExpressions": [
                            {"key": k, "operator": "In", "values": list(v)}
                            for k, v in labels.items()
                        ]
                    },
                }
                for weight, labels in terms
            ]
        }
    }


def prefer_types(*types: str, weight: int = 100) -> dict[str, Any]:
    return prefer((weight, {INSTANCE_TYPE: list(types)}))


# --- compiled placements ------------------------------------------------------------------


def test_a_placement_without_preferences_keeps_its_key_and_is_its_own_strict_form() -> None:
    """Pods without preferences (nearly all) are compiled and keyed as before, so every cache
    keyed by placement is unchanged for them."""
    plain = compile_placement({"nodeSelector": {"disk": "ssd"}})
    assert plain.preferred == ()
    assert plain.key == '[[["disk","ssd"]],null,[]]'
    assert plain.strict() is plain and plain.relaxed() is plain


def test_the_heaviest_preferred_term_is_karpenters_first_requirement_then_it_is_dropped() -> None:
    """requirements.go ``NewPodRequirements`` adds the heaviest term's matchExpressions to the
    requirements; preferences.go ``removePreferredNodeAffinityTerm`` drops that term (sorted
    by weight, descending). kube-scheduler's filter (``matches``) ignores preferences."""
    spec = {
        "nodeSelector": {"disk": "ssd"},
        "affinity": prefer((10, {"zone": ["b"]}), (100, {INSTANCE_TYPE: ["c5.4xlarge"]})),
    }
    p = compile_placement(spec)
    assert [w for w, _t in p.preferred] == [100, 10]
    c5_b = {"disk": "ssd", INSTANCE_TYPE: "c5.4xlarge", "zone": "b"}
    m5_b = {**c5_b, INSTANCE_TYPE: "m5.large"}
    m5_a = {**m5_b, "zone": "a"}
    assert p.matches(m5_a, "n") and p.matches(c5_b, "n")  # preferences never filter
    strict = p.strict()
    assert strict.matches(c5_b, "n") and not strict.matches(m5_b, "n")
    assert not strict.matches({INSTANCE_TYPE: "c5.4xlarge"}, "n")  # the selector still holds
    relaxed = p.relaxed()
    assert [w for w, _t in relaxed.preferred] == [10]
    assert relaxed.strict().matches(m5_b, "n") and not relaxed.strict().matches(m5_a, "n")
    assert relaxed.relaxed().preferred == ()
    assert relaxed.relaxed().key == compile_placement({"nodeSelector": {"disk": "ssd"}}).key
    assert len({p.key, strict.key, relaxed.key, relaxed.strict().key}) == 4
    assert p.strict() is strict  # interned: built once per placement
    assert p.preference_score(c5_b, "n") == 110 and p.preference_score(m5_a, "n") == 0


# --- kube-scheduler -----------------------------------------------------------------------


def two_type_world() -> World:
    """A 16-core node ("big-0", type m5.4xlarge) and a 4-core one ("box-0", type box)."""
    return static_world(
        instance_types=(
            small_type("box", cpu=4, memory="16Gi"),
            small_type("m5.4xlarge", cpu=16, memory="64Gi", price=0.768),
        ),
        static_nodes=(
            StaticNodeGroup(name="big", instance_type="m5.4xlarge"),
            StaticNodeGroup(name="box", instance_type="box"),
        ),
    )


def test_the_scheduler_binds_to_a_preferred_node_that_fits_over_an_emptier_one() -> None:
    """node_affinity.go Score + NormalizeScore: the matching node scores 100, the other 0;
    weighted 2 against NodeResourcesFit's 1 (default_plugins.go) that outweighs
    LeastAllocated, which alone picks the emptier 16-core node."""
    w = two_type_world()
    w.create(pod("filler", cpu=2, node_name="box-0"))
    w.create(pod("plain", cpu=1))
    w.create(pod("prefers-box", cpu=1, affinity=prefer_types("box")))
    w.run(1)
    assert w.node("plain") == "big-0"  # LeastAllocated: the emptier node
    assert w.node("prefers-box") == "box-0"


def test_a_preferred_term_of_node_names_draws_a_pod_to_a_busier_node() -> None:
    """``matchFields`` on ``metadata.name`` in a preferred term (how placeholders prefer the
    nodes their scale set's jobs keep busy, providers/kubernetes/placement/busy_nodes.py) scores
    like any term: the named node wins over the emptier one LeastAllocated alone picks."""
    w = two_type_world()
    w.create(pod("filler", cpu=2, node_name="box-0"))
    w.create(pod("plain", cpu=1))
    by_name = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 10,
                    "preference": {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["box-0"]}
                        ]
                    },
                }
            ]
        }
    }
    w.create(pod("prefers-busy", cpu=1, affinity=by_name))
    w.run(1)
    assert w.node("plain") == "big-0"
    assert w.node("prefers-busy") == "box-0"
    assert compile_placement({"affinity": by_name}).strict().key == compile_placement({}).key


def test_preferences_never_filter_a_pod_goes_to_a_non_matching_node_when_no_match_fits() -> None:
    """Preferred terms only score (node_affinity.go's Filter reads the required affinity
    only): with the matching node full, the pod binds to the other node at once."""
    w = two_type_world()
    w.create(pod("filler", cpu=3, node_name="box-0"))  # 920m left of 3920m
    w.create(pod("prefers-box", cpu=1, affinity=prefer_types("box")))
    w.run(1)
    assert w.node("prefers-box") == "big-0"
    assert w.condition("prefers-box", "PodScheduled")["status"] == "True"


def test_the_scheduler_sums_the_weights_of_the_preferred_terms_a_node_matches() -> None:
    """PreferredSchedulingTerms.Score (component-helpers nodeaffinity.go) adds the weights of
    every matching term: a node matching terms of weight 40 and 30 (70) beats one matching
    only the heaviest term (60), where Karpenter would require that heaviest term first."""
    w = static_world(
        instance_types=(small_type(),),
        static_nodes=(
            StaticNodeGroup(name="a", instance_type="box", labels={"tier": "gold"}),
            StaticNodeGroup(name="b", instance_type="box", labels={"disk": "ssd", "net": "fast"}),
        ),
    )
    affinity = prefer((60, {"tier": ["gold"]}), (40, {"disk": ["ssd"]}), (30, {"net": ["fast"]}))
    w.create(pod("picky", cpu=1, affinity=affinity))
    w.run(1)
    assert w.node("picky") == "b-0"


# --- Karpenter ----------------------------------------------------------------------------


def karpenter_world(
    *, limits: dict[str, str | int] | None = None, types: tuple[str, ...] = (), **spec: Any
) -> World:
    """One zone; "m5.large" (2 cpu, $0.096) is the cheapest type, the preferred 16-core types
    cost more. ICE windows etc. come through ``spec``."""
    cluster = ClusterSpec(
        instance_types=(
            small_type("m5.large", cpu=2, memory="8Gi", price=0.096),
            small_type("c5.4xlarge", cpu=16, memory="32Gi", price=0.68),
            small_type("m5.4xlarge", cpu=16, memory="64Gi", price=0.768),
        ),
        nodepools=(
            NodePoolSpec(
                name="default",
                zones=("us-east-1a",),
                instance_types=types,
                limits=limits or {},
                consolidate_after=None,
            ),
        ),
        latencies=latencies(pod_start=(1.0, 1.0), launch=(30.0, 30.0)),
        **spec,
    )
    return world(cluster)


def claims(w: World) -> list[tuple[float, list[str], int]]:
    return [(e["t"], e["instance_types"], e["pods"]) for e in w.events("nodeclaim_created")]


def launched(w: World) -> list[str]:
    return [e["instance_type"] for e in w.events("nodeclaim_launched")]


def test_karpenter_launches_a_preferred_type_for_a_lone_pod_whose_cheapest_fit_is_not() -> None:
    """requirements.go: the heaviest preferred term is a requirement of the new NodeClaim, so
    its candidates are the preferred types only and the cheapest of them launches; a pod
    without the preference gets every type that fits and the cheapest, m5.large."""
    w = karpenter_world()
    w.create(pod("prefers-16", cpu=1, affinity=prefer_types(*PREFERRED)))
    w.run(60)
    assert claims(w) == [(1.0, ["c5.4xlarge", "m5.4xlarge"], 1)]
    assert launched(w) == ["c5.4xlarge"]
    assert w.node("prefers-16") == w.events("nodeclaim_created")[0]["nodeclaim"]

    w = karpenter_world()
    w.create(pod("plain", cpu=1))
    w.run(60)
    assert claims(w) == [(1.0, ["m5.large", "c5.4xlarge", "m5.4xlarge"], 1)]
    assert launched(w) == ["m5.large"]


def test_karpenter_relaxes_a_preference_whose_types_are_all_in_the_ice_cache() -> None:
    """The first claim asks for the preferred types only; both are out of capacity, so the
    claim is deleted and they enter the unavailable-offerings cache. On the pod's 10 s requeue
    no preferred type is left, so ``trySchedule`` drops the term (preferences.go) and the pod
    gets the cheapest plain type."""
    ice = tuple(IceWindow(instance_type=t, start=0, end=1000) for t in PREFERRED)
    w = karpenter_world(ice_windows=ice)
    w.create(pod("prefers-16", cpu=1, affinity=prefer_types(*PREFERRED)))
    w.run(80)
    assert claims(w) == [(1.0, ["c5.4xlarge", "m5.4xlarge"], 1), (11.0, ["m5.large"], 1)]
    assert launched(w) == ["m5.large"]
    assert w.phase("prefers-16") == "Running"


def test_karpenter_relaxes_a_preference_whose_types_exceed_the_nodepool_remaining_limit() -> None:
    """Under a 20-cpu limit the first pod gets a preferred 16-core node; for the second (kept
    off that node) filterByRemainingResources leaves no preferred type in the 4 cpu left, so
    the strict try opens no claim and the relaxed one, in the same batch, takes the cheapest
    type that fits the limit."""
    w = karpenter_world(limits={"cpu": 20})
    w.create(pod("first", cpu=1, affinity=prefer_types(*PREFERRED)))
    w.run(60)
    assert launched(w) == ["c5.4xlarge"]
    second = pod("second", cpu=1, affinity=prefer_types(*PREFERRED))
    second["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {
                        "key": "kubernetes.io/hostname",
                        "operator": "NotIn",
                        "values": [w.node("first")],
                    }
                ]
            }
        ]
    }
    w.create(second)
    w.run(60)
    assert [c[1] for c in claims(w)] == [list(PREFERRED), ["m5.large"]]
    assert launched(w) == ["c5.4xlarge", "m5.large"]
    assert w.phase("second") == "Running"


def test_karpenter_drops_preferred_terms_heaviest_first() -> None:
    """Each relaxation removes only the heaviest remaining term (preferences.go), which makes
    the next heaviest the requirement: with c5.4xlarge (weight 100) not in the pool, the
    claim asks for m5.4xlarge (weight 50), not for any type."""
    w = karpenter_world(types=("m5.large", "m5.4xlarge"))
    affinity = prefer((50, {INSTANCE_TYPE: ["m5.4xlarge"]}), (100, {INSTANCE_TYPE: ["c5.4xlarge"]}))
    w.create(pod("picky", cpu=1, affinity=affinity))
    w.run(2)
    assert claims(w) == [(1.0, ["m5.4xlarge"], 1)]


def test_a_pod_with_a_preferred_type_joins_an_open_claim_only_by_narrowing_it() -> None:
    """NodeClaim.CanAdd intersects the claim's requirements with the pod's (its preferred term
    included): the plain pod's claim could launch m5.large for both pods, but the second pod
    narrows it to the preferred types; one claim, two pods."""
    w = karpenter_world()
    w.create(pod("plain", cpu="1500m"))
    w.create(pod("prefers-16", cpu="100m", affinity=prefer_types(*PREFERRED)))
    w.run(60)
    assert claims(w) == [(1.0, ["c5.4xlarge", "m5.4xlarge"], 2)]
    assert launched(w) == ["c5.4xlarge"]


def test_a_pod_with_a_preferred_type_does_not_count_on_an_in_flight_node_of_another_type() -> None:
    """ExistingNode.CanAdd checks the node's labels against the pod's requirements, the
    preferred term included: an in-flight m5.large with room does not take the pod, a claim
    of a preferred type is opened (a plain pod would wait for the in-flight node)."""
    w = karpenter_world()
    w.create(pod("first", cpu=1))
    w.run(5)  # its m5.large claim is launched, the Node not registered yet
    w.create(pod("prefers-16", cpu="100m", affinity=prefer_types(*PREFERRED)))
    w.create(pod("plain", cpu="100m"))
    w.run(5)
    assert [c[1] for c in claims(w)] == [
        ["m5.large", "c5.4xlarge", "m5.4xlarge"],
        ["c5.4xlarge", "m5.4xlarge"],
    ]
    assert claims(w)[1][2] == 1  # the plain pod counts on the in-flight node


def test_a_relaxed_pod_is_placed_on_its_own_turn_before_smaller_pods() -> None:
    """scheduler.go ``trySchedule`` (Karpenter >= v1.4.0, #2119): a pod is relaxed all the way
    on its own turn, so under a 2-cpu limit the larger pod, whose preferred types exceed the
    limit, takes the only m5.large the limit allows and the smaller plain pod gets none
    (before v1.4.0 the relaxed pod went to the end of the queue and the smaller pod won)."""
    w = karpenter_world(limits={"cpu": 2})
    w.create(pod("prefers-16", cpu="1500m", affinity=prefer_types(*PREFERRED)))
    w.create(pod("plain", cpu=1))
    w.run(60)
    assert claims(w) == [(1.0, ["m5.large"], 1)]
    assert w.phase("prefers-16") == "Running"
    assert w.node_of("plain") is None
    assert w.store.find("Pod", NS, "plain") is not None
