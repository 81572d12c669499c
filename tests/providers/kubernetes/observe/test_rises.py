"""Which pod events run the reconciler at once (providers/kubernetes/observe/rises.py).

A placeholder that starts to count in the capacity ledger may make its pair READY while a job
waits for it; every other event keeps the watch debounce (real pods that bind raise the
ledger too, but are debounced: see the module doc). The listener's cache and the simulated
world's view both judge events through providers/kubernetes/observe/relevance.py, which asks
``placeholder_counts``; tests/providers/kubernetes/observe/test_relevance.py covers the verdicts.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from providers.kubernetes.observe.relevance import PodFacts, judge
from providers.kubernetes.observe.rises import placeholder_counts
from tests.providers.kubernetes import objects as o


def _with(pod: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(pod)
    for path, value in changes.items():
        section, field = path.split("__")
        out.setdefault(section, {})[field] = value
    return out


RUNNING_PH = o.placeholder("abcde-1", "workflow")
TERMINATING_PH = _with(RUNNING_PH, metadata__deletionTimestamp="2026-01-01T00:00:00Z")
DISRUPTED_PH = _with(
    RUNNING_PH, status__conditions=[{"type": "DisruptionTarget", "status": "True"}]
)

# (name, placeholder, counts in the ledger)
PLACEHOLDERS = [
    ("placeholder Running on a node", RUNNING_PH, True),
    ("placeholder bound, Pending", o.placeholder("abcde-1", "runner", phase="Pending"), False),
    ("placeholder unbound", o.placeholder("abcde-1", "runner", node=None, phase="Pending"), False),
    ("placeholder terminating", TERMINATING_PH, False),
    ("placeholder a DisruptionTarget", DISRUPTED_PH, False),
    ("placeholder ended", _with(RUNNING_PH, status__phase="Failed"), False),
]
#: Real pods count in the ledger once bound, but never trigger (module doc): not asked.
OTHER_PODS = [
    ("runner pod bound", o.runner_pod("runner-a", phase="Pending")),
    ("workflow pod bound", o.workflow_pod("runner-a")),
    ("a pod of nobody", o.pod("stranger", node="node-a", phase="Running")),
]


@pytest.mark.parametrize(("name", "pod", "counts"), PLACEHOLDERS, ids=[p[0] for p in PLACEHOLDERS])
def test_placeholder_counts(name: str, pod: dict[str, Any], counts: bool) -> None:
    assert placeholder_counts(pod) is counts


@pytest.mark.parametrize(("name", "pod"), OTHER_PODS, ids=[p[0] for p in OTHER_PODS])
def test_other_pods_are_not_asked(name: str, pod: dict[str, Any]) -> None:
    assert placeholder_counts(pod) is False


@pytest.mark.parametrize(
    ("event", "counted_before", "pod", "rises"),
    [
        ("MODIFIED", False, RUNNING_PH, True),  # a placeholder turned Running: maybe READY
        ("MODIFIED", True, RUNNING_PH, False),  # already counted: a lease renewal, say
        # Real pods binding raise the ledger too, but stay debounced (module doc: shared pools).
        ("ADDED", False, o.runner_pod("runner-a", phase="Pending"), False),
        ("ADDED", False, o.runner_pod("runner-a", node=None, phase="Pending"), False),
        ("MODIFIED", False, o.workflow_pod("runner-a", phase="Pending"), False),
        ("MODIFIED", True, DISRUPTED_PH, False),  # a fall is the drop path's business
        ("DELETED", False, RUNNING_PH, False),
    ],
)
def test_raises_capacity(
    event: str, counted_before: bool, pod: dict[str, Any], rises: bool
) -> None:
    """Judged by relevance.judge, the one place the listener and the simulator ask."""
    before = PodFacts(True, True, True, False, False, False, counts=counted_before)
    assert judge("Pod", event, before, pod)[0].rise is rises
