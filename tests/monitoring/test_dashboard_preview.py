"""tools/dashboard_preview.py draws every panel of the shipped dashboard from every one of its
queries (docs/dashboard.png): a panel or query it skipped would leave the picture claiming
more than it shows."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tools import dashboard_preview as preview

DASHBOARD = json.loads(preview.DASHBOARD.read_text(encoding="utf-8"))
PANELS = preview.load_panels(DASHBOARD)
VARIABLES = {"namespace": "(arc-runners)", "name": "(arc-runners)"}


def resolved() -> list[preview.Panel]:
    return preview.with_variables(PANELS, VARIABLES)


def test_every_panel_and_every_query_of_the_dashboard_is_drawn(tmp_path: Path) -> None:
    asked: list[str] = []

    def fake(expr: str) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
        asked.append(expr)
        return [({"name": "arc-runners", "state": "READY"}, [(0.0, 1.0), (10.0, 2.0)])]

    panels = resolved()
    data = preview.evaluate(panels, fake)
    drawn = preview.render(PANELS, data, tmp_path / "d.png", band=preview.BAND)
    assert drawn == [p.title for p in PANELS]
    assert asked == [t.expr for p in panels if p.kind != "row" for t in p.targets]
    assert all(len(data[p.title]) == len(p.targets) for p in panels if p.kind != "row")
    assert (tmp_path / "d.png").stat().st_size > 0


def test_the_variables_the_dashboard_declares_are_all_resolved_before_prometheus() -> None:
    """A ``$name`` left in a query is Grafana syntax that Prometheus would refuse."""
    assert set(preview.variable_queries(DASHBOARD)) == set(VARIABLES)
    for panel in resolved():
        for target in panel.targets:
            assert "$" not in target.expr, (panel.title, target.expr)


@pytest.mark.parametrize(
    ("values", "regex"),
    [(["arc-runners"], "(arc-runners)"), (["b", "a.x"], "(a\\\\.x|b)"), ([], ".*")],
)
def test_all_is_an_alternation_of_the_values_escaped_for_a_promql_string(
    values: list[str], regex: str
) -> None:
    assert preview.all_regex(values) == regex


@pytest.mark.parametrize(
    ("fmt", "labels", "shown"),
    [
        ("{{state}}", {"state": "READY"}, "READY"),
        ("p95", {"le": "1"}, "p95"),
        ("", {"__name__": "up", "job": "x"}, '{job="x"}'),
    ],
)
def test_legends_follow_grafanas_legend_format(
    fmt: str, labels: dict[str, str], shown: str
) -> None:
    assert preview.legend(fmt, labels) == shown


def test_a_query_prometheus_refuses_names_its_panel() -> None:
    def refuse(expr: str) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
        raise preview.PreviewError("bad_data")

    with pytest.raises(preview.PreviewError, match="panel 'Advertised capacity'"):
        preview.evaluate(resolved(), refuse)


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_a_real_prometheus_answers_every_panels_queries_in_the_simulated_world(
    tmp_path: Path,
) -> None:
    """The picture's run, for real: no query refused, every one answered with a series."""
    if shutil.which("prometheus") is None:
        pytest.skip("prometheus not found: install Debian's `prometheus` package")
    (tmp_path / "run").mkdir()
    kept = tmp_path / "data.json"
    drawn = preview.live_run(tmp_path / "run", tmp_path / "d.png", kept)
    assert drawn == [p.title for p in PANELS]
    data, _ = preview.load_data(kept)
    empty = [
        (p.title, t.expr)
        for p in PANELS
        if p.kind != "row"
        for t, series in zip(p.targets, data[p.title], strict=True)
        if not series
    ]
    assert empty == [], empty


def test_the_operations_guide_shows_the_picture_and_says_it_is_not_a_grafana_screenshot() -> None:
    """The picture must not pass for a screenshot of a Grafana this project never ran."""
    guide = (preview.ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    text = " ".join(guide.split())
    shown = text.index("(dashboard.png)")
    caption = text[shown : shown + 400]
    for says in (
        "Rendered from the dashboard's own queries by `tools/dashboard_preview.py`",
        "against a real Prometheus scraping the listener in the simulated world",
        "not a Grafana screenshot",
    ):
        assert says in caption, says
    assert (preview.ROOT / "docs" / "dashboard.png").stat().st_size < 300_000
