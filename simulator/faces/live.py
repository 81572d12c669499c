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

``python -m simulator.faces.live`` starts a world, writes a kubeconfig, a listener config
and a ``capacityAware`` file, prints how to start the listener and kubectl against it, and
prints a status line until Ctrl-C (see docs/e2e.md).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from providers.kubernetes import labels as L
from simulator.cluster import (
    Cluster,
    ClusterSpec,
    IceWindow,
    Latencies,
    NodePoolSpec,
    Timings,
)
from simulator.cluster.garbage import GarbageCollector
from simulator.cluster.spec import default_catalog
from simulator.engine.eventlog import EventLog
from simulator.engine.loop import EventLoop
from simulator.engine.realtime import RealTimeDriver
from simulator.engine.store import ObjectStore
from simulator.faces.actions import ActionsFace, ScaleSetInfo
from simulator.faces.hud import HudFace, Rows, rows_for
from simulator.faces.k8s import K8sFace
from simulator.workload.actions import ActionsService
from simulator.workload.arc import ArcScaleSet, ArcTimings, ContainerMode, ScaleSetSpec
from simulator.workload.hook_template import install_hook_template
from simulator.workload.jobs import DurationDist, JobSpec, burst
from simulator.workload.pods import PodRouter
from simulator.workload.service_records import Job, JobState

POOL = "ci"
#: A PAT the Actions face accepts; fake on purpose (it only ever reaches 127.0.0.1).
FAKE_PAT = "ghp_liveWorldFakeToken0000000000000000"
#: The HUD face's ``x-hud-internal-bot`` token, and where the listener reads it from.
FAKE_HUD_TOKEN = "live-world-hud-token"
HUD_TOKEN_ENV = "HUD_INTERNAL_BOT_TOKEN"
WATCH_HISTORY = 50_000
#: Variables of the caller's environment that must not leak into a listener process run
#: against a live world: an in-cluster API address, another listener config, proxies (loopback
#: traffic must not go through them).
SCRUBBED_ENV = (
    "KUBERNETES_SERVICE_HOST",
    "KUBERNETES_SERVICE_PORT",
    "CAPACITY_AWARE_CONFIG",
    "CAPACITY_AWARE_JSON",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)


class LiveSpecError(ValueError):
    """A :class:`LiveSpec` value is unusable; the message names the field and what is allowed."""


@dataclass(frozen=True)
class LiveSpec:
    """What the live world contains. Times are seconds since the world started."""

    scale_set: str = "e2e-runners"
    namespace: str = "arc-runners"
    labels: tuple[str, ...] = ("e2e-runners",)
    max_runners: int = 6
    instance_type: str = "m5.xlarge"
    ice_start: float = 20.0
    ice_end: float = 32.0
    lose_nodes_at_ice_start: bool = True
    burst_at: float = 24.0
    burst_count: int = 4
    burst_over: float = 2.0
    job_duration: float = 4.0
    runner_requests: Mapping[str, str] = field(
        default_factory=lambda: {"cpu": "250m", "memory": "512Mi"}
    )
    workflow_requests: Mapping[str, str] = field(
        default_factory=lambda: {"cpu": "1", "memory": "2Gi"}
    )
    #: The Actions face answers a long poll with 202 after this long (GitHub: ~50 s). Short,
    #: so the face records the advertised capacity often.
    poll_window: float = 2.0
    seed: int = 7
    pat: str = FAKE_PAT
    hud_token: str = FAKE_HUD_TOKEN
    #: False: the scheduler profile lacks DefaultPreemption (nothing is ever preempted).
    preemption: bool = True
    #: False: no node autoscaler (no NodePool, so no node is ever launched).
    autoscaler: bool = True
    #: The container-hook template (config/hook-template.yaml's shape) as a ConfigMap, mounted
    #: into the runner template by ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE, as the quickstart
    #: installs it; its ``$job`` requests are ``workflow_requests``.
    hook_template: bool = True

    def check(self) -> None:
        catalog = {it.name for it in default_catalog()}
        if self.instance_type not in catalog:
            raise LiveSpecError(
                f"instance_type: got {self.instance_type!r}; one of {', '.join(sorted(catalog))}"
            )
        if not 0 <= self.ice_start < self.ice_end:
            raise LiveSpecError(
                f"ice_start/ice_end: need 0 <= ice_start < ice_end (got {self.ice_start}, "
                f"{self.ice_end})"
            )
        if self.burst_count < 0 or self.burst_at < 0 or self.burst_over < 0:
            raise LiveSpecError("burst_count, burst_at and burst_over must be >= 0")
        if self.job_duration <= 0:
            raise LiveSpecError(f"job_duration: got {self.job_duration}; must be > 0")
        if not 1 <= self.max_runners <= 1000:
            raise LiveSpecError(f"max_runners: got {self.max_runners}; must be 1..1000")
        if not self.labels:
            raise LiveSpecError("labels: at least one runner label is needed")


def cluster_spec(spec: LiveSpec) -> ClusterSpec:
    """One pool, one instance type, one ICE window; latencies scaled down to seconds."""
    instance = next(it for it in default_catalog() if it.name == spec.instance_type)
    return ClusterSpec(
        zones=("us-east-1a",),
        instance_types=(instance,),
        nodepools=(
            (
                NodePoolSpec(
                    name=POOL,
                    instance_types=(instance.name,),
                    limits={"cpu": 64},
                    consolidate_after=None,  # nodes stay: only the ICE window changes capacity
                ),
            )
            if spec.autoscaler
            else ()
        ),
        preemption=spec.preemption,
        ice_windows=(
            IceWindow(instance_type=instance.name, start=spec.ice_start, end=spec.ice_end),
        ),
        latencies=Latencies(
            pod_start=(0.3, 0.8),
            launch=(1.5, 2.5),
            registration=0.5,
            initialize=0.5,
            ice_failure=0.5,
            failed_claim_delete=0.5,
        ),
        # ice_ttl short: the window itself, not Karpenter's 3-minute cache, ends the shortage.
        timings=Timings(
            scheduler_retry=1.0,
            batch_idle=0.5,
            batch_max=2.0,
            ice_ttl=2.0,
            disruption_poll=10.0,
            consolidation_validation=5.0,
        ),
    )


ARC_TIMINGS = ArcTimings(
    controller_delay=0.2,
    runner_startup=(0.5, 1.0),
    hook_delay=(0.3, 0.6),
    prepare_job_timeout=120.0,
    runner_exit=0.3,
)


class LockedJobFeed:
    """The Actions service as the face's ``JobFeed``, each call under the world's lock."""

    def __init__(self, service: ActionsService, lock: threading.RLock) -> None:
        self.service = service
        self.lock = lock

    def poll(self, scale_set_id: int, max_capacity: int) -> list[dict[str, Any]]:
        with self.lock:
            return self.service.poll(scale_set_id, max_capacity)

    def statistics(self, scale_set_id: int) -> dict[str, int]:
        with self.lock:
            return self.service.statistics(scale_set_id)

    def acquire(self, scale_set_id: int, request_ids: Sequence[int]) -> list[int]:
        with self.lock:
            return self.service.acquire(scale_set_id, request_ids)


@dataclass(frozen=True, slots=True)
class JobView:
    """One job as the world sees it; times are seconds since the world started (None: not
    yet)."""

    request_id: int
    state: JobState
    queued_at: float
    assigned_at: float | None
    started_at: float | None
    finished_at: float | None
    reason: str | None


class LiveWorld:
    """See the module docstring. ``start()`` / ``close()``, or use as a context manager."""

    def __init__(
        self,
        spec: LiveSpec | None = None,
        *,
        wall: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.spec = spec or LiveSpec()
        self.spec.check()
        self._wall = wall
        self._monotonic = monotonic
        self._started = False
        self.nodes_lost: list[str] = []

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> LiveWorld:
        if self._started:
            raise RuntimeError("the live world is already started")
        self._started = True
        spec = self.spec
        self.loop = loop = EventLoop(start=self._wall())
        self.log = EventLog("live", loop.now, loop.start)
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
        if spec.lose_nodes_at_ice_start:
            loop.call_at(loop.start + spec.ice_start, self._lose_pool_nodes)
        self.k8s = K8sFace(store).start()
        self.actions = ActionsFace(
            LockedJobFeed(self.service, store.lock),
            scale_sets=(ScaleSetInfo(self.scale_set.id, spec.scale_set, spec.labels),),
            pat=spec.pat,
            poll_window=spec.poll_window,
        ).start()
        self.hud = HudFace(self._hud_rows, token=spec.hud_token).start()
        self.driver = RealTimeDriver(loop, store.lock, wall=self._monotonic)
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
        return self.driver.target_time() - self.loop.start - (self._monotonic() - monotonic)

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
        deadline = self._monotonic() + timeout
        with self.store.changed:
            for _ in range(int(timeout / 0.2) + 2):  # bounded: one wake per change or 0.2 s
                if predicate(self):
                    return True
                left = deadline - self._monotonic()
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


# --- the command ------------------------------------------------------------------------


def write_files(world: LiveWorld, directory: Path, metrics_addr: str) -> dict[str, Path]:
    """kubeconfig.yaml (JSON is valid YAML), listener-config.json, capacity-aware.json."""
    directory.mkdir(parents=True, exist_ok=True)
    files = {
        "kubeconfig": directory / "kubeconfig.yaml",
        "listener": directory / "listener-config.json",
        "capacity": directory / "capacity-aware.json",
    }
    files["kubeconfig"].write_text(json.dumps(world.kubeconfig(), indent=2))
    files["listener"].write_text(json.dumps(world.listener_config(metrics_addr), indent=2))
    files["capacity"].write_text(json.dumps({"capacityAware": world.capacity_aware()}, indent=2))
    return files


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m simulator.faces.live",
        description="Serve a real-time simulated world (Kubernetes API, Actions service, HUD) "
        "on 127.0.0.1 for the real listener and kubectl; Ctrl-C stops it.",
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="where to write the kubeconfig and configs (default: a temp dir)",
    )
    parser.add_argument(
        "--metrics-addr",
        default="127.0.0.1:8080",
        help="metrics_addr written into the listener config",
    )
    parser.add_argument(
        "--ice-start",
        type=float,
        default=90.0,
        help="seconds after start when the ICE window (and node loss) begins",
    )
    parser.add_argument("--ice-duration", type=float, default=30.0)
    parser.add_argument(
        "--keep-nodes",
        action="store_true",
        help="do not lose the pool's nodes when the ICE window begins",
    )
    parser.add_argument("--burst-at", type=float, default=95.0)
    parser.add_argument("--jobs", type=int, default=6, help="jobs in the burst")
    parser.add_argument("--job-duration", type=float, default=10.0)
    parser.add_argument("--max-runners", type=int, default=6)
    parser.add_argument(
        "--scale-set",
        default=LiveSpec.scale_set,
        help="the scale set's name and label (arc-runners to follow docs/quickstart.md)",
    )
    parser.add_argument("--status-every", type=float, default=5.0)
    parser.add_argument(
        "--event-log",
        type=Path,
        default=None,
        help="write the world's JSON-lines event log here on exit",
    )
    args = parser.parse_args(argv)
    spec = LiveSpec(
        scale_set=args.scale_set,
        labels=(args.scale_set,),
        ice_start=args.ice_start,
        ice_end=args.ice_start + args.ice_duration,
        lose_nodes_at_ice_start=not args.keep_nodes,
        burst_at=args.burst_at,
        burst_count=args.jobs,
        job_duration=args.job_duration,
        max_runners=args.max_runners,
        burst_over=min(10.0, args.jobs * 1.0),
    )
    try:
        world = LiveWorld(spec)
    except LiveSpecError as exc:
        print(f"live: {exc}", file=sys.stderr)
        return 2
    directory = args.dir or Path(tempfile.mkdtemp(prefix="live-world-"))
    with world:
        files = write_files(world, directory, args.metrics_addr)
        env_vars = world.listener_env(files["kubeconfig"], files["listener"])
        env = " ".join(f"{k}={v}" for k, v in env_vars.items())
        lost = ", nodes lost at its start" if spec.lose_nodes_at_ice_start else ""
        print(
            f"Kubernetes API : {world.k8s.url}\n"
            f"Actions service: {world.actions.configure_url('acme')} (PAT in the config)\n"
            f"HUD            : {world.hud.url}\n"
            f"ICE window     : {spec.ice_start:.0f}s..{spec.ice_end:.0f}s after start "
            f"({spec.instance_type}{lost})\n"
            f"Burst          : {spec.burst_count} jobs of {spec.job_duration:.0f}s at "
            f"{spec.burst_at:.0f}s\n\n"
            "Start the listener in another shell (from the repository root):\n"
            f"  {env} \\\n  CAPACITY_AWARE_CONFIG={files['capacity']} python -m listener run\n\n"
            f"kubectl: kubectl --kubeconfig {files['kubeconfig']} get pods,nodes\n"
            "Ctrl-C stops the world.\n",
            flush=True,
        )
        stop = threading.Event()
        try:
            while not stop.wait(args.status_every):
                print(world.status_line(), flush=True)
                if world.driver.error is not None:
                    print(f"live: the world stopped: {world.driver.error!r}", file=sys.stderr)
                    return 1
        except KeyboardInterrupt:
            print("\nstopping", flush=True)
        finally:
            if args.event_log is not None:
                with world.store.lock, args.event_log.open("w") as out:
                    world.log.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
