"""The history importer: GitHub REST workflow-jobs shapes and the CSV trace; bad records are
reported with index and field and skipped, never silently."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tuning.history import HistoryError, Problem, load_history

MIDNIGHT = "2026-01-05T00:00:00Z"


def gh_job(n: int, created: str = "2026-01-05T07:00:00Z", **changes: Any) -> dict[str, Any]:
    job: dict[str, Any] = {
        "id": 1000 + n,
        "run_id": 77,
        "run_url": "https://api.github.com/repos/acme/models/actions/runs/77",
        "status": "completed",
        "conclusion": "success",
        "created_at": created,
        "started_at": "2026-01-05T07:00:30Z",
        "completed_at": "2026-01-05T07:08:30Z",
        "name": f"shard-{n}",
        "labels": ["self-hosted", "linux-gpu"],
    }
    job.update(changes)
    return job


def write(tmp_path: Path, text: str, name: str = "jobs.json") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_one_page_gives_offsets_from_the_first_midnight_and_run_time(tmp_path: Path) -> None:
    page = {"total_count": 1, "jobs": [gh_job(0)]}
    history = load_history(write(tmp_path, json.dumps(page)))
    (job,) = history.jobs
    assert job.queued == 7 * 3600.0
    assert job.duration == 480.0  # completed_at - started_at: the queue wait is the output
    assert job.labels == ("linux-gpu",)  # self-hosted selects nothing: dropped
    assert job.repository == "acme/models"
    assert history.problems == ()


def test_pages_concatenated_by_gh_paginate_are_all_read(tmp_path: Path) -> None:
    pages = [
        {"total_count": 3, "jobs": [gh_job(0), gh_job(1)]},
        {"total_count": 3, "jobs": [gh_job(2)]},
    ]
    text = "".join(json.dumps(p) for p in pages)  # no separator at all, as --paginate writes
    assert len(load_history(write(tmp_path, text)).jobs) == 3


def test_slurped_list_of_pages_plain_list_and_json_lines_are_read(tmp_path: Path) -> None:
    slurped = [{"jobs": [gh_job(0)]}, {"jobs": [gh_job(1), gh_job(2)]}]
    assert len(load_history(write(tmp_path, json.dumps(slurped), "a.json")).jobs) == 3
    plain = [gh_job(0), gh_job(1)]
    assert len(load_history(write(tmp_path, json.dumps(plain), "b.json")).jobs) == 2
    lines = "\n".join(json.dumps(gh_job(n)) for n in range(4))
    assert len(load_history(write(tmp_path, lines, "c.json")).jobs) == 4


def test_missing_started_at_is_reported_with_index_and_skipped(tmp_path: Path) -> None:
    jobs = [gh_job(0), gh_job(1, started_at=None, conclusion="cancelled"), gh_job(2)]
    history = load_history(write(tmp_path, json.dumps({"jobs": jobs})))
    assert [j.index for j in history.jobs] == [0, 2]
    (problem,) = history.problems
    assert (problem.index, problem.field) == (1, "started_at")
    assert "never started" in problem.reason and "cancelled" in problem.reason


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"created_at": "yesterday"}, "created_at", "ISO 8601"),
        ({"completed_at": 1767600000}, "completed_at", "ISO 8601"),
        ({"started_at": "2026-01-05T06:00:00Z"}, "started_at", "before created_at"),
        ({"completed_at": "2026-01-05T07:00:00Z"}, "completed_at", "before started_at"),
        ({"status": "in_progress", "completed_at": None}, "status", "not completed"),
        ({"labels": "linux-gpu"}, "labels", "list of strings"),
        ({"labels": ["self-hosted"]}, "labels", "no label"),
    ],
)
def test_bad_records_name_their_field(
    tmp_path: Path, changes: dict[str, Any], field: str, words: str
) -> None:
    history = load_history(write(tmp_path, json.dumps([gh_job(0), gh_job(1, **changes)])))
    assert len(history.jobs) == 1
    (problem,) = history.problems
    assert (problem.index, problem.field) == (1, field)
    assert words in problem.reason
    assert str(problem).startswith(f"job 1: {field}: ")


def test_a_file_with_no_usable_job_is_refused_with_the_first_reason(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps([gh_job(0, started_at=None)]))
    with pytest.raises(HistoryError, match=r"no usable job.*job 0: started_at"):
        load_history(path)


def test_broken_json_names_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, '{"jobs": [\n  {"created_at": }\n]}')
    with pytest.raises(HistoryError, match=r"line 2, column \d+: not valid JSON"):
        load_history(path)


def test_a_document_of_the_wrong_kind_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match=r"document 0: expected a page"):
        load_history(write(tmp_path, "42"))


def test_jobs_come_out_in_queue_order_whatever_the_file_order(tmp_path: Path) -> None:
    late = gh_job(
        0,
        created="2026-01-05T09:00:00Z",
        started_at="2026-01-05T09:00:10Z",
        completed_at="2026-01-05T09:01:10Z",
    )
    history = load_history(write(tmp_path, json.dumps([late, gh_job(1)])))
    assert [j.index for j in history.jobs] == [1, 0]


def test_csv_trace_bad_rows_are_reported_by_line(tmp_path: Path) -> None:
    text = (
        "queue_time,labels,duration\n"
        "0,linux-gpu,60\n"
        "abc,linux-gpu,60\n"
        "10,,60\n"
        "20,linux-gpu;big,-5\n"
        "30,linux-gpu;big,90\n"
    )
    history = load_history(write(tmp_path, text, "trace.csv"))
    assert [(j.queued, j.labels) for j in history.jobs] == [
        (0.0, ("linux-gpu",)),
        (30.0, ("linux-gpu", "big")),
    ]
    assert history.problems == (
        Problem(3, "queue_time", "not a number of seconds (got 'abc')"),
        Problem(4, "labels", "empty"),
        Problem(5, "duration", "must be > 0 (got -5.0)"),
    )


def test_csv_without_the_trace_columns_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="missing column"):
        load_history(write(tmp_path, "when,what\n1,2\n", "x.csv"))


def test_shipped_sample_is_a_day_of_at_least_2000_jobs_with_its_known_bad_records() -> None:
    history = load_history(Path(__file__).resolve().parents[2] / "config/history/sample-day.json")
    assert len(history.jobs) >= 2000
    assert max(j.queued for j in history.jobs) < 86_400
    assert {p.field for p in history.problems} == {"started_at"}


def test_a_shipped_history_is_named_as_typed_never_by_its_install_path() -> None:
    """recommendation.yaml's header named the shipped history by its absolute path inside
    site-packages (`/.../site-packages/tuning/history_data/sample-day.json`), which says
    nothing to the reader and differs on every machine."""
    history = load_history("sample-day")
    assert history.source == "sample-day"
    assert "site-packages" not in history.source and "/" not in history.source
