"""``arc-capacity-listener status``: the pair table and ledger of a running listener.

Reads ``/debug/pairs`` from the listener's HTTP server (one bounded GET) and prints it.
"""

from __future__ import annotations

import sys
from typing import Any

import httpx

TIMEOUT = 5.0


def fetch_status(base_url: str) -> dict[str, Any]:
    response = httpx.get(base_url.rstrip("/") + "/debug/pairs", timeout=TIMEOUT)
    response.raise_for_status()
    payload: dict[str, Any] = response.json()
    return payload


def render_status(payload: dict[str, Any]) -> str:
    lines = [f"scale set {payload.get('scale_set', '?')}"]
    ledger = payload.get("ledger")
    if ledger:
        lines.append(
            "capacity {capacity} = min(runner side {runner_side}, workflow side "
            "{workflow_side}, maxRunners {max_runners}); ready pairs {ready_pairs}, "
            "starved runners {starved_runners}, idle runners {idle_runners}".format(**ledger)
        )
    else:
        lines.append("no reconcile step yet (caches syncing, or capacityAware disabled)")
    counts = payload.get("counts") or {}
    lines.append("pairs: " + ", ".join(f"{state} {n}" for state, n in counts.items() if n))
    pairs = payload.get("pairs") or []
    if pairs:
        lines.append(f"{'PAIR':<16} {'STATE':<10} {'V':>3} {'AGE':>7}  REASON")
        for pair in pairs:
            lines.append(
                f"{pair.get('id', '?'):<16} {pair.get('state', '?'):<10} "
                f"{pair.get('version', 0):>3} {pair.get('age_seconds', 0):>6.0f}s  "
                f"{pair.get('reason', '')}"
            )
    return "\n".join(lines)


def print_status(base_url: str) -> int:
    try:
        payload = fetch_status(base_url)
    except (httpx.HTTPError, ValueError) as exc:
        print(
            f"arc-capacity-listener status: cannot read {base_url}/debug/pairs: {exc}",
            file=sys.stderr,
        )
        return 1
    print(render_status(payload))
    return 0
