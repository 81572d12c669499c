"""Benchmark: how fast a capacity drop reaches the wire during an idle long poll.

The real listener loop and httpx client run against the loopback Actions face (long-poll
window 50 s, so only a cut can explain a fast re-poll). A "reconciler" thread lowers the
capacity N times (``advertise`` from another thread, as the reconciler does); each
latency is the time from that call to the face receiving a GetMessage whose
``X-ScaleSetMaxCapacity`` carries the new value. Requirement (issue 5): within 1 s.

Runs: the default debounce (0.25 s: what production uses) and debounce 0 (the mechanism's
own cost). With ``--off N`` it also measures N changes with the feature off (the header then
waits for the poll to end; the window is shortened to ``--off-window`` seconds for that run).

Run: ``.venv/bin/python bench/capacity_cut_latency.py [--changes 200] [--off 3]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pydantic import SecretStr

from listener.arc.gate import CapacityGate
from listener.arc.message_loop import Listener, run_open_session
from providers.actions.auth import PatAuth
from providers.actions.client import ActionsClient
from providers.actions.config_url import parse_config_url
from providers.actions.models import JobCompleted, JobStarted
from providers.actions.redact import SecretRegistry
from providers.actions.session import MessageSession
from simulator.faces.actions import ActionsFace, ScriptedJobFeed

PAT = "ghp_benchmarkPat0123456789"


class NullScaler:
    def handle_job_started(self, msg: JobStarted) -> None:
        pass

    def handle_job_completed(self, msg: JobCompleted) -> None:
        pass

    def handle_desired_runner_count(self, count: int) -> int:
        return count


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def measure(changes: int, *, debounce: float, cut: bool, window: float) -> list[float]:
    """Latencies (seconds) of ``changes`` capacity drops, each measured on the wire."""
    feed = ScriptedJobFeed()
    start_value = changes + 10
    latencies: list[float] = []
    with ActionsFace(feed, pat=PAT, poll_window=window) as face:
        gate = CapacityGate(start_value, debounce=debounce, cut_on_drop=cut)
        client = ActionsClient(
            parse_config_url(face.configure_url(), env={}),
            PatAuth(SecretStr(PAT)),
            scale_set_id=42,
            registry=SecretRegistry(),
        )
        session = MessageSession(client, owner_name="bench")
        listener = Listener(session, NullScaler(), gate)

        def reconciler() -> None:
            face.wait_for(lambda rs: any(r.route == "get_message" for r in rs), 10)
            for n in range(1, changes + 1):
                value = start_value - n
                seen_before = len(face.requests)
                called = time.monotonic()
                gate.advertise(value)
                face.wait_for(
                    lambda rs, v=value, k=seen_before: any(r.capacity == v for r in rs[k:]),
                    window + 10,
                )
                arrival = next(r for r in face.requests[seen_before:] if r.capacity == value)
                latencies.append(arrival.received_at - called)
                # let the re-issued poll settle into its idle wait before the next change
                face.wait_for(lambda rs: rs[-1].route == "get_message", 1)

        async def serve() -> None:
            await session.open()
            await run_open_session(session, listener)

        async def main() -> None:
            task = asyncio.ensure_future(serve())
            driver = threading.Thread(target=reconciler)
            driver.start()
            await asyncio.to_thread(driver.join)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await client.aclose()

        asyncio.run(main())
    return latencies


def report(name: str, latencies: list[float]) -> None:
    ms = [x * 1000 for x in latencies]
    print(
        f"{name:<34} n={len(ms):>4}  p50={percentile(ms, 50):8.1f} ms  "
        f"p90={percentile(ms, 90):8.1f} ms  p99={percentile(ms, 99):8.1f} ms  "
        f"max={max(ms):8.1f} ms  mean={statistics.fmean(ms):8.1f} ms  "
        f"within 1 s: {sum(1 for x in latencies if x < 1.0)}/{len(latencies)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--changes", type=int, default=200)
    parser.add_argument("--off", type=int, default=0, help="also measure N changes, feature off")
    parser.add_argument("--off-window", type=float, default=2.0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    print(f"capacity drop -> X-ScaleSetMaxCapacity on the wire, {args.changes} drops each")
    report(
        "cut on drop, debounce 0.25 s", measure(args.changes, debounce=0.25, cut=True, window=50.0)
    )
    report("cut on drop, debounce 0", measure(args.changes, debounce=0.0, cut=True, window=50.0))
    if args.off:
        report(
            f"feature off (window {args.off_window:g} s)",
            measure(args.off, debounce=0.25, cut=False, window=args.off_window),
        )


if __name__ == "__main__":
    main()
