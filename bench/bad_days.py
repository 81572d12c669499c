"""Benchmark: issue 34's bad days, against real ``python -m listener run`` processes whose
Kubernetes API goes through a fault proxy (tests/reliability/bad_day.py), on the live
simulated world (its Kubernetes, Actions and HUD faces on loopback, real time).

Figures (issue 34's Must show):
- **exit**: seconds from SIGTERM to exit, and the exit code, while every Kubernetes call hangs
  ("unreachable") and while it answers 429 ``Retry-After: 120`` (target: 0 within 5 s); also
  whether the exit deadline had to end the process (the log line says so);
- **outage**: the Kubernetes API unreachable for ``--outage`` seconds: the longest gap
  between two GetMessage requests while a process is up, the header during the outage, the
  writes the first process sent after its Lease could no longer be renewed (a recording proxy:
  target 0), and the seconds from the API returning to the header being > 0 again (target:
  within the Lease duration + 5 s when the process exits; a successor is started at once, as
  ARC recreates the pod);
- **cuts**: watch streams cut every 8 s for ``--cut-minutes``, then whole: seconds from the
  last cut to the header back at its value before the cuts (target 3 s), placeholder pods
  created twice under the same name (target 0).

Listener defaults as shipped (the Lease: 15 s) and the world's short timers
(``LiveWorld.capacity_aware()``: recalculateInterval 2 s); the cuts run with the tests' 4 s
Lease.

Run: ``.venv/bin/python bench/bad_days.py [--only exit,outage,cuts] [--outage 60]``
(about 3 minutes with the defaults; the machine should otherwise be quiet).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from simulator.faces.live_world import LiveWorld
from simulator.faults import FaultKind
from tests.reliability.bad_day import (
    ProxiedListener,
    fault,
    polls_between,
    quiet_spec,
    start_proxied,
    wait_for,
)

DEADLINE_LINE = "still running after"


def _polls(world: LiveWorld, start: float, end: float) -> list[tuple[float, int]]:
    return [
        (r.received_at, r.capacity if r.capacity is not None else -1)
        for r in world.actions.requests_to("get_message")
        if start <= r.received_at <= end
    ]


def _header_back_after(world: LiveWorld, since: float, timeout: float) -> float | None:
    """Seconds from ``since`` to the first GetMessage advertising > 0."""
    ok = wait_for(lambda: any(c > 0 for _, c in _polls(world, since, time.monotonic())), timeout)
    if not ok:
        return None
    return min(t for t, c in _polls(world, since, time.monotonic()) if c > 0) - since


def bench_exit(work: Path) -> None:
    cases = {
        "unreachable (every call hangs)": fault(FaultKind.K8S_TIMEOUT, hold=120),
        "429 Retry-After 120": fault(FaultKind.K8S_429, retry_after=120),
    }
    for name, injected in cases.items():
        with LiveWorld(quiet_spec()) as world:
            # The shipped Lease (15 s): the SIGTERM comes before the renew deadline (10 s).
            one = start_proxied(
                world, work / f"exit-{len(name)}", env={"CAPACITY_AWARE_LEASE_DURATION": "15"}
            )
            try:
                if not wait_for(one.ready, 60):
                    print(f"exit / {name}: never ready")
                    continue
                one.proxy.inject(injected)
                time.sleep(3.0)  # scale patches meet the fault and retry
                code, took = one.terminate_timed()
                forced = DEADLINE_LINE in one.process.logs(400)
                print(
                    f"exit / {name}: code {code} after {took:.2f} s "
                    f"(exit deadline {'FIRED' if forced else 'not needed'})"
                )
            finally:
                one.close()


def bench_outage(work: Path, seconds: float) -> None:
    with LiveWorld(quiet_spec()) as world:
        first = start_proxied(world, work / "outage-1", env={"CAPACITY_AWARE_LEASE_DURATION": "15"})
        started: list[ProxiedListener] = [first]
        try:
            if not wait_for(first.ready, 60):
                print("outage: never ready")
                return
            time.sleep(2.0)
            began = time.monotonic()
            first.proxy.inject(fault(FaultKind.K8S_TIMEOUT, hold=seconds + 30))
            wait_for(lambda: not first.process.running, seconds)
            exited_at = time.monotonic() if not first.process.running else None
            successor = None
            if exited_at is not None:
                # ARC recreates the pod: the successor goes through the same (broken) API.
                successor = start_proxied(
                    world, work / "outage-2", env={"CAPACITY_AWARE_LEASE_DURATION": "15"}
                )
                successor.proxy.inject(fault(FaultKind.K8S_TIMEOUT, hold=seconds + 30))
                started.append(successor)
            wait_for(lambda: time.monotonic() - began >= seconds, seconds + 5)
            first.proxy.clear()
            if successor is not None:
                successor.proxy.clear()
            back = time.monotonic()
            header_back = _header_back_after(world, back, 60)
            up_until = exited_at or back
            gaps = [
                b - a
                for (a, _), (b, _) in zip(
                    _polls(world, began, up_until), _polls(world, began, up_until)[1:], strict=False
                )
            ]
            during = sorted({c for _, c in _polls(world, began + 1, back)})
            renew_deadline = 15 * 2 / 3
            late = [
                w
                for w in first.proxy.writes
                if w[0] > began + renew_deadline and "/leases/" not in w[2]
            ]
            code = first.process.proc.returncode if first.process.proc else None
            print(
                f"outage {seconds:.0f} s: first process "
                + (f"exited {code} after {exited_at - began:.1f} s" if exited_at else "stayed up")
                + f"; longest GetMessage gap while up {max(gaps, default=0):.2f} s over "
                f"{len(gaps) + 1} polls; header values during the outage {during}; "
                f"writes after the renew deadline {len(late)}; header > 0 again "
                + (f"{header_back:.1f} s after the API returned" if header_back else "NEVER")
            )
        finally:
            for one in started:
                one.close()


def bench_cuts(work: Path, minutes: float) -> None:
    with LiveWorld(quiet_spec()) as world:
        one = start_proxied(world, work / "cuts")
        try:
            if not wait_for(one.ready, 60):
                print("cuts: never ready")
                return
            wait_for(lambda: bool([c for _, c in _polls(world, 0, time.monotonic()) if c > 0]), 30)
            time.sleep(4.0)
            before = polls_between(world, time.monotonic() - 4.0, time.monotonic())
            settled = max(before, default=0)
            one.proxy.inject(fault(FaultKind.K8S_WATCH_DROP, every=8))
            began = time.monotonic()
            time.sleep(minutes * 60)
            one.proxy.clear()
            last_cut = time.monotonic()
            ok = wait_for(
                lambda: any(c >= settled for _, c in _polls(world, last_cut, time.monotonic())),
                60,
            )
            back = (
                min(t for t, c in _polls(world, last_cut, time.monotonic()) if c >= settled)
                - last_cut
                if ok
                else None
            )
            creates = Counter(
                w[2] for w in one.proxy.writes if w[1] == "POST" and w[2].endswith("/pods")
            )
            names = Counter(w[2] for w in one.proxy.writes if w[1] == "DELETE" and "/pods/" in w[2])
            during = _polls(world, began, last_cut)
            zero_share = sum(1 for _, c in during if c == 0) / max(len(during), 1)
            print(
                f"cuts every 8 s for {minutes:g} min: header back at {settled} "
                + (f"{back:.2f} s after the last cut" if back is not None else "NEVER")
                + f"; polls at 0 during the cuts {zero_share:.0%} of {len(during)}; "
                f"pod creates {sum(creates.values())}, deletes {sum(names.values())}"
            )
        finally:
            one.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="exit,outage,cuts")
    parser.add_argument("--outage", type=float, default=60.0)
    parser.add_argument("--cut-minutes", type=float, default=1.0)
    args = parser.parse_args()
    only = set(args.only.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if "exit" in only:
            bench_exit(work)
        if "cuts" in only:
            bench_cuts(work, args.cut_minutes)
        if "outage" in only:
            bench_outage(work, args.outage)


if __name__ == "__main__":
    main()
