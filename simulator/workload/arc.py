"""ARC in the simulated world: the controllers, the runner process and the container hook.

One :class:`ArcScaleSet` per runner scale set, over its cluster's ObjectStore (its settings
and runner state in :mod:`.arc_spec`):

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
   takes an assigned job (``JobStarted``; what an idle runner adds to a scale set's room is
   the service's broker, :mod:`.actions`).
5. **Container hook** (:mod:`.container_hook`): after the hook delay it creates the workflow pod
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

Simplifications (on purpose): no JIT secret objects, no ERS/ARS status updates but the
``Outdated`` phase of a switched-off set (:meth:`ArcScaleSet.switch_off`), no runner
pod restarts (a runner that lost its pod is deleted and the ERS controller replaces it when
``replicas`` asks for it), EphemeralRunners carry no finalizers.
"""

from __future__ import annotations

import contextlib
import copy
import random
import string
from collections.abc import Callable

from listener.arc.version import ArcVersion
from providers.kubernetes.pods import labels as L
from simulator.engine.eventlog import EventLog
from simulator.engine.loop import EventLoop
from simulator.engine.store import NotFound, Obj, ObjectStore
from simulator.engine.streams import Streams
from simulator.workload.actions import ActionsService
from simulator.workload.arc_objects import (
    autoscaling_runner_set,
    ephemeral_runner,
    ephemeral_runner_set,
    owner_ref,
)
from simulator.workload.arc_scaledown import ScaleDownStats, pick_idle, sample
from simulator.workload.arc_spec import (
    CHART_VERSION,
    ArcTimings,
    PodFinisher,
    RunnerPhase,
    RunnerState,
    ScaleSetSpec,
    span_delay,
)
from simulator.workload.container_hook import ContainerHook
from simulator.workload.pods import (
    LABEL_SIM_ROLE,
    LABEL_SIM_SCALE_SET,
    ROLE_RUNNER,
    PodRouter,
    disrupted,
)
from simulator.workload.service_records import JobState, ScaleSet


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
        self.hook = ContainerHook(
            loop=loop,
            store=store,
            router=router,
            cluster=cluster,
            service=service,
            spec=spec,
            streams=self.streams,
            timings=timings,
            exit_runner=self._exit,
        )
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
            autoscaling_runner_set(spec, self.namespace, self.scale_set.id, template_meta, template)
        )
        self.store.create(
            ephemeral_runner_set(
                spec,
                self.namespace,
                self.ers_name,
                self.scale_set.id,
                CHART_VERSION[self.version],
                template_meta,
                template,
                ars,
            )
        )
        self.store.subscribe(self._on_ers, kinds=("EphemeralRunnerSet",))

    def ers(self) -> Obj:
        return self.store.get("EphemeralRunnerSet", self.namespace, self.ers_name)

    def set_max_runners(self, max_runners: int) -> None:
        """A user edits the AutoscalingRunnerSet (e.g. a drain sets maxRunners to 0)."""

        def change(obj: Obj) -> None:
            obj["spec"]["maxRunners"] = max_runners

        self.store.mutate("AutoscalingRunnerSet", self.namespace, self.ers_name, change)

    def switch_off(self, off: bool = True) -> None:
        """ARC switches the scale set off (``off``) or back on: a runner pod exited 7 (the
        Actions service rejected the runner), so ARC marks the EphemeralRunnerSet and, from
        0.15 (#4652), the AutoscalingRunnerSet ``status.phase: Outdated``
        (providers/kubernetes/observe/scale_set.py ``switched_off`` reads it); back on, the phase
        clears. Only the phases are modelled: ARC's own stop of the listener and its pin of
        the replicas are left to the scenario."""
        phase = "Outdated" if off else None
        kinds = ["EphemeralRunnerSet"]
        if self.version is ArcVersion.V0_15:
            kinds.append("AutoscalingRunnerSet")

        def change(obj: Obj) -> None:
            status = obj.setdefault("status", {})
            if phase is None:
                status.pop("phase", None)
            else:
                status["phase"] = phase

        for kind in kinds:
            self.store.mutate(kind, self.namespace, self.ers_name, change)

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
            ephemeral_runner(
                self.spec, self.namespace, name, CHART_VERSION[self.version], patch_id, ers, er_spec
            )
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
                "ownerReferences": [owner_ref(er, controller=True)],
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
        if disrupted(pod) or pod["metadata"].get("deletionTimestamp"):
            self.loop.call_soon(self._runner_lost, runner, "runner pod preempted or evicted")
        elif phase == "Running" and runner.phase is RunnerPhase.PENDING:
            runner.phase = RunnerPhase.STARTING
            delay = span_delay(self.streams("runner-startup"), self.timings.runner_startup)
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
            self.scale_set.id, runner.name, lambda job: self.hook.on_job(runner, job)
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
            self.hook.fail_job(runner, f"runner lost: {why}")
        elif runner.phase is RunnerPhase.IDLE:
            self.service.remove_idle_runner(self.scale_set.id, runner.name)
        self.log.emit("runner_lost", runner=runner.name, scale_set=self.spec.name, reason=why)
        self._delete_runner(runner, why)

    # --- the runner process ---------------------------------------------------------------

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
