"""Every crash the fuzz tests ever found, replayed from tests/fuzz/regressions/ (one JSON each).

A case names its ``target`` parser and its input (``input`` as JSON, or ``input_hex`` for raw
bytes). The parser must return a value or raise its typed error; with
``"expect": "typed_error"`` it must raise it (bad input once accepted stays refused). Cases
whose crash is still open (listed in ``tests.fuzz.support.KNOWN_OPEN``) are strict xfails:
the day the owner fixes the parser the case passes, the xfail turns XPASS and fails, and the
entry must be removed from ``KNOWN_OPEN`` (the case itself stays, as a regression test).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from listener.arc.config import ConfigError, parse_listener_config
from listener.process.capacity_config import ENV_FILE, load_capacity_aware
from providers.actions.decode import decode_message
from providers.actions.errors import ActionsError
from providers.hud.client import HudError, parse_rows
from reconciler.settings_types import SettingsError
from simulator.faults import FaultPlanError, load_fault_plan, parse_fault_plan
from simulator.scenarios.scenario import ScenarioError, load_scenario
from tests.fuzz.support import KNOWN_OPEN, UntypedError, load_regressions, signature


def _with_file(name: str, call: Callable[[Path], Any]) -> Callable[[bytes], Any]:
    def run(raw: bytes) -> Any:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / name
            path.write_bytes(raw)
            return call(path)

    return run


#: target -> (parser of the case input, the only error type it may raise)
TARGETS: dict[str, tuple[Callable[[Any], Any], type[Exception]]] = {
    "listener_config_document": (lambda doc: parse_listener_config(doc), ConfigError),
    "capacity_aware_file": (
        _with_file("capacity.yaml", lambda p: load_capacity_aware({ENV_FILE: str(p)})),
        SettingsError,
    ),
    "scenario_file": (_with_file("scenario.yaml", load_scenario), ScenarioError),
    "get_message_body": (decode_message, ActionsError),
    "hud_answer": (parse_rows, HudError),
    "fault_plan_document": (lambda doc: parse_fault_plan(doc, where="faults.yaml"), FaultPlanError),
    "fault_plan_file": (_with_file("plan.faults.yaml", load_fault_plan), FaultPlanError),
}


def _input(case: dict[str, Any]) -> Any:
    if "input_hex" in case:
        return bytes.fromhex(case["input_hex"])
    return case["input"]


def _params() -> list[Any]:
    open_by_file = {k.regression: k for k in KNOWN_OPEN}
    params = []
    for case in load_regressions():
        marks = []
        crash = open_by_file.get(case["file"])
        if crash is not None:
            marks.append(
                pytest.mark.xfail(strict=True, raises=UntypedError, reason=f"open: {crash.fix_at}")
            )
        params.append(pytest.param(case, id=case["file"].removesuffix(".json"), marks=marks))
    return params


@pytest.mark.parametrize("case", _params())
def test_regression_case_raises_only_its_typed_error(case: dict[str, Any]) -> None:
    parse, allowed = TARGETS[case["target"]]
    try:
        parse(_input(case))
    except allowed as exc:
        assert str(exc).strip(), "a typed error must say what is wrong"
        return
    except Exception as exc:
        crash = next((k for k in KNOWN_OPEN if k.regression == case["file"]), None)
        if crash is not None:
            # Still open: it must be the very crash recorded, not some new one.
            assert signature(exc) == crash.signature, f"{signature(exc)} != {crash.signature}"
        raise UntypedError(f"{case['file']}: {signature(exc)}: {exc!r}") from exc
    # Accepted: only right for cases that record an input the parser must accept.
    assert case.get("expect") != "typed_error", f"{case['file']}: bad input was accepted"


def test_every_known_open_crash_has_its_regression_case() -> None:
    files = {case["file"] for case in load_regressions()}
    targets = {case["target"] for case in load_regressions()}
    assert {k.regression for k in KNOWN_OPEN} <= files
    assert targets <= TARGETS.keys()


def test_regression_cases_are_valid_json_with_a_target_and_an_input() -> None:
    for case in load_regressions():
        assert case["target"] in TARGETS, case["file"]
        assert ("input" in case) != ("input_hex" in case), case["file"]
        assert case.get("expect") in (None, "typed_error"), case["file"]
        json.dumps(case)
