"""The container hook of ARC's ``kubernetes`` / ``kubernetes-novolume`` modes in the simulated
world (step 5 of simulator/workload/arc.py's docstring): the workflow pod, the hook's
``waitForPodPhases`` reads (:mod:`.hook`), the job's run, and the cleanup."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from providers.kubernetes.pods import labels as L
from simulator.engine.loop import EventLoop
from simulator.engine.store import Obj, ObjectStore
from simulator.engine.streams import Streams
from simulator.workload.actions import ActionsService
from simulator.workload.arc_spec import (
    MAX_POD_NAME,
    WORKFLOW_SUFFIX,
    ArcTimings,
    ContainerMode,
    PodFinisher,
    RunnerPhase,
    RunnerState,
    ScaleSetSpec,
    span_delay,
)
from simulator.workload.hook import poll_schedule
from simulator.workload.pods import (
    LABEL_SIM_JOB,
    LABEL_SIM_ROLE,
    LABEL_SIM_SCALE_SET,
    ROLE_WORKFLOW,
    PodRouter,
    disrupted,
)
from simulator.workload.service_records import Job, JobState

#: The job container every simulated workflow runs (``:latest``: pulled with policy Always).
WORKFLOW_IMAGE = "ghcr.io/acme/ci:latest"


class ContainerHook:
    """The runner's container hook for one scale set: after the hook delay it creates the
    workflow pod, reads its phase on the ``waitForPodPhases`` back-off, runs the job for its
    duration or fails it, and cleans the workflow pod up; then the runner process exits
    (``exit_runner``, simulator/workload/arc.py)."""

    def __init__(
        self,
        *,
        loop: EventLoop,
        store: ObjectStore,
        router: PodRouter,
        cluster: PodFinisher,
        service: ActionsService,
        spec: ScaleSetSpec,
        streams: Streams,
        timings: ArcTimings,
        exit_runner: Callable[[RunnerState], None],
    ) -> None:
        self.loop = loop
        self.store = store
        self.router = router
        self.cluster = cluster
        self.service = service
        self.spec = spec
        self.namespace = spec.namespace
        self.streams = streams
        self.timings = timings
        self.polls = poll_schedule(timings.prepare_job_timeout)
        self.exit_runner = exit_runner

    def on_job(self, runner: RunnerState, job: Job) -> None:
        """Called by the service when this runner takes a job (do not call back into it)."""
        runner.job = job
        runner.phase = RunnerPhase.BUSY
        delay = span_delay(self.streams("hook-delay"), self.timings.hook_delay)
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
                    "image": WORKFLOW_IMAGE,
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
        elif disrupted(pod) or pod["metadata"].get("deletionTimestamp"):
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
        self.exit_runner(runner)

    def _prepare_timeout(self, runner: RunnerState, job: Job, _index: int, _created: float) -> None:
        if runner.job is not job or job.state is not JobState.STARTED:
            return
        timeout = self.timings.prepare_job_timeout
        self.fail_job(
            runner,
            f"prepare-job timeout: workflow pod not Running after {timeout:.0f}s "
            f"(back-off gave up {self.polls.fails_at:.0f}s after creating it)",
        )
        self.exit_runner(runner)

    def _workflow_lost(self, runner: RunnerState, job: Job, why: str) -> None:
        if runner.job is not job or job.state not in (JobState.STARTED, JobState.RUNNING):
            return
        self.fail_job(runner, why)
        self.exit_runner(runner)

    def fail_job(self, runner: RunnerState, reason: str) -> None:
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
