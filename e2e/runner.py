"""``python -m e2e``: build (or reuse) the pinned upstream binaries, run every scenario on the
real control plane, write ``out/e2e/report.json`` and ``out/e2e/report.md``.

Steps of :func:`run`:
1. refuse a second run while one holds the machine-wide lock (one line, exit 2);
2. build or reuse the binaries (e2e/build.py); a build failure names the component and its log;
3. per scenario: a fresh world (its own etcd, API server, ...), the listener(s), the play, then
   SIGTERM to every listener, the leftovers counted, every process stopped and its ports
   checked free;
4. the report; exit 1 when any invariant failed, 2 when a component failed to build or start.

Ctrl-C and SIGTERM stop the current world's processes before the exit.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from e2e import observe
from e2e.build import BuildError, build, cache_root
from e2e.components import WORLD
from e2e.processes import AlreadyRunning, ComponentError, Supervisor, exclusive
from e2e.report import write_report
from e2e.scenarios import SCENARIOS, Scenario
from e2e.versions import component_versions
from e2e.world import World


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived; everything started is being stopped."""


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    raise Interrupted(signal.Signals(signum).name)


def run_scenario(scenario: Scenario, out: Path, *, keep: bool = False) -> dict[str, Any]:
    workdir = (out / "worlds" / scenario.name).resolve()
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    started = time.monotonic()
    result: dict[str, Any] = {"scenario": scenario.name, "what": " ".join(scenario.what.split())}
    result["capacity_aware_overrides"] = dict(scenario.spec.scale_set.capacity_aware or {})
    supervisor = Supervisor(workdir / "logs")
    world = World(scenario.spec, workdir, supervisor)
    try:
        world.start()
        result["install"] = world.install
        result["versions_api"] = world.plane.version()
        world.wait(lambda: bool(world.listeners), 60, "the listener started")
        result["figures"] = scenario.play(world)
        world.stop_mirror()
        for listener in list(world.listeners):
            if listener.alive():
                result.setdefault("listener_exit", {})[listener.name] = world.stop_listener(
                    listener
                )
        # A stopped listener deletes what it created; give the API a moment to finish the
        # deletes (the pods' grace is 0, kwok's pod-delete stage removes them).
        world.wait(lambda: not world.placeholders(), 15, "no placeholders left")
        result["checks"] = world.figures()
        result["violations"] = observe.violations(result["checks"])
        result["logs"] = {p.name: str(p.log) for p in supervisor._processes}
        result["process_logs"] = {name: str(workdir / "logs" / f"{name}.log") for name in (
            "arc-controller", "karpenter")}  # fmt: skip
        world.dump(workdir / "timeline.json")
    except (ComponentError, RuntimeError) as err:
        result["error"] = str(err)
        result["violations"] = [f"error: {err}"]
        (workdir / "error.txt").write_text(traceback.format_exc())
    finally:
        world.close()
        busy = supervisor.stop_all()
        result["ports_still_bound"] = busy
        result["wall_s"] = round(time.monotonic() - started, 1)
        if not keep and not result.get("violations"):
            shutil.rmtree(workdir / "etcd", ignore_errors=True)
    return result


def run(names: Sequence[str], out: Path, *, keep: bool = False) -> int:
    out.mkdir(parents=True, exist_ok=True)
    chosen = [s for s in SCENARIOS if not names or s.name in names]
    started = time.monotonic()
    built = build(WORLD)
    results = []
    for scenario in chosen:
        print(f"e2e: {scenario.name}: running", flush=True)
        result = run_scenario(scenario, out, keep=keep)
        results.append(result)
        verdict = "ok" if not result["violations"] else "FAILED " + ", ".join(result["violations"])
        print(f"e2e: {scenario.name}: {verdict} ({result['wall_s']:.0f} s)", flush=True)
        if result.get("error"):
            break
    logs = {}
    if results and results[-1].get("process_logs"):
        logs = {k: Path(v) for k, v in results[-1]["process_logs"].items()}
    api = next((r["versions_api"] for r in results if r.get("versions_api")), {})
    report = {
        "wall_s": round(time.monotonic() - started, 1),
        "build": [b.__dict__ for b in built],
        "components": component_versions(api, logs),
        "scenarios": results,
    }
    paths = write_report(report, out)
    print(f"e2e: report: {paths[0]} and {paths[1]}")
    failed = sum(1 for r in results if r["violations"])
    print(f"e2e: {len(results) - failed} passed, {failed} failed")
    if any(r.get("error") for r in results):
        return 2
    return 1 if any(r["violations"] for r in results) else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m e2e",
        description="Run the shipped listener under the real control plane (kube-apiserver, "
        "kube-controller-manager, kube-scheduler, etcd, kwok, Karpenter's kwok provider, "
        "ARC's controller) on loopback and check its invariants (docs/e2e-real.md).",
    )
    parser.add_argument(
        "scenarios", nargs="*", help=f"default: all of {[s.name for s in SCENARIOS]}"
    )
    parser.add_argument("--out", type=Path, default=Path("out/e2e"))
    parser.add_argument("--keep", action="store_true", help="keep every world's files")
    args = parser.parse_args(argv)
    unknown = set(args.scenarios) - {s.name for s in SCENARIOS}
    if unknown:
        print(
            f"e2e: unknown scenario(s) {sorted(unknown)}; one of {[s.name for s in SCENARIOS]}",
            file=sys.stderr,
        )
        return 2
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    try:
        with exclusive(cache_root() / "e2e.lock"):
            return run(args.scenarios, args.out, keep=args.keep)
    except AlreadyRunning as err:
        print(err, file=sys.stderr)
        return 2
    except BuildError as err:
        print(err, file=sys.stderr)
        return 2
    except Interrupted as err:
        print(f"e2e: interrupted ({err}); every process started was stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())


_ = json
