"""Benchmark: Kubernetes API calls per job through a simulated burst.

The real listener pieces run against the HTTP face with the real kubernetes client: the
watch-fed :class:`KubeCache`, :func:`build_snapshot`, the :class:`ScaleSetController` with a
:class:`PlaceholderSubscriber` and the :class:`KubernetesPlaceholderWriter`. A small world
stub (in this file, acting directly on the ObjectStore like the cluster would) plays
kube-scheduler + kubelet and ARC:

- every Pending pod is bound and Running at the next tick (capacity is plentiful);
- jobs arrive in bursts; a queued job takes a READY pair: its runner pod preempts the runner
  placeholder at once, its workflow pod preempts the workflow placeholder one tick later;
  the job runs a few ticks, then both real pods go away;
- demand (the HUD's queued jobs) is the number of jobs still waiting.

Ticks are 5 virtual seconds (ManualClock for the reconciler), HTTP runs in real time; before
each reconcile the test waits until the cache has caught up with the store (bookmarks make
quiet watches current), so no tick decides on a stale view.

Printed: pairs created, creates and deletes per pair (mean and max), LISTs after the initial
sync, watches opened, lease patches, API calls per job.

Run: ``.venv/bin/python bench/k8s_api_calls.py`` (about 20 s).
"""

from __future__ import annotations

import sys
import time
from collections import Counter, defaultdict, deque
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kubernetes import client

from providers.kubernetes.observe.scale_set import ScaleSetTarget
from providers.kubernetes.observe.translate import build_snapshot
from providers.kubernetes.pods import labels as L
from providers.kubernetes.pods.placeholders import PlaceholderPodBuilder
from providers.kubernetes.watch.cache import KubeCache
from providers.kubernetes.watch.targets import default_targets
from providers.kubernetes.write.writer import KubernetesPlaceholderWriter
from reconciler.clock import ManualClock
from reconciler.controller import ScaleSetController
from reconciler.schedule import Timings
from reconciler.settings import parse_capacity_aware
from reconciler.snapshot import Demand
from reconciler.subscribers import PlaceholderSubscriber
from scaleset.carry_out import Effects, carry_out
from simulator.engine.store import ObjectStore
from simulator.faces.k8s import K8sFace

NS = "arc-runners"
ERS = "arc-runners"
TICK = 5.0
JOB_TICKS = 4
#: (tick, jobs arriving)
BURSTS = ((2, 30), (20, 15), (30, 25))
TICKS = 70
TARGET = ScaleSetTarget(ERS, NS, NS, max_runners=40)
T0 = 1_700_000_000.0


def seed(store: ObjectStore) -> dict[str, Any]:
    template = {
        "containers": [
            {
                "name": "runner",
                "image": "runner",
                "env": [
                    {
                        "name": "ACTIONS_RUNNER_CONTAINER_HOOKS",
                        "value": "/home/runner/k8s-novolume/index.js",
                    }
                ],
                "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
            }
        ],
        "priorityClassName": "arc-runner",
    }
    ers = store.create(
        {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": "EphemeralRunnerSet",
            "metadata": {"name": ERS, "namespace": NS},
            "spec": {"ephemeralRunnerSpec": {"spec": template}},
        }
    )
    for name, value, policy in (
        ("arc-placeholder-runner", -10, "Never"),
        ("arc-runner", 20, "PreemptLowerPriority"),
        ("arc-placeholder-workflow", 10, "Never"),
        ("arc-workflow", 20, "PreemptLowerPriority"),
    ):
        store.create(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
                "preemptionPolicy": policy,
            }
        )
    for n in range(10):
        store.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"node-{n}"},
                "spec": {},
                "status": {
                    "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
    return ers


class World:
    """Scheduler + kubelet + ARC, acting on the store between reconcile steps."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self.queue: deque[int] = deque()
        self.running: dict[int, dict[str, Any]] = {}  # job -> {"runner", "pair", "ends"}
        self.next_job = 0
        self.completed = 0
        self.node = 0

    def _bind(self, pod: dict[str, Any]) -> None:
        self.node = (self.node + 1) % 10

        def run(p: dict[str, Any]) -> None:
            p["spec"]["nodeName"] = f"node-{self.node}"
            p["status"] = {
                "phase": "Running",
                "conditions": [{"type": "PodScheduled", "status": "True"}],
            }

        meta = pod["metadata"]
        self.store.mutate("Pod", meta["namespace"], meta["name"], run)

    def _preempt(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        self.store.mutate(
            "Pod",
            NS,
            meta["name"],
            lambda p: (
                p["status"]
                .setdefault("conditions", [])
                .append(
                    {
                        "type": "DisruptionTarget",
                        "status": "True",
                        "reason": "PreemptionByScheduler",
                    }
                )
            ),
        )
        self.store.delete("Pod", NS, meta["name"], grace_period_seconds=0)

    def tick(self, n: int) -> None:
        for at, count in BURSTS:
            if at == n:
                self.queue.extend(range(self.next_job, self.next_job + count))
                self.next_job += count
        # kubelet: finish jobs; scheduler: bind what is pending.
        for job, state in list(self.running.items()):
            if state["ends"] == n:
                for name in (state["runner"], f"{state['runner']}-workflow"):
                    if self.store.find("Pod", NS, name):
                        self.store.delete("Pod", NS, name, grace_period_seconds=0)
                del self.running[job]
                self.completed += 1
            elif state["ends"] - JOB_TICKS + 1 == n:  # one tick after start: workflow pod
                wf = self.store.find("Pod", NS, state["pair_pods"][1])
                if wf is not None:
                    self._preempt(wf)
                self._create_real(
                    f"{state['runner']}-workflow", {L.LABEL_WORKFLOW_RUNNER_POD: state["runner"]}
                )
        for pod in self.store.list("Pod", NS):
            if not pod["spec"].get("nodeName") and not pod["metadata"].get("deletionTimestamp"):
                self._bind(pod)
        # ARC + GitHub: each queued job takes a READY pair (both placeholders Running).
        pairs: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
        for pod in self.store.list("Pod", NS, labels={L.LABEL_SCALE_SET: ERS}):
            lab = pod["metadata"]["labels"]
            if pod["status"].get("phase") == "Running":
                pairs[lab[L.LABEL_PAIR]][lab[L.LABEL_ROLE]] = pod
        taken = {s["pair"] for s in self.running.values()}
        for pair_id, halves in sorted(pairs.items()):
            if not self.queue:
                break
            if pair_id in taken or set(halves) != {"runner", "workflow"}:
                continue
            job = self.queue.popleft()
            runner = f"{ERS}-runner-{job:05d}"
            self._preempt(halves["runner"])
            self._create_real(
                runner, {L.LABEL_EPHEMERAL_RUNNER: "True", L.LABEL_ARC_SCALE_SET_NAME: ERS}
            )
            self.running[job] = {
                "runner": runner,
                "pair": pair_id,
                "ends": n + JOB_TICKS,
                "pair_pods": (
                    halves["runner"]["metadata"]["name"],
                    halves["workflow"]["metadata"]["name"],
                ),
            }

    def _create_real(self, name: str, labels: dict[str, str]) -> None:
        self.node = (self.node + 1) % 10
        self.store.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": NS, "labels": labels},
                "spec": {
                    "nodeName": f"node-{self.node}",
                    "containers": [{"name": "c", "image": "x"}],
                },
                "status": {"phase": "Running"},
            }
        )


def caught_up(cache: KubeCache, store: ObjectStore) -> bool:
    latest = str(store.resource_version)
    absent = set(cache.absent())
    return all(rv == latest for key, rv in cache.resource_versions().items() if key not in absent)


def main() -> None:
    clock = ManualClock(T0)
    store = ObjectStore(clock.now, history=50_000)
    ers = seed(store)
    settings = parse_capacity_aware(
        {
            "proactiveCapacity": 2,
            "maxPairsInFlight": 10,
            "maxRequestsPerStep": 5,
            "placeholderTtl": 120,
        },
        where="bench",
    )
    config = settings.reconciler_config(ERS)
    world = World(store)
    with K8sFace(store, absent_groups={"karpenter.sh"}, bookmark_interval=0.02) as face:
        api_config = client.Configuration(host=face.url)
        api_config.connection_pool_maxsize = 32
        with client.ApiClient(api_config) as api:
            cache = KubeCache(api, default_targets(TARGET), watch_timeout=60)
            cache.start()
            if not cache.wait_synced(30):
                raise SystemExit(f"cache did not sync: {cache.unsynced()}")
            calls_at_sync = Counter(face.calls)
            builder = PlaceholderPodBuilder(
                settings, ers, instance="bench", namespace=NS, owner=ers
            )
            writer = KubernetesPlaceholderWriter(api, builder, cache=cache)
            subscriber = PlaceholderSubscriber(writer, namespace=NS, clock=clock, config=config)
            controller = ScaleSetController(
                config, Timings(TICK), instance="bench", started_at=clock.now()
            )
            started = time.perf_counter()
            for n in range(TICKS):
                world.tick(n)
                if not cache.wait_until(lambda c: caught_up(c, store), 30):
                    raise SystemExit(f"cache fell behind at tick {n}")
                snapshot = build_snapshot(
                    cache, TARGET, now=clock.now(), demand=Demand(queued_jobs=len(world.queue))
                )
                output = controller.step(clock.now(), snapshot, stale_for=0.0)
                if output.error is not None:
                    raise output.error
                carry_out(output, Effects([subscriber]))
                clock.advance(TICK)
            elapsed = time.perf_counter() - started
            cache.wait_until(lambda c: caught_up(c, store), 30)
            stats = dict(cache.stats)
            cache.stop()
            writer.close()

    after = face.calls - calls_at_sync
    per_pair: dict[str, Counter[str]] = defaultdict(Counter)
    for verb, kind, _ns, name in face.request_log:
        if kind == "Pod" and "-ph-" in name and verb in ("create", "delete"):
            per_pair[name.split("-ph-", 1)[1][:-2]][verb] += 1
    pairs = len(per_pair)
    creates = [c["create"] for c in per_pair.values()]
    deletes = [c["delete"] for c in per_pair.values()]
    lists_after = sum(v for k, v in after.items() if k.startswith("list "))
    writes = sum(v for k, v in after.items() if k.split()[0] in ("create", "delete", "patch"))
    print(
        f"burst: {world.next_job} jobs in {len(BURSTS)} bursts, {TICKS} ticks of {TICK:.0f} s "
        f"virtual ({elapsed:.1f} s real); jobs completed {world.completed}, "
        f"still queued {len(world.queue)}, running {len(world.running)}"
    )
    print(
        f"pairs created: {pairs}; final pair states: "
        f"{ {s.value: n for s, n in controller.reconciler.store.counts().items() if n} }"
    )
    print(f"creates per pair: mean {sum(creates) / pairs:.2f}, max {max(creates)} (bound 2)")
    print(f"deletes per pair: mean {sum(deletes) / pairs:.2f}, max {max(deletes)} (bound 2)")
    print(f"LIST calls after the initial sync: {lists_after} (bound 0)")
    print(
        f"watches: {stats.get('watch', 0)} opened for {len(default_targets(TARGET))} targets "
        f"({stats.get('absent', 0)} absent: Karpenter not installed); re-watches and "
        f"reconnects: {stats.get('reconnect', 0)}, 410 relists: {stats.get('relist_410', 0)}"
    )
    print(f"lease patches: {after.get('patch Pod', 0)}; writer outcomes {dict(writer.outcomes)}")
    print(
        f"API writes per completed job: {writes / max(1, world.completed):.2f} "
        f"({writes} writes: {after.get('create Pod', 0)} creates, "
        f"{after.get('delete Pod', 0)} deletes, {after.get('patch Pod', 0)} patches)"
    )
    failed = sum(n for k, n in writer.outcomes.items() if k.startswith("failed"))
    ok = max(creates) <= 2 and max(deletes) <= 2 and lists_after == 0 and failed == 0
    print("bounds hold" if ok else "BOUNDS VIOLATED")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
