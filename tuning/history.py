"""Import a team's CI job history: GitHub REST workflow jobs (JSON) or a CSV trace.

JSON: what ``gh api --paginate repos/OWNER/REPO/actions/runs/RUN/jobs`` saves, in any of the
shapes people end up with:

- one page ``{"total_count": N, "jobs": [...]}``;
- several pages back to back (``--paginate`` without ``--slurp`` concatenates documents);
- a list of pages (``--slurp``), or a plain list of job objects, or JSON lines.

Each job object needs ``created_at`` (queued), ``started_at``, ``completed_at`` (ISO 8601)
and ``labels`` (the ``runs-on`` labels); ``name``, ``conclusion``, ``status`` and
``run_url`` (for the repository) are read when present. The label ``self-hosted`` is dropped:
every self-hosted runner carries it, so it selects nothing.

CSV: the scenario trace format (``queue_time,labels,duration[,name,repository]``, offsets in
seconds), as :mod:`simulator.workload.jobs` reads it.

A record that cannot be replayed (no start, bad time, no labels, still running...) is
reported as a :class:`Problem` with its index and field and skipped; the file as a whole is
refused (:class:`HistoryError`) only when it is unreadable or holds no usable job.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

DAY = 86_400.0
#: A job that ran for less than this is replayed with this duration (the simulator needs > 0).
MIN_DURATION = 1.0
_IMPLICIT_LABELS = frozenset({"self-hosted"})
_RUN_URL = re.compile(r"/repos/([^/]+/[^/]+)/actions/runs/")


class HistoryError(ValueError):
    """The history file is unusable as a whole; the message names the file and the reason."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One skipped record: ``index`` counts jobs from 0 in file order (CSV: the line)."""

    index: int
    field: str
    reason: str

    def __str__(self) -> str:
        return f"job {self.index}: {self.field}: {self.reason}"


@dataclass(frozen=True, slots=True)
class HistoryJob:
    """One replayable job: times are seconds since the history's first midnight (UTC)."""

    index: int
    queued: float
    duration: float
    labels: tuple[str, ...]
    name: str
    repository: str


@dataclass(frozen=True, slots=True)
class History:
    source: str
    jobs: tuple[HistoryJob, ...]
    problems: tuple[Problem, ...]
    #: Epoch seconds of the midnight (UTC) offsets count from (0 for a CSV trace).
    origin: float = 0.0

    @property
    def span(self) -> float:
        """Seconds from the origin to the last job's end."""
        return max((j.queued + j.duration for j in self.jobs), default=0.0)


def shipped_history(name: str) -> Path:
    """A history shipped with the package (``sample-day``): package data, so a wheel has it."""
    return Path(str(resources.files("tuning") / "history_data" / f"{name}.json"))


def resolve_history(path: str | Path) -> Path:
    """``path`` itself, or a bare name of a shipped history (``sample-day``)."""
    candidate = Path(path)
    if candidate.exists() or candidate.suffix or "/" in str(path):
        return candidate
    shipped = shipped_history(str(path))
    return shipped if shipped.exists() else candidate


def load_history(path: str | Path) -> History:
    """Read a history file (JSON by suffix or content, else CSV); see the module doc."""
    file = resolve_history(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise HistoryError(f"{file}: cannot read the history: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise HistoryError(f"{file}: byte {exc.start}: not UTF-8 text") from None
    # A shipped history is named as the user did (``sample-day``), never by its install path.
    source = str(path) if file != Path(path) else str(file)
    if file.suffix.lower() in (".json", ".jsonl") or text.lstrip().startswith(("{", "[")):
        history = parse_jobs_json(text, source=source)
    else:
        history = parse_trace_csv(text, source=source)
    if not history.jobs:
        detail = f"; first problem: {history.problems[0]}" if history.problems else ""
        raise HistoryError(f"{file}: no usable job in the history{detail}")
    return history


# --- JSON (GitHub REST) -------------------------------------------------------------------


def json_documents(text: str, *, source: str) -> Iterator[Any]:
    """Every JSON document in ``text``, whether one, concatenated, or one per line."""
    decoder = json.JSONDecoder()
    at = 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return
        try:
            document, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            raise HistoryError(
                f"{source}: line {exc.lineno}, column {exc.colno}: not valid JSON: {exc.msg}"
            ) from None
        yield document


def raw_jobs(documents: Iterator[Any], *, source: str) -> Iterator[Any]:
    """Job objects in file order, from pages, lists of pages or lists of jobs."""
    for number, document in enumerate(documents):
        if isinstance(document, Mapping) and "jobs" in document:
            jobs = document["jobs"]
            if not isinstance(jobs, list):
                raise HistoryError(f"{source}: document {number}: 'jobs' is not a list")
            yield from jobs
        elif isinstance(document, list):
            for item in document:
                if isinstance(item, Mapping) and "jobs" in item:
                    yield from raw_jobs(iter([item]), source=source)
                else:
                    yield item
        elif isinstance(document, Mapping):
            yield document  # JSON lines: one job per line
        else:
            raise HistoryError(
                f'{source}: document {number}: expected a page {{"jobs": [...]}}, a list or a '
                f"job object (got {type(document).__name__})"
            )


def parse_jobs_json(text: str, *, source: str) -> History:
    parsed: list[tuple[int, float, float, tuple[str, ...], str, str]] = []
    problems: list[Problem] = []
    for index, raw in enumerate(raw_jobs(json_documents(text, source=source), source=source)):
        outcome = _job(index, raw)
        if isinstance(outcome, Problem):
            problems.append(outcome)
        else:
            parsed.append(outcome)
    if not parsed:
        return History(source, (), tuple(problems))
    origin = min(p[1] for p in parsed) // DAY * DAY
    jobs = tuple(
        HistoryJob(i, round(queued - origin, 3), duration, labels, name, repo)
        for i, queued, duration, labels, name, repo in sorted(parsed, key=lambda p: (p[1], p[0]))
    )
    return History(source, jobs, tuple(problems), origin)


def _job(index: int, raw: Any) -> tuple[int, float, float, tuple[str, ...], str, str] | Problem:
    if not isinstance(raw, Mapping):
        return Problem(index, "<job>", f"expected a job object (got {type(raw).__name__})")
    status = raw.get("status")
    if status is not None and status != "completed":
        return Problem(index, "status", f"{status!r} is not completed: its duration is unknown")
    times: dict[str, float] = {}
    for field in ("created_at", "started_at", "completed_at"):
        value = raw.get(field)
        if value is None:
            why = "missing"
            if field == "started_at":
                why += f" (never started; conclusion {raw.get('conclusion')!r})"
            return Problem(index, field, why)
        parsed = _timestamp(value)
        if parsed is None:
            return Problem(
                index, field, f"not an ISO 8601 time like 2026-01-05T07:00:00Z (got {value!r})"
            )
        times[field] = parsed
    if times["started_at"] < times["created_at"]:
        return Problem(index, "started_at", "before created_at")
    if times["completed_at"] < times["started_at"]:
        return Problem(index, "completed_at", "before started_at")
    labels = raw.get("labels")
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        return Problem(index, "labels", f"expected a list of strings (got {labels!r})")
    kept = tuple(x for x in labels if x not in _IMPLICIT_LABELS)
    if not kept:
        return Problem(index, "labels", f"no label beyond {sorted(_IMPLICIT_LABELS)}")
    duration = max(MIN_DURATION, round(times["completed_at"] - times["started_at"], 1))
    name = str(raw.get("name") or "job")
    match = _RUN_URL.search(str(raw.get("run_url") or ""))
    repository = match.group(1) if match else "unknown/unknown"
    return index, times["created_at"], duration, kept, name, repository


def _timestamp(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:  # GitHub always sends UTC; a naive time is taken as UTC
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


# --- CSV trace ------------------------------------------------------------------------------


def parse_trace_csv(text: str, *, source: str) -> History:
    reader = csv.DictReader(io.StringIO(text))
    missing = {"queue_time", "labels", "duration"} - set(reader.fieldnames or ())
    if missing:
        raise HistoryError(
            f"{source}: line 1: missing column(s) {', '.join(sorted(missing))}; expected "
            "queue_time,labels,duration[,name,repository] or GitHub workflow jobs JSON"
        )
    jobs: list[HistoryJob] = []
    problems: list[Problem] = []
    for row in reader:
        line = reader.line_num
        outcome = _row(line, row)
        if isinstance(outcome, Problem):
            problems.append(outcome)
        else:
            jobs.append(outcome)
    jobs.sort(key=lambda j: (j.queued, j.index))
    return History(source, tuple(jobs), tuple(problems))


def _row(line: int, row: Mapping[str, str | None]) -> HistoryJob | Problem:
    values: dict[str, float] = {}
    for field in ("queue_time", "duration"):
        try:
            values[field] = float(row.get(field) or "")
        except ValueError:
            return Problem(line, field, f"not a number of seconds (got {row.get(field)!r})")
    if values["queue_time"] < 0:
        return Problem(line, "queue_time", f"must be >= 0 (got {values['queue_time']})")
    if values["duration"] <= 0:
        return Problem(line, "duration", f"must be > 0 (got {values['duration']})")
    labels = tuple(
        x for x in (row.get("labels") or "").replace(";", " ").split() if x not in _IMPLICIT_LABELS
    )
    if not labels:
        return Problem(line, "labels", "empty")
    return HistoryJob(
        line,
        round(values["queue_time"], 3),
        round(values["duration"], 1),
        labels,
        row.get("name") or "trace-job",
        row.get("repository") or "acme/app",
    )
