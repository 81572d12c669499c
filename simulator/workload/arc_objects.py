"""The ARC objects the simulated controllers create (simulator/workload/arc.py), as API JSON
(docs/protocol.md#crds): the AutoscalingRunnerSet, the EphemeralRunnerSet and one
EphemeralRunner. Pure builders; the controllers write them to the store."""

from __future__ import annotations

import copy
from typing import Any

from listener.arc.version import LABEL_VERSION
from providers.kubernetes.pods import labels as L
from simulator.engine.store import Obj
from simulator.workload.arc_spec import ANNOTATION_PATCH_ID, ScaleSetSpec


def autoscaling_runner_set(
    spec: ScaleSetSpec,
    namespace: str,
    scale_set_id: int,
    template_meta: dict[str, Any],
    template: dict[str, Any],
) -> Obj:
    """The AutoscalingRunnerSet; its runner template is a copy of ``template``."""
    return {
        "apiVersion": f"{L.ARC_GROUP}/{L.ARC_VERSION}",
        "kind": "AutoscalingRunnerSet",
        "metadata": {
            "name": spec.name,
            "namespace": namespace,
            "annotations": {"runner-scale-set-id": str(scale_set_id)},
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


def ephemeral_runner_set(
    spec: ScaleSetSpec,
    namespace: str,
    name: str,
    scale_set_id: int,
    chart_version: str,
    template_meta: dict[str, Any],
    template: dict[str, Any],
    ars: Obj,
) -> Obj:
    """The EphemeralRunnerSet owned by ``ars``, at ``patchID`` 0 and no replicas."""
    return {
        "apiVersion": f"{L.ARC_GROUP}/{L.ARC_VERSION}",
        "kind": "EphemeralRunnerSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                L.LABEL_ARC_SCALE_SET_NAME: spec.name,
                L.LABEL_ARC_SCALE_SET_NAMESPACE: namespace,
                "app.kubernetes.io/component": "runner-set",
                LABEL_VERSION: chart_version,
            },
            "annotations": {"actions.github.com/runner-scale-set-name": spec.name},
            "ownerReferences": [owner_ref(ars, controller=True)],
        },
        "spec": {
            "patchID": 0,
            "ephemeralRunnerSpec": {
                "githubConfigUrl": "https://github.com/acme",
                "githubConfigSecret": "github-app",
                "runnerScaleSetId": scale_set_id,
                "metadata": template_meta,
                "spec": template,
            },
        },
        "status": {"currentReplicas": 0, "phase": "Running"},
    }


def ephemeral_runner(
    spec: ScaleSetSpec,
    namespace: str,
    name: str,
    chart_version: str,
    patch_id: int,
    ers: Obj,
    er_spec: dict[str, Any],
) -> Obj:
    """One EphemeralRunner owned by ``ers``, annotated with the ``patchID`` that made it."""
    return {
        "apiVersion": f"{L.ARC_GROUP}/{L.ARC_VERSION}",
        "kind": "EphemeralRunner",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                L.LABEL_ARC_SCALE_SET_NAME: spec.name,
                L.LABEL_ARC_SCALE_SET_NAMESPACE: namespace,
                "app.kubernetes.io/component": "runner",
                LABEL_VERSION: chart_version,
            },
            "annotations": {ANNOTATION_PATCH_ID: str(patch_id)},
            "ownerReferences": [owner_ref(ers, controller=True)],
        },
        "spec": er_spec,
        "status": {"ready": False, "phase": "Pending"},
    }


def owner_ref(owner: Obj, *, controller: bool) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }
