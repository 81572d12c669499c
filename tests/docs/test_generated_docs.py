"""Generated docs stay in step with the code (regenerate with `make docs`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.gendocs import DOC, IMAGE, render_markdown


def test_state_machine_doc_is_current() -> None:
    assert DOC.read_text() == render_markdown() + "\n", (
        "docs/state-machine.md is stale: run `make docs`"
    )


def test_state_machine_diagram_exists() -> None:
    assert IMAGE.stat().st_size > 10_000
    assert IMAGE.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_semantics_page_is_current_and_every_row_names_a_real_test() -> None:
    from tools import semantics

    rows = semantics.load_rows()
    assert rows, "tools/semantics/*.yaml hold no rows"
    assert semantics.missing_tests(rows) == []
    assert semantics.DOC.read_text() == semantics.render(rows), (
        "docs/semantics.md is stale: run `python -m tools.semantics` (or `make docs`)"
    )


def test_a_semantics_row_naming_a_missing_test_is_reported(tmp_path: Path) -> None:
    from tools import semantics

    (tmp_path / "x.yaml").write_text(
        "- semantic: s\n  component: c\n  upstream: {repo: a/b, path: p.go}\n"
        "  test: tests/docs/test_generated_docs.py::test_that_does_not_exist\n"
        "- semantic: s\n  component: c\n  upstream: {repo: a/b, path: p.go}\n"
        "  test: tests/nowhere/test_x.py::test_y\n"
        "- semantic: s\n  component: c\n  upstream: {repo: a/b, path: p.go}\n"
        "  test: tests/docs/test_generated_docs.py::test_state_machine_doc_is_current[p]\n"
    )
    problems = semantics.missing_tests(semantics.load_rows(tmp_path))
    assert problems == [
        "x.yaml: tests/docs/test_generated_docs.py::test_that_does_not_exist: "
        "no test test_that_does_not_exist in tests/docs/test_generated_docs.py",
        "x.yaml: tests/nowhere/test_x.py::test_y: no such file tests/nowhere/test_x.py",
    ]


def test_a_malformed_semantics_row_is_one_clear_error(tmp_path: Path) -> None:
    from tools import semantics

    (tmp_path / "bad.yaml").write_text(
        "- semantic: s\n  component: c\n  upstream: {repo: a/b}\n  test: tests/x.py::test_y\n"
    )
    with pytest.raises(semantics.RowError, match=r"bad.yaml\[0\]\.upstream\.path: Field required"):
        semantics.load_rows(tmp_path)
