"""A real-time simulated world for an EXTERNAL listener process (the end-to-end test, demos).

:class:`LiveWorld` assembles, on loopback, what the real ``arc-capacity-listener run`` talks to:

1. One cluster: an :class:`ObjectStore` with watch history and a :class:`Cluster` (scheduler,
   kubelet, Karpenter) with one NodePool whose only instance type gets one ICE window
   (``ice_start``..``ice_end`` seconds after the world started). With
   ``lose_nodes_at_ice_start`` every node of the pool is lost when the window opens (a spot
   reclaim that coincides with the shortage), so READY placeholders vanish and nothing can
   replace them until the window closes: the listener's advertised capacity must go to 0 and
   come back.
2. ARC for one scale set in ``arc-runners``: AutoscalingRunnerSet + EphemeralRunnerSet and
   their controllers (:class:`ArcScaleSet`), which react to the listener's merge-patches of
   the ERS through their own store subscription; runner pods in ``kubernetes-novolume`` mode
   (workflow pods go through the scheduler) on the priority ladder.
3. The Actions service with one short burst of jobs, served by the Actions HTTP face (GHES
   style URLs, PAT auth) as its ``JobFeed``; the HUD face answers queued jobs per label from
   the same queue.
4. A :class:`RealTimeDriver` that advances the world's :class:`EventLoop` in real time at speed
   1, the virtual clock starting at the wall clock's ``now`` so the listener's wall-clock
   leases and timeouts agree with the world's timestamps.

Threads: the driver runs the loop holding ``store.lock``; the K8s face writes through the
store (which takes the same lock, so the ARC and cluster controllers' subscriptions run under
it); the Actions and HUD faces reach the service through :class:`LockedJobFeed` / the rows
callback, which take the lock too. Every read this module offers takes it as well.

Its settings are a :class:`~simulator.faces.live_spec.LiveSpec`; ``python -m
simulator.faces.live`` serves one (:mod:`simulator.faces.live`).
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from providers.kubernetes.pods import labels as L
from reconciler.clock import SYSTEM_CLOCK, Clock
from simulator.cluster import (
    Cluster,
)
from simulator.cluster.garbage import GarbageCollector
from simulator.engine.eventlog import EventLog
from simulator.engine.loop import EventLoop
from simulator.engine.realtime import RealTimeDriver
from simulator.engine.store import ObjectStore
from simulator.faces.actions import ActionsFace, ScaleSetInfo
from simulator.faces.hud import HudFace, Rows, rows_for
from simulator.faces.k8s import K8sFace
from simulator.faces.live_access import JobView, LockedJobFeed
from simulator.faces.live_spec import (
    ARC_TIMINGS,
    HUD_TOKEN_ENV,
    POOL,
    SCRUBBED_ENV,
    WATCH_HISTORY,
    LiveSpec,
    cluster_spec,
)
from simulator.workload.actions import ActionsService
from simulator.workload.arc import ArcScaleSet
from simulator.workload.arc_spec import ContainerMode, ScaleSetSpec
from simulator.workload.hook_template import install_hook_template
from simulator.workload.jobs import DurationDist, JobSpec, burst
from simulator.workload.pods import PodRouter
from simulator.workload.service_records import Job, JobState


class LiveWorld:
    """See the module docstring. ``start()`` / ``close()``, or use as a context manager."""

    def __init__(
        self,
        spec: LiveSpec | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.spec = spec or LiveSpec()
        self.spec.check()
        self._clock = clock
        self._started = False
        self.nodes_lost: list[str] = []

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> LiveWorld:
        if self._started:
            raise RuntimeError("the live world is already started")
        self._started = True
        spec = self.spec
        self.loop = loop = EventLoop(start=self._clock.now())
        self.log = EventLog("live", loop, loop.start)
        self.store = store = ObjectStore(loop.now, history=WATCH_HISTORY)
        self.router = PodRouter(store, self.log, "live")
        self.cluster = Cluster(
            loop, store, cluster_spec(spec), rng=random.Random(f"{spec.seed}/cluster"), log=self.log
        )
        self.cluster.start()
        self.service = ActionsService(loop, self.log)
        self.scale_set = self.service.add_scale_set(spec.scale_set, spec.labels, cluster="live")
        self.arc = ArcScaleSet(
            loop=loop,
            store=store,
            router=self.router,
            cluster=self.cluster,
            service=self.service,
            scale_set=self.scale_set,
            spec=self._scale_set_spec(),
            timings=ARC_TIMINGS,
            rng=random.Random(f"{spec.seed}/arc"),
            log=self.log,
        )
        self.arc.install()
        if spec.hook_template:
            install_hook_template(
                store,
                scale_set=spec.scale_set,
                namespace=spec.namespace,
                workflow_requests=spec.workflow_requests,
            )
        self.garbage = GarbageCollector(loop, store).start()
        self.jobs_planned = self._plan_jobs()
        for job in self.jobs_planned:
            loop.call_at(loop.start + job.at, self.service.submit, job)
        if spec.ice_window and spec.lose_nodes_at_ice_start:
            loop.call_at(loop.start + spec.ice_start, self._lose_pool_nodes)
        self.k8s = K8sFace(store).start()
        self.actions = ActionsFace(
            LockedJobFeed(self.service, store.lock),
            scale_sets=(ScaleSetInfo(self.scale_set.id, spec.scale_set, spec.labels),),
            pat=spec.pat,
            poll_window=spec.poll_window,
        ).start()
        self.hud = HudFace(self._hud_rows, token=spec.hud_token).start()
        self.driver = RealTimeDriver(loop, store.lock, clock=self._clock)
        self.driver.start()
        return self

    def close(self) -> None:
        if not self._started:
            return
        self.driver.stop()
        self.actions.close()
        self.hud.close()
        self.k8s.stop()

    def __enter__(self) -> LiveWorld:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _scale_set_spec(self) -> ScaleSetSpec:
        spec = self.spec
        classes = L.DEFAULT_PRIORITY_CLASSES
        return ScaleSetSpec(
            name=spec.scale_set,
            namespace=spec.namespace,
            labels=spec.labels,
            min_runners=0,
            max_runners=spec.max_runners,
            container_mode=ContainerMode.NOVOLUME,
            runner_requests=dict(spec.runner_requests),
            runner_placement={},
            workflow_requests=dict(spec.workflow_requests),
            workflow_placement={},
            runner_priority_class=classes["runner"][0],
            workflow_priority_class=classes["workflow"][0],
        )

    def _plan_jobs(self) -> list[JobSpec]:
        spec = self.spec
        d = spec.job_duration
        return burst(
            random.Random(f"{spec.seed}/jobs"),
            at=spec.burst_at,
            count=spec.burst_count,
            over=spec.burst_over,
            labels=spec.labels,
            duration=DurationDist(median=d, sigma=0.0, low=d, high=d),
            name="e2e",
            repository="acme/app",
        )

    def _lose_pool_nodes(self) -> None:
        """Runs on the loop at ``ice_start``: every node of the pool is reclaimed."""
        names = [
            n["metadata"]["name"]
            for n in self.store.list("Node")
            if (n["metadata"].get("labels") or {}).get(L.LABEL_NODEPOOL) == POOL
        ]
        for name in names:
            self.cluster.lose_node(name, reason="node_lost")
        self.nodes_lost.extend(names)
        self.log.emit("live_nodes_lost", nodes=names)

    def _hud_rows(self) -> Rows:
        with self.store.lock:
            return rows_for(
                [(label, self.service.queued_for([label])) for label in self.spec.labels]
            )

    # --- clocks ----------------------------------------------------------------------------

    @property
    def started_wall(self) -> float:
        """Wall-clock (epoch) time of the world's start = virtual time 0."""
        return self.loop.start

    def elapsed(self) -> float:
        """Virtual seconds since the world started."""
        with self.store.lock:
            return self.loop.now() - self.loop.start

    def elapsed_at(self, monotonic: float) -> float:
        """Seconds since the world started at a ``time.monotonic()`` reading (face records)."""
        return self.driver.target_time() - self.loop.start - (self._clock.monotonic() - monotonic)

    # --- observing -------------------------------------------------------------------------

    def jobs(self) -> list[JobView]:
        start = self.loop.start

        def rel(t: float | None) -> float | None:
            return None if t is None else round(t - start, 3)

        with self.store.lock:
            return [
                JobView(
                    j.request_id,
                    j.state,
                    j.queued_at - start,
                    rel(j.assigned_at),
                    rel(j.started_at),
                    rel(j.finished_at),
                    j.reason,
                )
                for j in self.service.jobs
            ]

    def job_counts(self) -> dict[str, int]:
        counts = {s.value: 0 for s in JobState}
        for job in self.jobs():
            counts[job.state.value] += 1
        return counts

    def all_jobs_finished(self) -> bool:
        with self.store.lock:
            return len(self.service.jobs) == len(self.jobs_planned) and all(
                _finished(j) for j in self.service.jobs
            )

    def placeholder_pods(self) -> list[str]:
        with self.store.lock:
            return sorted(
                p["metadata"]["name"]
                for p in self.store.list("Pod", self.spec.namespace)
                if (p["metadata"].get("labels") or {}).get(L.LABEL_SCALE_SET)
            )

    def wait_until(self, predicate: Callable[[LiveWorld], bool], timeout: float) -> bool:
        """Block until ``predicate(world)`` holds (re-checked on every store change, at least
        every 0.2 s) or ``timeout`` passes."""
        deadline = self._clock.monotonic() + timeout
        with self.store.changed:
            for _ in range(int(timeout / 0.2) + 2):  # bounded: one wake per change or 0.2 s
                if predicate(self):
                    return True
                left = deadline - self._clock.monotonic()
                if left <= 0:
                    return False
                self.store.changed.wait(min(left, 0.2))
        return predicate(self)

    def status_line(self) -> str:
        history = self.actions.capacity_history
        counts = self.job_counts()
        with self.store.lock:
            nodes = self.store.count("Node")
        jobs = " ".join(f"{k}={v}" for k, v in counts.items() if v)
        return (
            f"t={self.elapsed():6.1f}s advertised={history[-1] if history else '-'} "
            f"nodes={nodes} placeholders={len(self.placeholder_pods())} jobs: {jobs or 'none'}"
        )

    # --- what to point the listener at --------------------------------------------------

    def kubeconfig(self) -> dict[str, Any]:
        """A kubeconfig for the K8s face (no TLS; the face ignores the token)."""
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "live", "cluster": {"server": self.k8s.url}}],
            "users": [{"name": "live", "user": {"token": "live-world"}}],
            "contexts": [
                {
                    "name": "live",
                    "context": {
                        "cluster": "live",
                        "user": "live",
                        "namespace": self.spec.namespace,
                    },
                }
            ],
            "current-context": "live",
        }

    def listener_config(
        self, metrics_addr: str, *, log_level: str = "info", log_format: str = "json"
    ) -> dict[str, Any]:
        """Every key ARC's controller writes (docs/protocol.md#config-file), PAT auth, for this
        world."""
        spec = self.spec
        return {
            "configure_url": self.actions.configure_url("acme"),
            "vault_type": "",
            "vault_lookup_key": "",
            "github_app_id": "",
            "github_app_installation_id": 0,
            "github_app_private_key": "",
            "github_token": spec.pat,
            "ephemeral_runner_set_namespace": spec.namespace,
            "ephemeral_runner_set_name": spec.scale_set,
            "max_runners": spec.max_runners,
            "min_runners": 0,
            "runner_scale_set_id": self.scale_set.id,
            "runner_scale_set_name": spec.scale_set,
            "server_root_ca": "",
            "log_level": log_level,
            "log_format": log_format,
            "metrics_addr": metrics_addr,
            "metrics_endpoint": "/metrics",
            "metrics": None,
        }

    def listener_env(self, kubeconfig: Path, listener_config: Path) -> dict[str, str]:
        """Environment variables the listener needs besides its ``capacityAware`` block."""
        return {
            "KUBECONFIG": str(kubeconfig),
            "LISTENER_CONFIG_PATH": str(listener_config),
            HUD_TOKEN_ENV: self.spec.hud_token,
        }

    def listener_process_env(
        self, kubeconfig: Path, listener_config: Path, capacity_aware: dict[str, Any]
    ) -> dict[str, str]:
        """The whole environment of a listener process run against this world: the caller's,
        minus what must not leak into it (:data:`SCRUBBED_ENV`), plus :meth:`listener_env`,
        the ``capacityAware`` block, and loopback kept outside any proxy."""
        env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
        env.update(self.listener_env(kubeconfig, listener_config))
        env["CAPACITY_AWARE_JSON"] = json.dumps(capacity_aware)
        env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
        return env

    def capacity_aware(self, **overrides: Any) -> dict[str, Any]:
        """A ``capacityAware`` block sized for this world (short timers; HUD = the HUD face)."""
        block: dict[str, Any] = {
            "enabled": True,
            "proactiveCapacity": 2,
            "recalculateInterval": 2,
            "watchDebounce": 0.5,
            "placeholderReadyTimeout": 30,
            "survivorWindow": 15,
            "placeholderTtl": 120,
            "workflowResources": dict(self.spec.workflow_requests),
            "cutPollOnDrop": True,
            "cutPollOnRise": True,
            "hud": {"url": self.hud.url, "pollInterval": 1, "tokenEnv": HUD_TOKEN_ENV},
        }
        block.update(overrides)
        return block


def _finished(job: Job) -> bool:
    return job.state in (JobState.SUCCEEDED, JobState.FAILED)
