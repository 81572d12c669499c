"""Hand-built Kubernetes objects (API JSON dicts) so tests read like stories of a cluster."""

from __future__ import annotations

import copy
from typing import Any

from providers.kubernetes.pods import labels as L

NS = "arc-runners"
ERS = "arc-runners"
INSTANCE = "abcde"
T0 = 1_700_000_000.0
T0_ISO = "2023-11-14T22:13:20Z"

Obj = dict[str, Any]


def runner_template(**overrides: Any) -> Obj:
    spec: Obj = {
        "containers": [
            {
                "name": "runner",
                "image": "ghcr.io/actions/actions-runner:latest",
                "command": ["/home/runner/run.sh"],
                "env": [
                    {
                        "name": "ACTIONS_RUNNER_CONTAINER_HOOKS",
                        "value": "/home/runner/k8s-novolume/index.js",
                    },
                    {"name": "ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER", "value": "true"},
                ],
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
            }
        ],
        "priorityClassName": "arc-runner",
        "serviceAccountName": "arc-runners-gha-rs-kube-mode",
        "nodeSelector": {"karpenter.sh/nodepool": "runners"},
        "tolerations": [
            {"key": "ci", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
        ],
    }
    spec.update(overrides)
    return spec


def ers(
    name: str = ERS, namespace: str = NS, template: Obj | None = None, uid: str | None = None
) -> Obj:
    obj: Obj = {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunnerSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                L.LABEL_ARC_SCALE_SET_NAME: "arc-runners",
                L.LABEL_ARC_SCALE_SET_NAMESPACE: namespace,
            },
            "ownerReferences": [
                {
                    "apiVersion": "actions.github.com/v1alpha1",
                    "kind": "AutoscalingRunnerSet",
                    "name": "arc-runners",
                    "uid": "ars-uid",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "replicas": 0,
            "patchID": 0,
            "ephemeralRunnerSpec": {
                "githubConfigUrl": "https://github.com/acme",
                "githubConfigSecret": "gh-secret",
                "runnerScaleSetId": 1,
                "metadata": {"labels": {"app": "runner"}},
                "spec": template if template is not None else runner_template(),
            },
        },
        "status": {"currentReplicas": 0},
    }
    if uid:
        obj["metadata"]["uid"] = uid
    return obj


def ars(max_runners: int | None = None, min_runners: int | None = None, namespace: str = NS) -> Obj:
    spec: Obj = {"githubConfigUrl": "https://github.com/acme", "githubConfigSecret": "gh-secret"}
    if max_runners is not None:
        spec["maxRunners"] = max_runners
    if min_runners is not None:
        spec["minRunners"] = min_runners
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingRunnerSet",
        "metadata": {"name": "arc-runners", "namespace": namespace},
        "spec": spec,
    }


def ephemeral_runner(
    name: str,
    *,
    phase: str = "Running",
    job_id: str | None = None,
    owner: str = ERS,
    namespace: str = NS,
) -> Obj:
    status: Obj = {"phase": phase, "ready": phase == "Running"}
    if job_id:
        status["jobId"] = job_id
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {L.LABEL_ARC_SCALE_SET_NAME: "arc-runners"},
            "ownerReferences": [
                {
                    "apiVersion": "actions.github.com/v1alpha1",
                    "kind": "EphemeralRunnerSet",
                    "name": owner,
                    "uid": "ers-uid",
                    "controller": True,
                }
            ],
        },
        "spec": {"spec": runner_template()},
        "status": status,
    }


def pod(
    name: str,
    *,
    namespace: str = NS,
    labels: dict[str, str] | None = None,
    node: str | None = None,
    phase: str = "Pending",
    owners: list[Obj] | None = None,
    requests: dict[str, str] | None = None,
    conditions: list[Obj] | None = None,
    annotations: dict[str, str] | None = None,
    deleting: bool = False,
    tolerations: list[Obj] | None = None,
) -> Obj:
    meta: Obj = {
        "name": name,
        "namespace": namespace,
        "labels": dict(labels or {}),
        "creationTimestamp": T0_ISO,
    }
    if owners:
        meta["ownerReferences"] = owners
    if annotations:
        meta["annotations"] = annotations
    if deleting:
        meta["deletionTimestamp"] = T0_ISO
    spec: Obj = {
        "containers": [
            {
                "name": "c",
                "image": "x",
                "resources": {"requests": dict(requests or {"cpu": "100m"})},
            }
        ]
    }
    if node:
        spec["nodeName"] = node
    if tolerations:
        spec["tolerations"] = tolerations
    status: Obj = {"phase": phase}
    if conditions:
        status["conditions"] = conditions
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def runner_pod(
    name: str,
    *,
    node: str | None = "node-a",
    phase: str = "Running",
    by_label: bool = True,
    by_owner: bool = True,
    **kw: Any,
) -> Obj:
    labels = {L.LABEL_EPHEMERAL_RUNNER: "True"} if by_label else {}
    if by_label:
        labels[L.LABEL_ARC_SCALE_SET_NAME] = "arc-runners"
    owners = (
        [
            {
                "apiVersion": "actions.github.com/v1alpha1",
                "kind": "EphemeralRunner",
                "name": name,
                "uid": f"er-{name}",
                "controller": True,
            }
        ]
        if by_owner
        else None
    )
    return pod(name, labels=labels, node=node, phase=phase, owners=owners, **kw)


def workflow_pod(
    runner: str, *, node: str | None = "node-b", phase: str = "Running", suffix: str = "-workflow"
) -> Obj:
    return pod(
        f"{runner}{suffix}", labels={L.LABEL_WORKFLOW_RUNNER_POD: runner}, node=node, phase=phase
    )


def placeholder(
    pair_id: str,
    role: str,
    *,
    scale_set: str = ERS,
    node: str | None = "node-a",
    phase: str = "Running",
    instance: str = INSTANCE,
    expires_at: str | None = None,
    namespace: str = NS,
    confirm_at: str | None = None,
    **kw: Any,
) -> Obj:
    suffix = "r" if role == "runner" else "w"
    annotations = {L.ANNOTATION_EXPIRES_AT: expires_at} if expires_at is not None else {}
    if confirm_at is not None:
        annotations[L.ANNOTATION_CONFIRM] = confirm_at
    return pod(
        f"{scale_set}-ph-{pair_id}-{suffix}",
        namespace=namespace,
        labels={
            L.LABEL_SCALE_SET: scale_set,
            L.LABEL_PAIR: pair_id,
            L.LABEL_ROLE: role,
            L.LABEL_INSTANCE: instance,
            L.LABEL_MANAGED_BY: L.MANAGED_BY,
            L.LABEL_COMPONENT: L.COMPONENT_PLACEHOLDER,
        },
        node=node,
        phase=phase,
        annotations=annotations or None,
        **kw,
    )


def node(
    name: str,
    *,
    ready: bool = True,
    unschedulable: bool = False,
    taints: list[Obj] | None = None,
    allocatable: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> Obj:
    spec: Obj = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = taints
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
        "status": {
            "allocatable": dict(allocatable or {"cpu": "4", "memory": "16Gi", "pods": "110"}),
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def nodepool(
    name: str = "runners",
    *,
    limits: dict[str, str] | None = None,
    used: dict[str, str] | None = None,
) -> Obj:
    spec: Obj = {"template": {"spec": {"requirements": []}}}
    if limits is not None:
        spec["limits"] = limits
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"resources": dict(used or {})},
    }


def priority_class(name: str, value: int, policy: str = "PreemptLowerPriority") -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "preemptionPolicy": policy,
        "globalDefault": False,
    }


def cluster_admin(account: str = "admin", namespace: str = "kube-system") -> list[Obj]:
    """A ClusterRole allowed everything and its binding to ``namespace/account``: the face's
    administrator, for tests that apply RBAC and then act as the account it grants."""
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "cluster-admin"},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": account},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cluster-admin",
            },
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        },
    ]


def ladder() -> list[Obj]:
    return [
        priority_class("arc-placeholder-runner", -10, "Never"),
        priority_class("arc-runner", 20),
        priority_class("arc-placeholder-workflow", 10, "Never"),
        priority_class("arc-workflow", 20),
    ]


def small_cluster() -> list[Obj]:
    """The ERS, two nodes, the priority ladder and one runner with its job (runner and
    workflow pod): the cluster the face-backed tests start from."""
    return [
        ers(),
        node("node-a"),
        node("node-b"),
        *ladder(),
        ephemeral_runner("arc-runners-runner-a", job_id="1"),
        runner_pod("arc-runners-runner-a"),
        workflow_pod("arc-runners-runner-a"),
    ]


class DictSource:
    """The smallest ObjectSource: lists of dicts per kind."""

    def __init__(self, *objs: Obj) -> None:
        self.objects: dict[str, list[Obj]] = {}
        for obj in objs:
            self.add(obj)

    def add(self, obj: Obj) -> Obj:
        self.objects.setdefault(obj["kind"], []).append(copy.deepcopy(obj))
        return obj

    def list(self, kind: str, namespace: str | None = None) -> list[Obj]:
        return [
            o
            for o in self.objects.get(kind, [])
            if namespace is None or o["metadata"].get("namespace") == namespace
        ]


def set_ers_phase(store: Any, cache: Any, phase: str, timeout: float) -> None:
    """Write the EphemeralRunnerSet's ``status.phase`` through the face's store (ARC's
    ``Outdated``: #4652) and wait until the provider's watch cache holds that version."""
    rv = store.mutate(
        "EphemeralRunnerSet", NS, ERS, lambda ers: ers.setdefault("status", {}).update(phase=phase)
    )["metadata"]["resourceVersion"]
    assert cache.wait_until(
        lambda c: c.get("EphemeralRunnerSet", NS, ERS)["metadata"]["resourceVersion"] == rv,
        timeout,
    )
