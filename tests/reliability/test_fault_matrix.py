"""The fault matrix: every fault case holds (or is a listed known gap), and docs/reliability.md
is exactly what the cases produce (regenerate with ``python -m tools.fault_matrix``)."""

from __future__ import annotations

import pytest

from simulator.faults import FaultKind
from tests.reliability.cases import Outcome
from tests.reliability.cases_world import ChaosResult, baseline
from tools.fault_matrix import DOC, KNOWN_GAPS, _cases, render


def _params() -> list[object]:
    out = []
    for name in _cases():
        marks = []
        if name in KNOWN_GAPS:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[name].fix_at))
        out.append(pytest.param(name, id=name, marks=marks))
    return out


@pytest.mark.parametrize("name", _params())
def test_fault_case_keeps_its_promise(fault_outcomes: dict[str, Outcome], name: str) -> None:
    outcome = fault_outcomes[name]
    assert outcome.held, f"{outcome.fault}: expected {outcome.expected}; got {outcome.observed}"


def test_every_fault_kind_has_a_case(fault_outcomes: dict[str, Outcome]) -> None:
    labels = [o.fault for o in fault_outcomes.values()]
    missing = [
        k.value
        for k in FaultKind
        if not any(label.startswith(k.value) or k.value in label for label in labels)
    ]
    assert missing == []


def test_docs_reliability_md_is_what_the_cases_produce(
    fault_outcomes: dict[str, Outcome], chaos_runs: dict[int, ChaosResult]
) -> None:
    expected = render(fault_outcomes, chaos_runs)
    current = DOC.read_text() if DOC.exists() else ""
    differ = [
        f"committed: {a}\nproduced:  {b}"
        for a, b in zip(current.splitlines(), expected.splitlines(), strict=False)
        if a != b
    ]
    assert current == expected, (
        "docs/reliability.md is stale: run python -m tools.fault_matrix\n" + "\n".join(differ[:3])
    )


def test_the_cluster_cases_start_from_a_whole_warm_pool() -> None:
    """The node-loss, consolidation and crash cases promise what happens to READY pairs; a world
    change that leaves the fault hitting re-paired survivors instead would fail them as "0
    pairs PREEMPTED" with no hint why (it did when the simulator moved to common random
    numbers). This says which premise broke."""
    states = baseline().states_at_fault
    assert states.get("READY") == 3, f"pair states just before the fault: {states}"
