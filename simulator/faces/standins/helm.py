"""The ``helm`` stand-in: the two commands the quickstart runs.

- ``helm get values RELEASE -n NS [-o yaml|json]``: the values the release was last given
  (at first the scale set's stock values, ``StandinState.stock_values``);
- ``helm upgrade RELEASE CHART -n NS [--version V] [--reuse-values] [-f FILE]...
  [--set KEY=VALUE]...``: keeps the new values, merged as Helm merges them (:func:`merge`),
  then does what ARC's controller does for a scale set (:mod:`.controller`). For ARC's
  controller chart it keeps the values only: the world's listener already serves metrics.

Kept values live in ``<dir>/helm/<namespace>.<release>.yaml``. The world's ARC objects are
not re-rendered from them: its scale set already has what the quickstart's overlay adds.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import yaml

from simulator.faces.standins.state import StandinError, StandinState

SCALE_SET_CHART = "gha-runner-scale-set"
CONTROLLER_CHART = "gha-runner-scale-set-controller"
CONTROLLER_RELEASE = "arc"
PREFIX = "helm (stand-in for the simulated world)"


def merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """Helm's merge of values: maps merge key by key, anything else (lists too) is replaced."""
    merged = copy.deepcopy(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def set_value(values: dict[str, Any], assignment: str) -> dict[str, Any]:
    """``--set a.b=c``: a copy of ``values`` with ``c`` (YAML-typed) at ``a.b``."""
    key, sep, raw = assignment.partition("=")
    if not sep or not key:
        raise StandinError(f"--set {assignment!r}: expected KEY=VALUE, e.g. a.b=1")
    nested: dict[str, Any] = {}
    *parents, leaf = key.split(".")
    node = nested
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = yaml.safe_load(raw) if raw else ""
    return merge(values, nested)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="helm", add_help=False, exit_on_error=False)
    sub = parser.add_subparsers(dest="command", required=True)
    get = sub.add_parser("get", add_help=False, exit_on_error=False)
    get.add_argument("what", choices=["values"])
    get.add_argument("release")
    get.add_argument("-n", "--namespace", required=True)
    get.add_argument("-o", "--output", choices=["yaml", "json"], default="yaml")
    up = sub.add_parser("upgrade", add_help=False, exit_on_error=False)
    up.add_argument("release")
    up.add_argument("chart")
    up.add_argument("-n", "--namespace", required=True)
    up.add_argument("--version", default=None)
    up.add_argument("--reuse-values", action="store_true")
    up.add_argument("-f", "--values", action="append", default=[], dest="files")
    up.add_argument("--set", action="append", default=[], dest="sets")
    return parser


def values_path(state: StandinState, namespace: str, release: str) -> Path:
    return state.path / "helm" / f"{namespace}.{release}.yaml"


def kept_values(state: StandinState, namespace: str, release: str) -> dict[str, Any]:
    path = values_path(state, namespace, release)
    if path.exists():
        return dict(yaml.safe_load(path.read_text()) or {})
    if (namespace, release) == (state.namespace, state.scale_set):
        return copy.deepcopy(state.stock_values)
    if (namespace, release) == (state.controller_namespace, CONTROLLER_RELEASE):
        return {}
    raise StandinError(
        f"Error: release: not found ({namespace}/{release}; the simulated world has the scale "
        f"set {state.namespace}/{state.scale_set} and ARC's controller "
        f"{state.controller_namespace}/{CONTROLLER_RELEASE})"
    )


def get_values(state: StandinState, args: argparse.Namespace, out: TextIO) -> int:
    values = kept_values(state, args.namespace, args.release)
    if args.output == "json":
        out.write(json.dumps(values) + "\n")
    else:
        out.write(yaml.safe_dump(values, sort_keys=False))
    return 0


def upgrade(state: StandinState, args: argparse.Namespace, out: TextIO) -> int:
    from simulator.faces.standins import controller

    chart = args.chart.rstrip("/").rsplit("/", 1)[-1]
    scale_set = (args.namespace, args.release) == (state.namespace, state.scale_set)
    expected = SCALE_SET_CHART if scale_set else CONTROLLER_CHART
    base = kept_values(state, args.namespace, args.release) if args.reuse_values else {}
    if chart != expected:
        raise StandinError(
            f"Error: {args.namespace}/{args.release} is a {expected} release; got chart {chart!r}"
        )
    values = base
    for name in args.files:
        try:
            values = merge(values, dict(yaml.safe_load(Path(name).read_text()) or {}))
        except (OSError, yaml.YAMLError) as exc:
            raise StandinError(f"Error: values file {name}: {exc}") from exc
    for assignment in args.sets:
        values = set_value(values, assignment)
    path = values_path(state, args.namespace, args.release)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(values, sort_keys=False))
    out.write(f'Release "{args.release}" has been upgraded ({PREFIX}: values kept in {path}).\n')
    if scale_set:
        for line in controller.reconcile(state, values):
            out.write(f"{PREFIX}, as ARC's controller: {line}\n")
    else:
        out.write(
            f"{PREFIX}: ARC's controller chart: the simulated world's listener already "
            f"serves /metrics on {state.listener_addr}; nothing else changes\n"
        )
    return 0


def main(state: StandinState, argv: Sequence[str], out: TextIO = sys.stdout) -> int:
    try:
        args = _parser().parse_args(list(argv))
    except (argparse.ArgumentError, SystemExit) as exc:
        raise StandinError(
            f"{PREFIX} runs only `helm get values RELEASE -n NS` and `helm upgrade RELEASE "
            f"CHART -n NS [--version V] [--reuse-values] [-f FILE] [--set K=V]` (the "
            f"quickstart's commands); got `helm {' '.join(argv)}` ({exc})"
        ) from exc
    if args.command == "get":
        return get_values(state, args, out)
    return upgrade(state, args, out)
