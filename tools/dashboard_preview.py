"""Render config/grafana-dashboard.json's panels from their own queries, as a PNG.

Not a Grafana screenshot (Grafana is not installable here): the panels' PromQL, verbatim
but for the dashboard variables, is evaluated by a real Prometheus (``/usr/bin/prometheus``,
1 s scrape) scraping the real listener process in the live simulated world, and each panel
is drawn with matplotlib where its ``gridPos`` puts it: stat panels as their last value over
a sparkline, time series as lines with the panel's legends. ``$namespace`` and ``$name`` are
resolved as Grafana's "All" would, from the variables' own ``label_values`` queries.

The world (one run, about two minutes): the listener keeps 2 warm pairs; a capacity-loss
window opens at 40 s (every node lost) and closes at 60 s; 6 jobs of 8 s arrive at 45 s,
wait in GitHub's queue through the window and run after it.

Run: ``python -m tools.dashboard_preview [--out docs/dashboard.png]`` (needs the ``dev`` or
``sim`` extra for matplotlib, and Debian's ``prometheus``). It prints one line per panel and
fails, naming the panel, when Prometheus refuses a query. tests/monitoring/test_dashboard_preview.py
checks that every panel and query of the dashboard is drawn.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DASHBOARD = ROOT / "config" / "grafana-dashboard.json"
DEFAULT_OUT = ROOT / "docs" / "dashboard.png"
CAPTION = (
    "Rendered from config/grafana-dashboard.json's own queries by tools/dashboard_preview.py "
    "against a real Prometheus scraping the listener in the simulated world; not a Grafana "
    "screenshot."
)
#: The dashboard's grid is 24 columns wide; one grid unit of height, in inches.
COLUMNS = 24
WIDTH_IN = 16.0
ROW_IN = 0.34
STEP_S = 2.0
#: The world's capacity-loss window, seconds after its start (shaded on every time series).
BAND = (40.0, 60.0)


@dataclass(frozen=True)
class Target:
    expr: str
    legend: str


@dataclass(frozen=True)
class Panel:
    title: str
    kind: str  # "row", "stat" or "timeseries"
    x: int
    y: int
    w: int
    h: int
    unit: str
    targets: tuple[Target, ...]


@dataclass(frozen=True)
class Series:
    label: str
    times: tuple[float, ...]
    values: tuple[float, ...]


#: A range query: PromQL -> ``(labels, [(t, value)])`` per series.
RangeQuery = Callable[[str], list[tuple[dict[str, str], list[tuple[float, float]]]]]


class PreviewError(RuntimeError):
    """A panel's query failed or a tool is missing; the message names which."""


def load_panels(dashboard: Mapping[str, Any]) -> list[Panel]:
    panels = []
    for raw in dashboard["panels"]:
        grid = raw["gridPos"]
        unit = ((raw.get("fieldConfig") or {}).get("defaults") or {}).get("unit") or ""
        targets = tuple(
            Target(t["expr"], t.get("legendFormat", "")) for t in raw.get("targets") or ()
        )
        panels.append(
            Panel(
                raw["title"], raw["type"], grid["x"], grid["y"], grid["w"], grid["h"], unit, targets
            )
        )
    return panels


def variable_queries(dashboard: Mapping[str, Any]) -> dict[str, str]:
    """``name -> label_values(...)`` query of each query variable."""
    found = {}
    for var in dashboard.get("templating", {}).get("list", ()):
        if var.get("type") == "query":
            query = var["query"]
            found[var["name"]] = query["query"] if isinstance(query, dict) else query
    return found


def substitute(expr: str, variables: Mapping[str, str]) -> str:
    """``$name`` / ``${name}`` replaced by its value (longest names first)."""
    for name in sorted(variables, key=len, reverse=True):
        expr = expr.replace("${" + name + "}", variables[name]).replace("$" + name, variables[name])
    return expr


def with_variables(panels: Sequence[Panel], variables: Mapping[str, str]) -> list[Panel]:
    """The panels with the dashboard's variables substituted into every query."""
    return [
        replace(
            p, targets=tuple(Target(substitute(t.expr, variables), t.legend) for t in p.targets)
        )
        for p in panels
    ]


def all_regex(values: Sequence[str]) -> str:
    """Grafana's "All" for a multi-value variable: an alternation of the values, regex
    metacharacters escaped for a PromQL string (``.`` -> ``\\\\.``)."""
    escaped = [re.sub(r"([\\.^$|?*+()\[\]{}])", r"\\\\\1", v) for v in sorted(values)]
    return "(" + "|".join(escaped) + ")" if values else ".*"


def legend(fmt: str, labels: Mapping[str, str]) -> str:
    """Grafana's legendFormat: ``{{label}}`` replaced; empty -> the labels, as Grafana shows."""
    if fmt:
        return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), fmt)
    inner = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "__name__")
    return "{" + inner + "}"


def evaluate(panels: Sequence[Panel], query: RangeQuery) -> dict[str, list[list[Series]]]:
    """Every target of every non-row panel: ``title -> [series per target]``."""
    data: dict[str, list[list[Series]]] = {}
    for panel in panels:
        if panel.kind == "row":
            continue
        per_target = []
        for target in panel.targets:
            try:
                result = query(target.expr)
            except PreviewError as exc:
                raise PreviewError(f"panel {panel.title!r}: {exc}") from exc
            per_target.append(
                [
                    Series(
                        legend(target.legend, labels),
                        tuple(t for t, _ in points),
                        tuple(v for _, v in points),
                    )
                    for labels, points in result
                ]
            )
        data[panel.title] = per_target
    return data


def _format(value: float, unit: str) -> str:
    if math.isnan(value):
        return "NaN"
    text = f"{value:.0f}" if abs(value - round(value)) < 1e-9 else f"{value:.2f}"
    return f"{text} s" if unit == "s" else text


def render(
    panels: Sequence[Panel],
    data: Mapping[str, list[list[Series]]],
    out: Path,
    *,
    subtitle: str = "",
    band: tuple[float, float] | None = None,
) -> list[str]:
    """Draw every panel where its gridPos puts it; returns the titles drawn, in order.
    ``band``: seconds to shade on every time series (the world's capacity-loss window)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = max(p.y + p.h for p in panels)
    # One time axis for every panel, as a Grafana dashboard has.
    ends = [s.times[-1] for ts in data.values() for per in ts for s in per if s.times]
    span = (0.0, max(ends, default=1.0))
    height = rows * ROW_IN + 1.1
    fig = plt.figure(figsize=(WIDTH_IN, height), dpi=60)
    top = 1 - 0.8 / height
    fig.suptitle("ARC capacity-aware listener (config/grafana-dashboard.json)", y=1 - 0.15 / height)
    fig.text(
        0.5,
        1 - 0.5 / height,
        subtitle or CAPTION,
        ha="center",
        va="center",
        fontsize=9,
        style="italic",
    )
    drawn = []
    for panel in panels:
        left = panel.x / COLUMNS
        bottom = top - (panel.y + panel.h) * ROW_IN / height
        if panel.kind == "row":
            fig.text(left + 0.004, bottom + 0.08 / height, panel.title, fontsize=12, weight="bold")
            drawn.append(panel.title)
            continue
        below = (0.5 if panel.kind == "timeseries" else 0.05) / height
        box = (
            left + 0.03,
            bottom + below,
            panel.w / COLUMNS - 0.036,
            panel.h * ROW_IN / height - below - 0.3 / height,
        )
        ax = fig.add_axes(box)
        ax.set_title(panel.title, fontsize=9, loc="left")
        series = [s for per_target in data.get(panel.title, []) for s in per_target]
        if panel.kind == "stat":
            _stat(ax, series, panel.unit)
        else:
            _timeseries(ax, series, panel.unit, band)
            ax.set_xlim(*span)
        drawn.append(panel.title)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=60, metadata={"Software": None})
    plt.close(fig)
    return drawn


def _stat(ax: Any, series: Sequence[Series], unit: str) -> None:
    ax.set_xticks([])
    ax.set_yticks([])
    for side in ax.spines.values():
        side.set_visible(False)
    first = series[0] if series else None
    values = [v for v in (first.values if first else ()) if not math.isnan(v)]
    if not values:
        ax.text(0.5, 0.45, "No data", ha="center", va="center", fontsize=14, color="grey")
        return
    ax.fill_between(first.times, first.values, color="#73bf69", alpha=0.25, step="post")  # type: ignore[union-attr]
    ax.text(
        0.5,
        0.45,
        _format(values[-1], unit),
        ha="center",
        va="center",
        fontsize=24,
        color="#37872d",
        weight="bold",
        transform=ax.transAxes,
    )


def _timeseries(
    ax: Any, series: Sequence[Series], unit: str, band: tuple[float, float] | None
) -> None:
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    if band is not None:
        ax.axvspan(*band, color="grey", alpha=0.15, linewidth=0)
    if not any(s.values for s in series):
        ax.text(
            0.5,
            0.5,
            "No data",
            ha="center",
            va="center",
            fontsize=12,
            color="grey",
            transform=ax.transAxes,
        )
        return
    for s in series:
        ax.step(s.times, s.values, where="post", label=s.label, linewidth=1.2)
    if unit == "s":
        ax.set_ylabel("s", fontsize=7)
    ax.set_xlabel("seconds since the world started", fontsize=7)
    # Grafana lists every series; many of them (errors by kind) go in columns.
    ax.legend(fontsize=6, loc="upper left", framealpha=0.7, ncol=1 + len(series) // 8)


# --- the live run -------------------------------------------------------------------------


def prometheus_range(url: str, start: float, end: float, origin: float) -> RangeQuery:
    def query(expr: str) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
        params = urllib.parse.urlencode(
            {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{STEP_S}"}
        )
        try:
            with urllib.request.urlopen(f"{url}/api/v1/query_range?{params}", timeout=30) as r:
                body = json.loads(r.read())
        except urllib.error.HTTPError as exc:
            raise PreviewError(f"Prometheus refused {expr!r}: {exc.read()[:300]!r}") from exc
        return [
            (
                dict(item["metric"]),
                [(float(t) - origin, float(v)) for t, v in item["values"]],
            )
            for item in body["data"]["result"]
        ]

    return query


def label_values(url: str, query: str) -> list[str]:
    """``label_values(selector, label)`` through Prometheus's label API."""
    match = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", query.strip())
    if match is None:
        raise PreviewError(f"variable query {query!r}: only label_values(selector, label)")
    selector, label = match.groups()
    params = urllib.parse.urlencode({"match[]": selector})
    with urllib.request.urlopen(f"{url}/api/v1/label/{label}/values?{params}", timeout=10) as r:
        return list(json.loads(r.read())["data"])


def live_run(workdir: Path, out: Path, keep_data: Path | None = None) -> list[str]:
    """World + listener + Prometheus, the scenario of the module docstring; renders ``out``."""
    from simulator.faces.live_spec import LiveSpec
    from simulator.faces.live_world import LiveWorld
    from tests.e2e.conftest import ListenerProcess
    from tests.e2e.test_alert_rules_prometheus import PrometheusServer, wait_for

    if shutil.which("prometheus") is None:
        raise PreviewError("prometheus not found: install Debian's `prometheus` package")
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    panels = load_panels(dashboard)
    spec = LiveSpec(
        scale_set="arc-runners",
        labels=("arc-runners",),
        ice_start=BAND[0],
        ice_end=BAND[1],
        burst_at=45.0,
        burst_count=6,
        job_duration=8.0,
        burst_over=3.0,
    )
    with LiveWorld(spec) as world:
        (workdir / "listener").mkdir()
        listener = ListenerProcess(
            world, workdir / "listener", world.capacity_aware(proactiveCapacity=2)
        ).start()
        (workdir / "prometheus").mkdir()
        # What the PodMonitor gives every listener series: the scale set's name and namespace.
        jobs = [
            {
                "job_name": "arc-listeners",
                "honor_labels": True,
                "static_configs": [
                    {
                        "targets": [f"127.0.0.1:{listener.port}"],
                        "labels": {"namespace": spec.namespace, "name": spec.scale_set},
                    }
                ],
            }
        ]
        server = PrometheusServer(workdir / "prometheus", "", None, scrape_configs=jobs)
        try:
            if not wait_for(server.ready, 30):
                raise PreviewError("Prometheus never got ready")
            if not world.wait_until(lambda w: w.all_jobs_finished(), 240):
                raise PreviewError(f"the jobs did not finish: {world.status_line()}")
            time.sleep(15)  # the recovered state, on the graphs
            end = time.time()
            variables: dict[str, str] = {}
            for name, q in variable_queries(dashboard).items():  # in order: later ones use earlier
                variables[name] = all_regex(label_values(server.url, substitute(q, variables)))
            resolved = with_variables(panels, variables)
            query = prometheus_range(server.url, world.started_wall, end, world.started_wall)
            data = evaluate(resolved, query)
        finally:
            server.stop()
            listener.terminate(30)
            listener.kill()
    for panel in panels:
        if panel.kind != "row":
            counts = [len(t) for t in data[panel.title]]
            print(f"{panel.title}: series per query {counts}")
    subtitle = (
        f"{CAPTION}\nOne run: 2 warm pairs; grey band = capacity-loss window "
        f"({spec.ice_start:.0f}-{spec.ice_end:.0f} s, every node lost); {spec.burst_count} jobs of "
        f"{spec.job_duration:.0f} s arrive at {spec.burst_at:.0f} s and run after it."
    )
    if keep_data is not None:
        save_data(data, keep_data, subtitle)
    return render(panels, data, out, subtitle=subtitle, band=BAND)


def save_data(data: Mapping[str, list[list[Series]]], path: Path, subtitle: str) -> None:
    raw = {
        title: [[[s.label, list(s.times), list(s.values)] for s in per] for per in targets]
        for title, targets in data.items()
    }
    path.write_text(json.dumps({"subtitle": subtitle, "panels": raw}))


def load_data(path: Path) -> tuple[dict[str, list[list[Series]]], str]:
    raw = json.loads(path.read_text())
    data = {
        title: [[Series(label, tuple(t), tuple(v)) for label, t, v in per] for per in targets]
        for title, targets in raw["panels"].items()
    }
    return data, str(raw["subtitle"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.dashboard_preview",
        description="Render the Grafana dashboard's panels from their own queries against a "
        "real Prometheus scraping the listener in the simulated world (not a Grafana "
        "screenshot).",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--keep-data", type=Path, default=None, help="also write what Prometheus answered (JSON)"
    )
    parser.add_argument(
        "--from-data",
        type=Path,
        default=None,
        help="render a --keep-data file again instead of a new run (layout changes only)",
    )
    args = parser.parse_args(argv)
    try:
        if args.from_data is not None:
            data, subtitle = load_data(args.from_data)
            panels = load_panels(json.loads(DASHBOARD.read_text(encoding="utf-8")))
            drawn = render(panels, data, args.out, subtitle=subtitle, band=BAND)
        else:
            with tempfile.TemporaryDirectory(prefix="dashboard-preview-") as tmp:
                drawn = live_run(Path(tmp), args.out, args.keep_data)
    except PreviewError as exc:
        print(f"dashboard_preview: {exc}", file=sys.stderr)
        return 1
    print(f"{len(drawn)} panels drawn: {args.out} ({args.out.stat().st_size // 1024} kB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
