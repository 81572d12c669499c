"""Pair breaks by cause in a saved event log (``events.jsonl`` of ``python -m listener simulate``).

Per strategy in the log: capacity-aware pairs created, broken pairs by cause, the fate of
every pair, and every placeholder half taken or disrupted (the warm pool's pause pods too).
Definitions: simulator/measurement/pair_breaks.py. bench/scenarios.py prints the same figures
over seeds; this script reads one run you already have.

Run: ``.venv/bin/python bench/pair_breaks.py out/storm/events.jsonl``
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simulator.measurement.pair_breaks import halves_taken, pair_report


def _read(path: Path) -> dict[str, list[dict[str, Any]]]:
    by_strategy: dict[str, list[dict[str, Any]]] = {}
    with path.open(encoding="utf-8") as handle:
        for n, line in enumerate(handle, 1):
            try:
                event = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SystemExit(f"{path}: line {n}: not JSON ({exc.msg})") from None
            by_strategy.setdefault(event.get("strategy", "?"), []).append(event)
    return by_strategy


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("events", type=Path, help="an events.jsonl written by simulate")
    args = parser.parse_args(argv)
    if not args.events.is_file():
        parser.error(f"{args.events}: no such file")
    for strategy, events in _read(args.events).items():
        print(f"== {strategy}")
        report = pair_report(events)
        if report.pairs:
            print(f"pairs created {report.pairs:,}, broken {report.broken:,}; broken by cause:")
            for cause, count in report.broken_by_cause.most_common():
                print(f"  {count:>6,}  {cause}")
            mended = sum(report.mended_by_cause.values())
            print(f"halves lost and mended (created again by the listener) {mended:,}:")
            for cause, count in report.mended_by_cause.most_common():
                print(f"  {count:>6,}  {cause}")
            print("pair fates:")
            for fate, count in report.fates.most_common():
                print(f"  {count:>6,}  {fate}")
        taken = halves_taken(events)
        print("placeholder halves taken or disrupted:" if taken else "no placeholder disrupted")
        for cause, count in taken.most_common():
            print(f"  {count:>6,}  {cause}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
