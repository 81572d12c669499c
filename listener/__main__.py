"""Command line: ``arc-capacity-listener {run,status,simulate,demo,tune}``.

Also ``python -m listener``.

Kept thin: each subcommand parses its arguments and hands over to the module that owns it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="arc-capacity-listener",
        description="Capacity-aware listener for ARC runner scale sets.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("run", help="run the listener (reads $LISTENER_CONFIG_PATH)")
    status = sub.add_parser("status", help="print the pair table and capacity ledger")
    status.add_argument(
        "--url",
        default="http://127.0.0.1:8080",
        help="base URL of a running listener's metrics server",
    )
    sub.add_parser("simulate", help="run a scenario in the simulated world", add_help=False)
    sub.add_parser("demo", help="run every shipped scenario and write a report", add_help=False)
    sub.add_parser(
        "tune", help="replay a job history and recommend capacityAware settings", add_help=False
    )
    if not args:
        parser.print_help()
        return 2
    command, rest = args[0], args[1:]
    if command in ("simulate", "demo"):
        from providers.simulated.cli import main as simulated_main

        return simulated_main([command, *rest])
    if command == "tune":
        from tuning.cli import main as tune_main

        return tune_main(rest)
    parsed = parser.parse_args(args)
    if parsed.command == "run":
        from listener.app import run_from_environment

        return run_from_environment()
    if parsed.command == "status":
        from listener.status import print_status

        return print_status(parsed.url)
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
