"""The e2e world's answer to ARC 0.14.2's double-reconcile race (e2e/world.py settle_arc)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from e2e.processes import Supervisor
from e2e.world import World, WorldSpec


class ArcObjects:
    """The two lists settle_arc reads; deleting the stale listener makes ARC name the set
    that exists, as its controller does when it recreates the AutoscalingListener."""

    def __init__(self, sets: list[str], listener_names: str) -> None:
        self.sets = sets
        self.listener_names = listener_names
        self.deleted: list[str] = []

    def list_namespaced_custom_object(self, group: str, version: str, ns: str, plural: str) -> Any:
        if plural == "ephemeralrunnersets":
            return {"items": [{"metadata": {"name": n}} for n in self.sets]}
        return {
            "items": [
                {
                    "metadata": {"name": "arc-runners-abc-listener"},
                    "spec": {"ephemeralRunnerSetName": self.listener_names},
                }
            ]
        }

    def delete_namespaced_custom_object(
        self, group: str, version: str, ns: str, plural: str, name: str
    ) -> None:
        self.deleted.append(name)
        self.listener_names = self.sets[0]


def world(tmp_path: Path, arc: ArcObjects) -> World:
    made = World(WorldSpec(), tmp_path, Supervisor(tmp_path / "logs"))
    made.custom = arc
    return made


def test_a_listener_naming_a_deleted_set_is_deleted_once_and_counted(tmp_path: Path) -> None:
    """ARC 0.14.2 left its AutoscalingListener naming a deleted EphemeralRunnerSet and
    recreated the failing listener pod forever (126 times in 5 minutes in one CI run)."""
    arc = ArcObjects(sets=["arc-runners-8lz8d"], listener_names="arc-runners-zngs2")
    settled = world(tmp_path, arc)
    settled.settle_arc(timeout=5, stale_grace=0)
    assert arc.deleted == ["arc-runners-abc-listener"]
    assert settled.arc_recoveries == 1
    assert any("ARC race" in what for _, what in settled.timeline)


def test_a_consistent_arc_is_left_alone(tmp_path: Path) -> None:
    arc = ArcObjects(sets=["arc-runners-8lz8d"], listener_names="arc-runners-8lz8d")
    settled = world(tmp_path, arc)
    settled.settle_arc(timeout=5, stale_grace=0)
    assert arc.deleted == []
    assert settled.arc_recoveries == 0


def test_arc_that_never_settles_fails_the_world_with_one_line(tmp_path: Path) -> None:
    arc = ArcObjects(sets=["a", "b"], listener_names="a")  # two sets: still reconciling
    with pytest.raises(RuntimeError, match="did not settle within 1 s"):
        world(tmp_path, arc).settle_arc(timeout=1, stale_grace=0)
