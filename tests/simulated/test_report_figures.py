"""The scenario report's figures say what they cannot show by themselves."""

from __future__ import annotations

import pytest

from simulator.engine import runner

RESULTS = {"scenario": "burst", "seed": 1, "duration_seconds": 3600, "strategies": {}}


def test_the_queue_depth_figure_says_stock_arcs_jobs_are_assigned_and_stuck_not_queued(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A low stock-ARC line in queue_depth.png read as "fast" when its jobs were assigned at
    once and stuck on a runner waiting for a node: the caption under the figure says so."""
    monkeypatch.setattr(runner, "markdown_table", lambda results: "(table)")
    report = runner.report_section(RESULTS, ["queue_depth.png", "nodes.png"], prefix="burst/")
    lines = report.splitlines()
    figure = lines.index("![queue_depth](burst/queue_depth.png)")
    caption = lines[figure + 2]
    assert caption == runner.CAPTIONS["queue_depth.png"]
    for says in ("Stock ARC", "assigns its jobs at once", "stuck", "not queued"):
        assert says in caption, says
    # Only figures with something to add get a caption.
    assert lines[lines.index("![nodes](burst/nodes.png)") + 1 :] == []
