"""The container-hook template of an installed capacity-aware scale set (config/hook-template.yaml).

In ``kubernetes-novolume`` mode the runner reads the file named by
``ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE`` and merges it into every workflow pod: that is where
workflow pods get class ``arc-workflow`` and their ``$job`` requests. The quickstart applies
it as a ConfigMap and the Helm overlay mounts it into the runner container; this module does
the same to a simulated scale set's EphemeralRunnerSet, so that ``verify`` can read it back
through the API like on a real cluster, and the capacity-aware listener places its workflow
placeholders like it (providers/kubernetes/pods/hook_template.py), in the scenario worlds as on a
cluster. The simulated hook itself sizes and places workflow pods from its ScaleSetSpec, which
this ConfigMap mirrors at install.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from providers.kubernetes.pods import labels as L
from simulator.engine.store import ObjectStore

HOOK_TEMPLATE_DIR = "/home/runner/hook-template"
HOOK_TEMPLATE_KEY = "workflow-pod.yaml"


def hook_template_configmap(
    scale_set: str,
    namespace: str,
    workflow_requests: Mapping[str, str],
    pod_spec: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """config/hook-template.yaml for this world: the workflow pod's ``$job`` size, and its
    class and placement: ``pod_spec`` (a scale set's ``ScaleSetSpec.workflow_pod_spec``),
    else config/hook-template.yaml's class and no placement."""
    amounts = dict(workflow_requests)
    fields = (
        dict(pod_spec)
        if pod_spec is not None
        else {"priorityClassName": L.DEFAULT_PRIORITY_CLASSES["workflow"][0]}
    )
    template = {
        "metadata": {"labels": {"app.kubernetes.io/component": "workflow"}},
        "spec": {
            **fields,
            "containers": [
                {"name": "$job", "resources": {"requests": amounts, "limits": dict(amounts)}}
            ],
        },
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"{scale_set}-hook-template",
            "namespace": namespace,
            "labels": {"app.kubernetes.io/part-of": "arc-capacity-listener"},
        },
        "data": {HOOK_TEMPLATE_KEY: json.dumps(template, indent=2)},
    }


def install_hook_template(
    store: ObjectStore,
    *,
    scale_set: str,
    namespace: str,
    workflow_requests: Mapping[str, str],
    pod_spec: Mapping[str, Any] | None = None,
) -> None:
    """What the quickstart does by hand: the hook template ConfigMap, and the runner template
    naming it (env) and mounting it (volume), as config/values-capacity-aware.yaml does."""
    configmap = store.create(
        hook_template_configmap(scale_set, namespace, workflow_requests, pod_spec)
    )

    def mount(ers: dict[str, Any]) -> None:
        pod = ers["spec"]["ephemeralRunnerSpec"]["spec"]
        runner = pod["containers"][0]
        runner.setdefault("env", []).append(
            {
                "name": "ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE",
                "value": f"{HOOK_TEMPLATE_DIR}/{HOOK_TEMPLATE_KEY}",
            }
        )
        runner.setdefault("volumeMounts", []).append(
            {"name": "hook-template", "mountPath": HOOK_TEMPLATE_DIR, "readOnly": True}
        )
        pod.setdefault("volumes", []).append(
            {"name": "hook-template", "configMap": {"name": configmap["metadata"]["name"]}}
        )

    store.mutate("EphemeralRunnerSet", namespace, scale_set, mount)
