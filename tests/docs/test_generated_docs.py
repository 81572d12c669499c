"""Generated docs stay in step with the code (regenerate with `make docs`)."""

from __future__ import annotations

from tools.gendocs import DOC, IMAGE, render_markdown


def test_state_machine_doc_is_current() -> None:
    assert DOC.read_text() == render_markdown() + "\n", (
        "docs/state-machine.md is stale: run `make docs`"
    )


def test_state_machine_diagram_exists() -> None:
    assert IMAGE.stat().st_size > 10_000
    assert IMAGE.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
