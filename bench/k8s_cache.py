"""Benchmark: the watch-fed cache with 10 000 pods and 500 nodes, and snapshot build time.

A simulated cluster (ObjectStore behind the HTTP face) holds 500 nodes and 10 000 pods of
one scale set shaped like real ARC pods (env, volumes, managedFields, container statuses):
3 000 runner pods, 3 000 workflow pods and 2 000 placeholder pairs. The real kubernetes
client lists and watches them through :class:`providers.kubernetes.watch.cache.KubeCache`.

Printed figures:
- initial sync wall time (LIST over HTTP + JSON decode + slimming), API calls it took;
- memory retained by the cache (tracemalloc, after gc) and per pod, against the size the
  same pods take unslimmed in the store;
- ``build_snapshot`` time over the cache (median and p95 of repeated builds) and over the
  ObjectStore directly (the simulator's path);
- watch throughput: time for the cache to see 1 000 pod updates.

The API server runs in a child process so the measured heap and GC are the listener's.
Run: ``.venv/bin/python bench/k8s_cache.py`` (about 40 s on 2 cores).
"""

from __future__ import annotations

import gc
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kubernetes import client

from providers.kubernetes.observe.scale_set import ScaleSetTarget
from providers.kubernetes.observe.translate import build_snapshot
from providers.kubernetes.pods import labels as L
from providers.kubernetes.watch.cache import KubeCache
from providers.kubernetes.watch.targets import default_targets
from reconciler.snapshot import Demand
from simulator.engine.store import ObjectStore
from simulator.faces.k8s import K8sFace

NS = "arc-runners"
ERS = "arc-runners"
NODES = 500
RUNNERS = 3000
PAIRS = 2000
TARGET = ScaleSetTarget(ERS, NS, NS, max_runners=100_000)


def managed_fields(manager: str) -> list[dict[str, Any]]:
    return [
        {
            "manager": manager,
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2024-05-01T10:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {f"f:k{i}": {} for i in range(8)}},
                "f:spec": {"f:containers": {'k:{"name":"runner"}': {".": {}}}},
            },
        }
    ]


def container(name: str, cpu: str, mem: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": "ghcr.io/actions/actions-runner:2.320.0",
        "command": ["/home/runner/run.sh"],
        "env": [{"name": f"VAR_{i}", "value": f"value-{i}-" + "x" * 20} for i in range(10)],
        "resources": {"requests": {"cpu": cpu, "memory": mem}, "limits": {"memory": mem}},
        "volumeMounts": [
            {"name": "work", "mountPath": "/home/runner/_work"},
            {"name": "kube-api-access", "mountPath": "/var/run/secrets", "readOnly": True},
        ],
        "terminationMessagePath": "/dev/termination-log",
        "imagePullPolicy": "IfNotPresent",
    }


def pod(
    name: str,
    labels: dict[str, str],
    node: str,
    cpu: str,
    mem: str,
    owners: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": NS,
        "labels": labels,
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{" + "x" * 300 + "}"},
        "managedFields": managed_fields("arc"),
    }
    if owners:
        meta["ownerReferences"] = owners
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "containers": [container("runner", cpu, mem)],
            "nodeName": node,
            "volumes": [{"name": "work", "emptyDir": {}}],
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
            ],
            "priorityClassName": "arc-runner",
            "serviceAccountName": "runner",
        },
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.1",
            "hostIP": "10.1.0.1",
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"}
                for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
            ],
            "containerStatuses": [
                {
                    "name": "runner",
                    "ready": True,
                    "restartCount": 0,
                    "image": "ghcr.io/actions/actions-runner:2.320.0",
                    "imageID": "sha256:" + "a" * 64,
                    "containerID": "containerd://" + "b" * 64,
                    "state": {"running": {"startedAt": "2024-05-01T10:00:00Z"}},
                }
            ],
        },
    }


def populate(store: ObjectStore) -> None:
    store.create(
        {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": "EphemeralRunnerSet",
            "metadata": {"name": ERS, "namespace": NS},
            "spec": {
                "ephemeralRunnerSpec": {"spec": {"containers": [container("runner", "1", "2Gi")]}}
            },
        }
    )
    for n in range(NODES):
        store.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": f"node-{n}",
                    "labels": {
                        "karpenter.sh/nodepool": "runners",
                        "node.kubernetes.io/instance-type": "m6i.4xlarge",
                    },
                    "managedFields": managed_fields("kubelet"),
                },
                "spec": {"providerID": f"aws:///us-east-1a/i-{n:017x}"},
                "status": {
                    "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                    "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
    for i in range(RUNNERS):
        name = f"{ERS}-runner-{i:05d}"
        owner = [
            {
                "apiVersion": "actions.github.com/v1alpha1",
                "kind": "EphemeralRunner",
                "name": name,
                "uid": f"uid-{i}",
                "controller": True,
            }
        ]
        store.create(
            pod(
                name,
                {L.LABEL_EPHEMERAL_RUNNER: "True", L.LABEL_ARC_SCALE_SET_NAME: ERS},
                f"node-{i % NODES}",
                "1",
                "2Gi",
                owner,
            )
        )
        store.create(
            pod(
                f"{name}-workflow",
                {L.LABEL_WORKFLOW_RUNNER_POD: name},
                f"node-{(i + 7) % NODES}",
                "2",
                "4Gi",
            )
        )
    for p in range(PAIRS):
        for role in ("runner", "workflow"):
            labels = {
                L.LABEL_SCALE_SET: ERS,
                L.LABEL_PAIR: f"bench-{p}",
                L.LABEL_ROLE: role,
                L.LABEL_INSTANCE: "bench",
                L.LABEL_MANAGED_BY: L.MANAGED_BY,
                L.LABEL_COMPONENT: L.COMPONENT_PLACEHOLDER,
            }
            store.create(
                pod(f"{ERS}-ph-bench-{p}-{role[0]}", labels, f"node-{p % NODES}", "1", "2Gi")
            )


def timed(fn: Any, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def serve() -> None:
    """Child process: the simulated API server (kept out of the measured process's heap)."""
    store = ObjectStore(time.time, history=20_000)
    populate(store)
    snap_store = timed(lambda: build_snapshot(store, TARGET, now=time.time(), demand=Demand()), 5)
    with K8sFace(store) as face:
        print(face.url, ",".join(f"{s:.6f}" for s in snap_store), flush=True)
        for line in sys.stdin:  # "bump N" -> change N pods, answer the latest resourceVersion
            if line.startswith("bump"):
                for p in range(int(line.split()[1])):
                    store.mutate(
                        "Pod",
                        NS,
                        f"{ERS}-ph-bench-{p}-r",
                        lambda o: o["metadata"]["labels"].update(bump="1"),
                    )
                print(store.resource_version, flush=True)
            else:
                break


def percentiles(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
    return f"median {statistics.median(ms):.1f} ms, p95 {p95:.1f} ms ({len(ms)} runs)"


def main() -> None:
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        url, store_samples = child.stdout.readline().split()
        snap_store = [float(x) for x in store_samples.split(",")]
        config = client.Configuration(host=url)
        config.connection_pool_maxsize = 32
        with client.ApiClient(config) as api:
            # 1. Timed sync, snapshot builds, watch throughput.
            cache = KubeCache(api, default_targets(TARGET), watch_timeout=300)
            start = time.perf_counter()
            cache.start()
            if not cache.wait_synced(120):
                raise SystemExit(f"cache did not sync: {cache.unsynced()}")
            sync_s = time.perf_counter() - start
            cached_pods = cache.count("Pod")
            snap_cache = timed(
                lambda: build_snapshot(cache, TARGET, now=time.time(), demand=Demand()), 20
            )
            snapshot = build_snapshot(cache, TARGET, now=time.time(), demand=Demand())
            start = time.perf_counter()
            child.stdin.write("bump 1000\n")
            child.stdin.flush()
            latest = child.stdout.readline().strip()
            key = default_targets(TARGET)[0].key
            cache.wait_until(lambda c: c.resource_versions()[key] == latest, 60)
            watch_s = time.perf_counter() - start
            lists = dict(cache.stats)
            cache.stop()
            del cache
            gc.collect()

            # 2. Memory: what a second synced cache retains after gc (after the first run, so
            #    one-off costs such as the client's lazily built models are not counted).
            gc.collect()
            tracemalloc.start()
            before = tracemalloc.take_snapshot()
            cache = KubeCache(api, default_targets(TARGET), watch_timeout=300)
            cache.start()
            if not cache.wait_synced(600):
                raise SystemExit(f"cache did not sync: {cache.unsynced()}")
            gc.collect()
            after = tracemalloc.take_snapshot()
            tracemalloc.stop()
            retained = sum(s.size_diff for s in after.compare_to(before, "filename"))
            cache.stop()

    finally:
        child.stdin.write("quit\n")
        child.stdin.flush()
        child.wait(timeout=30)

    print(f"cluster: {cached_pods} pods, {NODES} nodes (served by a child process)")
    print(
        f"initial sync: {sync_s:.2f} s ({lists.get('list', 0)} LIST calls, "
        f"{lists.get('watch', 0)} watches)"
    )
    print(
        f"cache memory retained (tracemalloc, after gc): {retained / 2**20:.1f} MiB "
        f"= {retained / cached_pods / 1024:.2f} KiB per pod (incl. {NODES} nodes)"
    )
    print(
        f"snapshot: {len(snapshot.placeholders)} pairs, {len(snapshot.runner_pods)} runner "
        f"pods, {len(snapshot.workflow_pods)} workflow pods"
    )
    print(f"build_snapshot(cache): {percentiles(snap_cache)}")
    print(f"build_snapshot(ObjectStore, unslimmed pods): {percentiles(snap_store)}")
    print(f"watch: 1000 pod updates (changed in the server) reached the cache in {watch_s:.2f} s")


if __name__ == "__main__":
    serve() if "--serve" in sys.argv else main()
