"""The in-process listener: ARC's scaler over the store, long polls, capacity cuts, restarts."""

from __future__ import annotations

import json

from listener.arc.gate import CapacityGate
from simulator.engine.store import ObjectStore
from simulator.workload.actions import ActionsService
from simulator.workload.jobs import JobSpec
from simulator.workload.listener import ListenerModel, ListenerTimings, merge_patch
from tests.simulated.workload.builders import bare_log


def test_merge_patch_follows_rfc_7386() -> None:
    doc = {"spec": {"replicas": 3, "patchID": 1, "keep": True}, "status": {"x": 1}}
    merge_patch(doc, {"spec": {"replicas": None, "patchID": 2, "new": {"a": 1}}})
    assert doc == {"spec": {"patchID": 2, "keep": True, "new": {"a": 1}}, "status": {"x": 1}}


class Harness:
    def __init__(self, *, cut_on_drop: bool = True, cut_on_rise: bool = False) -> None:
        self.loop, self.log = bare_log()
        self.store = ObjectStore(self.loop.now)
        self.store.create(
            {
                "apiVersion": "actions.github.com/v1alpha1",
                "kind": "EphemeralRunnerSet",
                "metadata": {"name": "ss", "namespace": "arc"},
                "spec": {"patchID": 0},
            }
        )
        self.service = ActionsService(self.loop, self.log)
        self.ss = self.service.add_scale_set("ss", ["x"], cluster="c")
        self.gate = CapacityGate(
            10, cut_on_drop=cut_on_drop, cut_on_rise=cut_on_rise, debounce=0.25
        )
        self.listener = ListenerModel(
            loop=self.loop,
            service=self.service,
            scale_set=self.ss,
            store=self.store,
            namespace="arc",
            ers_name="ss",
            min_runners=0,
            max_runners=10,
            timings=ListenerTimings(long_poll=50.0, handling_latency=0.05, restart_delay=5.0),
            gate=self.gate,
        )

    def at(self, seconds: float) -> None:
        self.loop.run_until(self.loop.start + seconds)

    def advertised(self) -> list[tuple[float, int]]:
        return [
            (e["t"], e["value"])
            for e in map(json.loads, self.log.lines())
            if e["type"] == "capacity_advertised"
        ]

    def ers_spec(self) -> dict:
        return self.store.get("EphemeralRunnerSet", "arc", "ss")["spec"]


def test_the_scaler_patches_the_ers_from_assigned_jobs_like_arc() -> None:
    h = Harness()
    h.listener.start()
    h.at(1)
    assert h.ers_spec() == {"patchID": 0}  # first call: authoritative, replicas 0 -> null
    h.service.submit(JobSpec(0, ("x",), 60))
    h.service.submit(JobSpec(0, ("x",), 60))
    h.at(2)
    spec = h.ers_spec()
    assert spec["replicas"] == 2 and spec["patchID"] > 0


def test_a_capacity_drop_cuts_the_long_poll_and_a_rise_waits_for_the_next_poll() -> None:
    h = Harness(cut_on_drop=True, cut_on_rise=False)
    h.listener.start()
    h.at(5)
    h.gate.advertise(3)
    h.listener.capacity_changed()
    h.at(10)
    h.gate.advertise(8)
    h.listener.capacity_changed()
    h.at(60)
    assert h.advertised() == [(0.0, 10), (5.25, 3), (55.25, 8)]


def test_a_max_runners_change_restarts_the_listener_with_an_authoritative_patch() -> None:
    h = Harness()
    h.listener.start()
    h.service.submit(JobSpec(0, ("x",), 60))
    h.at(3)
    assert h.ers_spec()["replicas"] == 1
    h.listener.set_max_runners(0)  # at t=3; the new listener pod is up 5 s later
    h.at(7.9)
    # The old listener's exit deleted its session: nothing is assigned against its capacity.
    assert h.advertised() == [(0.0, 10), (3.0, 0)]
    assert h.ers_spec()["replicas"] == 1
    h.at(8.1)
    assert h.advertised() == [(0.0, 10), (3.0, 0), (8.0, 0)]
    assert h.ers_spec() == {"patchID": 0}  # min(0 + 1, 0) = 0, patchID 0 on a new session
    assert h.service.assigned_count(h.ss.id) == 1  # never revoked
