"""The exercising half of ``verify``, in order; each step's pods are the probe's own.

1. ``pair-ready``: a probe pair (the product's placeholders, probe scale-set name) reaches
   READY as the product judges it (:mod:`.judge`), within ``placeholderReadyTimeout``;
   ``node-autoscaler``: if its pods landed on nodes that did not exist before, the node
   autoscaler reacted (PASS); if they fit on existing nodes, SKIP; if they stayed
   Unschedulable and no node came, FAIL.
2. ``runner-preempts``: the runner placeholder's node is filled (:meth:`Shapes.filler`), then a
   pod with the runner's class and the runner placeholder's size, pinned to that node, must
   take the runner placeholder's room while the workflow placeholder stays Running (the pair
   becomes PREEMPTED, not DELETED).
3. ``workflow-preempts``: the same on the workflow placeholder's node with the workflow class.
4. ``ready-timeout``: a pair with an impossible nodeSelector is judged TIMED_OUT by the
   product after ``--probe-timeout`` and the ledger never counts it.
5. ``garbage-collection``: deleting the probe's owner ConfigMap removes its pods.

A step that cannot run because an earlier one failed is SKIP, saying which.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from listener.commands.verify.judge import PairJudge, Verdict
from listener.commands.verify.probe import Probe
from listener.commands.verify.report import Row, failed, passed, skipped
from listener.commands.verify.room import free_room
from listener.commands.verify.shapes import Shapes
from providers.kubernetes.observe.scale_set import ScaleSetTarget
from reconciler.settings import CapacityAwareSettings
from state_machine.states import PairState

Obj = dict[str, Any]
FIX_PREEMPTION = (
    "check that the scheduler profile of these pods ({scheduler}) enables DefaultPreemption, "
    "and that {cls} is above {victim} with preemptionPolicy PreemptLowerPriority"
)
FIX_AUTOSCALER = (
    "install a node autoscaler that reacts to Unschedulable pods (Karpenter with a NodePool "
    "matching the runner's nodeSelector/tolerations, or cluster-autoscaler), or check its "
    "limits and logs"
)


@dataclass(frozen=True, slots=True)
class Budget:
    """The run's deadline on the probe's monotonic clock."""

    deadline: float
    probe_timeout: float


class Exercises:
    def __init__(
        self, probe: Probe, shapes: Shapes, settings: CapacityAwareSettings, budget: Budget
    ) -> None:
        self.probe = probe
        self.shapes = shapes
        self.settings = settings
        self.budget = budget
        ns = probe.namespace
        self.target = ScaleSetTarget(shapes.scale_set, ns, ns, max_runners=1)
        self.now = probe.clock.now

    def run(self) -> Iterator[Row]:
        """Each exercise's row as soon as it is judged."""
        rows, ready = self.pair_ready()
        yield from rows
        if ready is None:
            why = "needs a READY probe pair (see pair-ready)"
            yield from (skipped("runner-preempts", why), skipped("workflow-preempts", why))
        else:
            judge, verdict = ready
            yield self.runner_preempts(judge, verdict)
            yield self.workflow_preempts(judge, verdict)
        yield self.ready_timeout()
        yield self.garbage_collection()

    # --- 1 --------------------------------------------------------------------------------

    def pair_ready(self) -> tuple[list[Row], tuple[PairJudge, Verdict] | None]:
        clock = self.probe.clock
        before = {n["metadata"]["name"] for n in self.probe.nodes()}
        started = clock.monotonic()
        timeout = min(self.settings.placeholder_ready_timeout, self._left())
        judge = PairJudge(self.target, "p1", ready_timeout=timeout, now=self.now())
        for pod in self.shapes.pair("p1"):
            self.probe.create(pod)
        verdict = self._until(judge, {PairState.READY, PairState.TIMED_OUT}, started + timeout)
        seconds = clock.monotonic() - started
        nodes = [p.node_name for p in verdict.pods.present() if p.node_name]
        added = sorted({n["metadata"]["name"] for n in self.probe.nodes()} - before)
        if verdict.state is PairState.READY:
            row = passed("pair-ready", f"READY in {seconds:.1f}s on {', '.join(nodes)}", seconds)
            new = sorted(set(nodes) - before)
            auto = (
                passed("node-autoscaler", f"node {', '.join(new)} added for the probe pair")
                if new
                else skipped("node-autoscaler", "the probe pair fit on existing nodes")
            )
            return [row, auto], (judge, verdict)
        pending = "; ".join(
            f"{p.role.value} placeholder: {p.unschedulable_message}"
            for p in verdict.pods.present()
            if p.unschedulable_message
        )
        seen = f"not READY after {seconds:.0f}s ({verdict.state.value}: {verdict.reason})"
        row = failed("pair-ready", seen, pending or "see the probe pods' events", seconds)
        if added:
            auto = failed(
                "node-autoscaler",
                f"nodes {', '.join(added)} were added but the pair did not become READY",
                "check that new nodes match the placeholders' nodeSelector/tolerations",
            )
        else:
            auto = failed(
                "node-autoscaler",
                f"no node was added in {seconds:.0f}s for Unschedulable placeholders "
                f"({pending or 'no scheduler message'})",
                FIX_AUTOSCALER,
            )
        return [row, auto], None

    # --- 2 and 3 --------------------------------------------------------------------------

    def runner_preempts(self, judge: PairJudge, ready: Verdict) -> Row:
        runner, workflow = ready.pods.runner, ready.pods.workflow
        if runner is None or workflow is None or runner.node_name is None:
            return skipped("runner-preempts", "the READY pair has no bound runner placeholder")
        return self._preempt(
            "runner-preempts",
            role="runner",
            victim=runner.name,
            keep=workflow.name,
            node=runner.node_name,
            judge=judge,
        )

    def workflow_preempts(self, judge: PairJudge, ready: Verdict) -> Row:
        workflow = ready.pods.workflow
        if workflow is None or workflow.node_name is None:
            return skipped("workflow-preempts", "the READY pair has no bound workflow placeholder")
        if self.probe.pod(workflow.name) is None:
            return skipped("workflow-preempts", "the workflow placeholder is gone already")
        return self._preempt(
            "workflow-preempts",
            role="workflow",
            victim=workflow.name,
            keep=None,
            node=workflow.node_name,
            judge=judge,
        )

    def _preempt(
        self,
        check: str,
        *,
        role: str,
        victim: str,
        keep: str | None,
        node: str,
        judge: PairJudge,
    ) -> Row:
        clock = self.probe.clock
        started = clock.monotonic()
        placeholder = self.probe.pod(victim)
        if placeholder is None:
            return failed(check, f"{victim} vanished before the test", "re-run verify")
        self._fill(node, placeholder, f"{self.shapes.scale_set}-fill-{role}")
        name = f"{self.shapes.scale_set}-{role}"
        self.probe.create(self.shapes.real_shaped(role, name, node))
        deadline = min(self.budget.deadline, clock.monotonic() + self.budget.probe_timeout)

        def took_room() -> Obj | None:
            pod = self.probe.pod(name)
            gone = self.probe.pod(victim) is None
            running = pod is not None and (pod.get("status") or {}).get("phase") == "Running"
            return pod if running and gone else None

        done = self.probe.wait_for(took_room, deadline)
        seconds = clock.monotonic() - started
        verdict = judge.observe(self.probe.source, self.now())
        classes = self.settings.priority_classes
        cls = classes.runner if role == "runner" else classes.workflow
        victim_cls = (
            classes.runner_placeholder if role == "runner" else classes.workflow_placeholder
        )
        if done is None:
            pod = self.probe.pod(name) or {}
            if (pod.get("status") or {}).get("phase") == "Running":
                return skipped(
                    check,
                    f"the pod of class {cls} runs on {node} but {victim} is still there: it found "
                    "room freed after the fill, or the scheduler took other lower-priority pods "
                    "on that node (such as the listener's own runner placeholders); re-run verify",
                    seconds,
                )
            why = _scheduled_message(pod)
            scheduler = (pod.get("spec") or {}).get("schedulerName") or "default-scheduler"
            return failed(
                check,
                f"a pod of class {cls} pinned to full node {node} did not take {victim} within "
                f"{seconds:.0f}s: {why}",
                FIX_PREEMPTION.format(scheduler=scheduler, cls=cls, victim=victim_cls),
                seconds,
            )
        if keep is not None:
            survivor = self.probe.pod(keep)
            alive = survivor is not None and _holds_its_room(survivor)
            if not alive:
                return failed(
                    check,
                    f"the pod of class {cls} took the room but the workflow placeholder {keep} is "
                    "gone",
                    f"keep {classes.workflow_placeholder} above {classes.runner_placeholder}: a "
                    "runner pod must take the runner placeholder, not the workflow one",
                    seconds,
                )
            return passed(
                check,
                f"a pod of class {cls} took {victim}'s room on {node} in {seconds:.1f}s; workflow "
                f"placeholder still holds its room (pair {verdict.state.value})",
                seconds,
            )
        return passed(
            check, f"a pod of class {cls} took {victim}'s room on {node} in {seconds:.1f}s", seconds
        )

    def _fill(self, node_name: str, placeholder: Obj, name: str) -> None:
        """Take the node's free room for the resources the placeholder requests."""
        node = next((n for n in self.probe.nodes() if n["metadata"]["name"] == node_name), None)
        if node is None:
            return
        resources = (placeholder["spec"]["containers"][0].get("resources") or {}).get("requests")
        free = free_room(node, self.probe.node_pods(node_name), (resources or {}).keys())
        if not any(free.values()):
            return
        self.probe.create(self.shapes.filler(name, node_name, free))

        def settled() -> bool | None:
            pod = self.probe.pod(name)
            phase = (pod or {}).get("status", {}).get("phase")
            return True if phase in ("Running", "Failed", None) and pod is not None else None

        self.probe.wait_for(settled, min(self.budget.deadline, self.probe.clock.monotonic() + 15))

    # --- 4 --------------------------------------------------------------------------------

    def ready_timeout(self) -> Row:
        clock = self.probe.clock
        started = clock.monotonic()
        timeout = min(self.budget.probe_timeout, self._left())
        judge = PairJudge(self.target, "p2", ready_timeout=timeout, now=self.now())
        runner, workflow = self.shapes.pair("p2", impossible=True)
        self.probe.create(runner)
        self.probe.create(workflow)
        counted = 0
        observations = 0

        def judged() -> Verdict | None:
            nonlocal counted, observations
            verdict = judge.observe(self.probe.source, self.now())
            observations += 1
            counted += verdict.counted
            return verdict if verdict.state is not PairState.REQUESTED else None

        verdict = self.probe.wait_for(judged, started + timeout + 5)
        seconds = clock.monotonic() - started
        self.probe.delete_pods([runner["metadata"]["name"], workflow["metadata"]["name"]])
        if verdict is None or verdict.state is not PairState.TIMED_OUT:
            state = verdict.state.value if verdict is not None else "REQUESTED"
            return failed(
                "ready-timeout",
                f"the unschedulable pair ended {state}, not TIMED_OUT, after {seconds:.0f}s",
                "report this: the listener would not time this pair out",
                seconds,
            )
        if counted:
            return failed(
                "ready-timeout",
                f"the unschedulable pair was counted {counted} time(s)",
                "report this: the ledger counted a placeholder that never ran",
                seconds,
            )
        return passed(
            "ready-timeout",
            f"TIMED_OUT after {seconds:.1f}s, counted 0 times in {observations} looks "
            f"({verdict.reason})",
            seconds,
        )

    # --- 5 --------------------------------------------------------------------------------

    def garbage_collection(self) -> Row:
        clock = self.probe.clock
        started = clock.monotonic()
        before = [p["metadata"]["name"] for p in self.probe.pods()]
        if not before:
            return skipped("garbage-collection", "no probe pod left to collect")
        self.probe.delete_owner()
        deadline = min(self.budget.deadline, started + 60)
        empty = self.probe.wait_for(lambda: True if not self.probe.pods() else None, deadline)
        seconds = clock.monotonic() - started
        if empty is None:
            left = ", ".join(p["metadata"]["name"] for p in self.probe.pods())
            return failed(
                "garbage-collection",
                f"{left} still exist {seconds:.0f}s after their owner was deleted",
                "check that kube-controller-manager's garbage collector runs; placeholders of "
                "an uninstalled scale set would otherwise stay",
                seconds,
            )
        return passed(
            "garbage-collection", f"{len(before)} pods collected in {seconds:.1f}s", seconds
        )

    # --- helpers --------------------------------------------------------------------------

    def _left(self) -> float:
        return max(0.0, self.budget.deadline - self.probe.clock.monotonic())

    def _until(self, judge: PairJudge, states: set[PairState], deadline: float) -> Verdict:
        last: list[Verdict] = []

        def look() -> Verdict | None:
            verdict = judge.observe(self.probe.source, self.now())
            last[:] = [verdict]
            return verdict if verdict.state in states else None

        return self.probe.wait_for(look, deadline) or last[0]


def _scheduled_message(pod: Obj) -> str:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return str(cond.get("message") or cond.get("reason"))
    status = pod.get("status") or {}
    detail = ": ".join(str(status[k]) for k in ("reason", "message") if status.get(k))
    return f"it is {status.get('phase', 'missing')}" + (f" ({detail})" if detail else "")


def _holds_its_room(pod: Obj) -> bool:
    """Bound, not ended, not disrupted, not terminating: the node keeps its requests for it.
    Pending counts: a workflow placeholder may still be pulling images (``prePullAuto``)."""
    status = pod.get("status") or {}
    disrupted = any(
        c.get("type") == "DisruptionTarget" and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )
    deleting = bool(pod["metadata"].get("deletionTimestamp"))
    bound = bool((pod.get("spec") or {}).get("nodeName"))
    alive = status.get("phase") in ("Pending", "Running")
    return bound and alive and not disrupted and not deleting
