"""``karpenter.sh/do-not-disrupt``: Go durations and Karpenter's IsDoNotDisruptActive rule."""

from __future__ import annotations

import pytest

from providers.kubernetes.pods.do_not_disrupt import annotation_value, is_active, parse_go_duration
from reconciler.settings import parse_capacity_aware
from reconciler.settings_types import SettingsError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("300ms", 0.3),
        ("1.5h", 5400.0),
        ("2h45m", 9900.0),
        ("1h30m10s", 5410.0),
        ("-5m", -300.0),
        ("0", 0.0),
        (".5s", 0.5),
        ("1800s", 1800.0),
        ("", None),
        ("5", None),  # Go requires a unit except for "0"
        ("5d", None),
        ("true", None),
        ("1h 30m", None),
    ],
)
def test_parse_go_duration_follows_time_parse_duration(text: str, seconds: float | None) -> None:
    result = parse_go_duration(text)
    assert result == (pytest.approx(seconds) if seconds is not None else None)


@pytest.mark.parametrize(
    ("value", "started", "now", "active"),
    [
        (None, 0.0, 10.0, False),
        ("true", 0.0, 1e9, True),
        ("5m", 100.0, 399.0, True),  # one second before it elapses
        ("5m", 100.0, 400.0, False),  # exactly then: age < duration no longer holds
        ("5m", 100.0, 401.0, False),
        ("5m", None, 1e9, True),  # no start time yet: fail safe
        ("0s", 0.0, 0.0, False),
        ("-5m", 0.0, 0.0, False),
        ("false", 0.0, 0.0, False),
        ("forever", 0.0, 0.0, False),
    ],
)
def test_is_active_is_karpenters_rule(
    value: str | None, started: float | None, now: float, active: bool
) -> None:
    assert is_active(value, started, now) is active


def test_annotation_values_written() -> None:
    assert (annotation_value(False), annotation_value(True)) == (None, "true")
    assert (annotation_value(1800.0), annotation_value(0.5 + 1)) == ("1800s", "1.5s")


@pytest.mark.parametrize("bad", ["0s", "500ms", 0, "forever", "-5m", "Auto", "AUTO "])
def test_a_do_not_disrupt_shorter_than_a_second_or_not_a_duration_is_refused(bad: object) -> None:
    with pytest.raises(SettingsError, match="doNotDisrupt is auto, true, false or a duration"):
        parse_capacity_aware({"doNotDisrupt": bad}, where="values.yaml")


def test_do_not_disrupt_accepts_auto_true_false_and_durations_and_defaults_to_auto() -> None:
    def parsed(value: object) -> object:
        return parse_capacity_aware({"doNotDisrupt": value}, where="t").do_not_disrupt

    assert (parsed("auto"), parsed(True), parsed(False), parsed("30m"), parsed(90)) == (
        "auto",
        True,
        False,
        1800.0,
        90.0,
    )
    assert parse_capacity_aware({}, where="t").do_not_disrupt == "auto"
