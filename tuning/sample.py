"""Generate the shipped sample history: one synthetic day in GitHub's REST workflow-jobs shape.

    python -m tuning.sample [--out config/history/sample-day.json] [--seed 12]

The file is what ``gh api --paginate repos/acme/models/actions/runs/RUN/jobs`` saves: pages
of at most 100 jobs, ``{"total_count": N, "jobs": [...]}``, one compact page per line. The day
(2026-01-05, UTC): GPU test jobs (``runs-on: linux-gpu``) at 30/h at night, 140/h from 07:00 to
19:00 and 60/h in the evening, 8 min median run time. A few records a real export contains are
kept on purpose, so the importer's reporting shows: jobs cancelled before they started
(``started_at: null``) and jobs of GitHub-hosted runners (``ubuntu-latest``), which no scale
set serves. Deterministic per seed.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "config" / "history" / "sample-day.json"
DAY_START = datetime(2026, 1, 5, tzinfo=UTC).timestamp()
#: (from hour, jobs per hour) for the GPU label.
RATES = ((0, 30.0), (7, 140.0), (19, 60.0))
CANCELLED_BEFORE_START = 12
HOSTED_JOBS = 25
PAGE = 100
REPO = "acme/models"


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(round(epoch), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def arrivals(rng: random.Random) -> list[float]:
    """Poisson arrivals (seconds since midnight) under the piecewise-constant RATES."""
    out: list[float] = []
    bounds = [*(h * 3600.0 for h, _ in RATES), 86_400.0]
    for (hour, per_hour), end in zip(RATES, bounds[1:], strict=True):
        t = hour * 3600.0
        while True:
            t += rng.expovariate(per_hour / 3600.0)
            if t >= end:
                break
            out.append(t)
    return out


def job(rng: random.Random, number: int, queued: float, labels: list[str]) -> dict[str, Any]:
    run_id = 9_100_000_000 + number // 3
    job_id = 25_000_000_000 + number
    wait = rng.uniform(15.0, 45.0)
    duration = min(3600.0, max(60.0, rng.lognormvariate(math.log(480.0), 0.6)))
    created = DAY_START + queued
    return {
        "id": job_id,
        "run_id": run_id,
        "workflow_name": "gpu-tests",
        "head_branch": "main",
        "run_url": f"https://api.github.com/repos/{REPO}/actions/runs/{run_id}",
        "run_attempt": 1,
        "html_url": f"https://github.com/{REPO}/actions/runs/{run_id}/job/{job_id}",
        "status": "completed",
        "conclusion": "success" if rng.random() > 0.04 else "failure",
        "created_at": _iso(created),
        "started_at": _iso(created + wait),
        "completed_at": _iso(created + wait + duration),
        "name": f"test-shard-{number % 8}",
        "labels": labels,
        "runner_name": f"gpu-runner-{number:05d}",
        "runner_group_name": "Default",
    }


def sample_jobs(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(f"{seed}/sample-history")
    jobs = [job(rng, n, t, ["linux-gpu"]) for n, t in enumerate(arrivals(rng))]
    for i in rng.sample(range(len(jobs)), CANCELLED_BEFORE_START):
        jobs[i].update(started_at=None, conclusion="cancelled", runner_name=None)
    base = len(jobs)
    for n in range(HOSTED_JOBS):
        jobs.append(job(rng, base + n, rng.uniform(7 * 3600.0, 19 * 3600.0), ["ubuntu-latest"]))
    jobs.sort(key=lambda j: (j["created_at"], j["id"]))
    return jobs


def pages(jobs: list[dict[str, Any]]) -> str:
    """``gh api --paginate`` output: one compact page document per line."""
    lines = [
        json.dumps({"total_count": len(jobs), "jobs": jobs[i : i + PAGE]}, separators=(",", ":"))
        for i in range(0, len(jobs), PAGE)
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tuning.sample", description=__doc__)
    p.add_argument("--out", default=str(DEFAULT_OUT))
    p.add_argument("--seed", type=int, default=12)
    args = p.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    jobs = sample_jobs(args.seed)
    out.write_text(pages(jobs), encoding="utf-8")
    print(f"{out}: {len(jobs)} jobs in {math.ceil(len(jobs) / PAGE)} pages")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
