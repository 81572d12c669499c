"""Where the ``capacityAware`` block comes from.

ARC's controller writes the listener config Secret and reconciles it back, so our block
cannot live there. It comes from the listener pod's environment instead (set through the
scale set's ``listenerTemplate``):

- ``CAPACITY_AWARE_CONFIG``: path of a YAML or JSON file (a mounted ConfigMap), whose top
  level is either the block itself or ``{capacityAware: {...}}`` (so a Helm values excerpt
  works as is);
- ``CAPACITY_AWARE_JSON``: the block inline, as JSON.

Neither set -> defaults (``enabled: false``: behave exactly like stock ARC). Both set -> an
error, because silently preferring one hides a mistake.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from reconciler.settings import CapacityAwareSettings, SettingsError, parse_capacity_aware

ENV_FILE = "CAPACITY_AWARE_CONFIG"
ENV_JSON = "CAPACITY_AWARE_JSON"


def load_capacity_aware(env: Mapping[str, str]) -> CapacityAwareSettings:
    path, inline = env.get(ENV_FILE), env.get(ENV_JSON)
    if path and inline:
        raise SettingsError(f"set either {ENV_FILE} or {ENV_JSON}, not both")
    if path:
        return parse_capacity_aware(_unwrap(_read_file(Path(path)), where=path), where=path)
    if inline:
        try:
            data = json.loads(inline)
        except json.JSONDecodeError as exc:
            raise SettingsError(f"{ENV_JSON}: not valid JSON ({exc.msg} at {exc.pos})") from None
        return parse_capacity_aware(_unwrap(data, where=ENV_JSON), where=ENV_JSON)
    return parse_capacity_aware(None, where="defaults")


def _read_file(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SettingsError(
            f"{path}: the capacityAware file is not UTF-8 text (byte {exc.start})"
        ) from None
    except OSError as exc:
        raise SettingsError(
            f"{path}: cannot read the capacityAware file ({exc.strerror})"
        ) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise SettingsError(f"{path}: not valid YAML/JSON{where}") from None


def _unwrap(data: Any, *, where: str) -> Mapping[str, Any] | None:
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise SettingsError(
            f"{where}: expected a mapping (the capacityAware block), got {type(data).__name__}"
        )
    inner = data.get("capacityAware")
    if inner is not None:
        if not isinstance(inner, Mapping):
            raise SettingsError(f"{where}: capacityAware must be a mapping")
        return inner
    return data
