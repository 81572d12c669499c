"""Three PNG plots per scenario (matplotlib, Agg backend: no display needed).

- ``queue_depth.png``: jobs waiting in GitHub's queue (not assigned to any scale set); stock
  ARC's jobs are assigned at once and wait stuck on a runner instead, so they are not counted
  (the title and the report's caption say so).
- ``capacity.png``: per strategy, advertised capacity (what the listeners told GitHub) vs
  confirmed capacity (``min(R, W)``: jobs holding resources + complete reserved pairs),
  summed over the scale sets; with two or three scale sets, each one's advertised capacity
  is drawn too (dashed), so a cluster withdrawing its capacity shows.
- ``nodes.png``: nodes in the clusters (summed).

Inputs are the sampled time series of each strategy (``timeseries.json``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

MAX_SCALE_SET_LINES = 3
_STYLES = ("--", ":", "-.")
COLORS = {"baseline": "#d62728", "overprovision": "#ff7f0e", "capacity-aware": "#2ca02c"}
#: Fixed metadata so the same data gives the same bytes.
_META = {"Software": None}


def _hours(series: dict[str, Any]) -> list[float]:
    return [t / 3600.0 for t in series["t"]]


def _total(per_key: dict[str, list[int]], length: int) -> list[int]:
    total = [0] * length
    for values in per_key.values():
        for i, v in enumerate(values[:length]):
            total[i] += v
    return total


def write_plots(out_dir: Path, results: dict[str, Any], series: dict[str, Any]) -> list[Path]:
    name = results["scenario"]
    paths = []

    fig, ax = plt.subplots(figsize=(10, 4))
    for strategy, s in series.items():
        ax.step(
            _hours(s), s["queue_depth"], where="post", label=strategy, color=COLORS.get(strategy)
        )
    ax.set(
        title=f"{name}: jobs waiting in the GitHub queue, unassigned\n"
        "(stock ARC's jobs are assigned at once and wait stuck on a runner: not counted here)",
        xlabel="hours",
        ylabel="jobs",
    )
    ax.legend()
    ax.grid(alpha=0.3)
    paths.append(_save(fig, out_dir / "queue_depth.png"))

    fig, axes = plt.subplots(
        len(series), 1, figsize=(10, 2.8 * len(series)), sharex=True, squeeze=False
    )
    for ax, (strategy, s) in zip(axes[:, 0], series.items(), strict=True):
        n = len(s["t"])
        hours = _hours(s)
        ax.step(
            hours, _total(s["advertised"], n), where="post", label="advertised", color="#1f77b4"
        )
        ax.step(
            hours,
            _total(s["confirmed"], n),
            where="post",
            label="confirmed (min(R, W))",
            color=COLORS.get(strategy, "#2ca02c"),
        )
        ax.step(
            hours,
            _total(s["assigned"], n),
            where="post",
            label="assigned jobs",
            color="#7f7f7f",
            alpha=0.6,
        )
        if 1 < len(s["advertised"]) <= MAX_SCALE_SET_LINES:
            for (scale_set, values), style in zip(
                sorted(s["advertised"].items()), _STYLES, strict=False
            ):
                ax.step(
                    hours,
                    values[:n],
                    where="post",
                    label=f"advertised by {scale_set}",
                    color="#1f77b4",
                    linestyle=style,
                    linewidth=0.8,
                    alpha=0.8,
                )
        ax.set(title=f"{strategy}", ylabel="slots")
        ax.grid(alpha=0.3)
        ax.legend(loc="upper right", fontsize="small")
    axes[-1, 0].set_xlabel("hours")
    fig.suptitle(f"{name}: advertised vs truly reservable capacity")
    paths.append(_save(fig, out_dir / "capacity.png"))

    fig, ax = plt.subplots(figsize=(10, 4))
    for strategy, s in series.items():
        ax.step(
            _hours(s),
            _total(s["nodes"], len(s["t"])),
            where="post",
            label=strategy,
            color=COLORS.get(strategy),
        )
    ax.set(title=f"{name}: nodes in the clusters", xlabel="hours", ylabel="nodes")
    ax.legend()
    ax.grid(alpha=0.3)
    paths.append(_save(fig, out_dir / "nodes.png"))
    return paths


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata=_META)
    plt.close(fig)
    return path
