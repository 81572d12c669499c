"""The scale set's Helm values as ``arc-capacity-listener values`` reads them: parsed with the
line of every key, and checked against what the ``gha-runner-scale-set`` chart reads.

The schema is data (``listener/commands/data/gha-runner-scale-set-values.json``, which says where it
came from: the chart's ``values.yaml`` and templates at 0.13.0-0.14.2 and the 0.15 line). Pod specs
(``template`` and ``listenerTemplate``) are checked against the kubernetes client's own models,
so a misspelt field of a PodSpec or a Container is found like a misspelt chart key.

What is refused (one line each, file and line named): a misspelt key (with the closest known
key), a value of the wrong shape (``containers`` as a mapping), a container without a valid
name, ``containerMode.type`` outside the chart's modes, negative or crossed min/maxRunners.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

SCHEMA_FILE = "gha-runner-scale-set-values.json"
#: A DNS-1123 label (container names, volume names).
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
#: A DNS-1123 subdomain (object names such as ConfigMaps).
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_MODEL_LIST = re.compile(r"^list\[(V1\w+)\]$", re.IGNORECASE)
_MODEL = re.compile(r"^(V1\w+)$")

Path_ = tuple[str | int, ...]


class ValuesError(ValueError):
    """The current values (or an argument) cannot be used; the message says where and why."""


@dataclass(frozen=True, slots=True)
class Values:
    """The decoded values and the line (1-based) of every key and list item, by path."""

    file: str
    data: dict[str, Any]
    lines: dict[Path_, int]
    #: Container names allowed besides DNS labels (a hook template's ``$job``).
    special_names: frozenset[str] = frozenset()

    def where(self, path: Path_) -> str:
        """``file: line N: a.b[0].c`` for the nearest path that has a line."""
        probe = path
        while probe and probe not in self.lines:
            probe = probe[:-1]
        line = f" line {self.lines[probe]}:" if probe in self.lines else ""
        return f"{self.file}:{line} {dotted(path)}"


def dotted(path: Path_) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "<document>"


def load_values(file: str | Path, text: str) -> Values:
    """Parse ``helm get values -o yaml`` output; bad YAML is one line with the file and line."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" line {mark.line + 1}, column {mark.column + 1}:" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "cannot be parsed"
        raise ValuesError(f"{file}:{at} not valid YAML ({problem})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValuesError(
            f"{file}: expected a mapping of Helm values (helm get values <release> -o yaml), "
            f"got a {type(data).__name__}"
        )
    lines: dict[Path_, int] = {}
    if node is not None:
        _record_lines(node, (), lines)
    return Values(str(file), data, lines)


def _record_lines(node: yaml.Node, path: Path_, lines: dict[Path_, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = (*path, str(key.value))
            lines[child] = key.start_mark.line + 1
            _record_lines(value, child, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*path, index)] = item.start_mark.line + 1
            _record_lines(item, (*path, index), lines)


@cache
def schema() -> dict[str, Any]:
    text = resources.files("listener.commands").joinpath("data", SCHEMA_FILE).read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def problems(values: Values) -> list[str]:
    """Every problem of ``values`` against the chart's schema, one line each, in file order."""
    found = list(_check(values.data, schema()["values"], (), values))
    found += _runner_bounds(values)
    if not found:
        found += _named_containers(values)
    return found


#: The container ARC merges its settings into, per pod template; any other name is a sidecar.
MAIN_CONTAINERS = {"template": "runner", "listenerTemplate": "listener"}


def _named_containers(values: Values) -> list[str]:
    """A pod template whose containers have none of the name ARC looks for, but one close to
    it, is a typo that would leave the real container as an unconfigured sidecar."""
    out = []
    for template, name in MAIN_CONTAINERS.items():
        containers = ((values.data.get(template) or {}).get("spec") or {}).get("containers")
        names = [c.get("name") for c in containers or () if isinstance(c.get("name"), str)]
        if not names or name in names:
            continue
        close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
        if close:
            index = names.index(close[0])
            out.append(
                f"{values.where((template, 'spec', 'containers', index, 'name'))}: "
                f"{close[0]!r}: ARC configures the container named {name!r} (any other is a "
                f"sidecar); did you mean {name!r}?"
            )
    return out


def _check(value: Any, spec: Any, path: Path_, values: Values) -> Iterator[str]:
    if isinstance(spec, str) and spec in schema()["named"]:
        spec = schema()["named"][spec]
    if isinstance(spec, dict) and "type" in spec:
        spec = spec["type"]
        yield from _check(value, spec, path, values)
        return
    if value is None:
        return  # Helm treats null as unset
    where = values.where(path)
    if isinstance(spec, dict) and "oneOf" in spec:
        if not any(_shape_ok(value, option) for option in spec["oneOf"]):
            yield f"{where}: expected {_describe_any(spec['oneOf'])}, got {_kind(value)}"
            return
        option = next(o for o in spec["oneOf"] if _shape_ok(value, o))
        yield from _check(value, option, path, values)
    elif isinstance(spec, dict) and "enum" in spec:
        if value not in spec["enum"]:
            allowed = ", ".join(repr(v) for v in spec["enum"] if v)
            yield f"{where}: {value!r} is not one of {allowed}"
    elif isinstance(spec, dict) and "keys" in spec:
        if not isinstance(value, dict):
            yield f"{where}: expected a mapping, got {_kind(value)}"
            return
        for key, item in value.items():
            child = (*path, str(key))
            if key == "USER-SUPPLIED VALUES" and not path:
                yield (
                    f"{values.where(child)}: this is `helm get values` without `-o yaml`: run it "
                    "with -o yaml (or delete this header line)"
                )
                continue
            if key == "capacityAware" and not path:
                yield (
                    f"{values.where(child)}: the chart ignores this key; the listener reads the "
                    "block from a ConfigMap (config/capacity-aware-configmap.yaml): move it there"
                )
                continue
            if key not in spec["keys"]:
                yield f"{values.where(child)}: unknown key{_suggest(str(key), spec['keys'])}"
                continue
            yield from _check(item, spec["keys"][key], child, values)
    elif spec == "podTemplate":
        yield from _pod_template(value, path, values)
    elif not _shape_ok(value, spec):
        yield f"{where}: expected {_describe(spec)}, got {_kind(value)}"


def _shape_ok(value: Any, spec: Any) -> bool:
    if isinstance(spec, dict):
        return isinstance(value, dict) if "keys" in spec else True
    return {
        "string": lambda v: isinstance(v, str),
        "int": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "bool": lambda v: isinstance(v, bool),
        "map": lambda v: isinstance(v, dict),
        "list": lambda v: isinstance(v, list),
        "stringList": lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v),
        "podTemplate": lambda v: isinstance(v, dict),
        "meta": lambda v: isinstance(v, dict),
    }[spec](value)


def _describe(spec: Any) -> str:
    if isinstance(spec, dict):
        return "a mapping"
    return {
        "string": "a string",
        "int": "a number",
        "bool": "true or false",
        "map": "a mapping",
        "list": "a list",
        "stringList": "a list of strings",
    }.get(spec, "a mapping")


def _describe_any(options: list[Any]) -> str:
    return " or ".join(_describe(o) for o in options)


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"


def _suggest(key: str, known: Mapping[str, Any] | list[str]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else " (the chart ignores it)"


def _pod_template(value: Any, path: Path_, values: Values) -> Iterator[str]:
    if not isinstance(value, dict):
        yield f"{values.where(path)}: expected a mapping with spec, got {_kind(value)}"
        return
    for key, item in value.items():
        child = (*path, str(key))
        if key == "metadata":
            yield from model_problems(item, "V1ObjectMeta", child, values)
        elif key == "spec":
            yield from model_problems(item, "V1PodSpec", child, values)
        else:
            yield f"{values.where(child)}: unknown key{_suggest(str(key), ['metadata', 'spec'])}"


def model_problems(value: Any, model: str, path: Path_, values: Values) -> Iterator[str]:
    """``value`` against a kubernetes client model: known fields, lists and mappings."""
    from kubernetes import client

    cls = getattr(client, model)
    if value is None:
        return
    if not isinstance(value, dict):
        yield f"{values.where(path)}: expected a mapping ({model[2:]}), got {_kind(value)}"
        return
    fields = {json_name: name for name, json_name in cls.attribute_map.items()}
    for key, item in value.items():
        child = (*path, str(key))
        if key not in fields:
            yield f"{values.where(child)}: unknown {model[2:]} field{_suggest(str(key), fields)}"
            continue
        kind = cls.openapi_types[fields[key]]
        yield from _typed(item, kind, child, values)
    name = value.get("name")
    if model == "V1Volume" and not (isinstance(name, str) and DNS_LABEL.match(name)):
        yield (
            f"{values.where(path)}: a volume needs a name of lowercase letters, digits and "
            f"'-' (got {name!r})"
        )
    if model == "V1Container" and not (
        isinstance(name, str) and (DNS_LABEL.match(name) or name in values.special_names)
    ):
        yield (
            f"{values.where(path)}: a container needs a name of lowercase letters, digits and "
            f"'-' (got {value.get('name')!r})"
        )


def _typed(value: Any, kind: str, path: Path_, values: Values) -> Iterator[str]:
    if value is None:
        return
    where = values.where(path)
    listed = kind.lower().startswith("list[")
    if listed:
        if not isinstance(value, list):
            item = kind[5:-1].removeprefix("V1")
            yield f"{where}: expected a list of {item} entries, got {_kind(value)}"
            return
        match = _MODEL_LIST.match(kind)
        if match:
            for index, item in enumerate(value):
                yield from model_problems(item, match.group(1), (*path, index), values)
    elif kind.lower().startswith("dict["):
        if not isinstance(value, dict):
            yield f"{where}: expected a mapping, got {_kind(value)}"
    elif _MODEL.match(kind) and kind != "V1Time":
        yield from model_problems(value, kind, path, values)
    elif kind in ("str", "int", "bool", "float", "datetime") and isinstance(value, dict | list):
        yield f"{where}: expected a single value, got {_kind(value)}"


def _runner_bounds(values: Values) -> list[str]:
    low, high = values.data.get("minRunners"), values.data.get("maxRunners")
    out = []
    for key, number in (("minRunners", low), ("maxRunners", high)):
        if isinstance(number, int | float) and not isinstance(number, bool) and number < 0:
            out.append(f"{values.where((key,))}: must be >= 0 (got {number})")
    numbers = [isinstance(n, int | float) and not isinstance(n, bool) for n in (low, high)]
    if all(numbers) and low > high:  # type: ignore[operator]
        out.append(f"{values.where(('maxRunners',))}: must be >= minRunners ({high} < {low})")
    return out
