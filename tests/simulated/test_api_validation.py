"""The simulated store refuses what the real API server refuses on create (simulator/engine/
validation.py), after kubernetes v1.36.3 ``pkg/apis/core/validation/validation.go``."""

from __future__ import annotations

from typing import Any

import pytest

from simulator.engine.store import Invalid, ObjectStore


def _pod(preferred: list[dict[str, Any]] | None = None, required: Any = None) -> dict[str, Any]:
    affinity: dict[str, Any] = {}
    if preferred is not None:
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    if required is not None:
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"containers": [{"name": "c"}], "affinity": {"nodeAffinity": affinity}},
    }


def _fields(*values: str, operator: str = "In") -> dict[str, Any]:
    return {"matchFields": [{"key": "metadata.name", "operator": operator, "values": list(values)}]}


def test_a_match_fields_preference_naming_two_nodes_is_refused_with_the_api_servers_message() -> (
    None
):
    """ValidateNodeFieldSelectorRequirement: In / NotIn take exactly one value. The real
    control plane answered 422 to placeholders whose busy-node term named two nodes; the
    simulated store used to take them (docs/real-vs-simulated.md)."""
    store = ObjectStore(lambda: 0.0)
    pod = _pod(
        [
            {"weight": 10, "preference": _fields("a")},
            {"weight": 10, "preference": _fields("b", "c")},
        ]
    )
    with pytest.raises(Invalid) as refused:
        store.create(pod)
    assert refused.value.code == 422
    assert str(refused.value) == (
        'Pod "p" is invalid: spec.affinity.nodeAffinity.'
        "preferredDuringSchedulingIgnoredDuringExecution[1].preference.matchFields[0].values: "
        "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node "
        "field selector"
    )
    assert store.find("Pod", "ns", "p") is None


@pytest.mark.parametrize(
    "affinity",
    [
        {"preferred": [{"weight": 1, "preference": _fields("a", operator="Exists")}]},
        {"required": {"nodeSelectorTerms": [_fields()]}},
        {
            "required": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "spec.nodeName", "operator": "In", "values": ["a"]}]}
                ]
            }
        },
    ],
    ids=["operator", "required-without-value", "key"],
)
def test_other_match_fields_the_api_server_refuses_are_refused(affinity: dict[str, Any]) -> None:
    with pytest.raises(Invalid):
        ObjectStore(lambda: 0.0).create(_pod(affinity.get("preferred"), affinity.get("required")))


def test_one_node_per_match_fields_term_is_accepted() -> None:
    store = ObjectStore(lambda: 0.0)
    pod = _pod(
        [{"weight": 10, "preference": _fields("a")}, {"weight": 20, "preference": _fields("b")}],
        {"nodeSelectorTerms": [_fields("c", operator="NotIn")]},
    )
    assert store.create(pod)["metadata"]["uid"]
