"""The fault plan: what a scenario's ``<name>.faults.yaml`` may say, and how bad plans fail.

Plus the small virtual-time hooks (scheduler, skewed clock, stale cache, demand filter, API
gate) that apply faults to the simulated world.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from reconciler.clock import ManualClock
from reconciler.snapshot import Demand
from simulator.engine.loop import EventLoop
from simulator.faces.actions import ActionsFace, ScriptedJobFeed
from simulator.faces.actions import Fault as Answer
from simulator.faults import (
    ACTIONS_ROUTES,
    KIND_INFO,
    ApiFaultGate,
    DemandFaults,
    Fault,
    FaultKind,
    FaultPlan,
    FaultPlanError,
    FaultScheduler,
    Hook,
    SimulatedApiError,
    SkewClock,
    StaleSource,
    load_fault_plan,
    parse_fault_plan,
    plan_for_scenario,
    sidecar_path,
)
from simulator.scenarios.scenario import resolve


def fault(kind: str, start: float = 0, end: float | None = None, **params: object) -> Fault:
    data: dict[str, object] = {"kind": kind, "start": start, "params": params}
    if end is not None:
        data["end"] = end
    return Fault.model_validate(data)


class TestLoading:
    def test_the_chaos_scenario_has_a_sidecar_plan(self) -> None:
        chaos = resolve("chaos")
        assert sidecar_path(chaos).name == "chaos.faults.yaml"
        plan = plan_for_scenario(chaos)
        assert len(plan.faults) > 20
        assert plan.of(FaultKind.NODE_LOSS)[0].params.count == 1

    def test_a_scenario_without_a_sidecar_has_no_faults(self, tmp_path: Path) -> None:
        assert plan_for_scenario(tmp_path / "quiet.yaml") == FaultPlan()

    def test_durations_take_units_and_params_default(self) -> None:
        plan = parse_fault_plan(
            {"faults": [{"kind": "k8s_5xx", "start": "2h", "end": "130m"}]}, where="f.yaml"
        )
        (only,) = plan.faults
        assert (only.start, only.end, only.params.ratio) == (7200.0, 7800.0, 1.0)
        assert only.active_at(7500) and not only.active_at(7800)

    def test_a_bare_list_and_an_empty_plan_are_accepted(self) -> None:
        assert len(parse_fault_plan([{"kind": "node_loss", "start": 0}], where="x").faults) == 1
        assert parse_fault_plan(None, where="x") == FaultPlan()
        assert parse_fault_plan({"faults": None}, where="x") == FaultPlan()

    @pytest.mark.parametrize(
        ("document", "message"),
        [
            (
                {"faults": [{"kind": "k8s_500", "start": 0}]},
                r"f.yaml: faults\[0\]\.kind: unknown fault kind; one of: k8s_5xx, .* "
                r"\(got 'k8s_500'\)",
            ),
            (
                {"faults": [{"kind": "node_loss", "start": 0, "params": {"status": 503}}]},
                r"f.yaml: faults\[0\]: params status not allowed for kind node_loss; "
                r"allowed: count",
            ),
            (
                {"faults": [{"kind": "k8s_5xx", "start": 60, "end": 30}]},
                r"f.yaml: faults\[0\]: end \(30.0\) must be after start \(60.0\)",
            ),
            (
                {"faults": [{"kind": "node_loss", "start": 0, "end": 30}]},
                r"node_loss happens at an instant: give start only",
            ),
            (
                {"faults": [{"kind": "k8s_5xx", "start": 0, "params": {"status": 200}}]},
                r"faults\[0\]\.params\.status: Input should be greater than or equal to 400 "
                r"\(got 200\)",
            ),
            (
                {"faults": [{"kind": "hud_down", "start": "soon"}]},
                r"faults\[0\]\.start: a duration is a number of seconds",
            ),
            ({"faults": [{"kind": "hud_down"}]}, r"faults\[0\]\.start: required field"),
            (
                {"faults": [{"kind": "hud_down", "start": 0, "when": 1}]},
                r"faults\[0\]\.when: unknown field",
            ),
            ({"faults": {"kind": "hud_down"}}, r"faults must be a list .* \(got dict\)"),
            ({"fault": []}, r"no 'faults' key"),
        ],
    )
    def test_a_bad_plan_fails_with_one_clear_line_per_problem(
        self, document: object, message: str
    ) -> None:
        with pytest.raises(FaultPlanError, match=message):
            parse_fault_plan(document, where="f.yaml")

    def test_unreadable_files_are_plan_errors(self, tmp_path: Path) -> None:
        bad_yaml = tmp_path / "a.faults.yaml"
        bad_yaml.write_text("faults: [unclosed\n")
        with pytest.raises(FaultPlanError, match=r"line 2, column 1: not valid YAML"):
            load_fault_plan(bad_yaml)
        utf16 = tmp_path / "b.faults.yaml"
        utf16.write_bytes("faults: []".encode("utf-16"))
        with pytest.raises(FaultPlanError, match="not UTF-8"):
            load_fault_plan(utf16)
        with pytest.raises(FaultPlanError, match="cannot read"):
            load_fault_plan(tmp_path / "missing.yaml")

    def test_every_kind_says_what_it_means_and_what_it_takes(self) -> None:
        assert set(KIND_INFO) == set(FaultKind)
        for info in KIND_INFO.values():
            assert info.meaning and info.shape in ("instant", "window")

    def test_actions_routes_are_the_faces_routes(self) -> None:
        face = ActionsFace(ScriptedJobFeed())
        for route in ACTIONS_ROUTES:
            face.fail_next(route, Answer.reset())  # accepted
        with pytest.raises(ValueError, match="unknown route"):
            face.fail_next("get_messages", Answer.reset())


class TestVirtualTimeHooks:
    def test_the_scheduler_starts_and_ends_faults_on_the_loop_and_reports_the_rest(self) -> None:
        loop = EventLoop()
        seen: list[tuple[float, str]] = []
        plan = FaultPlan(
            faults=[fault("hud_down", 10, 20), fault("node_loss", 15), fault("actions_5xx", 5)]
        )
        hook = Hook(
            lambda f: seen.append((loop.elapsed, "start")),
            lambda f: seen.append((loop.elapsed, "end")),
        )
        scheduler = FaultScheduler(
            loop, plan, {FaultKind.HUD_DOWN: hook, FaultKind.NODE_LOSS: hook}
        )
        scheduler.schedule()
        loop.run_for(30)
        assert seen == [(10, "start"), (15, "start"), (20, "end")]
        assert [f.kind for f in scheduler.skipped] == [FaultKind.ACTIONS_5XX]

    def test_a_skewed_clock_jumps_both_ways(self) -> None:
        clock = SkewClock(ManualClock(100.0))
        clock.jump(600)
        assert clock.now() == 700
        clock.jump(-900)
        assert clock.now() == -200
        assert clock.monotonic() == 100.0, "a wall-clock step leaves monotonic time alone"

    def test_a_stale_source_serves_what_it_saw_at_the_freeze(self) -> None:
        class Live:
            objects = [{"metadata": {"name": "a"}}]

            def list(self, kind: str, namespace: str | None = None) -> list[dict]:
                return list(self.objects)

        live = Live()
        source = StaleSource(live)
        source.freeze()
        assert [o["metadata"]["name"] for o in source.list("Pod")] == ["a"]
        live.objects = []
        assert [o["metadata"]["name"] for o in source.list("Pod")] == ["a"]
        source.thaw()
        assert source.list("Pod") == []

    def test_hud_faults_become_what_the_poller_reports(self) -> None:
        demand = DemandFaults()
        assert demand.filter(Demand(queued_jobs=4)) == Demand(queued_jobs=4)
        slow = fault("hud_slow", 0, 10, delay=20)
        demand.start(slow)
        assert demand.filter(Demand(queued_jobs=9)) == Demand(queued_jobs=4)  # late answer
        demand.end(slow)
        absurd = fault("hud_absurd", 0, 10, value=10**9)
        demand.start(absurd)
        failed = demand.filter(Demand(queued_jobs=9))
        assert failed.queued_jobs is None and "decode" in (failed.error or "")

    def test_the_api_gate_fails_the_given_share_of_writes(self) -> None:
        gate = ApiFaultGate(random.Random(1))
        gate.start(fault("k8s_5xx", 0, 10, ratio=0.5, status=502))
        outcomes = []
        for _ in range(200):
            try:
                gate.check()
                outcomes.append(True)
            except SimulatedApiError as exc:
                assert exc.status == 502
                outcomes.append(False)
        assert 60 < outcomes.count(False) < 140
        gate.start(fault("k8s_slow", 0, 10, delay=3))
        assert gate.delay() == 3
