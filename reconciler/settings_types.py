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

#: A container image reference as a pod spec takes it: no whitespace, no leading dash.
_IMAGE = re.compile(r"[A-Za-z0-9][^\s]*")


def _image(value: Any) -> str:
    if not isinstance(value, str) or not _IMAGE.fullmatch(value):
        raise ValueError(
            "an image reference like ghcr.io/acme/ci:2024-06 or ghcr.io/acme/ci@sha256:... "
            "(no spaces)"
        )
    return value


ImageRef = Annotated[str, BeforeValidator(_image)]


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


#: A Kubernetes quantity (k8s.io/apimachinery resource.Quantity): a decimal number, then a
#: binary suffix (Ki..Ei), a decimal suffix (n u m k M G T P E) or an exponent (e3, E-2).
_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>\d+(?:\.\d*)?|\.\d+)"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$"
)
_QUANTITY_HELP = (
    "a Kubernetes quantity like '500m', '2', '4Gi' (suffixes Ki Mi Gi Ti Pi Ei, m k M G T)"
)
#: Resource names a container may request without a domain prefix (the API server refuses
#: any other bare name; extended resources are ``domain/name``, e.g. ``nvidia.com/gpu``).
STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage")
_QUALIFIED = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


def parse_quantity_text(value: Any) -> str:
    """A non-negative Kubernetes quantity as text (numbers are accepted and written out)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(_QUANTITY_HELP)
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if match is None:
        raise ValueError(_QUANTITY_HELP + _unit_hint(text))
    if match.group("sign") == "-" and float(match.group("number")) != 0:
        raise ValueError("a resource quantity cannot be negative")
    return text


def _unit_hint(text: str) -> str:
    """``4GB`` -> "; did you mean '4Gi' (or '4G')?": byte units are written without the B."""
    if len(text) > 2 and text[-1] in "bB" and _QUANTITY.match(text[:-1]):
        stem = text[:-1]
        binary = stem[:-1] + stem[-1].upper() + "i" if stem[-1] in "kKMGTPE" else stem
        return f"; did you mean {binary!r} (or {stem!r})?"
    return ""


def parse_resource_name(value: Any) -> str:
    """``cpu``, ``memory``, ``ephemeral-storage``, ``hugepages-<size>`` or ``domain/name``."""
    if not isinstance(value, str):
        raise ValueError("a resource name is a string such as 'cpu' or 'nvidia.com/gpu'")
    if value in STANDARD_RESOURCES or _QUALIFIED.match(value):
        return value
    if value.startswith("hugepages-") and _QUANTITY.match(value.removeprefix("hugepages-")):
        return value
    import difflib  # only on the error path

    close = difflib.get_close_matches(value.lower(), STANDARD_RESOURCES, n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ValueError(
        "not a resource name a container can request: use cpu, memory, ephemeral-storage, "
        f"hugepages-<size> or an extended resource with its domain (nvidia.com/gpu){hint}"
    )


Quantity = Annotated[str, BeforeValidator(parse_quantity_text)]
ResourceName = Annotated[str, BeforeValidator(parse_resource_name)]
