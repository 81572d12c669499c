"""What an ARC scale set in the simulated world is made of (simulator/workload/arc.py runs
it): its settings (:class:`ScaleSetSpec`: pod shapes, container mode, the runner pod
template), ARC's timings, the names and labels ARC and the hook use, and the state of one
ephemeral runner (:class:`RunnerState`)."""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from listener.arc.version import ArcVersion
from simulator.engine.loop import Timer
from simulator.workload.service_records import Job

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


def span_delay(rng: random.Random, span: tuple[float, float]) -> float:
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
