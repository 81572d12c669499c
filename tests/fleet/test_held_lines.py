"""bench/fleet_duplication.py: the per-nodepool "what launched nodes held" lines, means per
seed over the fleet, and nothing for runs saved before the figures existed."""

from __future__ import annotations

from typing import Any

from bench.fleet_duplication import held_lines


def row(cluster: str | None, pool: str, hours: float) -> dict[str, Any]:
    """A stored PoolNodeHours: every state ``hours`` node-hours at $2 per node-hour."""
    out: dict[str, Any] = {"cluster": cluster, "nodepool": pool}
    for state in ("real", "placeholder", "empty", "booting"):
        out[f"{state}_node_hours"] = hours
        out[f"{state}_usd"] = 2 * hours
    return out


def test_runs_saved_without_the_figures_print_nothing() -> None:
    assert held_lines([{"seed": 1}, {"seed": 2}]) == []


def test_clusters_sum_and_seeds_average_per_nodepool() -> None:
    runs = [
        {"seed": 1, "node_hours": [row("a", "gpu", 1.0), row(None, "gpu", 2.0)]},
        {"seed": 2, "node_hours": [row("b", "gpu", 3.0), row("a", "cpu", 0.6)]},
        {"seed": 3},
    ]
    head, cpu, gpu = held_lines(runs)
    assert "2 of 3 seeds" in head
    assert cpu.split() == [
        *("cpu:", "real", "0.3", "|", "$0.60"),
        *("placeholder", "0.3", "|", "$0.60", "empty", "0.3", "|", "$0.60"),
        *("booting", "0.3", "|", "$0.60"),
    ]
    assert gpu.split()[:5] == ["gpu:", "real", "3.0", "|", "$6.00"]
