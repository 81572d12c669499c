"""Fuzz: fault plans (a scenario's ``<name>.faults.yaml``) raise only ``FaultPlanError``."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from simulator.faults import FaultPlan, FaultPlanError, load_fault_plan, parse_fault_plan
from simulator.scenarios.scenario import resolve
from tests.fuzz.support import fuzz_settings, mutated, only_typed

PLAN = yaml.safe_load((resolve("chaos").with_name("chaos.faults.yaml")).read_text())


@fuzz_settings(200)
@given(mutated(PLAN, max_changes=4))
@example({"faults": [{"kind": "k8s_5xx", "start": 0, "params": {"ratio": float("nan")}}]})
@example({"faults": [{"kind": "clock_jump", "start": "1e309"}]})
@example({"faults": [{"kind": None, "start": 0, "params": {"x": 1}}]})
@example({"faults": [{"kind": "k8s_429", "start": 10800, "end": float("nan")}]})  # regressions/
def test_fault_plan_documents(doc: Any) -> None:
    result = only_typed(FaultPlanError, parse_fault_plan, doc, where="fuzz.faults.yaml")
    if isinstance(result, FaultPlan):
        for fault in result.faults:
            assert fault.end is None or fault.end > fault.start


@fuzz_settings(100)
@given(
    st.one_of(
        st.binary(max_size=120),
        mutated(PLAN, max_changes=2).map(lambda d: yaml.safe_dump(d).encode()),
    )
)
@example(b"\xff\xfe")
@example(b"faults: *nope")
def test_fault_plan_files(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.faults.yaml"
        path.write_bytes(raw)
        only_typed(FaultPlanError, load_fault_plan, path)
