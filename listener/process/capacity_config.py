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

Hostile input is refused with one line: YAML aliases (``&a`` / ``*a``: an alias bomb expands
exponentially; a settings block never needs them), more than :data:`MAX_BYTES`, or nesting
deeper than :data:`MAX_DEPTH`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from reconciler.settings import CapacityAwareSettings, parse_capacity_aware
from reconciler.settings_types import SettingsError

ENV_FILE = "CAPACITY_AWARE_CONFIG"
ENV_JSON = "CAPACITY_AWARE_JSON"
#: Largest accepted block (the real one is well under 4 KiB).
MAX_BYTES = 256 * 1024
#: Deepest accepted nesting (the real block is 3 levels deep).
MAX_DEPTH = 32


class _NoAliasLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases (and so alias bombs) and deep nesting while composing,
    before anything is expanded."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]  # untyped in the stubs
            raise _Refused(
                f"YAML aliases are not allowed (line {event.start_mark.line + 1}); "
                "write the value out"
            )
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(f"nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


class _Refused(Exception):
    pass


def load_capacity_aware(env: Mapping[str, str]) -> CapacityAwareSettings:
    path, inline = env.get(ENV_FILE), env.get(ENV_JSON)
    if path and inline:
        raise SettingsError(f"set either {ENV_FILE} or {ENV_JSON}, not both")
    if path:
        return parse_capacity_aware(_unwrap(_read_file(Path(path)), where=path), where=path)
    if inline:
        _check_size(len(inline.encode("utf-8", "surrogatepass")), where=ENV_JSON)
        try:
            data = json.loads(inline)
        except json.JSONDecodeError as exc:
            raise SettingsError(f"{ENV_JSON}: not valid JSON ({exc.msg} at {exc.pos})") from None
        except RecursionError:
            raise SettingsError(f"{ENV_JSON}: nested deeper than {MAX_DEPTH} levels") from None
        _check_depth(data, where=ENV_JSON)
        return parse_capacity_aware(_unwrap(data, where=ENV_JSON), where=ENV_JSON)
    return parse_capacity_aware(None, where="defaults")


def _check_size(size: int, *, where: str) -> None:
    if size > MAX_BYTES:
        raise SettingsError(f"{where}: {size} bytes; the capacityAware block may be {MAX_BYTES}")


def _check_depth(data: Any, *, where: str) -> None:
    """Iterative, so the check itself cannot overflow the stack."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise SettingsError(f"{where}: nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, Mapping):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


def _read_file(path: Path) -> Any:
    try:
        _check_size(path.stat().st_size, where=str(path))
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
        return yaml.load(text, Loader=_NoAliasLoader)  # a SafeLoader subclass
    except _Refused as exc:
        raise SettingsError(f"{path}: {exc}") from None
    except RecursionError:
        raise SettingsError(f"{path}: nested deeper than {MAX_DEPTH} levels") from None
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
