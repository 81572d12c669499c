"""What runs on the control plane: the CRDs, Karpenter with its kwok cloud provider, ARC's
gha-runner-scale-set controller, and the cluster objects a platform team would have.

Steps of :func:`install_platform`:
1. namespaces ``arc-systems`` (ARC's controller, the listener) and ``arc-runners`` (runners);
2. Karpenter's CRDs and KWOKNodeClass CRD from the Karpenter module, ARC's four CRDs from the
   ARC release (server-side apply: ARC's are larger than client-side apply's annotation limit);
3. a static ``e2e-system`` node (kwok-managed, tainted) where ARC puts its listener pod, so
   runner pods and placeholders only ever land on nodes Karpenter launched;
4. the KWOKNodeClass and the NodePool ``ci`` (instance types of ``instance-types.json`` beside
   this file, an optional CPU limit);
5. Karpenter (leader election off, our instance types) and ARC's controller
   (``--auto-scaling-runner-set-only``, watching every namespace).
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from e2e.build import binary, cache_root
from e2e.components import ARC_COMMIT, ARC_VERSION, KARPENTER_VERSION
from e2e.control_plane import ControlPlane, gomodcache, no_proxy_env
from e2e.processes import Supervisor, free_port

HERE = Path(__file__).resolve().parent
CONTROLLER_NAMESPACE = "arc-systems"
RUNNER_NAMESPACE = "arc-runners"
NODEPOOL = "ci"
SYSTEM_NODE = "e2e-system"
SYSTEM_TAINT = {"key": "e2e.arc-capacity/system", "value": "true", "effect": "NoSchedule"}


@dataclass(frozen=True)
class NodePoolSpec:
    """The NodePool the runners' nodes come from."""

    instance_types: tuple[str, ...] = ("e2e-4x",)
    cpu_limit: str | None = None
    #: KWOKNodeClass.spec.nodeRegistrationDelay: a launched node's time to join.
    registration_delay: str = "5s"
    consolidate_after: str = "30s"
    #: False: no KWOKNodeClass at start, so every launch fails with InsufficientCapacity.
    nodeclass: bool = True


def karpenter_module_dir() -> Path:
    return gomodcache() / f"sigs.k8s.io/karpenter@{KARPENTER_VERSION}"


def arc_source_dir() -> Path:
    return cache_root() / "src" / f"arc-{ARC_COMMIT[:12]}"


def crd_files() -> list[Path]:
    karpenter = karpenter_module_dir()
    arc = arc_source_dir() / "config" / "crd" / "bases"
    return [
        karpenter / "kwok/charts/crds/karpenter.sh_nodepools.yaml",
        karpenter / "kwok/charts/crds/karpenter.sh_nodeclaims.yaml",
        karpenter / "kwok/charts/crds/karpenter.sh_nodeoverlays.yaml",
        karpenter / "kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml",
        *(
            arc / f"actions.github.com_{kind}.yaml"
            for kind in (
                "autoscalingrunnersets",
                "ephemeralrunnersets",
                "ephemeralrunners",
                "autoscalinglisteners",
            )
        ),
    ]


def system_node() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": SYSTEM_NODE,
            "annotations": {"kwok.x-k8s.io/node": "fake"},
            "labels": {
                "kubernetes.io/hostname": SYSTEM_NODE,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                "e2e.arc-capacity/role": "system",
            },
        },
        "spec": {"taints": [SYSTEM_TAINT]},
        "status": {
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
        },
    }


def nodeclass(spec: NodePoolSpec) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.kwok.sh/v1alpha1",
        "kind": "KWOKNodeClass",
        "metadata": {"name": "default"},
        "spec": {"nodeRegistrationDelay": spec.registration_delay},
    }


def nodepool(spec: NodePoolSpec) -> dict[str, Any]:
    pool: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": NODEPOOL},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.kwok.sh",
                        "kind": "KWOKNodeClass",
                        "name": "default",
                    },
                    "requirements": [
                        {
                            "key": "node.kubernetes.io/instance-type",
                            "operator": "In",
                            "values": list(spec.instance_types),
                        },
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": ["on-demand"],
                        },
                    ],
                    "expireAfter": "Never",
                }
            },
            "disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "consolidateAfter": spec.consolidate_after,
            },
        },
    }
    if spec.cpu_limit is not None:
        pool["spec"]["limits"] = {"cpu": spec.cpu_limit}
    return pool


def apply(plane: ControlPlane, objects: list[Mapping[str, Any]]) -> None:
    plane.kubectl(
        "apply", "--server-side", "--force-conflicts", "--field-manager=e2e", "-f", "-",
        stdin=yaml.safe_dump_all([dict(o) for o in objects]),
    )  # fmt: skip


def install_platform(
    plane: ControlPlane, supervisor: Supervisor, pool: NodePoolSpec, workdir: Path
) -> None:
    apply(
        plane,
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            for name in (CONTROLLER_NAMESPACE, RUNNER_NAMESPACE)
        ],
    )
    for crd in crd_files():
        plane.kubectl("apply", "--server-side", "--field-manager=e2e", "-f", str(crd))
    _wait_established(plane, timeout=60)
    apply(plane, [system_node(), nodepool(pool), *([nodeclass(pool)] if pool.nodeclass else [])])
    start_karpenter(plane, supervisor, workdir)
    start_arc(plane, supervisor)


def _wait_established(plane: ControlPlane, timeout: float) -> None:
    """Every CRD served (kubectl wait fails on a CRD whose status has no conditions yet)."""
    deadline = time.monotonic() + timeout
    pending: list[str] = []
    while time.monotonic() < deadline:
        crds = json.loads(plane.kubectl("get", "crd", "-o", "json"))["items"]
        pending = [
            c["metadata"]["name"]
            for c in crds
            if not any(
                cond.get("type") == "Established" and cond.get("status") == "True"
                for cond in (c.get("status") or {}).get("conditions") or ()
            )
        ]
        if crds and not pending:
            return
        time.sleep(0.5)
    raise RuntimeError(f"CRDs not established within {timeout:.0f} s: {pending}")


def start_karpenter(plane: ControlPlane, supervisor: Supervisor, workdir: Path) -> None:
    metrics, health = free_port(), free_port()
    types = workdir / "instance-types.json"
    types.write_text((HERE / "instance-types.json").read_text())
    process = supervisor.start(
        "karpenter",
        [str(binary("karpenter-kwok"))],
        env={
            **no_proxy_env(),
            "KUBECONFIG": str(plane.kubeconfig),
            "DISABLE_LEADER_ELECTION": "true",
            "METRICS_PORT": str(metrics),
            "HEALTH_PROBE_PORT": str(health),
            "LOG_LEVEL": "info",
            "INSTANCE_TYPES_FILE_PATH": str(types),
            "SYSTEM_NAMESPACE": "kube-system",
            # Karpenter's defaults batch pending pods 1 s idle / 10 s max before it launches.
        },
        ports=(metrics, health),
    )

    def ready() -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{health}/readyz", timeout=2) as answer:
            return bool(answer.status == 200)

    supervisor.wait_until(process, ready, timeout=120, what="ready (/readyz)")


def start_arc(plane: ControlPlane, supervisor: Supervisor) -> None:
    process = supervisor.start(
        "arc-controller",
        [
            str(binary("arc-controller")),
            "--auto-scaling-runner-set-only",
            "--log-level=info",
            "--log-format=json",
            "--metrics-addr=0",
            "--listener-metrics-addr=0",
            "--listener-metrics-endpoint=",
            "--update-strategy=immediate",
        ],
        env={
            **no_proxy_env(),
            "KUBECONFIG": str(plane.kubeconfig),
            "CONTROLLER_MANAGER_POD_NAMESPACE": CONTROLLER_NAMESPACE,
            "CONTROLLER_MANAGER_CONTAINER_IMAGE": f"e2e/arc-controller:{ARC_VERSION}",
        },
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = process.log.read_text(errors="replace")
        if "Starting workers" in text or "starting workers" in text.lower():
            return
        if not process.alive():
            break
        time.sleep(0.5)
    supervisor.wait_until(process, lambda: False, timeout=0.1, what="running its workers")


def instance_types() -> list[dict[str, Any]]:
    return list(json.loads((HERE / "instance-types.json").read_text()))
