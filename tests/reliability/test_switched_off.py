"""ARC switches a scale set off when its runners reject the runner spec (a runner pod exits 7:
EphemeralRunner, then EphemeralRunnerSet, then, since 0.15 (#4652), AutoscalingRunnerSet
``status.phase: Outdated``); it then stops the listener (AutoscalingListener ``spec.phase:
Stopped``, pod deleted) and pins the set at zero replicas until the runner spec changes
(#4660). Until that SIGTERM arrives, and if a restart races the stop, the listener must hold
no capacity and take no job for a scale set that is off; when the spec is fixed and the phase
leaves ``Outdated`` it sizes as before. Run on the simulated cluster with the real
translation, reconciler and placeholder subscriber."""

from __future__ import annotations

from typing import Any

import pytest

from providers.kubernetes.observe.relevance import judge
from providers.kubernetes.observe.scale_set import switched_off
from tests.reliability.support import ERS, NS, ListenerProcess, SimCluster


def live_placeholders(sim: SimCluster) -> list[str]:
    return [
        p["metadata"]["name"]
        for p in sim.placeholders()
        if not p["metadata"].get("deletionTimestamp")
    ]


def steps(sim: SimCluster, process: ListenerProcess, count: int) -> None:
    for _ in range(count):
        sim.step(process)
        sim.run(sim.interval)


def set_phase(sim: SimCluster, kind: str, phase: str) -> None:
    sim.store.mutate(kind, NS, ERS, lambda obj: obj.setdefault("status", {}).update(phase=phase))


@pytest.mark.parametrize("kind", ["EphemeralRunnerSet", "AutoscalingRunnerSet"])
def test_an_outdated_scale_set_holds_no_placeholder_and_advertises_nothing(kind: str) -> None:
    """Prevents warm pairs keeping nodes (and the header offering capacity) for a scale set
    ARC has pinned at zero runners: they would be paid for until the placeholders expired."""
    sim = SimCluster.build(seed=3)
    process = sim.start_listener()
    steps(sim, process, 6)
    assert live_placeholders(sim) and process.sink.values[-1][1] > 0  # warm before

    set_phase(sim, kind, "Outdated")
    assert sim.snapshot().switched_off == f"{kind} {ERS} status.phase is Outdated"
    steps(sim, process, 2)
    assert live_placeholders(sim) == []
    assert process.sink.values[-1][1] == 0
    assert sim.snapshot().max_runners == 0


def test_the_runner_spec_fixed_it_sizes_again() -> None:
    """#4660: recovery (a new runner spec) moves the phase off ``Outdated``; a listener that
    was not stopped (a restart racing the stop) warms the scale set again by itself."""
    sim = SimCluster.build(seed=3)
    process = sim.start_listener()
    steps(sim, process, 6)
    set_phase(sim, "EphemeralRunnerSet", "Outdated")
    steps(sim, process, 2)
    assert live_placeholders(sim) == []

    set_phase(sim, "EphemeralRunnerSet", "Running")
    assert sim.snapshot().switched_off is None
    steps(sim, process, 6)
    assert live_placeholders(sim) and process.sink.values[-1][1] > 0


@pytest.mark.parametrize(
    ("ers_phase", "ars_phase", "off"),
    [
        (None, None, False),
        ("Running", "Running", False),
        ("Outdated", None, True),
        (None, "Outdated", True),
        ("Pending", "Outdated", True),
    ],
)
def test_either_object_outdated_switches_it_off(
    ers_phase: str | None, ars_phase: str | None, off: bool
) -> None:
    sim = SimCluster.build(seed=3)
    for kind, phase in (("EphemeralRunnerSet", ers_phase), ("AutoscalingRunnerSet", ars_phase)):
        if phase is not None:
            set_phase(sim, kind, phase)
    ers = sim.store.get("EphemeralRunnerSet", NS, ERS)
    assert (switched_off(sim.store, sim.target, ers) is not None) == off


@pytest.mark.parametrize("kind", ["EphemeralRunnerSet", "AutoscalingRunnerSet"])
def test_turning_outdated_is_a_loss_checked_at_once(kind: str) -> None:
    """The watch event that carries ``Outdated`` wakes a drop check at once, like a drain,
    rather than waiting for the next periodic step."""
    obj: dict[str, Any] = {
        "metadata": {"name": ERS},
        "spec": {"replicas": 3, "maxRunners": 10},
        "status": {"phase": "Running"},
    }
    _, before = judge(kind, "ADDED", None, obj)
    obj["status"] = {"phase": "Outdated"}
    verdict, after = judge(kind, "MODIFIED", before, obj)
    assert verdict.relevant and verdict.lost
    again, _ = judge(kind, "MODIFIED", after, obj)
    assert not again.lost  # once
