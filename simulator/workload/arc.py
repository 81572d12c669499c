"""ARC in the simulated world: the controllers, the runner process and the container hook.

One :class:`ArcScaleSet` per runner scale set, over its cluster's ObjectStore:

1. **Objects.** An AutoscalingRunnerSet and an EphemeralRunnerSet (ERS) in API JSON form
   (docs/protocol.md#crds), the runner pod template at ``spec.ephemeralRunnerSpec.spec``.
2. **ERS controller** (docs/protocol.md#scaler): on every change of ``spec.replicas`` /
   ``spec.patchID`` and of its runners. Scaling runs only when ``patchID == 0`` or differs from the
   newest runner's ``actions.github.com/patch-id``; it creates runners up to ``replicas`` and, with
   ``patchID == 0`` only, deletes surplus idle runners in ARC's walk order, read from the
   runners' status (:mod:`.arc_scaledown`: pending then running, never unregistered ones or
   ones with a job). ARC 0.15 (PR #4642) creates none while a runner finished since the
   listener's last new ``patchID``: the count it asked for did not account for it yet.
3. **EphemeralRunner controller**: creates the runner pod (name = runner name, labels
   ``actions-ephemeral-runner=True`` and the scale-set name, owned by the EphemeralRunner,
   class ``arc-runner`` when the install sets one); deletes the EphemeralRunner once its pod
   has finished; treats a runner pod that was preempted, evicted or removed as lost (its
   job, if any, fails).
4. **Runner process**: registers with the Actions service a few seconds after its pod is
   Running (the controller records ``ready``, ``runnerId``, ``runnerName``; before 0.15 also
   ``phase: Running``, which 0.15 leaves to the listener's JobStarted patch, PR #4646), then
   takes an assigned job (``JobStarted``; the service hands jobs to idle
   runners with no capacity check, which is how minRunners' idle runners behave).
5. **Container hook**: after the hook delay it creates the workflow pod
   ``<runner pod name[:54]>-workflow`` (label ``runner-pod=<runner pod>``, the hook
   template's class, e.g. ``arc-workflow``, requests = the workflow template).
   ``kubernetes-novolume`` mode sends it through the scheduler; classic ``kubernetes`` mode
   pins it to the runner's node with ``spec.nodeName`` (no scheduler, no preemption; the
   kubelet rejects it if it does not fit). The hook does not watch the pod: it *reads* its
   phase on the ``waitForPodPhases`` back-off schedule (:mod:`.hook`: at once, then after 1,
   2, 4, 8, 16, 20, 20, ... s), so the job sees the pod Running only at the next read; a
   phase other than Pending/Running or a pod that is gone fails the job at that read, and
   a pod still Pending when the back-off passes the prepare-job timeout fails it then
   (611 s after creation with the default 600 s). Once it runs, the job runs for its
   duration; then both pods end and the EphemeralRunner is deleted.

``version`` (``0.13`` | ``0.14`` | ``0.15``, the scenario's ``arc.version``) selects the
behaviour; every ARC object carries the chart version in ``app.kubernetes.io/version``, as
ARC copies it from the AutoscalingRunnerSet.

Simplifications (on purpose): no JIT secret objects, no ERS/ARS status updates, no runner
pod restarts (a runner that lost its pod is deleted and the ERS controller replaces it when
``replicas`` asks for it), EphemeralRunners carry no finalizers.
"""

from __future__ import annotations

import contextlib
import copy
import random
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from listener.arc.version import LABEL_VERSION, ArcVersion
from providers.kubernetes import labels as L
from simulator.engine.eventlog import EventLog
from simulator.engine.loop import EventLoop, Timer
from simulator.engine.store import NotFound, Obj, ObjectStore
from simulator.engine.streams import Streams
from simulator.workload.actions import ActionsService, Job, JobState, ScaleSet
from simulator.workload.arc_scaledown import ScaleDownStats, pick_idle, sample
from simulator.workload.hook import poll_schedule
from simulator.workload.pods import (
    LABEL_SIM_JOB,
    LABEL_SIM_ROLE,
    LABEL_SIM_SCALE_SET,
    ROLE_RUNNER,
    ROLE_WORKFLOW,
    PodRouter,
)

ANNOTATION_PATCH_ID = "actions.github.com/patch-id"
#: The chart version each ARC release labels its objects with.
CHART_VERSION = {
    ArcVersion.V0_13: "0.13.1",
    ArcVersion.V0_14: "0.14.2",
    ArcVersion.V0_15: "0.15.0",
}
#: The hook names the workflow pod ``<runner pod name>[:63 - len("-workflow")]-workflow``.
WORKFLOW_SUFFIX = "-workflow"
MAX_POD_NAME = 63
RUNNER_CONTAINER = "runner"
HOOK_PATHS = {
    "kubernetes": "/home/runner/k8s/index.js",
    "kubernetes-novolume": "/home/runner/k8s-novolume/index.js",
}


class ContainerMode(StrEnum):
    KUBERNETES = "kubernetes"
    NOVOLUME = "kubernetes-novolume"


class PodFinisher(Protocol):
    """The cluster's kubelet: a pod's containers ended by themselves."""

    def finish_pod(self, namespace: str, name: str, succeeded: bool = True) -> bool: ...


def _span(rng: random.Random, span: tuple[float, float]) -> float:
    low, high = span
    return low if high <= low else rng.uniform(low, high)


@dataclass(frozen=True, slots=True)
class ArcTimings:
    #: ERS / EphemeralRunner controller reaction time.
    controller_delay: float = 0.5
    #: Runner pod Running -> runner process online (registered, listening for a job).
    runner_startup: tuple[float, float] = (3.0, 6.0)
    #: JobStarted -> workflow pod created ("Set up job" + the hook's prepare_job).
    hook_delay: tuple[float, float] = (2.0, 5.0)
    #: ACTIONS_RUNNER_PREPARE_JOB_TIMEOUT_SECONDS: the hook's back-off gives up on a workflow
    #: pod still Pending once its summed sleeps pass this (see :mod:`.hook`).
    prepare_job_timeout: float = 600.0
    #: Job finished -> runner process exits (its pod ends).
    runner_exit: float = 1.0


@dataclass(frozen=True)
class ScaleSetSpec:
    """One runner scale set as the world builds it (validated upstream by the scenario)."""

    name: str
    namespace: str
    labels: tuple[str, ...]
    min_runners: int
    max_runners: int
    container_mode: ContainerMode
    #: Runner pod spec fragment: containers' requests, nodeSelector, tolerations, ...
    runner_requests: Mapping[str, str]
    runner_placement: Mapping[str, Any]
    workflow_requests: Mapping[str, str]
    workflow_placement: Mapping[str, Any]
    do_not_disrupt: bool = True
    #: PriorityClass of runner / workflow pods (None: no class, priority 0, as stock ARC).
    runner_priority_class: str | None = None
    workflow_priority_class: str | None = None

    def runner_pod_spec(self) -> dict[str, Any]:
        """The runner PodSpec of the ERS template (what ARC would render from the Helm chart)."""
        env = [
            {"name": "ACTIONS_RUNNER_CONTAINER_HOOKS", "value": HOOK_PATHS[self.container_mode]},
            {
                "name": "ACTIONS_RUNNER_POD_NAME",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
            },
            {"name": "ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER", "value": "true"},
        ]
        spec: dict[str, Any] = {
            "containers": [
                {
                    "name": RUNNER_CONTAINER,
                    "image": "ghcr.io/actions/actions-runner:latest",
                    "command": ["/home/runner/run.sh"],
                    "env": env,
                    "resources": {"requests": dict(self.runner_requests)},
                }
            ],
            "restartPolicy": "Never",
            "serviceAccountName": f"{self.name}-gha-rs-kube-mode",
            **copy.deepcopy(dict(self.runner_placement)),
        }
        if self.runner_priority_class:
            spec["priorityClassName"] = self.runner_priority_class
        if self.container_mode is ContainerMode.KUBERNETES:
            # Classic mode: the work directory is a ReadWriteOnce volume shared with the
            # workflow pod, which is why the hook pins the workflow pod to this node.
            spec["containers"][0]["volumeMounts"] = [
                {"name": "work", "mountPath": "/home/runner/_work"}
            ]
            spec["volumes"] = [
                {
                    "name": "work",
                    "ephemeral": {
                        "volumeClaimTemplate": {
                            "spec": {
                                "accessModes": ["ReadWriteOnce"],
                                "resources": {"requests": {"storage": "1Gi"}},
                            }
                        }
                    },
                }
            ]
        return spec

    def workflow_pod_spec(self) -> dict[str, Any]:
        """Placement and class of the workflow pod (what the hook template sets)."""
        spec = copy.deepcopy(dict(self.workflow_placement))
        if self.workflow_priority_class:
            spec["priorityClassName"] = self.workflow_priority_class
        return spec


class RunnerPhase(StrEnum):
    PENDING = "pending"  # EphemeralRunner exists, pod not Running yet
    STARTING = "starting"  # pod Running, runner process not online yet
    IDLE = "idle"  # registered, no job
    BUSY = "busy"  # has a job
    EXITING = "exiting"  # job done (or failed), pod ending
    GONE = "gone"  # deleted / lost


@dataclass(eq=False, slots=True)
class RunnerState:
    name: str
    patch_id: int
    phase: RunnerPhase = RunnerPhase.PENDING
    pod_created: bool = False
    node: str | None = None
    runner_id: int = 0
    job: Job | None = None
    workflow_pod: str | None = None
    workflow_running: bool = False
    deleting: bool = False
    timers: list[Timer] = field(default_factory=list)

    def cancel_timers(self) -> None:
        for timer in self.timers:
            timer.cancel()
        self.timers.clear()


class ArcScaleSet:
    def __init__(
        self,
        *,
        loop: EventLoop,
        store: ObjectStore,
        router: PodRouter,
        cluster: PodFinisher,
        service: ActionsService,
        scale_set: ScaleSet,
        spec: ScaleSetSpec,
        timings: ArcTimings,
        rng: random.Random,
        log: EventLog,
        version: ArcVersion = ArcVersion.V0_15,
    ) -> None:
        self.loop = loop
        self.version = version
        self.store = store
        self.router = router
        self.cluster = cluster
        self.service = service
        self.scale_set = scale_set
        self.spec = spec
        self.timings = timings
        self.streams = Streams.from_rng(rng)
        self.log = log
        self.namespace = spec.namespace
        self.ers_name = spec.name
        self.runners: dict[str, RunnerState] = {}
        self.polls = poll_schedule(timings.prepare_job_timeout)
        self._reconcile_pending = False
        self.runners_created = 0
        self.stats = ScaleDownStats()
        #: 0.15 (#4642): the spec.patchID current when a runner last finished; scale-up waits
        #: for a different one (the listener has published a count that accounts for it).
        self._finished_under: int | None = None
        #: Scale-ups #4642 deferred.
        self.deferred_scale_ups = 0

    # --- objects -----------------------------------------------------------------------------

    def install(self) -> None:
        """Create the AutoscalingRunnerSet and the EphemeralRunnerSet; start watching."""
        spec = self.spec
        template = spec.runner_pod_spec()
        template_meta = {
            "labels": {"app.kubernetes.io/component": "runner"},
            "annotations": ({L.ANNOTATION_DO_NOT_DISRUPT: "true"} if spec.do_not_disrupt else {}),
        }
        ars = self.store.create(
            {
                "apiVersion": f"{L.ARC_GROUP}/{L.ARC_VERSION}",
                "kind": "AutoscalingRunnerSet",
                "metadata": {
                    "name": spec.name,
                    "namespace": self.namespace,
                    "annotations": {"runner-scale-set-id": str(self.scale_set.id)},
                },
                "spec": {
                    "githubConfigUrl": "https://github.com/acme",
                    "githubConfigSecret": "github-app",
                    "runnerScaleSetName": spec.name,
                    "maxRunners": spec.max_runners,
                    "minRunners": spec.min_runners,
                    "template": {
                        "metadata": copy.deepcopy(template_meta),
                        "spec": copy.deepcopy(template),
                    },
                },
            }
        )
        self.store.create(
            {
                "apiVersion": f"{L.ARC_GROUP}/{L.ARC_VERSION}",
                "kind": "EphemeralRunnerSet",
                "metadata": {
                    "name": self.ers_name,
                    "namespace": self.namespace,
                    "labels": {
                        L.LABEL_ARC_SCALE_SET_NAME: spec.name,
                        L.LABEL_ARC_SCALE_SET_NAMESPACE: self.namespace,
                        "app.kubernetes.io/component": "runner-set",
                        LABEL_VERSION: CHART_VERSION[self.version],
                    },
                    "annotations": {"actions.github.com/runner-scale-set-name": spec.name},
                    "ownerReferences": [_owner_ref(ars, controller=True)],
                },
                "spec": {
                    "patchID": 0,
                    "ephemeralRunnerSpec": {
                        "githubConfigUrl": "https://github.com/acme",
                        "githubConfigSecret": "github-app",
                        "runnerScaleSetId": self.scale_set.id,
                        "metadata": template_meta,
                        "spec": template,
                    },
                },
                "status": {"currentReplicas": 0, "phase": "Running"},
            }
        )
        self.store.subscribe(self._on_ers, kinds=("EphemeralRunnerSet",))

    def ers(self) -> Obj:
        return self.store.get("EphemeralRunnerSet", self.namespace, self.ers_name)

    def set_max_runners(self, max_runners: int) -> None:
        """A user edits the AutoscalingRunnerSet (e.g. a drain sets maxRunners to 0)."""

        def change(obj: Obj) -> None:
            obj["spec"]["maxRunners"] = max_runners

        self.store.mutate("AutoscalingRunnerSet", self.namespace, self.ers_name, change)

    # --- ERS controller ----------------------------------------------------------------------

    def _on_ers(self, event_type: str, obj: Obj) -> None:
        if obj["metadata"]["name"] == self.ers_name and event_type != "DELETED":
            self._request_reconcile()

    def _request_reconcile(self) -> None:
        if not self._reconcile_pending:
            self._reconcile_pending = True
            self.loop.call_later(self.timings.controller_delay, self._reconcile)

    def _reconcile(self) -> None:
        self._reconcile_pending = False
        spec = self.ers()["spec"]
        replicas = int(spec.get("replicas") or 0)
        patch_id = int(spec.get("patchID") or 0)
        live = [
            r
            for r in self.runners.values()
            if r.phase is not RunnerPhase.EXITING and not r.deleting
        ]
        objects = self._runner_objects(live)
        sample(self.stats, objects)
        latest = max((r.patch_id for r in self.runners.values()), default=-1)
        if patch_id != 0 and patch_id == latest:
            return  # this intent has been applied already (ARC's patch-id check)
        total = len(live)
        if total < replicas:
            if self._defer_scale_up(patch_id):
                return
            for _ in range(replicas - total):
                self._create_runner(patch_id)
        elif patch_id == 0 and total > replicas:
            by_name = {r.name: r for r in live}
            for er in pick_idle(objects, total - replicas, self._remove, self.stats):
                self._delete_runner(by_name[er["metadata"]["name"]], "scale down")

    def _runner_objects(self, live: list[RunnerState]) -> list[Obj]:
        found = (self.store.find("EphemeralRunner", self.namespace, r.name) for r in live)
        return [er for er in found if er is not None]

    def _remove(self, er: Obj) -> bool:
        return self.service.remove_idle_runner(self.scale_set.id, er["metadata"]["name"])

    def _defer_scale_up(self, patch_id: int) -> bool:
        """0.15 (#4642): no new runners under the patchID a runner finished under."""
        if self.version is not ArcVersion.V0_15 or self._finished_under is None:
            return False
        if patch_id != 0 and patch_id == self._finished_under:
            self.deferred_scale_ups += 1
            return True
        self._finished_under = None
        return False

    def _note_finished(self) -> None:
        self._finished_under = int(self.ers()["spec"].get("patchID") or 0)

    def _runner_name(self) -> str:
        alphabet = string.ascii_lowercase + string.digits
        while True:
            names = self.streams("runner-names")
            suffix = "".join(names.choice(alphabet) for _ in range(5))
            name = f"{self.ers_name}-runner-{suffix}"
            if (
                name not in self.runners
                and self.store.find("EphemeralRunner", self.namespace, name) is None
            ):
                return name

    def _create_runner(self, patch_id: int) -> None:
        name = self._runner_name()
        ers = self.ers()
        er_spec = copy.deepcopy(ers["spec"]["ephemeralRunnerSpec"])
        self.store.create(
            {
                "apiVersion": f"{L.ARC_GROUP}/{L.ARC_VERSION}",
                "kind": "EphemeralRunner",
                "metadata": {
                    "name": name,
                    "namespace": self.namespace,
                    "labels": {
                        L.LABEL_ARC_SCALE_SET_NAME: self.spec.name,
                        L.LABEL_ARC_SCALE_SET_NAMESPACE: self.namespace,
                        "app.kubernetes.io/component": "runner",
                        LABEL_VERSION: CHART_VERSION[self.version],
                    },
                    "annotations": {ANNOTATION_PATCH_ID: str(patch_id)},
                    "ownerReferences": [_owner_ref(ers, controller=True)],
                },
                "spec": er_spec,
                "status": {"ready": False, "phase": "Pending"},
            }
        )
        runner = RunnerState(name, patch_id)
        self.runners[name] = runner
        self.runners_created += 1
        runner.timers.append(
            self.loop.call_later(self.timings.controller_delay, self._create_runner_pod, runner)
        )

    # --- EphemeralRunner controller ----------------------------------------------------------

    def _create_runner_pod(self, runner: RunnerState) -> None:
        if runner.deleting:
            return
        er = self.store.find("EphemeralRunner", self.namespace, runner.name)
        if er is None:
            return
        er_spec = er["spec"]
        meta = er_spec.get("metadata") or {}
        labels = {
            **(meta.get("labels") or {}),
            L.LABEL_EPHEMERAL_RUNNER: "True",
            L.LABEL_ARC_SCALE_SET_NAME: self.spec.name,
            L.LABEL_ARC_SCALE_SET_NAMESPACE: self.namespace,
            LABEL_SIM_ROLE: ROLE_RUNNER,
            LABEL_SIM_SCALE_SET: self.spec.name,
        }
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": runner.name,
                "namespace": self.namespace,
                "labels": labels,
                "annotations": dict(meta.get("annotations") or {}),
                "ownerReferences": [_owner_ref(er, controller=True)],
            },
            "spec": copy.deepcopy(er_spec["spec"]),
        }
        self.router.watch(
            self.namespace, runner.name, lambda t, p: self._on_runner_pod(runner, t, p)
        )
        self.store.create(pod)
        runner.pod_created = True

    def _on_runner_pod(self, runner: RunnerState, event_type: str, pod: Obj) -> None:
        if runner.phase is RunnerPhase.GONE:
            return
        if event_type == "DELETED":
            if not runner.deleting:
                self.loop.call_soon(self._runner_lost, runner, "runner pod removed")
            return
        node = (pod.get("spec") or {}).get("nodeName")
        if node and runner.node is None:
            runner.node = node
        phase = (pod.get("status") or {}).get("phase")
        if runner.deleting:
            return
        if _disrupted(pod) or pod["metadata"].get("deletionTimestamp"):
            self.loop.call_soon(self._runner_lost, runner, "runner pod preempted or evicted")
        elif phase == "Running" and runner.phase is RunnerPhase.PENDING:
            runner.phase = RunnerPhase.STARTING
            delay = _span(self.streams("runner-startup"), self.timings.runner_startup)
            runner.timers.append(self.loop.call_later(delay, self._register, runner))
        elif phase in ("Succeeded", "Failed"):
            if runner.phase is RunnerPhase.EXITING:
                self.loop.call_later(
                    self.timings.controller_delay, self._delete_runner, runner, "runner finished"
                )
            else:
                self.loop.call_soon(self._runner_lost, runner, f"runner pod ended ({phase})")

    def _register(self, runner: RunnerState) -> None:
        if runner.deleting or runner.phase is not RunnerPhase.STARTING:
            return
        runner.phase = RunnerPhase.IDLE
        runner.runner_id = self.service.register_runner(
            self.scale_set.id, runner.name, lambda job: self._on_job(runner, job)
        )
        self.log.emit(
            "runner_registered", runner=runner.name, scale_set=self.spec.name, node=runner.node
        )

        def online(obj: Obj) -> None:
            status = {"ready": True, "runnerId": runner.runner_id, "runnerName": runner.name}
            if not self.version.listener_sets_running:
                status["phase"] = "Running"  # 0.13/0.14: derived from the pod phase
            obj["status"].update(status)

        self._patch_er_status(runner.name, online)

    def _patch_er_status(self, name: str, change: Callable[[Obj], None]) -> None:
        with contextlib.suppress(NotFound):  # deleted meanwhile: the status no longer matters
            self.store.mutate("EphemeralRunner", self.namespace, name, change)

    def _delete_runner(self, runner: RunnerState, why: str) -> None:
        """Delete the runner pod (if any) and its EphemeralRunner."""
        if runner.phase is RunnerPhase.GONE:
            return
        runner.deleting = True
        runner.cancel_timers()
        runner.phase = RunnerPhase.GONE
        pod = self.store.find("Pod", self.namespace, runner.name)
        if pod is not None and not pod["metadata"].get("deletionTimestamp"):
            self.store.delete("Pod", self.namespace, runner.name)
        if self.store.find("EphemeralRunner", self.namespace, runner.name) is not None:
            self.store.delete("EphemeralRunner", self.namespace, runner.name)
        del self.runners[runner.name]
        self._request_reconcile()

    def _runner_lost(self, runner: RunnerState, why: str) -> None:
        if runner.phase is RunnerPhase.GONE or runner.deleting:
            return
        job = runner.job
        if job is not None and job.state in (JobState.STARTED, JobState.RUNNING):
            self._fail_job(runner, f"runner lost: {why}")
        elif runner.phase is RunnerPhase.IDLE:
            self.service.remove_idle_runner(self.scale_set.id, runner.name)
        self.log.emit("runner_lost", runner=runner.name, scale_set=self.spec.name, reason=why)
        self._delete_runner(runner, why)

    # --- the runner process and the container hook -------------------------------------------

    def _on_job(self, runner: RunnerState, job: Job) -> None:
        """Called by the service when this runner takes a job (do not call back into it)."""
        runner.job = job
        runner.phase = RunnerPhase.BUSY
        delay = _span(self.streams("hook-delay"), self.timings.hook_delay)
        runner.timers.append(self.loop.call_later(delay, self._create_workflow_pod, runner))

    def _create_workflow_pod(self, runner: RunnerState) -> None:
        job = runner.job
        if runner.deleting or job is None or job.state is not JobState.STARTED:
            return
        name = runner.name[: MAX_POD_NAME - len(WORKFLOW_SUFFIX)] + WORKFLOW_SUFFIX
        requests = dict(self.spec.workflow_requests)
        spec: dict[str, Any] = {
            "containers": [
                {
                    "name": "job",
                    "image": "ghcr.io/acme/ci:latest",
                    "resources": {"requests": requests, "limits": dict(requests)},
                }
            ],
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            **self.spec.workflow_pod_spec(),
        }
        if self.spec.container_mode is ContainerMode.KUBERNETES:
            spec["nodeName"] = runner.node  # classic mode: pinned, no scheduler
        annotations = {L.ANNOTATION_DO_NOT_DISRUPT: "true"} if self.spec.do_not_disrupt else {}
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {
                    L.LABEL_WORKFLOW_RUNNER_POD: runner.name,
                    LABEL_SIM_ROLE: ROLE_WORKFLOW,
                    LABEL_SIM_SCALE_SET: self.spec.name,
                    LABEL_SIM_JOB: str(job.request_id),
                },
                "annotations": annotations,
            },
            "spec": spec,
        }
        runner.workflow_pod = name
        self.router.watch(
            self.namespace, name, lambda t, p: self._on_workflow_pod(runner, job, t, p)
        )
        self.store.create(pod)
        self._next_read(runner, job, 0, self.loop.now())

    # --- the hook's waitForPodPhases -----------------------------------------------------

    def _next_read(self, runner: RunnerState, job: Job, index: int, created: float) -> None:
        polls = self.polls
        action: Callable[[RunnerState, Job, int, float], None]
        if index < len(polls.reads):
            at, action = created + polls.reads[index], self._read_phase
        else:
            at, action = created + polls.fails_at, self._prepare_timeout
        runner.timers.append(self.loop.call_at(at, action, runner, job, index, created))

    def _read_phase(self, runner: RunnerState, job: Job, index: int, created: float) -> None:
        """One ``getPodPhase``: Running starts the job, Pending backs off, anything else
        (or a pod that is gone: the read gets a 404) fails it."""
        if runner.job is not job or job.state is not JobState.STARTED:
            return
        pod = self.store.find("Pod", self.namespace, runner.workflow_pod or "")
        if pod is None:
            self._workflow_lost(runner, job, "workflow pod removed")
            return
        status = pod.get("status") or {}
        phase = status.get("phase") or "Pending"  # the API server defaults a new pod to Pending
        if phase == "Running":
            self._workflow_started(runner, job)
        elif phase == "Pending":
            self._next_read(runner, job, index + 1, created)
        else:
            reason = status.get("reason") or phase
            self._workflow_lost(runner, job, f"workflow pod failed: {reason}")

    def _on_workflow_pod(self, runner: RunnerState, job: Job, event_type: str, pod: Obj) -> None:
        # Until the hook has read Running it only learns of the pod at its reads; after that a
        # lost or failed pod fails the running job's steps at once.
        if runner.job is not job or job.state is not JobState.RUNNING:
            return
        if event_type == "DELETED":
            self.loop.call_soon(self._workflow_lost, runner, job, "workflow pod removed")
            return
        status = pod.get("status") or {}
        phase = status.get("phase")
        if phase == "Failed":
            reason = status.get("reason") or "Failed"
            self.loop.call_soon(self._workflow_lost, runner, job, f"workflow pod failed: {reason}")
        elif _disrupted(pod) or pod["metadata"].get("deletionTimestamp"):
            self.loop.call_soon(
                self._workflow_lost, runner, job, "workflow pod preempted or evicted"
            )

    def _workflow_started(self, runner: RunnerState, job: Job) -> None:
        if runner.job is not job or job.state is not JobState.STARTED:
            return
        runner.workflow_running = True
        self.service.job_running(job, runner.workflow_pod or "")
        runner.timers.append(self.loop.call_later(job.duration, self._job_done, runner, job))

    def _job_done(self, runner: RunnerState, job: Job) -> None:
        if runner.job is not job or job.state is not JobState.RUNNING:
            return
        self._end_workflow_pod(runner, succeeded=True)
        self.service.finish_job(job, succeeded=True)
        self._exit(runner)

    def _prepare_timeout(self, runner: RunnerState, job: Job, _index: int, _created: float) -> None:
        if runner.job is not job or job.state is not JobState.STARTED:
            return
        timeout = self.timings.prepare_job_timeout
        self._fail_job(
            runner,
            f"prepare-job timeout: workflow pod not Running after {timeout:.0f}s "
            f"(back-off gave up {self.polls.fails_at:.0f}s after creating it)",
        )
        self._exit(runner)

    def _workflow_lost(self, runner: RunnerState, job: Job, why: str) -> None:
        if runner.job is not job or job.state not in (JobState.STARTED, JobState.RUNNING):
            return
        self._fail_job(runner, why)
        self._exit(runner)

    def _fail_job(self, runner: RunnerState, reason: str) -> None:
        job = runner.job
        if job is None:
            return
        self._end_workflow_pod(runner, succeeded=False)
        self.service.finish_job(job, succeeded=False, reason=reason)

    def _end_workflow_pod(self, runner: RunnerState, *, succeeded: bool) -> None:
        """The hook's cleanup: the job container ends (if it ran), then the pod is deleted."""
        name = runner.workflow_pod
        if name is None:
            return
        self.router.unwatch(self.namespace, name)
        pod = self.store.find("Pod", self.namespace, name)
        if pod is None:
            return
        if (pod.get("status") or {}).get("phase") == "Running":
            self.cluster.finish_pod(self.namespace, name, succeeded)
        if self.store.find("Pod", self.namespace, name) is not None:
            self.store.delete("Pod", self.namespace, name)

    def _exit(self, runner: RunnerState) -> None:
        """The ephemeral runner process exits after its job; the controller cleans up."""
        runner.cancel_timers()
        runner.phase = RunnerPhase.EXITING
        self._note_finished()
        runner.timers.append(
            self.loop.call_later(self.timings.runner_exit, self._runner_exits, runner)
        )

    def _runner_exits(self, runner: RunnerState) -> None:
        if runner.deleting:
            return
        pod = self.store.find("Pod", self.namespace, runner.name)
        phase = (pod.get("status") or {}).get("phase") if pod is not None else None
        if phase == "Running":
            self.cluster.finish_pod(self.namespace, runner.name, True)  # -> Succeeded -> delete
        else:
            self._delete_runner(runner, "runner finished")


def _disrupted(pod: Obj) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "DisruptionTarget" and cond.get("status") == "True":
            return True
    return False


def _owner_ref(owner: Obj, *, controller: bool) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }
