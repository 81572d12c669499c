"""Config input (issue 10, failure 7): hostile or sloppy input gets one clear line and
changes nothing. Named after what used to go wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from listener.arc.config import ConfigError, load_listener_config
from listener.process.capacity_config import ENV_FILE, ENV_JSON, MAX_DEPTH, load_capacity_aware
from reconciler.settings_types import SettingsError

ALIAS_BOMB = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and "Traceback" not in text
    return text


def test_a_yaml_alias_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    path = tmp_path / "capacity.yaml"
    path.write_text(ALIAS_BOMB)
    with pytest.raises(SettingsError, match="aliases are not allowed") as raised:
        load_capacity_aware({ENV_FILE: str(path)})
    assert one_line(raised.value).startswith(str(path))


def test_a_single_harmless_alias_is_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "capacity.yaml"
    path.write_text("capacityAware:\n  enabled: &on true\n  cutPollOnDrop: *on\n")
    with pytest.raises(SettingsError, match=r"aliases are not allowed \(line 3\)"):
        load_capacity_aware({ENV_FILE: str(path)})


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 100_000])
def test_deep_nesting_is_refused_in_one_line_without_a_traceback(
    tmp_path: Path, depth: int
) -> None:
    path = tmp_path / "capacity.yaml"
    path.write_text("a: " + "[" * depth + "]" * depth + "\n")
    with pytest.raises(SettingsError, match="nested deeper than") as raised:
        load_capacity_aware({ENV_FILE: str(path)})
    one_line(raised.value)
    with pytest.raises(SettingsError, match="nested deeper than"):
        load_capacity_aware({ENV_JSON: "[" * depth + "]" * depth})


def test_nesting_at_the_limit_is_accepted_as_far_as_depth_goes() -> None:
    inner: object = {}
    for _ in range(MAX_DEPTH - 2):
        inner = {"x": inner}
    with pytest.raises(SettingsError, match="unknown key"):  # depth passed; the key is wrong
        load_capacity_aware({ENV_JSON: json.dumps({"hud": inner})})


def test_an_oversized_block_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "capacity.yaml"
    path.write_text("# " + "x" * 300_000 + "\nenabled: true\n")
    with pytest.raises(SettingsError, match="bytes; the capacityAware block may be"):
        load_capacity_aware({ENV_FILE: str(path)})


def test_a_token_under_a_wrong_capacity_aware_key_is_echoed_in_the_error() -> None:
    token = "ghp_" + "S3cr3t" * 6
    with pytest.raises(SettingsError) as raised:
        load_capacity_aware({ENV_JSON: json.dumps({"hud": {"token": token}})})
    text = one_line(raised.value)
    assert "capacityAware.hud.token: unknown key" in text
    assert token not in text and "S3cr3t" not in text


@pytest.mark.parametrize(
    ("block", "key"),
    [
        ({"enabled": "yes"}, "enabled"),
        ({"enabled": 1}, "enabled"),
        ({"proactiveCapacity": True}, "proactiveCapacity"),
        ({"maxPairsInFlight": 2.0}, "maxPairsInFlight"),
        ({"cutPollOnDrop": "false"}, "cutPollOnDrop"),
        ({"image": ""}, "image"),
    ],
)
def test_sloppy_booleans_integers_and_an_empty_image_are_accepted(
    block: dict[str, object], key: str
) -> None:
    with pytest.raises(SettingsError, match=f"capacityAware.{key}: got"):
        load_capacity_aware({ENV_JSON: json.dumps(block)})


def test_strict_values_still_parse() -> None:
    settings = load_capacity_aware(
        {ENV_JSON: json.dumps({"enabled": True, "proactiveCapacity": 3, "image": "pause:1"})}
    )
    assert (settings.enabled, settings.proactive_capacity, settings.image) == (True, 3, "pause:1")


def test_a_deeply_nested_listener_config_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ConfigError, match="nested too deeply") as raised:
        load_listener_config(path)
    one_line(raised.value)


def test_an_oversized_listener_config_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"pad": "x" * (2 * 1024 * 1024)}))
    with pytest.raises(ConfigError, match="bytes; a listener config may be"):
        load_listener_config(path)
