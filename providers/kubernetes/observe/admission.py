"""When binding is enough: which placeholders count as confirmed once bound to a Ready node.

A pair backs one slot of ``X-ScaleSetMaxCapacity`` once both halves are *confirmed*. The
scheduler has then found room for each half on a node; the question is whether anything on
that node can still refuse the pod after binding. Waiting for ``Running`` (the kubelet started
the pause container) costs the kubelet's start latency on every pair (the cost on a warm merge
queue: docs/design.md#decisions), so a half whose requests only the scheduler's arithmetic
governs is confirmed at binding instead.

What kubelet admission can still refuse after binding (kubernetes/kubernetes
``pkg/kubelet/lifecycle/predicate.go``, ``predicateAdmitHandler.Admit``), per resource kind:

- **cpu, memory, ephemeral-storage, the pod count**: admission re-runs the scheduler's own
  fit (``generalFilter``: ``noderesources.Fits`` against allocatable and the pods the kubelet
  has admitted, node name, host ports, node affinity, NoExecute taints). It can disagree only
  when the kubelet knows pods the scheduler did not count (a static pod, a pod created with
  ``spec.nodeName``); it then rejects at once (phase ``Failed``, reason ``OutOfcpu`` /
  ``OutOfmemory``), which the ledger sees as a lost half at the next event. **Exception**: a
  kubelet with the static CPU manager and ``full-pcpus-only``, or a ``restricted`` /
  ``single-numa-node`` topology manager policy, can refuse a Guaranteed pod (placeholders
  are: requests == limits) the scheduler placed (``SMTAlignmentError``,
  ``TopologyAffinityError``): set ``confirmAtBinding: false`` for such NodePools.
- **extended resources from device plugins** (``nvidia.com/gpu``, ``aws.amazon.com/neuron``,
  ...): before the fit, ``pluginResourceUpdateFunc`` (the device manager) replaces the
  node's allocatable with the devices its plugins report healthy *now*, and the device
  manager allocates specific devices at admission; a plugin restart or an unhealthy device
  refuses the pod (``UnexpectedAdmissionError``) although the scheduler saw the node's status
  allocatable. Such halves wait for ``Running``.
- **hugepages, anything else**: memory manager / topology alignment or resources the
  scheduler does not own; they wait for ``Running`` too.

After admission the pod can still fail to start its sandbox (e.g. the CNI has no IP left on
the node). A half confirmed at binding then stays counted while it sits in
``ContainerCreating``: the slot is advertised, and the real pod that takes the placeholder's
room on that node fails the same way (under the ``Running`` rule the pair would instead have
timed out unadvertised). Not handled here: such nodes need ``confirmAtBinding: false``.
Only halves on a Ready node count (a blocked node makes the half STALLED, never counted).

The rule is read off the pod itself: the placeholder builder marks a half with
:data:`~providers.kubernetes.pods.labels.ANNOTATION_CONFIRM` when ``confirmAtBinding`` is on and
its requests allow it, and the translator checks the requests again, so a listener that
adopts pods written by an older version (no annotation) keeps waiting for ``Running``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: Resources the kubelet admits by the scheduler's own arithmetic (see the module doc).
BINDING_IS_ENOUGH = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})
#: Value of the annotation on a half that counts once bound to a Ready node.
AT_BINDING = "binding"


def binding_confirms(resource_names: Iterable[str]) -> bool:
    """True when every requested resource is one kubelet admission cannot refuse after the
    scheduler placed the pod (cpu, memory, ephemeral-storage)."""
    names = set(resource_names)
    return bool(names) and names <= BINDING_IS_ENOUGH


def pod_resource_names(pod: Mapping[str, Any]) -> set[str]:
    """Every resource a pod's containers (init containers included) request or limit."""
    spec = pod.get("spec") or {}
    names: set[str] = set()
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or ():
            resources = container.get("resources") or {}
            for part in ("requests", "limits"):
                names.update((resources.get(part) or {}).keys())
    return names
