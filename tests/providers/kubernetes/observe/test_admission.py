"""When binding confirms a placeholder half (providers/kubernetes/observe/admission.py, issue 31).

kubelet admission (kubernetes/kubernetes ``pkg/kubelet/lifecycle/predicate.go``) re-runs the
scheduler's fit for cpu, memory and ephemeral-storage; device-plugin resources are re-read from
the device manager and allocated at admission, so only the former count at binding.
"""

from __future__ import annotations

from typing import Any

import pytest

from providers.kubernetes.observe.admission import AT_BINDING, binding_confirms, pod_resource_names
from providers.kubernetes.observe.nodes import node_states
from providers.kubernetes.observe.translate import NO_NODE_CHECK, placeholder_pod
from providers.kubernetes.pods.labels import ANNOTATION_CONFIRM
from reconciler.settings import parse_capacity_aware
from reconciler.snapshot import Half
from tests.providers.kubernetes import objects as o
from tests.providers.kubernetes.pods.test_placeholders import builder, pair


@pytest.mark.parametrize(
    ("names", "confirms"),
    [
        ({"cpu", "memory"}, True),
        ({"cpu", "memory", "ephemeral-storage"}, True),
        ({"cpu"}, True),
        # device plugin resources are allocated at admission: wait for Running
        ({"cpu", "memory", "nvidia.com/gpu"}, False),
        ({"cpu", "aws.amazon.com/neuron"}, False),
        # hugepages go through the memory manager's alignment
        ({"cpu", "hugepages-2Mi"}, False),
        # a pod that requests nothing reserves nothing: never confirmed early
        (set(), False),
    ],
)
def test_binding_confirms_only_what_kubelet_admission_checks_like_the_scheduler(
    names: set[str], confirms: bool
) -> None:
    assert binding_confirms(names) is confirms


def _half(**kw: Any) -> Half:
    requests = kw.pop("requests", {"cpu": "2", "memory": "4Gi"})
    pod = o.placeholder("abcde-1", "workflow", requests=requests, **kw)
    parsed = placeholder_pod(pod, NO_NODE_CHECK)
    assert parsed is not None
    return parsed.half


@pytest.mark.parametrize(
    ("kw", "half"),
    [
        # bound, not started yet, marked by the builder: counts at binding
        ({"phase": "Pending", "confirm_at": AT_BINDING}, Half.RUNNING),
        # no mark (written by an older listener, or confirmAtBinding: false): waits for Running
        ({"phase": "Pending"}, Half.PENDING),
        ({"phase": "Running"}, Half.RUNNING),
        # not bound: nothing to confirm
        ({"phase": "Pending", "node": None, "confirm_at": AT_BINDING}, Half.PENDING),
        # the kubelet refused it (OutOfcpu): Failed is lost, never counted
        ({"phase": "Failed", "confirm_at": AT_BINDING}, Half.LOST),
        # a GPU half wears the mark by mistake: the requests are checked again
        (
            {
                "phase": "Pending",
                "confirm_at": AT_BINDING,
                "requests": {"cpu": "3", "nvidia.com/gpu": "1"},
            },
            Half.PENDING,
        ),
        # an unknown mark is ignored
        ({"phase": "Pending", "confirm_at": "scheduled"}, Half.PENDING),
    ],
)
def test_a_marked_cpu_memory_half_counts_once_bound(kw: dict[str, Any], half: Half) -> None:
    assert _half(**kw) is half


def test_a_half_bound_to_a_node_that_is_not_ready_is_stalled_not_counted() -> None:
    pod = o.placeholder("abcde-1", "runner", phase="Pending", confirm_at=AT_BINDING)
    nodes = node_states([o.node("node-a", ready=False)])
    parsed = placeholder_pod(pod, nodes)
    assert parsed is not None
    assert parsed.half is Half.STALLED and not parsed.counts


@pytest.mark.parametrize(
    ("settings", "runner_marked", "workflow_marked"),
    [
        # default: both cpu/memory halves are marked
        ({"workflowResources": {"cpu": "2", "memory": "4Gi"}}, True, True),
        # a GPU workflow half waits for Running; its cpu runner half does not
        ({"workflowResources": {"cpu": "3", "nvidia.com/gpu": "1"}}, True, False),
        # confirmAtBinding: false marks nothing
        (
            {"workflowResources": {"cpu": "2", "memory": "4Gi"}, "confirmAtBinding": False},
            False,
            False,
        ),
    ],
)
def test_the_builder_marks_the_halves_binding_confirms(
    settings: dict[str, Any], runner_marked: bool, workflow_marked: bool
) -> None:
    runner, workflow = builder(o.runner_template(), settings=settings).build(pair())
    marks = [
        (pod["metadata"].get("annotations") or {}).get(ANNOTATION_CONFIRM)
        for pod in (runner, workflow)
    ]
    assert marks == [
        AT_BINDING if runner_marked else None,
        AT_BINDING if workflow_marked else None,
    ]
    for pod, marked in ((runner, runner_marked), (workflow, workflow_marked)):
        if marked:
            assert binding_confirms(pod_resource_names(pod))


def test_confirm_at_binding_is_on_by_default() -> None:
    assert parse_capacity_aware({}, where="test").confirm_at_binding is True
