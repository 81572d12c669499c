"""What a watch event means to the controller (providers/kubernetes/observe/relevance.py).

The listener's cache and the simulated world's view judge every event here, so both wake the
controller on the same events: the table is the contract.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from providers.kubernetes.observe.object_fields import pod_phase
from providers.kubernetes.observe.relevance import NOTHING, PodFacts, Verdict, facts, judge
from reconciler.snapshot import RunnerPod
from tests.providers.kubernetes import objects as o


def _with(obj: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    for path, value in changes.items():
        section, field = path.split("__")
        out.setdefault(section, {})[field] = value
    return out


FRESH_PH = o.placeholder("abcde-1", "runner", node=None, phase="Pending")
BOUND_PH = o.placeholder("abcde-1", "runner", phase="Pending")
RUNNING_PH = o.placeholder("abcde-1", "runner")
RENEWED_PH = o.placeholder("abcde-1", "runner", expires_at="1900000000")
FRESH_MARKED = o.placeholder("abcde-1", "runner", node=None, phase="Pending", confirm_at="binding")
BOUND_MARKED = o.placeholder("abcde-1", "runner", phase="Pending", confirm_at="binding")
ERS_3 = _with(o.ers(), spec__replicas=3)
ERS_5 = _with(o.ers(), spec__replicas=5)
DISRUPTED_PH = _with(
    RUNNING_PH, status__conditions=[{"type": "DisruptionTarget", "status": "True"}]
)
RUNNER = o.runner_pod("runner-a")
UNBOUND_WORKFLOW = o.workflow_pod("runner-a", node=None, phase="Pending")
BOUND_WORKFLOW = o.workflow_pod("runner-a")
ENDED_WORKFLOW = _with(BOUND_WORKFLOW, status__phase="Succeeded")

# (story, kind, event, object before (None: unseen), object after, verdict)
CASES: list[tuple[str, str, str, Any, Any, Verdict]] = [
    ("our own placeholder write comes back", "Pod", "ADDED", None, FRESH_PH, NOTHING),
    ("a placeholder binds", "Pod", "MODIFIED", FRESH_PH, BOUND_PH, Verdict(relevant=True)),
    (
        "a placeholder turns Running: it may make its pair READY",
        "Pod",
        "MODIFIED",
        BOUND_PH,
        RUNNING_PH,
        Verdict(relevant=True, rise=True),
    ),
    (
        "a cpu/memory placeholder marked to count at binding binds: it counts at once",
        "Pod",
        "MODIFIED",
        FRESH_MARKED,
        BOUND_MARKED,
        Verdict(relevant=True, rise=True),
    ),
    ("a lease renewal changes no fact", "Pod", "MODIFIED", RUNNING_PH, RENEWED_PH, NOTHING),
    (
        "a counted placeholder becomes a DisruptionTarget",
        "Pod",
        "MODIFIED",
        RUNNING_PH,
        DISRUPTED_PH,
        Verdict(relevant=True, lost=True),
    ),
    (
        "a counted placeholder is deleted",
        "Pod",
        "DELETED",
        RUNNING_PH,
        RUNNING_PH,
        Verdict(relevant=True, lost=True),
    ),
    ("an unbound workflow pod appears", "Pod", "ADDED", None, UNBOUND_WORKFLOW, NOTHING),
    (
        "a workflow pod binds: real pods raise the ledger but stay debounced",
        "Pod",
        "MODIFIED",
        UNBOUND_WORKFLOW,
        BOUND_WORKFLOW,
        Verdict(relevant=True),
    ),
    (
        "a bound workflow pod ends: its slot is gone",
        "Pod",
        "MODIFIED",
        BOUND_WORKFLOW,
        ENDED_WORKFLOW,
        Verdict(relevant=True, lost=True),
    ),
    ("a runner pod appears bound", "Pod", "ADDED", None, RUNNER, Verdict(relevant=True)),
    (
        "a bound runner pod's phase turns Unknown: its slot is no longer confirmed",
        "Pod",
        "MODIFIED",
        RUNNER,
        _with(RUNNER, status__phase="Unknown"),
        Verdict(relevant=True, lost=True),
    ),
    (
        "a node is cordoned",
        "Node",
        "MODIFIED",
        o.node("node-a"),
        _with(o.node("node-a"), spec__unschedulable=True),
        Verdict(relevant=True),
    ),
    (
        "the live maxRunners falls (a drain): checked at once",
        "AutoscalingRunnerSet",
        "MODIFIED",
        o.ars(max_runners=10),
        o.ars(max_runners=0),
        Verdict(relevant=True, lost=True),
    ),
    (
        "the live maxRunners rises: only a step may raise capacity",
        "AutoscalingRunnerSet",
        "MODIFIED",
        o.ars(max_runners=10),
        o.ars(max_runners=20),
        Verdict(relevant=True),
    ),
    (
        "the scaler patches the EphemeralRunnerSet on every poll",
        "EphemeralRunnerSet",
        "MODIFIED",
        o.ers(),
        o.ers(),
        NOTHING,
    ),
    (
        "GitHub assigned jobs (replicas rose): the warm pairs they take are refilled at once",
        "EphemeralRunnerSet",
        "MODIFIED",
        ERS_3,
        ERS_5,
        Verdict(relevant=True, rise=True),
    ),
    (
        "jobs finished (replicas fell): the next step sees it",
        "EphemeralRunnerSet",
        "MODIFIED",
        ERS_5,
        ERS_3,
        Verdict(relevant=True),
    ),
    (
        "a patch that repeats the replicas (a new patchID) changes no fact",
        "EphemeralRunnerSet",
        "MODIFIED",
        ERS_3,
        _with(ERS_3, spec__patchID=7),
        NOTHING,
    ),
]


@pytest.mark.parametrize(
    ("story", "kind", "event", "before", "after", "verdict"), CASES, ids=[c[0] for c in CASES]
)
def test_each_event_is_judged_by_what_decisions_read(
    story: str, kind: str, event: str, before: Any, after: Any, verdict: Verdict
) -> None:
    remembered = facts(kind, before) if before is not None else None
    assert judge(kind, event, remembered, after)[0] == verdict


@pytest.mark.parametrize("phase", [None, "Pending", "Running", "Succeeded", "Failed", "Unknown"])
@pytest.mark.parametrize("node", ["node-a", None])
@pytest.mark.parametrize("deleting", [False, True])
def test_a_real_pod_counts_for_relevance_exactly_when_it_holds_a_slot_in_the_snapshot(
    phase: str | None, node: str | None, deleting: bool
) -> None:
    """One "holds a slot" rule (reconciler/snapshot.py holds_slot): a Running -> Unknown pod
    counted in relevance but not in the ledger, so its loss woke no drop check."""
    obj = o.runner_pod("runner-a", node=node)
    obj["status"]["phase"] = phase
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    pod_facts = facts("Pod", obj)
    assert isinstance(pod_facts, PodFacts)
    runner = RunnerPod("runner-a", node, pod_phase(obj), deleting=deleting)
    assert pod_facts.counts == runner.holds_slot


def test_facts_are_forgotten_once_the_object_is_deleted() -> None:
    _, kept = judge("Pod", "DELETED", facts("Pod", RUNNING_PH), RUNNING_PH)
    assert kept is None
