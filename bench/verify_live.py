"""Benchmark: how long ``arc-capacity-listener verify`` takes from start to report against the
live simulated world (speed 1: Karpenter's launch is 1.5-2.5 s there, minutes on a real cloud).

Each run gets a fresh world with the scale set installed the way the quickstart leaves it
(ladder, hook template, listener RBAC), no jobs, no ICE window. Verify runs in-process with its
defaults except ``--probe-timeout`` (printed), and prints its own total; this script prints
that total and every row's duration per run, then the median and max of the totals.

Run: ``.venv/bin/python bench/verify_live.py [--runs 3] [--probe-timeout 15s]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from listener.commands.verify.cli import main as verify_main
from simulator.faces.live_world import LiveWorld
from tests.verify.conftest import (
    NAMESPACE,
    SCALE_SET,
    install_listener_rbac,
    quiet_spec,
)


def one_run(probe_timeout: str) -> dict[str, object]:
    with LiveWorld(quiet_spec()) as world, tempfile.TemporaryDirectory() as tmp:
        install_listener_rbac(world)
        kubeconfig = Path(tmp) / "kubeconfig.yaml"
        kubeconfig.write_text(json.dumps(world.kubeconfig()))
        env = {
            "KUBECONFIG": str(kubeconfig),
            "CAPACITY_AWARE_JSON": json.dumps(world.capacity_aware()),
        }
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = verify_main(
                [
                    "--scale-set",
                    SCALE_SET,
                    "--namespace",
                    NAMESPACE,
                    "--json",
                    "--probe-timeout",
                    probe_timeout,
                ],
                env=env,
            )
        doc = json.loads(out.getvalue())
        doc["exit"] = code
        return doc


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--probe-timeout", default="15s")
    args = parser.parse_args()
    totals = []
    for i in range(args.runs):
        doc = one_run(args.probe_timeout)
        totals.append(float(doc["seconds"]))  # type: ignore[arg-type]
        rows = " ".join(f"{r['check']}={r['seconds']:.1f}" for r in doc["checks"])  # type: ignore[attr-defined]
        print(
            f"run {i + 1}: exit {doc['exit']} {doc['result']} total {doc['seconds']:.1f}s | {rows}"
        )
    print(
        f"verify start-to-report, probe-timeout {args.probe_timeout}: median "
        f"{statistics.median(totals):.1f}s, max {max(totals):.1f}s over {args.runs} runs"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
