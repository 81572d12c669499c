"""Command line: ``arc-capacity-listener {run,status,rbac,values,verify,simulate,demo,tune}``
(or ``python -m listener``).

Kept thin: each subcommand parses its arguments and hands over to the module that owns it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand. A reader that stops early (``status | head``) ends the output, not
    the command: exit 0 without a BrokenPipeError traceback."""
    try:
        code = _main(argv)
        sys.stdout.flush()  # a closed pipe shows here, not in Python's exit flush
        return code
    except BrokenPipeError:
        # Point stdout at /dev/null so the interpreter's own flush at exit cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 0


def _main(argv: Sequence[str] | None) -> int:
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
    sub.add_parser(
        "rbac", help="print or apply the RBAC of one scale set's listener", add_help=False
    )
    sub.add_parser(
        "values",
        help="write the Helm overlay that makes a scale set capacity-aware",
        add_help=False,
    )
    sub.add_parser("verify", help="check and exercise placeholders on this cluster", add_help=False)
    sub.add_parser("simulate", help="run a scenario in the simulated world", add_help=False)
    sub.add_parser("demo", help="run every shipped scenario and write a report", add_help=False)
    sub.add_parser(
        "tune", help="replay a job history and recommend capacityAware settings", add_help=False
    )
    if not args:
        parser.print_help()
        return 2
    command, rest = args[0], args[1:]
    if command in ("verify", "rbac", "run"):
        # The one read of the environment; what runs below is handed it.
        from listener.process.environment import EnvError, read_process_env

        try:
            env = read_process_env()
        except EnvError as exc:
            print(f"arc-capacity-listener: {exc}", file=sys.stderr)
            return 1
    if command == "values":
        from listener.commands.values import main as values_main

        return values_main(rest)
    if command == "verify":
        from listener.commands.verify.cli import main as verify_main

        return verify_main(rest, env=env.variables)
    if command == "rbac":
        from listener.commands.rbac import main as rbac_main

        return rbac_main(rest, env=env.variables)
    if command in ("simulate", "demo", "tune"):
        return _offline_command(command, rest)
    parsed = parser.parse_args(args)
    if parsed.command == "run":
        from listener.process.app import run_from_environment
        from listener.process.exit_deadline import end_process

        end_process(run_from_environment(env))
    if parsed.command == "status":
        from listener.commands.status import print_status

        return print_status(parsed.url)
    parser.print_help()
    return 2


def _offline_command(command: str, rest: list[str]) -> int:
    """Run a command of the simulator or the tuner, which the production image leaves out.

    The image holds what ``run`` needs; ``simulate``, ``demo`` and ``tune`` live in a source
    checkout (or a wheel built from one), so where their package is missing this says so once
    instead of a traceback.
    """
    try:
        if command == "tune":
            from tuning.cli import main as tool_main

            return tool_main(rest)
        from simulator.cli import main as simulator_main

        return simulator_main([command, *rest], prog="arc-capacity-listener")
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("simulator", "tuning"):
            raise
        print(
            f"arc-capacity-listener: '{command}' needs the simulated world, which this "
            "installation does not include (the production image ships only what 'run', "
            "'status', 'rbac', 'values' and 'verify' need); run it from a source checkout: "
            "make demo",
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":
    sys.exit(main())
