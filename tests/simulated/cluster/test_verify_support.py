"""What ``verify`` needs the simulated cluster to express, with upstream's semantics: a
scheduler profile without DefaultPreemption, and the garbage collector's background deletion
of dependents whose owners are gone."""

from __future__ import annotations

from typing import Any

from simulator.cluster.garbage import GarbageCollector
from tests.simulated.cluster.builders import NS, pod, static_world


def test_without_default_preemption_a_higher_priority_pod_waits_and_nothing_is_preempted() -> None:
    """A scheduler profile without the DefaultPreemption PostFilter: the victim keeps running
    and the message has no preemption part (prevents verify passing a non-preempting
    scheduler)."""
    w = static_world(nodes=1, preemption=False)
    w.create(pod("ph-runner", cpu=3, priority=-10))
    w.run(1)
    w.create(pod("runner", cpu=2, priority=20))
    w.run(30)
    assert w.phase("ph-runner") == "Running"
    assert w.node_of("runner") is None
    message = w.condition("runner", "PodScheduled")["message"]
    assert message.startswith("0/1 nodes are available")
    assert "preemption" not in message


def owned(name: str, *owners: dict[str, Any]) -> dict[str, Any]:
    obj = pod(name, cpu=1)
    obj["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": o["metadata"]["name"],
            "uid": o["metadata"]["uid"],
        }
        for o in owners
    ]
    return obj


def configmap(name: str, namespace: str = NS) -> dict[str, Any]:
    return {"kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}


def test_deleting_an_owner_collects_dependents_that_have_no_other_owner() -> None:
    """Background propagation: a dependent goes once *every* owner is gone, a little after
    (prevents verify's garbage-collection check passing or failing on a model that deletes
    too much or too little)."""
    w = static_world(nodes=1)
    GarbageCollector(w.loop, w.store).start()
    a, b = w.create(configmap("owner-a")), w.create(configmap("owner-b"))
    w.create(owned("only-a", a))
    w.create(owned("a-and-b", a, b))
    w.create(pod("unowned", cpu=1))
    w.run(1)
    w.store.delete("ConfigMap", NS, "owner-a")
    assert w.pod("only-a") is not None  # asynchronous, as upstream's collector
    w.run(1)
    assert w.pod("only-a") is None
    assert w.pod("a-and-b") is not None
    assert w.pod("unowned") is not None
    w.store.delete("ConfigMap", NS, "owner-b")
    w.run(1)
    assert w.pod("a-and-b") is None


def test_an_owner_in_another_namespace_does_not_hold_a_dependent() -> None:
    """A namespaced owner resolves only in the dependent's namespace (DESIGN §5)."""
    w = static_world(nodes=1)
    GarbageCollector(w.loop, w.store).start()
    here, elsewhere = w.create(configmap("owner")), w.create(configmap("owner", "other"))
    dependent = owned("dep", here)
    dependent["metadata"]["ownerReferences"].append(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "owner",
            "uid": elsewhere["metadata"]["uid"],
        }
    )
    w.create(dependent)
    w.store.delete("ConfigMap", NS, "owner")
    w.run(1)
    assert w.pod("dep") is None
