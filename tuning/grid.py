"""The grid of dials a sweep explores, validated at the edge.

A grid file is a YAML mapping of ``capacityAware`` keys (camelCase; nested keys dotted, e.g.
``warmPool.missProbability``) to the list of values to try; the sweep runs the cartesian
product, in the order the keys and values are written. Every point is validated as a
complete ``capacityAware`` block before anything runs, so a typo fails at once with the
point and the key named. Any key of the block can be a dial: warm pool size
(``proactiveCapacity``, a number or ``auto``), ``warmPool.schedule``, ``survivorWindow``,
``placeholderReadyTimeout``, ``doNotDisrupt``, ``hudFallbackQueuedJobs``... Keys starting with
``sim.`` set the simulator's side instead (``sim.fit_estimate``, ``sim.fit_refresh``),
which in production is a deployment choice (a HUD URL or not) rather than a key of the block.
Keys starting with ``karpenter.`` set every NodePool of the scenario
(``karpenter.consolidateAfter``, :mod:`tuning.karpenter`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from reconciler.settings import CapacityAwareSettings
from reconciler.settings_types import SettingsError
from simulator.scenarios.blocks import CapacityAwareModel
from tuning import karpenter
from tuning.replay import DialError, dial_settings, sim_settings, split_dials

MAX_POINTS = 500

#: 36 points: the warm pool size at night (or all day) x a working-hours schedule x how long
#: Karpenter keeps an emptied node (set on the NodePools, not the listener: tuning/karpenter.py).
DEFAULT_GRID: dict[str, list[Any]] = {
    "proactiveCapacity": [0, 1, 2, 4, 6, "auto"],
    "warmPool.schedule": [[], [{"start": "07:00", "end": "19:00", "pairs": 4}]],
    "karpenter.consolidateAfter": ["30s", "5m", "15m"],
}


class GridError(ValueError):
    """The grid file is unusable; the message names the file, the point or key, the reason."""


@dataclass(frozen=True, slots=True)
class Point:
    """One capacity-aware configuration of the sweep."""

    id: str
    dials: tuple[tuple[str, Any], ...]
    settings: CapacityAwareSettings

    def dial_map(self) -> dict[str, Any]:
        return dict(self.dials)


def load_grid(path: str | Path | None) -> tuple[dict[str, list[Any]], str]:
    """The grid mapping and where it came from (the default grid when ``path`` is None)."""
    if path is None:
        return {k: list(v) for k, v in DEFAULT_GRID.items()}, "default grid"
    file = Path(path)
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise GridError(f"{file}: cannot read the grid: {exc.strerror}") from None
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise GridError(f"{file}: not a YAML file: {exc}") from None
    return check_grid(data, where=str(file)), str(file)


def check_grid(data: Any, *, where: str) -> dict[str, list[Any]]:
    if not isinstance(data, Mapping) or not data:
        raise GridError(
            f"{where}: a grid is a mapping of capacityAware keys to lists of values, "
            "e.g. {proactiveCapacity: [1, 2, auto]}"
        )
    grid: dict[str, list[Any]] = {}
    for key, values in data.items():
        if not isinstance(key, str) or not key:
            raise GridError(f"{where}: key {key!r}: keys are capacityAware names (camelCase)")
        if not isinstance(values, list) or not values:
            raise GridError(f"{where}: {key}: expected a non-empty list of values (got {values!r})")
        grid[key] = values
    return grid


def expand(
    grid: Mapping[str, list[Any]],
    base: CapacityAwareSettings,
    *,
    where: str,
    sim: CapacityAwareModel | None = None,
) -> list[Point]:
    """Every point of the grid, validated against the settings model."""
    keys = list(grid)
    combos = list(itertools.product(*(grid[k] for k in keys)))
    if len(combos) > MAX_POINTS:
        raise GridError(
            f"{where}: {len(combos)} points; at most {MAX_POINTS} (each point is a full replay)"
        )
    points: list[Point] = []
    width = len(str(len(combos)))
    for number, combo in enumerate(combos, start=1):
        dials = tuple(zip(keys, combo, strict=True))
        point_id = f"p{number:0{width}d}"
        block, sim_dials = split_dials(dict(dials))
        try:
            settings = dial_settings(base, block, where=f"{where}: point {point_id}")
            sim_settings(sim or CapacityAwareModel(), sim_dials, where=f"{where}: point {point_id}")
            karpenter.nodepool_fields(
                karpenter.split(dict(dials))[1], where=f"{where}: point {point_id}"
            )
        except (SettingsError, DialError, karpenter.KarpenterDialError) as exc:
            raise GridError(str(exc)) from None
        points.append(Point(point_id, dials, settings))
    return points
