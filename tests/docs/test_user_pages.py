"""Pages and command-line text meant for users carry no project-history references.

"issue 24's budget" or "issue 31's bars" says nothing to someone installing the listener: the
issue numbers are this repository's history, kept where provenance belongs (docs/design.md and
the benchmarks pages), not in the README, the guides or the commands' help.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from listener.__main__ import main

ROOT = Path(__file__).resolve().parents[2]
USER_PAGES = (
    "README.md",
    "docs/quickstart.md",
    "docs/operations.md",
    "docs/troubleshooting.md",
    "docs/configuration.md",
    "docs/deploy.md",
)
COMMANDS = ["run", "status", "rbac", "values", "verify", "simulate", "demo", "tune"]
#: "issue 24", "Issue 31's", "issues 21", "issue #3", across a line break too.
ISSUE = re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE)


def issue_references(text: str) -> list[str]:
    """Each reference with its line number; link targets (``#...-issue-31``) do not count."""
    return [
        f"line {text.count(chr(10), 0, m.start()) + 1}: {' '.join(m.group(0).split())}"
        for m in ISSUE.finditer(text)
    ]


def test_the_pattern_finds_a_reference_across_a_line_break_but_not_in_an_anchor() -> None:
    text = "the budget is issue\n24's; see [x](benchmarks.md#placeholders-issue-31)"
    assert issue_references(text) == ["line 1: issue 24"]


@pytest.mark.parametrize("page", USER_PAGES)
def test_user_facing_pages_carry_no_issue_references(page: str) -> None:
    """The README's budget was "issue 24's" and its bars "issue 31's": history, not help."""
    assert issue_references((ROOT / page).read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_command_help_carries_no_issue_references(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A command's --help must explain itself without this repository's issue tracker."""
    with pytest.raises(SystemExit):
        main([command, "--help"] if command else ["--help"])
    captured = capsys.readouterr()
    assert issue_references(captured.out + captured.err) == []
