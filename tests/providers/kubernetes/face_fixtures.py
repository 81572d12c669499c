"""A simulated cluster served over HTTP on loopback, and the real kubernetes client on it."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from kubernetes import client

from providers.kubernetes.observe.scale_set import ScaleSetTarget
from providers.kubernetes.watch.cache import KubeCache
from providers.kubernetes.watch.targets import default_targets
from simulator.engine.store import ObjectStore
from simulator.faces.k8s import K8sFace
from tests.providers.kubernetes import objects as o

TARGET = ScaleSetTarget(
    ers_name=o.ERS, runner_namespace=o.NS, placeholder_namespace=o.NS, max_runners=10
)
#: The watches a cache of the default targets holds open here: all but Karpenter's two kinds,
#: whose CRDs the face does not serve.
WATCHES = len(default_targets(TARGET)) - 2


def seed(store: ObjectStore) -> None:
    """A small cluster: the ERS, two nodes, the priority ladder, one runner with its job."""
    for obj in (
        *o.small_cluster(),
        o.pod("unrelated", labels={"app": "web"}, node="node-a", phase="Running"),
    ):
        store.create(obj)


@pytest.fixture
def store() -> ObjectStore:
    # Wall-clock store: the face is driven in real time (timestamps are informational only).
    s = ObjectStore(time.time, history=5000)
    seed(s)
    return s


@pytest.fixture
def face(store: ObjectStore) -> Iterator[K8sFace]:
    with K8sFace(store, absent_groups={"karpenter.sh"}, bookmark_interval=0.05) as f:
        yield f


@pytest.fixture
def api(face: K8sFace) -> Iterator[client.ApiClient]:
    config = client.Configuration(host=face.url)
    config.connection_pool_maxsize = 32
    with client.ApiClient(config) as api_client:
        yield api_client


@pytest.fixture
def changes() -> list[str]:
    return []


@pytest.fixture
def cache(api: client.ApiClient, face: K8sFace, changes: list[str]) -> Iterator[KubeCache]:
    c = KubeCache(
        api,
        default_targets(TARGET),
        on_change=changes.append,
        watch_timeout=30,
        backoff_base=0.01,
        backoff_cap=0.05,
        absent_retry=30,
    )
    c.start()
    assert c.wait_synced(10), f"cache did not sync: {c.unsynced()}"
    # Lists are done; wait for every watch to be open.
    assert face.wait_watches(WATCHES, 10)
    yield c
    c.stop()
