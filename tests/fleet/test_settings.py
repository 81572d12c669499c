"""``capacityAware.fleetView``: off by default; when on, one clear error for each bad value."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.settings import parse_capacity_aware
from reconciler.settings_types import SettingsError

ON = {"enabled": True, "url": "http://thanos-query:9090", "cluster": "eu-1"}


def fleet_view(**changes: Any) -> dict[str, Any]:
    return {"enabled": True, "fleetView": {**ON, **changes}}


def test_off_by_default_and_the_fleet_key_defaults_to_the_scale_set_name() -> None:
    settings = parse_capacity_aware({"enabled": True}, where="test")
    assert settings.fleet_view.enabled is False
    assert settings.fleet_view.fleet_for("gpu-east") == "gpu-east"
    on = parse_capacity_aware(fleet_view(fleet="linux-gpu", maxAge="2m"), where="test")
    assert on.fleet_view.fleet_for("gpu-east") == "linux-gpu"
    assert on.fleet_view.max_age == 120.0


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"url": None}, "fleetView.url must be an http(s) URL"),
        ({"url": "thanos:9090"}, "fleetView.url must be an http(s) URL"),
        ({"cluster": None}, "fleetView.cluster must name this cluster"),
        ({"cluster": 'eu"1'}, "without quotes"),
        ({"fleet": "a\\b"}, "without quotes"),
        ({"maxAge": "15s", "pollInterval": "15s"}, "maxAge must exceed"),
        ({"maxAge": "5s"}, "maxAge"),
        ({"retries": 6}, "retries"),
        ({"timeout": 0}, "timeout"),
        ({"colour": "red"}, "colour"),
    ],
    ids=[
        "no-url",
        "url-without-scheme",
        "no-cluster",
        "quote-in-cluster",
        "backslash-in-fleet",
        "max-age-not-above-poll",
        "max-age-below-10s",
        "too-many-retries",
        "zero-timeout",
        "unknown-key",
    ],
)
def test_a_bad_fleet_view_is_one_clear_error(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        parse_capacity_aware(fleet_view(**changes), where="listener config")
    assert message in str(raised.value)
    assert "fleetView" in str(raised.value) or "fleet_view" in str(raised.value)


def test_off_needs_nothing_else() -> None:
    off = parse_capacity_aware({"enabled": True, "fleetView": {"enabled": False}}, where="t")
    assert off.fleet_view.url is None and off.fleet_view.cluster is None
