"""Command line of the simulator.

    python -m simulator.cli simulate SCENARIO [--seed N] [--out DIR] [--no-plots]
    python -m simulator.cli demo [--out DIR]
    python -m simulator.cli check EVENTS.jsonl [RESULTS.json]

``SCENARIO`` is a path or the name of a file in config/scenarios/ (``ice-failover``).
:func:`main` takes ``argv`` so ``python -m listener simulate|demo`` can delegate to it.
Exit codes: 0 ok, 1 a check disagreed, 2 bad input (the message names file, field, reason)
or a scale set the listener's start-up checks refuse (the listener's message).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from simulator.engine.startup import StartupRefused
from simulator.measurement.optional import plots_or_note
from simulator.scenarios.scenario import ScenarioError
from simulator.workload.jobs import TraceError

#: Bad input the user can fix: reported in one message, exit code 2, no traceback. A scale
#: set the listener's start-up checks refuse is one (same message as ``run``).
INPUT_ERRORS = (ScenarioError, TraceError, StartupRefused)


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Deterministic simulation: stock ARC vs a warm pool vs the capacity-aware "
        "listener on the same jobs.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sim = sub.add_parser("simulate", help="run every strategy of one scenario")
    sim.add_argument("scenario", help="a scenario file, or a name in config/scenarios/")
    sim.add_argument("--seed", type=int, default=None, help="override the scenario's seed")
    sim.add_argument("--out", default=None, help="output directory (default out/<scenario>)")
    sim.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    demo = sub.add_parser(
        "demo",
        help="run every shipped scenario and write one report",
        description="Run every shipped scenario (config/scenarios/) in the simulated world under "
        "stock ARC, a static warm pool and the capacity-aware listener, and write one report "
        "under --out. Needs no cluster and no GitHub account.",
    )
    demo.add_argument("--out", default="out/demo", help="output directory (default out/demo)")
    check = sub.add_parser("check", help="recompute outcomes from an event log and compare")
    check.add_argument("events", help="events.jsonl written by simulate")
    check.add_argument(
        "results",
        nargs="?",
        default=None,
        help="results.json to compare with (default: beside the events)",
    )
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "python -m simulator.cli") -> int:
    """``prog`` names the command in ``--help`` (``arc-capacity-listener`` when it delegates)."""
    args = _parser(prog).parse_args(list(argv) if argv is not None else None)
    try:
        if args.command == "simulate":
            from simulator.engine.runner import simulate

            plots = plots_or_note(not args.no_plots, f"{prog} simulate", sys.stderr)
            simulate(args.scenario, seed=args.seed, out_dir=args.out, plots=plots)
            return 0
        if args.command == "demo":
            from simulator.engine.runner import demo

            demo(args.out, plots=plots_or_note(True, f"{prog} demo", sys.stderr))
            return 0
        from simulator.measurement.checker import main as check_main

        return check_main([args.events] + ([args.results] if args.results else []))
    except INPUT_ERRORS as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
