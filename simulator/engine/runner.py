"""Run every strategy of a scenario on the same world and seed; write and print the results.

Outputs in ``out_dir``:

- ``results.json``: ``scenario``, ``seed``, ``duration_seconds`` and ``strategies`` keyed
  ``baseline``, ``overprovision``, ``capacity-aware`` (docs/design.md#simulator output contract; the
  definitions are in :mod:`simulator.workload.metrics`). No wall-clock figure is
  written, so the same seed gives a byte-identical file.
- ``events.jsonl``: the event log of every strategy, in that order (one JSON object a line).
- ``timeseries.json``: queue depth, advertised vs confirmed capacity, nodes (for the plots).
- ``queue_depth.png``, ``capacity.png``, ``nodes.png`` (see :mod:`simulator.measurement.plots`).
- ``REPORT.md``: the comparison table and the plots.

Before anything runs, the capacity-aware world gets the listener's start-up checks
(:mod:`simulator.engine.startup`): a scale set the listener would refuse stops the
scenario with the listener's message (:class:`StartupRefused`, exit code 2 on the command
line); warnings go to stderr.

A short comparison table (:data:`TERMINAL_COLUMNS`, fits :data:`TERMINAL_WIDTH` columns) goes
to stdout, every column to REPORT.md; a progress bar (only when stderr is a terminal) and the
wall time of each run go to stderr.
"""

from __future__ import annotations

import json
import sys
import textwrap
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from simulator.engine.startup import refuse_on_errors
from simulator.engine.world import World
from simulator.scenarios.scenario import Scenario, load_scenario
from simulator.scenarios.strategies import CAPACITY_AWARE, STRATEGIES

#: What ``make demo`` runs, headline first (issue 3's required scenarios).
DEMO_SCENARIOS = ("ice-failover", "burst", "shared-nodepool", "drain", "scale-to-zero")

#: Rendered for a figure that is infinite: a job that never started sits at that percentile.
NEVER = "never"


def _fair(value: Any) -> Any:
    """Fair figures use None for "infinitely late" (see workload/figures.py)."""
    return NEVER if value is None else value


def _fair_pct(p: str) -> Callable[[dict[str, Any]], Any]:
    def get(r: dict[str, Any]) -> Any:
        if not r["jobs_total"]:
            return None
        return _fair(r.get("queue_to_start_fair_seconds", {}).get(p))

    return get


def _two_places(value: float | None) -> str | None:
    return None if value is None else f"{value:,.2f}"


def _episodes_p99(r: dict[str, Any]) -> str | None:
    return _two_places((r.get("over_advertised_episodes") or {}).get("p99"))


#: (column header, how to read it from one strategy's results). Queue-to-start columns are the
#: fair ones (a failed or never-started job is infinitely late); the started-only percentiles
#: stay in results.json as ``queue_to_start_seconds``.
COLUMNS: tuple[tuple[str, Callable[[dict[str, Any]], Any]], ...] = (
    ("jobs", lambda r: r["jobs_total"]),
    ("completed", lambda r: r["jobs_completed"]),
    ("failed", lambda r: r["jobs_failed"]),
    ("stuck", lambda r: r["jobs_stuck"]),
    ("never started", lambda r: r.get("jobs_never_started")),
    ("p50 s", _fair_pct("p50")),
    ("p95 s", _fair_pct("p95")),
    ("p99 s", _fair_pct("p99")),
    ("50% running s", lambda r: _fair(r.get("time_to_50pct_running"))),
    ("95% running s", lambda r: _fair(r.get("time_to_95pct_running"))),
    ("over-adv slot-s", lambda r: r["over_advertised_slot_seconds"]),
    ("unconfirmed slot-s", lambda r: r["unconfirmed_advertised_slot_seconds"]),
    ("over-adv p99 s", _episodes_p99),
    ("idle CPU-h", lambda r: r["idle_reserved_cpu_hours"]),
    ("idle GPU-h", lambda r: r["idle_reserved_gpu_hours"]),
    ("nodes", lambda r: r["nodes_launched"]),
    ("node-h", lambda r: r.get("billed_node_hours")),
    ("$", lambda r: _two_places(r.get("billed_cost_usd"))),
    ("placeholders", lambda r: r["placeholder_pods_created"]),
    ("API writes", lambda r: r["api_writes"]),
)

#: The columns printed on the terminal (``simulate``, ``demo``): a table that fits
#: :data:`TERMINAL_WIDTH` columns. Every column stays in REPORT.md and results.json.
TERMINAL_COLUMNS = ("jobs", "failed", "stuck", "p50 s", "p95 s", "p99 s", "nodes", "node-h", "$")
#: Widest line the terminal output is meant to print.
TERMINAL_WIDTH = 100

#: What the table's columns mean, printed under it in REPORT.md.
LEGEND = (
    "p50/p95/p99 s: queue to workflow pod Running over all jobs, a failed or never-started "
    "job counting as infinitely late (`never`). 50%/95% running s: seconds from the start "
    "until that share of all jobs had reached Running. over-adv p99 s: p99 duration of the "
    "stretches where advertised capacity exceeded what pods confirm. node-h, $: machines from "
    "the launch request, us-east-1 on-demand list prices (`simulator/measurement/prices.py`)."
)


class ProgressBar:
    """A one-line bar on a terminal; silent when the stream is not a TTY."""

    def __init__(self, label: str, stream: IO[str] | None = None, width: int = 30) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.width = width
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self._shown = -1

    def __call__(self, fraction: float) -> None:
        if not self.enabled:
            return
        percent = int(fraction * 100)
        if percent == self._shown:
            return
        self._shown = percent
        filled = int(self.width * fraction)
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r{self.label:<36} [{bar}] {percent:3d}%")
        if fraction >= 1.0:
            self.stream.write("\n")
        self.stream.flush()


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def table_rows(results: dict[str, Any], names: Sequence[str] | None = None) -> list[list[str]]:
    """Header and one row per strategy; ``names`` picks columns of :data:`COLUMNS` (all)."""
    columns = COLUMNS if names is None else tuple(c for c in COLUMNS if c[0] in names)
    rows = [["strategy", *(name for name, _ in columns)]]
    for strategy, res in results["strategies"].items():
        rows.append([strategy, *(_cell(get(res)) for _, get in columns)])
    return rows


def format_table(results: dict[str, Any], names: Sequence[str] | None = None) -> str:
    """The table as aligned text; ``names`` as in :func:`table_rows`."""
    rows = table_rows(results, names)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def terminal_table(results: dict[str, Any]) -> str:
    """The few columns the terminal shows (:data:`TERMINAL_COLUMNS`)."""
    return format_table(results, TERMINAL_COLUMNS)


def wrapped(text: str, *, indent: str = "    ") -> str:
    """``text`` wrapped to :data:`TERMINAL_WIDTH` columns, continuation lines indented."""
    return textwrap.fill(
        text,
        width=TERMINAL_WIDTH,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def markdown_table(results: dict[str, Any]) -> str:
    rows = table_rows(results)
    out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    out += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(out)


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2) + "\n"


def run_scenario(
    scenario: Scenario,
    *,
    seed: int | None = None,
    out_dir: Path | None = None,
    strategies: Sequence[str] = STRATEGIES,
    plots: bool = True,
    progress: bool = True,
    stream: IO[str] | None = None,
) -> dict[str, Any]:
    """Run ``strategies`` on ``scenario``; write the outputs when ``out_dir`` is given."""
    err = stream or sys.stderr
    seed = scenario.seed if seed is None else seed
    results: dict[str, Any] = {
        "scenario": scenario.name,
        "seed": seed,
        "duration_seconds": scenario.duration,
        "strategies": {},
    }
    series: dict[str, Any] = {}
    logs: list[Iterable[str]] = []
    # The capacity-aware world is built first: its start-up checks may refuse the scenario
    # (as the listener would refuse to start) before any strategy has run.
    prebuilt: dict[str, World] = {}
    if CAPACITY_AWARE in strategies:
        prebuilt[CAPACITY_AWARE] = World(scenario, CAPACITY_AWARE, seed=seed)
        for warning in refuse_on_errors(prebuilt[CAPACITY_AWARE]):
            # One finding a paragraph, wrapped: a finding's message runs to 600 characters.
            err.write(wrapped(f"{scenario.name} / {CAPACITY_AWARE}: {warning}") + "\n")
    for strategy in strategies:
        world = prebuilt.pop(strategy, None) or World(scenario, strategy, seed=seed)
        bar = ProgressBar(f"{scenario.name} / {strategy}", err) if progress else None
        started = time.perf_counter()  # wall time for the user only; never in results.json
        results["strategies"][strategy] = world.run(bar)
        elapsed = time.perf_counter() - started
        err.write(
            f"{scenario.name} / {strategy}: {len(world.service.jobs)} jobs, "
            f"{len(world.log)} events, {elapsed:.1f} s wall\n"
        )
        series[strategy] = world.accounting.series.to_json()
        logs.append(world.log.lines())
    if out_dir is not None:
        write_outputs(out_dir, results, series, logs, plots=plots)
    return results


def write_outputs(
    out_dir: Path,
    results: dict[str, Any],
    series: dict[str, Any],
    logs: Iterable[Iterable[str]],
    *,
    plots: bool,
) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(dumps(results), encoding="utf-8")
    (out_dir / "timeseries.json").write_text(dumps(series), encoding="utf-8")
    with (out_dir / "events.jsonl").open("w", encoding="utf-8") as handle:
        for lines in logs:
            for line in lines:
                handle.write(line)
                handle.write("\n")
    images: list[str] = []
    if plots:
        from simulator.measurement.plots import write_plots

        images = [p.name for p in write_plots(out_dir, results, series)]
    (out_dir / "REPORT.md").write_text(report_section(results, images), encoding="utf-8")


#: What a figure does not say by itself, printed under it in REPORT.md.
CAPTIONS = {
    "queue_depth.png": (
        "*Jobs waiting in GitHub's queue, not yet assigned to any scale set.* Stock ARC "
        "(baseline) advertises capacity it does not have, so GitHub assigns its jobs at once: "
        "they wait assigned to a runner stuck Pending for a node, not queued, and do not show "
        "here. A low baseline line means stuck, not fast: compare the start times in the table. "
        "The capacity-aware listener advertises only room it holds, so its waiting jobs stay "
        "in this queue, where another scale set can still take them."
    ),
}


def report_section(
    results: dict[str, Any], images: Sequence[str], *, prefix: str = "", description: str = ""
) -> str:
    hours = results["duration_seconds"] / 3600.0
    lines = [f"## {results['scenario']} (seed {results['seed']}, {hours:g} h simulated)", ""]
    if description:
        lines += [description.strip(), ""]
    lines += [markdown_table(results), "", LEGEND, ""]
    for image in images:
        lines += [f"![{Path(image).stem}]({prefix}{image})", ""]
        if Path(image).name in CAPTIONS:
            lines += [CAPTIONS[Path(image).name], ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def simulate(
    scenario: str | Path,
    *,
    seed: int | None = None,
    out_dir: str | Path | None = None,
    plots: bool = True,
    progress: bool = True,
    stdout: IO[str] | None = None,
) -> dict[str, Any]:
    """``simulate SCENARIO [--seed N] [--out DIR]``: run, write, print the table."""
    loaded = load_scenario(scenario)
    out = Path(out_dir) if out_dir is not None else Path("out") / loaded.name
    results = run_scenario(loaded, seed=seed, out_dir=out, plots=plots, progress=progress)
    sink = stdout or sys.stdout
    title = f"{loaded.name}: {' '.join(loaded.description.split())}"
    sink.write(f"\n{wrapped(title, indent='') if loaded.description else loaded.name}\n\n")
    sink.write(terminal_table(results) + "\n")
    sink.write(
        f"\nevery column: {out / 'REPORT.md'}\nresults: {out / 'results.json'}\n"
        f"events: {out / 'events.jsonl'}\n"
    )
    return results


def demo(
    out_dir: str | Path = Path("out") / "demo",
    *,
    scenarios: Sequence[str | Path] | None = None,
    plots: bool = True,
    progress: bool = True,
    stdout: IO[str] | None = None,
) -> Path:
    """Run the demo scenarios into ``out_dir`` and write one REPORT.md; returns its path."""
    sink = stdout or sys.stdout
    root = Path(out_dir)
    root.mkdir(parents=True, exist_ok=True)
    sections = [
        "# Simulated comparison: stock ARC vs a warm pool vs the capacity-aware listener",
        "",
        "Same jobs, same clusters, same seed for every strategy. Definitions of every column: "
        "`simulator/workload/metrics.py`. Regenerate with `make demo`.",
        "",
    ]
    for path in scenarios if scenarios is not None else DEMO_SCENARIOS:
        loaded = load_scenario(path)
        out = root / loaded.name
        results = run_scenario(loaded, out_dir=out, plots=plots, progress=progress)
        sink.write(f"\n{loaded.name}\n{terminal_table(results)}\n")
        images = sorted(p.name for p in out.glob("*.png"))
        sections.append(
            report_section(
                results, images, prefix=f"{loaded.name}/", description=loaded.description
            )
        )
    report = root / "REPORT.md"
    report.write_text("\n".join(sections), encoding="utf-8")
    sink.write(f"\nEvery column, the legend and the plots: {report}\n")
    return report
