"""The answer of a sweep: the Pareto frontier, the plot, and the recommendation.

Pure decisions (:func:`frontier`, :func:`recommend`) over the aggregated rows of
:func:`tuning.sweep.aggregate`; the plot and the YAML are the only I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from reconciler.settings import parse_capacity_aware
from simulator.scenarios.strategies import BASELINE, CAPACITY_AWARE, OVERPROVISION
from tuning import karpenter
from tuning.replay import SIM_PREFIX, split_dials


def p95_of(row: dict[str, Any]) -> float:
    value = row["p95_worst_seconds"]
    return math.inf if value is None else float(value)


def frontier(rows: Sequence[dict[str, Any]], cost: str) -> list[dict[str, Any]]:
    """Rows no other row beats on both p95 and ``cost`` (ties kept), cheapest first.

    A row whose p95 is infinite (a job never started) is never on the frontier.
    """
    finite = [r for r in rows if math.isfinite(p95_of(r))]
    out = []
    for row in finite:
        dominated = any(
            p95_of(o) <= p95_of(row)
            and o[cost] <= row[cost]
            and (p95_of(o) < p95_of(row) or o[cost] < row[cost])
            for o in finite
        )
        if not dominated:
            out.append(row)
    return sorted(out, key=lambda r: (r[cost], p95_of(r), r["point"]))


def recommend(rows: Sequence[dict[str, Any]], target_p95: float) -> dict[str, Any] | None:
    """The cheapest capacity-aware point whose worst-seed p95 meets the target, or None.

    Cheapest = dollars per day, then idle reserved CPU-hours, then the point id (stable).
    """
    meeting = [r for r in rows if r["strategy"] == CAPACITY_AWARE and p95_of(r) <= target_p95]
    if not meeting:
        return None
    return min(
        meeting,
        key=lambda r: (r["dollars_per_day_mean"], r["idle_cpu_hours_per_day_mean"], r["point"]),
    )


def dials_block(dials: dict[str, Any]) -> dict[str, Any]:
    """The tuned dials (dotted camelCase keys) as a nested ``capacityAware`` block, with the
    switch and the warm pool size a reader looks for first; the simulator's own dials
    (``sim.``) are left out: they are no key of the block."""
    block: dict[str, Any] = {"enabled": True}
    for key, value in split_dials(dials)[0].items():
        node = block
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return block


def block_dials(block: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A pasted block as dotted dials (the inverse of :func:`dials_block`), to set over a
    listener's own settings with :func:`tuning.replay.dial_settings`."""
    out: dict[str, Any] = {}
    for key, value in block.items():
        if isinstance(value, Mapping):
            out.update(block_dials(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def recommendation_yaml(row: dict[str, Any], *, target_p95: float, context: str) -> str:
    """Only the dials the sweep tuned, as a ``capacityAware`` block to paste over a
    listener's own (its ``workflowResources`` and every other key stay as they are there);
    checked to read back through the settings model."""
    block = dials_block(row["dials"])
    parse_capacity_aware(block, where="recommendation")  # what we print must be accepted
    header = [
        f"# arc-capacity-listener tune: {context}",
        f"# cheapest capacity-aware point ({row['point']}) with p95 queue-to-start <= "
        f"{target_p95:g} s on every seed {row['seeds']}:",
        f"#   p95 {row['p95_worst_seconds']} s (worst seed), "
        f"${row['dollars_per_day_mean']:,.2f}/day, "
        f"{row['idle_cpu_hours_per_day_mean']:,.1f} idle reserved CPU-h/day (mean)",
        "# The tuned dials only: set these keys in your listener's capacityAware settings",
        "# (Helm values / ConfigMap) and keep the rest of that block as it is.",
    ]
    sim = {k: v for k, v in row["dials"].items() if k.startswith(SIM_PREFIX)}
    if sim:
        header.append(f"# Simulator-side dials of this point (set up by deployment): {sim}")
    body = yaml.safe_dump({"capacityAware": block}, sort_keys=False, default_flow_style=False)
    patch = karpenter.nodepool_patch(row["dials"])
    if patch is not None:
        body += "\n".join(
            [
                "# Not a listener setting: set this on your Karpenter NodePools (every NodePool",
                "# the runners and their workflow pods use; the sweep set it on all of them):",
                "#   kubectl patch nodepool NAME --type merge -p "
                f"'{json.dumps(patch, separators=(',', ':'))}'",
                "",
            ]
        )
        body += yaml.safe_dump(
            {"karpenterNodePool": patch}, sort_keys=False, default_flow_style=False
        )
    return "\n".join(header) + "\n" + body


def plot(rows: Sequence[dict[str, Any]], out: Path, *, target_p95: float, title: str) -> Path:
    """pareto.png: p95 vs dollars/day and vs idle reserved CPU-h/day, frontier highlighted."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 5), sharey=True)
    panels = (
        ("dollars_per_day_mean", "dollars per day (node cost)"),
        ("idle_cpu_hours_per_day_mean", "idle reserved CPU-hours per day"),
    )
    finite = [p95_of(r) for r in rows if math.isfinite(p95_of(r))]
    ceiling = max([*finite, target_p95]) * 1.3 if finite else target_p95 * 2
    for ax, (cost, label) in zip(axes, panels, strict=True):
        aware = [r for r in rows if r["strategy"] == CAPACITY_AWARE]
        ax.scatter(
            [r[cost] for r in aware],
            [min(p95_of(r), ceiling) for r in aware],
            color="tab:blue",
            label="capacity-aware points",
            zorder=2,
        )
        for r in aware:
            ax.annotate(r["point"], (r[cost], min(p95_of(r), ceiling)), fontsize=7)
        best = frontier(rows, cost)
        ax.plot(
            [r[cost] for r in best],
            [p95_of(r) for r in best],
            color="tab:green",
            linewidth=2,
            marker="o",
            label="frontier",
            zorder=3,
        )
        for name, marker, color in ((BASELINE, "X", "tab:red"), (OVERPROVISION, "s", "tab:orange")):
            # One row per NodePool setting the grid tried; one legend entry per strategy.
            for n, r in enumerate(r for r in rows if r["strategy"] == name):
                ax.scatter(
                    [r[cost]],
                    [min(p95_of(r), ceiling)],
                    marker=marker,
                    s=90,
                    color=color,
                    label=("stock ARC" if name == BASELINE else "static warm pool")
                    if n == 0
                    else None,
                    zorder=4,
                )
        ax.axhline(target_p95, color="grey", linestyle="--", label=f"target p95 {target_p95:g} s")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("p95 queue-to-start, s (worst seed; infinite drawn at the top)")
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    path = out / "pareto.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
