"""The simulator held against the real control plane (issue 47, part 4): the same small
scenarios, side by side.

For each scenario of ``bench/real_vs_sim/`` (a simulator scenario mirroring the e2e world of
the same name, e2e/scenarios.py), this runs the simulated world under the capacity-aware
strategy and queues its jobs when the e2e play does (``MIRRORS``: once N pairs are
confirmed, judged as e2e/observe.py judges them: both placeholders bound to a Ready node), then
reads the e2e run's ``worlds/<scenario>/timeline.json`` and prints one table per scenario:

- ``ready``: seconds from the listener's start to 2 confirmed pairs (1 for nodepool-limit);
  the real listener's start is its process start (note ``listener started``), and its first
  long poll is printed beside it;
- ``victims``: preempted pods, runner / workflow placeholders (e2e: the ``Preempted`` events);
- ``nodeclaims``: NodeClaims created (count) and the first and last relative to the jobs'
  queueing (e2e: first seen by the checker's 1 s sampler, so up to 1 s late);
- ``header``: ``X-ScaleSetMaxCapacity``, its maximum, and its value at a few marks after the
  jobs were queued (the last long poll's value at or before the mark);
- ``jobs``: queue -> runner takes the job (p50, max), and the makespan (queueing to the last
  job completed).

Simulated figures are the median over ``--seeds`` seeds, with [min, max] beside them.

Run: ``.venv/bin/python bench/real_vs_sim.py --real out/e2e-side [more e2e --out dirs]
[--seeds 5] [--scenarios burst]`` (one column per real run; ``--markdown`` prints markdown
tables, as docs/real-vs-simulated.md holds them).
The e2e run: ``.venv/bin/python -m e2e ladder burst nodepool-limit --keep --out out/e2e-side``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from e2e.observe import confirmed_pairs, ready_nodes
from simulator.engine.world import World
from simulator.scenarios.scenario import load_scenario
from simulator.scenarios.strategies import CAPACITY_AWARE

HERE = Path(__file__).resolve().parent / "real_vs_sim"
#: Seconds after the jobs were queued at which the header is printed.
MARKS = (0.0, 5.0, 10.0, 20.0, 40.0)
#: Simulated time step of the mirror's condition checks (the e2e play checks every 0.5 s).
STEP = 0.1
#: Seconds a simulated run goes on after its last job completed (the e2e play stops then).
TAIL = 1.0


@dataclass(frozen=True)
class Mirror:
    """When the e2e play queues its jobs: once ``pairs`` pairs are confirmed."""

    pairs: int
    ready_pairs: int = 2


MIRRORS = {
    "ladder": Mirror(pairs=2),
    "burst": Mirror(pairs=2),
    "nodepool-limit": Mirror(pairs=1, ready_pairs=1),
}


@dataclass
class Run:
    """One world's figures, times in seconds since the world started."""

    listener_start: float
    first_poll: float | None
    ready_at: float | None
    queued_at: float | None
    victims: dict[str, int] = field(default_factory=dict)
    nodeclaims: list[float] = field(default_factory=list)
    polls: list[tuple[float, int]] = field(default_factory=list)
    #: (queued, runner took it, completed) per job.
    jobs: list[tuple[float, float | None, float | None]] = field(default_factory=list)
    #: When the world stopped watching (the listener stopped): later header marks are "-".
    end: float = float("inf")
    #: (t, confirmed pairs) as the real checker tracked them.
    bounds: list[tuple[float, int]] = field(default_factory=list)


# --- the simulated world -------------------------------------------------------------------


def simulate(name: str, seed: int, lag: float = 1.0) -> Run:
    """The mirror of the e2e world ``name``: its jobs are queued ``lag`` seconds after the
    play's pair count is confirmed (the e2e play sees confirmations through the checker's 1 s
    sampler, so its jobs come a moment late; the real run's own lag is passed in when known);
    the run ends ``TAIL`` seconds after the last job completed, as the e2e play stops the
    listener then."""
    scenario = load_scenario(HERE / f"{name}.yaml")
    mirror = MIRRORS[name]
    world = World(scenario, CAPACITY_AWARE, seed=seed, scheduled_arrivals=False)
    handle = next(iter(world.clusters.values()))
    namespace = next(iter(world.scale_sets.values())).spec.namespace
    loop, start = world.loop, world.loop.start
    ready_at = confirmed_at = queued_at = done_at = None

    def confirmed() -> int:
        pods = handle.store.list("Pod", namespace)
        return confirmed_pairs(pods, ready_nodes(handle.store.list("Node")))

    while loop.elapsed < scenario.duration:
        loop.run_for(STEP)
        now = loop.elapsed
        if ready_at is None or confirmed_at is None:
            count = confirmed()
            if ready_at is None and count >= mirror.ready_pairs:
                ready_at = now
            if confirmed_at is None and count >= mirror.pairs:
                confirmed_at = now
        if queued_at is None and confirmed_at is not None and now >= confirmed_at + lag:
            queued_at = now
            for spec in world.jobs:
                world.submit(spec)
        finished = all(j.finished_at is not None for j in world.service.jobs)
        if done_at is None and queued_at is not None and finished:
            done_at = now
        if done_at is not None and now >= done_at + TAIL:
            break
    return _from_events(world, start, ready_at, queued_at, end=loop.elapsed)


def _from_events(
    world: World, start: float, ready: float | None, queued: float | None, *, end: float
) -> Run:
    roles: dict[str, str] = {}
    victims: dict[str, int] = {}
    nodeclaims: list[float] = []
    polls: list[tuple[float, int]] = []
    for line in world.log.lines():
        event = json.loads(line)
        kind = event["type"]
        if kind == "pod_created":
            roles[event["pod"]] = event["role"]
        elif kind == "pod_disrupted" and event.get("reason") == "preempted":
            role = roles.get(event["pod"], "other")
            victims[role] = victims.get(role, 0) + 1
        elif kind == "nodeclaim_created":
            nodeclaims.append(event["t"])
        elif kind == "capacity_advertised":
            polls.append((event["t"], int(event["value"])))
    jobs = [
        (
            j.queued_at - start,
            None if j.started_at is None else j.started_at - start,
            None if j.finished_at is None else j.finished_at - start,
        )
        for j in world.service.jobs
    ]
    return Run(
        listener_start=0.0,
        first_poll=polls[0][0] if polls else None,
        ready_at=ready,
        queued_at=queued,
        victims=victims,
        nodeclaims=nodeclaims,
        polls=polls,
        jobs=jobs,
        end=end,
    )


# --- the real control plane ----------------------------------------------------------------


def _role_of(pod: str) -> str:
    """A pod's role from its name: placeholders are ``<ers>-ph-<instance>-<n>-r`` / ``-w``
    (providers/kubernetes/pods/placeholders.py), workflow pods ``<runner>-workflow``."""
    if "-ph-" in pod:
        return "placeholder-workflow" if pod.endswith("-w") else "placeholder-runner"
    return "workflow" if pod.endswith("-workflow") else "runner"


def real(timeline_path: Path, mirror: Mirror) -> Run:
    data = json.loads(timeline_path.read_text())
    notes = data["timeline"]
    listener = next(t for t, what in notes if what.startswith("listener started"))
    queued = next((t for t, what in notes if what.endswith("job(s) queued")), None)
    bounds = [(t, c) for t, c, _busy in data["bounds"]]
    ready = next((t for t, c in bounds if c >= mirror.ready_pairs), None)
    victims: dict[str, int] = {}
    for event in data.get("preempted") or ():
        role = _role_of(event["object"])
        victims[role] = victims.get(role, 0) + 1
    jobs = [(j["queued"], j["started"], j["finished"]) for j in data.get("jobs", [])]
    polls = [(t, int(c)) for t, c in data["polls"]]
    stopped = [t for t, what in notes if what.startswith("listener stopped")]
    return Run(
        listener_start=listener,
        first_poll=polls[0][0] if polls else None,
        ready_at=ready,
        queued_at=queued,
        victims=victims,
        nodeclaims=sorted((data.get("nodeclaims") or {}).values()),
        polls=polls,
        jobs=jobs,
        end=stopped[0] if stopped else float("inf"),
        bounds=bounds,
    )


# --- figures -------------------------------------------------------------------------------


def header_at(polls: Sequence[tuple[float, int]], at: float) -> int | None:
    """The header of the last poll at or before ``at`` (None before the first)."""
    value = None
    for t, capacity in polls:
        if t > at:
            break
        value = capacity
    return value


def figures(run: Run) -> dict[str, Any]:
    q = run.queued_at
    out: dict[str, Any] = {
        "ready s": _sub(run.ready_at, run.listener_start),
        "first poll s": _sub(run.first_poll, run.listener_start),
        "ready after first poll s": _sub(run.ready_at, run.first_poll),
        "victims runner-ph": run.victims.get("placeholder-runner", 0),
        "victims workflow-ph": run.victims.get("placeholder-workflow", 0),
        "victims other": sum(
            n
            for r, n in run.victims.items()
            if r not in ("placeholder-runner", "placeholder-workflow")
        ),
        "nodeclaims": len(run.nodeclaims),
        "nodeclaims before jobs": sum(1 for t in run.nodeclaims if q is not None and t < q),
        "first nodeclaim after jobs s": _first_after(run.nodeclaims, q),
        "last nodeclaim after jobs s": _sub(
            max((t for t in run.nodeclaims if q is not None and t >= q), default=None), q
        ),
        "header max": max((c for _t, c in run.polls), default=None),
    }
    for mark in MARKS:
        at = None if q is None else q + mark
        out[f"header @+{mark:.0f}s"] = (
            header_at(run.polls, at) if at is not None and at <= run.end else "-"
        )
    waits = [s - qd for qd, s, _f in run.jobs if s is not None]
    out["wait p50 s"] = round(statistics.median(waits), 1) if waits else None
    out["wait max s"] = round(max(waits), 1) if waits else None
    done = [f for _q, _s, f in run.jobs if f is not None]
    out["jobs done"] = f"{len(done)}/{len(run.jobs)}"
    out["makespan s"] = _sub(max(done), q) if done and len(done) == len(run.jobs) else None
    return out


def _queue_lag(run: Run, mirror: Mirror) -> float:
    """Seconds between the real run's confirmation of the play's pairs and its jobs."""
    confirmed = next((t for t, c in run.bounds if c >= mirror.pairs), None)
    if confirmed is None or run.queued_at is None:
        return 1.0
    return round(max(0.0, run.queued_at - confirmed), 1)


def _sub(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a - b, 1)


def _first_after(times: Sequence[float], mark: float | None) -> float | None:
    after = [t for t in times if mark is not None and t >= mark]
    return round(min(after) - mark, 1) if after and mark is not None else None


def summarize(values: list[Any]) -> str:
    """Median with [min, max] for numbers; the common value (or the set) otherwise."""
    numbers = [v for v in values if isinstance(v, int | float)]
    if len(numbers) == len(values) and numbers:
        mid = statistics.median(numbers)
        lo, hi = min(numbers), max(numbers)
        shown = _num(mid)
        return shown if lo == hi else f"{shown} [{_num(lo)}, {_num(hi)}]"
    if all(v is None for v in values):
        return "-"
    distinct = sorted({str(v) for v in values})
    return distinct[0] if len(distinct) == 1 else "/".join(distinct)


def _num(value: float) -> str:
    return f"{value:g}" if isinstance(value, int) or value == int(value) else f"{value:.1f}"


def table(
    name: str, reals: list[dict[str, Any] | None], sim: list[dict[str, Any]], markdown: bool
) -> list[str]:
    """One row per figure: each real run's value, then the simulated summary."""

    def shown(value: Any) -> str:
        if value is None:
            return "-"
        return _num(value) if isinstance(value, float) else str(value)

    lines = []
    heads = (
        ["real control plane"]
        if len(reals) == 1
        else [f"real run {i + 1}" for i in range(len(reals))]
    )
    if markdown:
        lines += [
            f"### {name}",
            "",
            "| figure | " + " | ".join(heads) + " | simulator |",
            "|---|" + "---|" * (len(heads) + 1),
        ]
    else:
        lines.append(f"== {name}")
    for key in sim[0]:
        cells = [shown(r.get(key)) if r else "-" for r in reals]
        summary = summarize([f[key] for f in sim])
        if markdown:
            lines.append(f"| {key} | " + " | ".join(cells) + f" | {summary} |")
        else:
            lines.append(f"  {key:<30} " + " ".join(f"{c:>10}" for c in cells) + f"   {summary}")
    return lines


def versions(report_path: Path) -> list[str]:
    if not report_path.is_file():
        return ["(no report.json: versions unknown)"]
    report = json.loads(report_path.read_text())
    return [f"{row['component']}: {row['built_from']}" for row in report.get("components") or ()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--real", type=Path, nargs="+", default=[Path("out/e2e-side")],
        help="one or more e2e --out directories (one column each)",
    )  # fmt: skip
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--scenarios", default=",".join(MIRRORS))
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    names = [n for n in args.scenarios.split(",") if n]
    item = "- " if args.markdown else "  "
    command = (
        ".venv/bin/python bench/real_vs_sim.py "
        f"--real {' '.join(str(r) for r in args.real)} --seeds {args.seeds} "
        f"--scenarios {','.join(names)}" + (" --markdown" if args.markdown else "")
    )
    print(f"Command: `{command}`" if args.markdown else f"Command: {command}")
    print()
    listed: list[str] = []
    for i, directory in enumerate(args.real):
        lines = versions(directory / "report.json")
        if lines == listed:
            print(f"Real control plane, run {i + 1} ({directory}): the same components.")
            print()
            continue
        listed = lines
        print(f"Real control plane, run {i + 1} ({directory}/report.json components):")
        print()
        for line in lines:
            print(f"{item}{line}")
        print()
    print(
        f"Simulator: bench/real_vs_sim/<scenario>.yaml, seeds 1..{args.seeds}: median [min, max]."
    )
    print()
    for name in names:
        runs = []
        for directory in args.real:
            timeline = directory / "worlds" / name / "timeline.json"
            runs.append(real(timeline, MIRRORS[name]) if timeline.is_file() else None)
        first = next((r for r in runs if r is not None), None)
        lag = _queue_lag(first, MIRRORS[name]) if first else 1.0
        sim = [figures(simulate(name, seed, lag)) for seed in range(1, args.seeds + 1)]
        reals = [figures(r) if r else None for r in runs]
        for line in table(name, reals, sim, args.markdown):
            print(line)
        print()
        print(f"Simulated jobs queued {lag:.1f} s after the pairs were confirmed, as in run 1.")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
