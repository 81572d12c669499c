"""The value types of the settings block: durations, ``doNotDisrupt``, the strict model base
and the one error type (reconciler/settings.py says how a bad value is reported)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict
from pydantic.alias_generators import to_camel

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


class SettingsError(ValueError):
    """A settings value is invalid; the message names field, value and what is allowed."""


def parse_duration(value: Any) -> Any:
    """Accept 30, 30.0, "30", "30s", "5m", "1h", "500ms"; leave anything else to pydantic."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or a string like '30s', '5m', '1h'")
    if isinstance(value, str):
        match = _DURATION.match(value)
        if not match:
            raise ValueError("a duration is a number of seconds or a string like '30s', '5m', '1h'")
        return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    return value


Seconds = Annotated[float, BeforeValidator(parse_duration)]


def _do_not_disrupt(value: Any) -> Any:
    """``auto``, ``true``/``false``, or a duration of at least 1 s (seconds: see
    ``doNotDisrupt``)."""
    if isinstance(value, bool) or value == "auto":
        return value
    try:
        seconds = parse_duration(value)
    except ValueError:
        seconds = None
    if not isinstance(seconds, int | float) or seconds < 1:
        raise ValueError(
            "doNotDisrupt is auto, true, false or a duration of at least 1s like '30m' "
            f"(got {value!r})"
        )
    return float(seconds)


DoNotDisrupt = Annotated[bool | float | Literal["auto"], BeforeValidator(_do_not_disrupt)]


def duration_seconds(value: str | float) -> float:
    """The settings' duration rule for command lines (``"60s"``, ``"2m"``, ``90``)."""
    return float(parse_duration(value))


class SettingsModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
    )
