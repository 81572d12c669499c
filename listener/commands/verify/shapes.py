"""The pods ``verify`` creates (or dry-runs), built from the product's own placeholder builder.

- Probe placeholders: :class:`~providers.kubernetes.pods.placeholders.PlaceholderPodBuilder` with
  the scale set's runner template, but a probe scale-set name (``verify-<run>``) and the probe
  ConfigMap as owner, so the real listener never counts, adopts or sweeps them.
- A runner-shaped pod: the runner placeholder's size and placement with the runner's class;
  a workflow-shaped pod: the workflow placeholder's with the workflow class.
- Fillers: pods bound with ``spec.nodeName`` (no scheduler, so they never preempt anything)
  at the runner's class, sized to a node's free room, so the probe node is full and a
  runner-shaped pod must preempt to fit.
- The hook template (``ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE``), read back from the
  ConfigMap the runner container mounts (:mod:`providers.kubernetes.pods.hook_template`): the
  workflow pod's class and requests, and the workflow half's placement, as the listener
  places it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from providers.kubernetes.placement.resources import Resources, format_quantity
from providers.kubernetes.pods import labels as L
from providers.kubernetes.pods.hook_template import HookTemplate
from providers.kubernetes.pods.placeholders import PlaceholderPodBuilder
from reconciler.ports import PairSpec
from reconciler.settings import CapacityAwareSettings
from state_machine.record import pod_names

Obj = dict[str, Any]
LABEL_VERIFY = f"{L.PREFIX}/verify"  # the run id: every object verify creates carries it
LABEL_VERIFY_ROLE = f"{L.PREFIX}/verify-role"
HOSTNAME = "kubernetes.io/hostname"
#: A node label no node carries: the "cannot schedule" probe's selector.
IMPOSSIBLE = {f"{L.PREFIX}/verify-impossible": "true"}
#: Seconds a probe pod may live at most (activeDeadlineSeconds): a crash leaves nothing
#: holding capacity for long even if the owner's deletion never happens.
PROBE_LIFETIME = 1800


def shortfall(wanted: Mapping[str, Decimal], reserved: Mapping[str, Decimal]) -> dict[str, str]:
    """Resources ``wanted`` asks for beyond what ``reserved`` holds (name -> "want > have")."""
    short = {}
    for name, amount in sorted(wanted.items()):
        have = reserved.get(name, Decimal(0))
        if amount > have:
            short[name] = f"{format_quantity(amount)} > {format_quantity(have)}"
    return short


def probe_name(run_id: str) -> str:
    return f"verify-{run_id}"


def verify_labels(run_id: str, role: str) -> dict[str, str]:
    return {LABEL_VERIFY: run_id, LABEL_VERIFY_ROLE: role}


class Shapes:
    """Every pod of one verify run, for one scale set and its capacityAware block."""

    def __init__(
        self,
        settings: CapacityAwareSettings,
        ers: Mapping[str, Any],
        *,
        run_id: str,
        namespace: str,
        owner: Mapping[str, Any] | None,
        now: float,
        workflow_pod_spec: Mapping[str, Any] | None = None,
    ) -> None:
        self.settings = settings
        self.run_id = run_id
        self.namespace = namespace
        self.scale_set = probe_name(run_id)
        self.now = now
        probe_ers = copy.deepcopy(dict(ers))
        probe_ers["metadata"] = {**probe_ers.get("metadata", {}), "name": self.scale_set}
        self.builder = PlaceholderPodBuilder(
            settings,
            probe_ers,
            instance=run_id,
            namespace=namespace,
            owner=owner,
            workflow_pod_spec=workflow_pod_spec,
        )

    def pair(self, pair_id: str, *, impossible: bool = False) -> tuple[Obj, Obj]:
        runner_pod, workflow_pod = pod_names(self.scale_set, pair_id)
        spec = PairSpec(pair_id, self.scale_set, runner_pod, workflow_pod, self.now + 3600)
        pods = self.builder.build(spec)
        for pod in pods:
            pod["metadata"]["labels"].update(verify_labels(self.run_id, "placeholder"))
            pod["spec"]["activeDeadlineSeconds"] = PROBE_LIFETIME
            if impossible:
                pod["spec"]["nodeSelector"] = {**pod["spec"].get("nodeSelector", {}), **IMPOSSIBLE}
        return pods

    def real_shaped(self, role: str, name: str, node: str | None) -> Obj:
        """A pod with the ``role`` placeholder's size and placement and the real pod's class,
        pinned to ``node`` by a hostname selector (the scheduler still places it)."""
        classes = self.settings.priority_classes
        runner, workflow = self.pair("shape")
        pod = runner if role in ("runner", "filler") else workflow
        meta = pod["metadata"]
        meta["name"] = name
        meta["labels"] = verify_labels(self.run_id, role)
        meta.pop("annotations", None)
        pod["spec"]["priorityClassName"] = (
            classes.workflow if role == "workflow" else classes.runner
        )
        if node is not None:
            pod["spec"]["nodeSelector"] = {**pod["spec"].get("nodeSelector", {}), HOSTNAME: node}
        return pod

    def filler(self, name: str, node: str, free: Resources) -> Obj:
        """Bound to ``node`` by ``spec.nodeName``: takes the free room, never preempts."""
        amounts = {k: format_quantity(v) for k, v in sorted(free.items()) if v > 0}
        pod = self.real_shaped("filler", name, None)
        pod["spec"]["nodeName"] = node
        pod["spec"].pop("nodeSelector", None)
        pod["spec"].pop("affinity", None)
        pod["spec"]["containers"][0]["resources"] = {
            "requests": dict(amounts),
            "limits": dict(amounts),
        }
        return pod

    def dry_run_pods(self, template: Mapping[str, Any], hook: HookTemplate | None) -> list[Obj]:
        """The four pods whose admission ``verify`` asks about: both placeholders, a pod shaped
        like the runner pod (its template), and one like the workflow pod (hook template)."""
        runner_ph, workflow_ph = self.pair("dry")
        out = [runner_ph, workflow_ph]
        runner = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{self.scale_set}-dry-runner",
                "namespace": self.namespace,
                "labels": verify_labels(self.run_id, "runner"),
            },
            "spec": copy.deepcopy(dict(template)),
        }
        out.append(runner)
        if hook is not None:
            workflow_spec = hook.job_spec(self.settings.image)
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{self.scale_set}-dry-workflow",
                        "namespace": self.namespace,
                        "labels": {
                            **dict(hook.metadata.get("labels") or {}),
                            **verify_labels(self.run_id, "workflow"),
                        },
                    },
                    "spec": workflow_spec,
                }
            )
        return out
