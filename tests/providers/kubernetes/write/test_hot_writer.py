"""A hot slot's placeholder through the real kubernetes client against the HTTP face: only the
workflow half is created (its runner is a real idle runner), once."""

from __future__ import annotations

import pytest

from providers.kubernetes.pods.placeholders import PlaceholderSpecError
from providers.kubernetes.watch.cache import KubeCache
from providers.kubernetes.write.writer import KubernetesPlaceholderWriter
from reconciler.ports import PairSpec
from simulator.engine.store import ObjectStore
from state_machine.record import hot_placeholder_name
from tests.providers.kubernetes import objects as o
from tests.providers.kubernetes.write.test_writer import writer  # noqa: F401 (fixture)

NAME = hot_placeholder_name(o.ERS, "hot-abcde-1")
HOT = PairSpec("hot-abcde-1", o.ERS, "", NAME, expires_at=o.T0 + 1800, workflow_only=True)


def test_a_hot_slot_creates_only_its_workflow_placeholder(
    writer: KubernetesPlaceholderWriter,  # noqa: F811
    store: ObjectStore,
    cache: KubeCache,
) -> None:
    """The second create is answered by the cache. It waits for the watch to deliver the first
    pod: under load (a full ``make test`` beside other work) the second call came before the
    watch event, met AlreadyExists from the server, and counted a second create."""
    writer.create_pair(HOT)
    assert cache.wait_until(lambda c: c.get("Pod", o.NS, NAME) is not None, 10)
    writer.create_pair(HOT)  # idempotent: the second costs no create
    pods = [p for p in store.list("Pod", o.NS) if p["metadata"]["labels"].get(
        "arc-capacity.dev/pair") == "hot-abcde-1"]  # fmt: skip
    assert [p["metadata"]["name"] for p in pods] == [NAME]
    (pod,) = pods
    assert pod["metadata"]["labels"]["arc-capacity.dev/role"] == "workflow"
    assert pod["spec"]["priorityClassName"] == "arc-placeholder-workflow"
    assert writer.calls["create"] == 1


def test_a_hot_slot_spec_is_refused_where_a_pair_is_expected(
    writer: KubernetesPlaceholderWriter,  # noqa: F811
) -> None:
    with pytest.raises(PlaceholderSpecError, match="hot slot: it has no runner half"):
        writer.builder.build(HOT)
