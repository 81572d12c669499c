"""Fuzz: HUD answers and scenario files raise only ``HudError`` / ``ScenarioError``.

- ``providers.hud.client.parse_rows`` (the whole decode of a ``queued_jobs_aggregate``
  answer) and ``sum_for_labels``: ``HudError``; an accepted answer never yields a negative or
  implausible demand.
- ``simulator.scenarios.scenario``: a decoded document (``parse_scenario``) and the raw file
  (``load_scenario``): ``ScenarioError``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from providers.hud.client import MAX_PLAUSIBLE_QUEUED, HudError, parse_rows, sum_for_labels
from simulator.scenarios.scenario import ScenarioError, load_scenario, parse_scenario, resolve
from tests.fuzz.support import fuzz_settings, json_bytes, json_values, mutated, only_typed

ROW = {
    "runner_label": "linux.2xlarge",
    "org": "pytorch",
    "repo": "pytorch",
    "num_queued_jobs": 10,
    "min_queue_time_minutes": 3,
    "max_queue_time_minutes": 41,
}


@st.composite
def hud_answers(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["rows", "rows", "json", "bytes"]))
    if kind == "bytes":
        return draw(st.binary(max_size=120))
    if kind == "json":
        return json_bytes(draw(json_values))
    rows = [draw(mutated(ROW)) for _ in range(draw(st.integers(0, 4)))]
    return json_bytes(rows, bom=draw(st.booleans()))


@fuzz_settings(300)
@given(hud_answers())
@example(json_bytes([{**ROW, "num_queued_jobs": -1}]))
@example(json_bytes([{**ROW, "num_queued_jobs": 10**9}]))
@example(json_bytes([{**ROW, "num_queued_jobs": "10"}]))
@example(json_bytes([{**ROW, "num_queued_jobs": "1" * 25}]))
@example(json_bytes([ROW] * 3 + [{**ROW, "num_queued_jobs": MAX_PLAUSIBLE_QUEUED}]))
@example(b"<!DOCTYPE html><title>Vercel Security Checkpoint</title>")
def test_hud_answers_give_a_plausible_demand_or_a_hud_error(raw: bytes) -> None:
    rows = only_typed(HudError, parse_rows, raw)
    if isinstance(rows, BaseException):
        return
    total = only_typed(HudError, sum_for_labels, rows, ["linux.2xlarge", "linux.4xlarge"])
    if not isinstance(total, BaseException):
        assert 0 <= total <= MAX_PLAUSIBLE_QUEUED


SCENARIO = yaml.safe_load(resolve("ice-failover").read_text())


@fuzz_settings(120)
@given(mutated(SCENARIO, max_changes=3))
def test_scenario_documents(doc: Any) -> None:
    result = only_typed(ScenarioError, parse_scenario, doc, where="fuzz.yaml")
    if isinstance(result, ScenarioError):
        assert str(result).startswith("fuzz.yaml")


@fuzz_settings(100)
@given(
    st.one_of(
        st.binary(max_size=120),
        st.text(max_size=200).map(str.encode),
        mutated(SCENARIO, max_changes=2).map(lambda d: yaml.safe_dump(d).encode()),
    )
)
@example(b"name: [unclosed")
@example(b"\xff\xfe")  # found by fuzzing (regressions/)
@example(b"*alias_without_anchor")
def test_scenario_files(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.yaml"
        path.write_bytes(raw)
        only_typed(ScenarioError, load_scenario, path)
