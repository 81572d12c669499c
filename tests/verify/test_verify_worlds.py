"""Defects only a world of their own can show: the exercises must catch them.

- A scheduler profile without DefaultPreemption: placeholders still get READY, but a runner
  pod never takes a placeholder's room.
- No node autoscaler: nothing ever schedules the probe pair.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from simulator.faces.live_world import LiveWorld
from tests.verify.conftest import labelled_by_verify, quiet_spec, run_verify, started_world


@pytest.fixture
def world_without_preemption() -> Iterator[LiveWorld]:
    world = started_world(quiet_spec(preemption=False))
    try:
        yield world
    finally:
        world.close()


@pytest.fixture
def world_without_autoscaler() -> Iterator[LiveWorld]:
    world = started_world(quiet_spec(autoscaler=False))
    try:
        yield world
    finally:
        world.close()


def test_a_scheduler_that_does_not_preempt_fails_the_preemption_rows(
    world_without_preemption: LiveWorld, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every read passes (the configuration is right) but the runner-class and workflow-class
    probes never take a placeholder's room: those rows fail and point at DefaultPreemption
    (prevents trusting a ladder the scheduler ignores)."""
    outcome = run_verify(world_without_preemption, tmp_path, capsys, "--probe-timeout", "2s")
    assert outcome.code == 1
    assert outcome.failing() == ["runner-preempts", "workflow-preempts"], outcome.doc
    for row in ("runner-preempts", "workflow-preempts"):
        assert "DefaultPreemption" in outcome.rows[row]["fix"]
        assert "did not take" in outcome.rows[row]["seen"]
    assert outcome.status("pair-ready") == "PASS"
    assert labelled_by_verify(world_without_preemption) == []


def test_no_node_autoscaler_fails_the_autoscaler_row(
    world_without_autoscaler: LiveWorld, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cluster that never adds a node for Unschedulable placeholders: the probe pair is not
    READY within placeholderReadyTimeout, the node-autoscaler row fails saying no node came,
    and the steps that need a READY pair are skipped (prevents advertising pairs that can
    never be placed)."""
    outcome = run_verify(
        world_without_autoscaler,
        tmp_path,
        capsys,
        "--probe-timeout",
        "2s",
        capacity={"placeholderReadyTimeout": 10},
    )
    assert outcome.code == 1
    assert outcome.failing() == ["pair-ready", "node-autoscaler"], outcome.doc
    assert "no node was added" in outcome.rows["node-autoscaler"]["seen"]
    assert "node autoscaler" in outcome.rows["node-autoscaler"]["fix"]
    assert outcome.status("runner-preempts") == "SKIP"
    assert outcome.status("ready-timeout") == "PASS"
    assert labelled_by_verify(world_without_autoscaler) == []
