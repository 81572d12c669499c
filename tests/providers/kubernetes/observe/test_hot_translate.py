"""What a snapshot tells the hot slots (docs/design.md#hot-runners): hot placeholders apart from
pairs, and which runners are idle or busy, read the same way under ARC 0.13, 0.14 and 0.15."""

from __future__ import annotations

from typing import Any

import pytest

from providers.kubernetes.observe.translate import build_snapshot
from reconciler.snapshot import Demand
from tests.providers.kubernetes import objects as o
from tests.providers.kubernetes.observe.test_translate import TARGET


def hot_snap(*objs: Any, hot: bool = True) -> Any:
    return build_snapshot(o.DictSource(o.ers(), *objs), TARGET, now=o.T0, demand=Demand(), hot=hot)


@pytest.mark.parametrize(
    ("version", "status", "idle", "busy"),
    [
        ("0.13/0.14 idle", {"phase": "Running", "ready": True}, True, False),
        ("0.13/0.14 with a job", {"phase": "Running", "ready": True, "jobId": "j"}, False, True),
        ("0.15 idle: phase stays Pending", {"phase": "Pending", "ready": True}, True, False),
        ("0.15 after JobStarted", {"phase": "Running", "ready": True, "jobId": "j"}, False, True),
        ("0.15 JobStarted patch without phase",
         {"phase": "Pending", "ready": True, "jobId": "j"}, False, True),
        ("not registered yet", {"phase": "Pending", "ready": False}, False, False),
        ("finished", {"phase": "Succeeded", "ready": True}, False, False),
    ],
)  # fmt: skip
def test_idle_and_busy_runners_in_every_arc_version(
    version: str, status: dict[str, Any], idle: bool, busy: bool
) -> None:
    runner = o.ephemeral_runner("arc-runners-runner-a")
    runner["status"] = status
    s = hot_snap(runner)
    assert ("arc-runners-runner-a" in s.idle_runner_names) is idle, version
    assert ("arc-runners-runner-a" in s.busy_runner_names) is busy, version


def test_hot_placeholders_are_kept_apart_from_pairs() -> None:
    """A hot slot's placeholder has no runner half; seen as a pair, the sweep would delete it
    as a broken pair's orphan. It is read into ``hot_placeholders`` only."""
    s = hot_snap(
        o.placeholder("abcde-1", "runner"),
        o.placeholder("abcde-1", "workflow"),
        o.placeholder("hot-abcde-2", "workflow"),
        o.node("node-a"),
    )
    assert set(s.placeholders) == {"abcde-1"}
    ((name, pod),) = s.hot_placeholders.items()
    assert (name, pod.pair_id, pod.counts) == ("arc-runners-ph-hot-abcde-2-w", "hot-abcde-2", True)


def test_runners_are_named_only_when_hot_slots_need_them() -> None:
    runner = o.ephemeral_runner("arc-runners-runner-a")
    assert hot_snap(runner, hot=False).idle_runner_names == frozenset()
    # ...but a hot placeholder left by a previous listener makes them read anyway (adoption).
    adopted = hot_snap(runner, o.placeholder("hot-old-1", "workflow"), hot=False)
    assert adopted.idle_runner_names == frozenset({"arc-runners-runner-a"})
