"""Grid files: a mapping of capacityAware keys to values; every point validated up front."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.settings import parse_capacity_aware
from tuning.grid import GridError, expand, load_grid

BASE = parse_capacity_aware({"enabled": True, "proactiveCapacity": 4}, where="t")


def test_points_are_the_cartesian_product_in_written_order() -> None:
    points = expand(
        {"proactiveCapacity": [1, "auto"], "survivorWindow": ["1m", "3m"]}, BASE, where="g"
    )
    assert [p.id for p in points] == ["p1", "p2", "p3", "p4"]
    assert [p.dial_map() for p in points][1] == {"proactiveCapacity": 1, "survivorWindow": "3m"}
    assert points[3].settings.proactive_capacity == "auto"
    assert points[3].settings.survivor_window == 180.0


def test_a_misspelt_dial_names_the_point_and_the_key() -> None:
    with pytest.raises(GridError, match=r"g: point p1: capacityAware.survivorWindw: .*unknown key"):
        expand({"survivorWindw": ["1m"]}, BASE, where="g")


def test_a_bad_value_names_the_point() -> None:
    with pytest.raises(GridError, match=r"point p2: capacityAware.proactiveCapacity: got -1"):
        expand({"proactiveCapacity": [1, -1]}, BASE, where="g")


def test_grid_file_must_map_keys_to_lists(tmp_path: Path) -> None:
    path = tmp_path / "grid.yaml"
    path.write_text("proactiveCapacity: 3\n", encoding="utf-8")
    with pytest.raises(GridError, match="proactiveCapacity: expected a non-empty list"):
        load_grid(path)
    path.write_text("- 1\n- 2\n", encoding="utf-8")
    with pytest.raises(GridError, match="a grid is a mapping"):
        load_grid(path)


def test_too_many_points_are_refused_before_anything_runs() -> None:
    with pytest.raises(GridError, match="at most 500"):
        expand(
            {"proactiveCapacity": list(range(30)), "survivorWindow": list(range(20))},
            BASE,
            where="g",
        )


def test_sim_dials_set_the_simulator_side_and_are_validated() -> None:
    points = expand({"sim.fit_estimate": [True, False], "doNotDisrupt": [True]}, BASE, where="g")
    assert [p.dial_map()["sim.fit_estimate"] for p in points] == [True, False]
    assert points[0].settings.do_not_disrupt is True
    with pytest.raises(GridError, match=r"point p1: sim: fit_refresh: "):
        expand({"sim.fit_refresh": ["carrier-pigeon"]}, BASE, where="g")
