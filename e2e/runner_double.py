"""Plays the runner inside the pods ARC's controller creates, since kwok runs no containers.

A real runner (actions/runner with runner-container-hooks, ``kubernetes-novolume`` mode):
registers with its JIT config once its container runs, takes the job the broker hands it,
creates the workflow pod from the hook template through the API (kube-scheduler places it),
waits for that pod to run, runs the job's steps in it, deletes it, reports the job done and
exits 0, which ends the runner pod. This double does each of those against the real API
server and the Actions face, one :meth:`RunnerDouble.tick` at a time (a thread calls it), so
every object ARC's controller, the scheduler, Karpenter and the listener see is the one a real
runner would leave.

What it does not model: image pulls and the hook's own start-up (the workflow pod's start delay
is kwok's), step pods, and job failure.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from e2e.kubelet import exited_status
from providers.kubernetes.pods.hook_template import HookTemplateError, read_hook_template
from reconciler.clock import SYSTEM_CLOCK, Clock
from simulator.faces.actions import ScriptedJobFeed

log = logging.getLogger(__name__)

JOB_IMAGE = "ghcr.io/acme/ci:e2e"


@dataclass
class RunnerRecord:
    """One runner pod's life as the double drives it."""

    pod: str
    state: str = "starting"  # starting, idle, claimed, running, finishing, done
    request_id: int | None = None
    registered_at: float | None = None
    claimed_at: float | None = None
    workflow_running_at: float | None = None
    finished_at: float | None = None


@dataclass
class JobTiming:
    """How long a job's steps run once its workflow pod is Running."""

    seconds: float = 20.0


@dataclass
class RunnerDouble:
    core: client.CoreV1Api
    custom: client.CustomObjectsApi
    feed: ScriptedJobFeed
    namespace: str
    scale_set_id: int
    timing: JobTiming
    clock: Clock = SYSTEM_CLOCK
    runners: dict[str, RunnerRecord] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    #: EphemeralRunner status fields seen on runners running a job (the listener's JobStarted
    #: patch, as the real CRD kept it), and how many runners carried a job id.
    job_fields_seen: set[str] = field(default_factory=set)
    runners_with_job_id: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # --- one pass ------------------------------------------------------------------------

    def tick(self) -> None:
        """One pass over the runner pods: register, claim, start, finish, in that order."""
        pods = self.core.list_namespaced_pod(
            self.namespace, label_selector="actions-ephemeral-runner=True"
        ).items
        runners = {
            r["metadata"]["name"]: r
            for r in self.custom.list_namespaced_custom_object(
                "actions.github.com", "v1alpha1", self.namespace, "ephemeralrunners"
            )["items"]
        }
        idle = 0
        for pod in pods:
            name = pod.metadata.name
            if pod.metadata.deletion_timestamp is not None:
                continue
            record = self.runners.setdefault(name, RunnerRecord(name))
            with self._lock:
                self._advance(record, pod, runners.get(name))
            idle += record.state == "idle"
        self.feed.idle_runners[self.scale_set_id] = idle

    def _advance(self, record: RunnerRecord, pod: Any, runner: Mapping[str, Any] | None) -> None:
        now = self.clock.now()
        if record.state == "starting":
            runner_id = ((runner or {}).get("status") or {}).get("runnerId")
            if pod.status.phase == "Running" and runner_id:
                record.state, record.registered_at = "idle", now
        if record.state == "idle":
            request_id = self._next_acquired_job()
            if request_id is not None:
                runner_id = int(((runner or {}).get("status") or {}).get("runnerId") or 0)
                self.feed.start(request_id, record.pod, runner_id or None)
                record.state, record.request_id, record.claimed_at = "claimed", request_id, now
                self._create_workflow_pod(pod, record)
        if record.state in ("claimed", "running"):
            status = (runner or {}).get("status") or {}
            if status.get("jobRequestId"):
                self.runners_with_job_id.add(record.pod)
                self.job_fields_seen.update(k for k in status if k.startswith(("job", "workflow")))
        if record.state == "claimed":
            workflow = self._workflow_pod(record.pod)
            if workflow is not None and workflow.status.phase == "Running":
                record.state, record.workflow_running_at = "running", now
        if (
            record.state == "running"
            and now - (record.workflow_running_at or now) >= self.timing.seconds
        ):
            self._finish(pod, record)
            record.state, record.finished_at = "done", now

    # --- the runner's side effects ---------------------------------------------------------

    def _next_acquired_job(self) -> int | None:
        """The broker hands a registered idle runner the oldest job acquired for its scale
        set that no runner has taken."""
        acquired = sorted(self.feed.jobs_in("acquired"))
        taken = {r.request_id for r in self.runners.values() if r.request_id is not None}
        for request_id in acquired:
            job = self.feed.job(request_id)
            if job.scale_set_id == self.scale_set_id and request_id not in taken:
                return request_id
        return None

    def _create_workflow_pod(self, runner_pod: Any, record: RunnerRecord) -> None:
        """As runner-container-hooks' createJobPod does in kubernetes-novolume mode: the hook
        template's spec merged into a pod with the job container, name ``<runner>-workflow``,
        label ``runner-pod``; no placement of its own, so kube-scheduler places it."""
        template = client.ApiClient().sanitize_for_serialization(runner_pod.spec)
        try:
            hook = read_hook_template(template, self._configmap)
            spec = hook.job_spec(JOB_IMAGE)
            metadata_labels = dict(hook.metadata.get("labels") or {})
        except HookTemplateError as err:
            self.errors.append(f"{record.pod}: hook template: {err}")
            spec = {"containers": [{"name": "job", "image": JOB_IMAGE}]}
            metadata_labels = {}
        spec.setdefault("restartPolicy", "Never")
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{record.pod}-workflow",
                "namespace": self.namespace,
                "labels": {**metadata_labels, "runner-pod": record.pod},
            },
            "spec": spec,
        }
        try:
            self.core.create_namespaced_pod(self.namespace, body)
        except ApiException as err:
            self.errors.append(f"{record.pod}: create workflow pod: {err.status} {err.reason}")

    def _configmap(self, name: str) -> dict[str, Any] | None:
        try:
            found = self.core.read_namespaced_config_map(name, self.namespace)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        return {"data": dict(found.data or {})}

    def _workflow_pod(self, runner_pod: str) -> Any:
        try:
            return self.core.read_namespaced_pod(f"{runner_pod}-workflow", self.namespace)
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    def _finish(self, runner_pod: Any, record: RunnerRecord) -> None:
        """The job's steps ran: delete the workflow pod, report the job done, exit 0."""
        with contextlib.suppress(ApiException):
            self.core.delete_namespaced_pod(
                f"{record.pod}-workflow", self.namespace, grace_period_seconds=0
            )
        if record.request_id is not None:
            self.feed.complete(record.request_id)
        try:
            self.core.patch_namespaced_pod_status(
                record.pod,
                self.namespace,
                exited_status(runner_pod.spec.containers, 0),
            )
        except ApiException as err:
            self.errors.append(f"{record.pod}: exit: {err.status} {err.reason}")

    # --- loop ------------------------------------------------------------------------------

    def run(self, stop: threading.Event, period: float = 0.25) -> None:
        while not stop.is_set():
            try:
                self.tick()
            except Exception as err:  # keep playing; the checker reports what went wrong
                self.errors.append(f"tick: {type(err).__name__}: {err}")
                log.warning("runner double: %s", err)
            stop.wait(period)
