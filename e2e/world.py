"""One real-control-plane world for one scenario: start everything, drive jobs, stop everything.

Steps of :meth:`World.start`:
1. the control plane (e2e/control_plane.py) and the platform on it (e2e/platform.py);
2. the Actions face on loopback, playing GitHub for ARC's controller and the listener, with a
   job feed that hands jobs out up to each poll's ``X-ScaleSetMaxCapacity``;
3. the scale set, installed as the docs say (e2e/scale_set.py); ARC's controller registers it
   with the face and writes its listener's config;
4. the listener: the mirror (:class:`ListenerMirror`) follows the listener pod ARC's
   controller creates, and for each one starts ``python -m listener run`` with the files that
   pod would mount (:meth:`World.start_listener`); when ARC deletes the pod (a spec change, the
   scale set switched off) the process gets SIGTERM, as the kubelet would send it;
5. the runner double and the checker's sampler, each on a thread.

:meth:`World.close` stops the threads, the listener(s), the face and every process, and says
which ports are still bound (none, or the report says so).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client, config

from e2e import observe
from e2e.control_plane import ControlPlane, KwokTiming, no_proxy_env
from e2e.kubelet import exited_status
from e2e.platform import CONTROLLER_NAMESPACE, RUNNER_NAMESPACE, NodePoolSpec, install_platform
from e2e.processes import Process, Supervisor, free_port
from e2e.runner_double import JobTiming, RunnerDouble
from e2e.scale_set import (
    PAT,
    SCALE_SET,
    ScaleSetOptions,
    install_scale_set,
    listener_files,
    wait_for_listener_config,
)
from reconciler.clock import SYSTEM_CLOCK
from simulator.faces.actions import ActionsFace, ScriptedJobFeed

REPO = Path(__file__).resolve().parent.parent
#: More listener exits than this in one world is a crash loop, not a recreation.
MAX_LISTENER_EXITS = 10


@dataclass(frozen=True)
class WorldSpec:
    pool: NodePoolSpec = field(default_factory=NodePoolSpec)
    scale_set: ScaleSetOptions = field(default_factory=ScaleSetOptions)
    kwok: KwokTiming = field(default_factory=KwokTiming)
    job: JobTiming = field(default_factory=JobTiming)
    #: The face's long poll: how long GetMessage waits without news (the service's ~50 s).
    poll_window: float = 50.0
    #: Start and stop the listener process as ARC's listener pod comes and goes.
    mirror_listener_pod: bool = True


class World:
    def __init__(self, spec: WorldSpec, workdir: Path, supervisor: Supervisor) -> None:
        self.spec = spec
        self.workdir = workdir
        self.supervisor = supervisor
        self.plane = ControlPlane(supervisor, workdir, spec.kwok)
        # One clock for the face, the feed and the checker's samples: wall time, so a poll
        # and the samples around it compare.
        self.feed = ScriptedJobFeed(clock=SYSTEM_CLOCK)
        self.face = ActionsFace(
            self.feed, scale_sets=(), pat=PAT, poll_window=spec.poll_window, clock=SYSTEM_CLOCK
        )
        self.stop_threads = threading.Event()
        self.mirror_stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.listeners: list[Process] = []
        self.listener_config: dict[str, Any] = {}
        self.install: dict[str, Any] = {}
        self.jobs: list[int] = []
        self.arc_recoveries = 0
        self.timeline: list[tuple[float, str]] = []
        self.started_at = time.time()

    # --- start ---------------------------------------------------------------------------

    def start(self) -> World:
        self.note("control plane starting")
        self.plane.start()
        self.note("control plane ready")
        install_platform(self.plane, self.supervisor, self.spec.pool, self.workdir)
        self.note("karpenter and ARC's controller running")
        api = config.new_client_from_config(config_file=str(self.plane.kubeconfig))
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.face.start()
        self.install = install_scale_set(
            self.plane, self.face.configure_url("acme"), self.spec.scale_set
        )
        self.settle_arc()
        self.listener_config = wait_for_listener_config(self.plane)
        self.scale_set_id = int(self.listener_config["runner_scale_set_id"])
        self.note(f"ARC registered scale set {SCALE_SET} (id {self.scale_set_id})")
        self.runner_double = RunnerDouble(
            self.core,
            self.custom,
            self.feed,
            RUNNER_NAMESPACE,
            self.scale_set_id,
            self.spec.job,
            clock=SYSTEM_CLOCK,
        )
        self.tracker = observe.Tracker(api, self.feed, RUNNER_NAMESPACE)
        for thread in self.tracker.threads(self.stop_threads):
            thread.start()
            self.threads.append(thread)
        self.sampler = observe.Sampler(self.tracker, self.custom, self.feed)
        self._thread("runner-double", self.runner_double.run)
        self._thread("sampler", self.sampler.run)
        if self.spec.mirror_listener_pod:
            self.mirror = ListenerMirror(self)
            thread = threading.Thread(
                target=self.mirror.run,
                args=(self.mirror_stop,),
                name="listener-mirror",
                daemon=True,
            )
            thread.start()
            self.threads.append(thread)
        return self

    def settle_arc(self, timeout: float = 90.0, stale_grace: float = 5.0) -> None:
        """Wait until ARC's AutoscalingListener names an EphemeralRunnerSet that exists.

        ARC 0.14.2 can reconcile a new AutoscalingRunnerSet twice before its cache shows the
        first EphemeralRunnerSet: it then creates two, deletes one, creates the
        AutoscalingListener naming the other, deletes that one too and creates a third, and
        never corrects the listener, whose pod then fails on every start. Seen in about one
        world in ten. The recovery an operator would apply (and docs/arc-versions.md gives for
        0.15's re-registration) is to delete the AutoscalingListener: ARC recreates it naming
        the set that exists. Each recovery is noted and counted in the report."""
        deadline = time.monotonic() + timeout
        stale_since: float | None = None
        while time.monotonic() < deadline:
            sets = {
                o["metadata"]["name"]
                for o in self.custom.list_namespaced_custom_object(
                    "actions.github.com", "v1alpha1", RUNNER_NAMESPACE, "ephemeralrunnersets"
                )["items"]
                if not o["metadata"].get("deletionTimestamp")
            }
            listeners = self.custom.list_namespaced_custom_object(
                "actions.github.com", "v1alpha1", CONTROLLER_NAMESPACE, "autoscalinglisteners"
            )["items"]
            named = {
                o["metadata"]["name"]: o["spec"].get("ephemeralRunnerSetName") for o in listeners
            }
            if named and all(ers in sets for ers in named.values()) and len(sets) == 1:
                return
            stale = [name for name, ers in named.items() if ers not in sets]
            if stale and sets:
                stale_since = stale_since or time.monotonic()
                if time.monotonic() - stale_since >= stale_grace:
                    for name in stale:
                        self.custom.delete_namespaced_custom_object(
                            "actions.github.com",
                            "v1alpha1",
                            CONTROLLER_NAMESPACE,
                            "autoscalinglisteners",
                            name,
                        )
                    self.arc_recoveries += 1
                    self.note(
                        f"ARC race: AutoscalingListener {stale} named a deleted "
                        "EphemeralRunnerSet; deleted it, as an operator would"
                    )
                    stale_since = None
            else:
                stale_since = None
            time.sleep(0.5 if stale_grace else 0.01)
        raise RuntimeError(
            f"ARC's controller did not settle within {timeout:.0f} s: its AutoscalingListener "
            "names no existing EphemeralRunnerSet (see the arc-controller log)"
        )

    def _thread(self, name: str, target: Callable[[threading.Event], None]) -> None:
        thread = threading.Thread(target=target, args=(self.stop_threads,), name=name, daemon=True)
        thread.start()
        self.threads.append(thread)

    def note(self, what: str) -> None:
        self.timeline.append((time.time(), what))

    # --- the listener --------------------------------------------------------------------

    def start_listener(
        self, name: str = "listener", listener_config: dict[str, Any] | None = None
    ) -> Process:
        """``python -m listener run`` as ARC would start it, as the install's identity."""
        port = free_port()
        files = listener_files(
            self.plane,
            self.workdir / name,
            listener_config or self.listener_config,
            f"127.0.0.1:{port}",
        )
        env = {
            **no_proxy_env(),
            "KUBECONFIG": str(files["kubeconfig"]),
            "LISTENER_CONFIG_PATH": str(files["config"]),
            "CAPACITY_AWARE_CONFIG": str(files["capacity"]),
        }
        process = self.supervisor.start(
            name, [sys.executable, "-m", "listener", "run"], env=env, cwd=REPO, ports=(port,)
        )
        self.listeners.append(process)
        self.note(f"{name} started (pid {process.popen.pid})")
        return process

    def stop_listener(self, process: Process, grace: float = 30.0) -> int | None:
        started = time.monotonic()
        code = self.supervisor.stop(process, grace=grace)
        self.note(f"{process.name} stopped (exit {code}, {time.monotonic() - started:.1f} s)")
        return code

    # --- jobs ----------------------------------------------------------------------------

    def submit(self, count: int) -> list[int]:
        ids = [self.feed.add_job(self.scale_set_id, labels=(SCALE_SET,)) for _ in range(count)]
        self.jobs.extend(ids)
        self.note(f"{count} job(s) queued")
        return ids

    def wait(self, predicate: Callable[[], bool], timeout: float, what: str) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            # Listener processes are the mirror's: one that exits is reported to ARC, which
            # recreates its pod; every other process must stay up, and a listener that keeps
            # exiting ends the play rather than its timeouts.
            self.supervisor.check_alive(skip=lambda p: p in self.listeners)
            mirror = getattr(self, "mirror", None)
            if mirror is not None and len(mirror.exits) > MAX_LISTENER_EXITS:
                raise RuntimeError(
                    f"the listener exited {len(mirror.exits)} times (last: "
                    f"{mirror.exits[-1]}); see {self.supervisor.log_dir}"
                )
            if predicate():
                self.note(what)
                return True
            time.sleep(0.5)
        self.note(f"timed out waiting: {what}")
        return False

    def jobs_done(self) -> bool:
        return all(self.feed.job(r).state == "completed" for r in self.jobs)

    def confirmed(self) -> int:
        """Pairs confirmed now, as the checker's watch last saw them."""
        return self.tracker.bounds[-1].confirmed if self.tracker.bounds else 0

    def mirror_pod_name(self) -> str:
        pods = self.core.list_namespaced_pod(CONTROLLER_NAMESPACE).items
        return next(
            p.metadata.name
            for p in pods
            if any(o.kind == "AutoscalingListener" for o in p.metadata.owner_references or [])
        )

    # --- what is left ----------------------------------------------------------------------

    def placeholders(self) -> list[str]:
        pods = self.core.list_namespaced_pod(
            RUNNER_NAMESPACE, label_selector=observe.PLACEHOLDER_SELECTOR
        ).items
        return [
            p.metadata.name for p in pods if (p.metadata.labels or {}).get("arc-capacity.dev/pair")
        ]

    def workflow_ran(self) -> dict[int, bool]:
        return {
            r.request_id: r.workflow_running_at is not None
            for r in self.runner_double.runners.values()
            if r.request_id is not None
        }

    def figures(self) -> dict[str, Any]:
        outcomes = observe.job_outcomes(self.feed, self.jobs)
        figures = observe.judge(
            outcomes,
            observe.polls(self.face),
            list(self.tracker.bounds),
            self.placeholders(),
            workflow_ran=self.workflow_ran(),
        )
        figures["nodeclaims_launched"] = len(self.sampler.nodeclaims_seen)
        figures["runner_double_errors"] = self.runner_double.errors[:10]
        figures["sampler_errors"] = self.sampler.errors[:10]
        figures["watch_errors"] = self.tracker.errors[:10]
        mirror = getattr(self, "mirror", None)
        figures["listener_exits"] = mirror.exits if mirror else []
        figures["arc_race_recoveries"] = self.arc_recoveries
        return figures

    def events(self, reason: str) -> list[dict[str, Any]]:
        found = self.core.list_namespaced_event(RUNNER_NAMESPACE).items
        return [
            {"object": e.involved_object.name, "message": e.message}
            for e in found
            if e.reason == reason
        ]

    def stop_mirror(self) -> None:
        """The play is over: stop following ARC's listener pod, so the listeners the runner
        stops are not reported to ARC as exits (and recreated)."""
        self.mirror_stop.set()

    def close(self) -> None:
        self.mirror_stop.set()
        self.stop_threads.set()
        for thread in self.threads:
            thread.join(timeout=10)
        self.face.close()

    def dump(self, path: Path) -> None:
        path.write_text(
            json.dumps(
                {
                    "timeline": [(round(t - self.started_at, 2), w) for t, w in self.timeline],
                    "polls": [
                        (round(p.at - self.started_at, 2), p.capacity)
                        for p in observe.polls(self.face)
                    ],
                    "bounds": [
                        (round(b.at - self.started_at, 2), b.confirmed, b.busy)
                        for b in self.tracker.bounds
                    ],
                    "nodeclaims": {
                        name: round(at - self.started_at, 2)
                        for name, at in self.sampler.nodeclaims_seen.items()
                    },
                    "preempted": self.events("Preempted"),
                    "jobs": self._job_times(),
                    "pods": {
                        name: {
                            k: (round(v - self.started_at, 2) if isinstance(v, float) else v)
                            for k, v in times.items()
                        }
                        for name, times in self.tracker.pod_times.items()
                    },
                    "samples": [
                        {**s.__dict__, "at": round(s.at - self.started_at, 2)}
                        for s in self.sampler.samples
                    ],
                },
                indent=1,
            )
        )

    def _job_times(self) -> list[dict[str, Any]]:
        """Each job's queue, assignment, runner start, workflow Running and finish times."""
        running = {
            r.request_id: r.workflow_running_at
            for r in self.runner_double.runners.values()
            if r.request_id is not None
        }

        def rel(at: float | None) -> float | None:
            return None if at is None else round(at - self.started_at, 2)

        out = []
        for request_id in self.jobs:
            job = self.feed.job(request_id)
            out.append(
                {
                    "id": request_id,
                    "state": job.state,
                    "queued": rel(job.queued_at),
                    "assigned": rel(job.assigned_at),
                    "started": rel(job.started_at),
                    "workflow_running": rel(running.get(request_id)),
                    "finished": rel(job.finished_at),
                }
            )
        return out


class ListenerMirror:
    """Runs one listener process per listener pod ARC's controller keeps (kwok only pretends
    to run the pod): a new pod starts a process with the config Secret ARC wrote for it; a
    deleted pod's process gets SIGTERM with the pod's grace period; a process that exits by
    itself has its pod's ``listener`` container marked terminated with its exit code, as the
    kubelet would, so ARC's controller deletes and recreates the pod as it does on a cluster."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.by_pod: dict[str, Process] = {}
        self.reported: set[str] = set()
        self.generation = 0
        self.exits: list[dict[str, Any]] = []
        self.errors: list[str] = []

    def _report_exit(self, pod: Any, process: Process) -> None:
        code = process.popen.returncode
        self.world.core.patch_namespaced_pod_status(
            pod.metadata.name, CONTROLLER_NAMESPACE, exited_status(pod.spec.containers, code)
        )
        self.exits.append({"process": process.name, "exit": code, "pod": pod.metadata.name})
        self.world.note(f"{process.name} exited {code}: pod {pod.metadata.name} marked terminated")

    def tick(self) -> None:
        pods = self.world.core.list_namespaced_pod(CONTROLLER_NAMESPACE).items
        live = {}
        for pod in pods:
            owners = pod.metadata.owner_references or []
            ours = any(o.kind == "AutoscalingListener" for o in owners)
            if ours and pod.metadata.deletion_timestamp is None:
                live[pod.metadata.uid] = pod
        for uid, process in list(self.by_pod.items()):
            if uid not in live:
                del self.by_pod[uid]
                if process.alive():
                    self.world.note(f"ARC deleted the listener pod: SIGTERM to {process.name}")
                    self.world.stop_listener(process, grace=60)
        for uid, pod in live.items():
            process = self.by_pod.get(uid)
            if process is not None and not process.alive() and uid not in self.reported:
                self.reported.add(uid)
                self._report_exit(pod, process)
            if uid in self.by_pod:
                continue
            config = wait_for_listener_config(self.world.plane, timeout=30)
            name = "listener" if self.generation == 0 else f"listener-{self.generation}"
            self.generation += 1
            self.world.listener_config = config
            self.by_pod[uid] = self.world.start_listener(name, config)
            self.world.note(f"ARC's listener pod {pod.metadata.name}: {name} started")

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.tick()
            except Exception as err:  # reported, never fatal to the world
                self.errors.append(f"{type(err).__name__}: {err}")
            stop.wait(0.5)


__all__ = ["CONTROLLER_NAMESPACE", "World", "WorldSpec"]
