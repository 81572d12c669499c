"""A product module's docstrings and comments say what and why, never by how much on which run.

Figures go stale with every re-measure; they live in docs/design.md's decision rows (or
docs/benchmarks*.md) beside the command that produced them. Issue numbers mean nothing to a
reader of the code. Checked: every docstring (module, class, function) and every comment of
the product packages; a hit names the file, the line and the text.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("state_machine", "reconciler", "providers", "listener")

#: What a measurement or a tracker reference looks like in prose.
FORBIDDEN = {
    #: This project's tracker ("issue 31"); an upstream citation ("ARC issue #4470") is a
    #: source a reader can follow, and stays.
    "an issue number": re.compile(r"\bissues? \d+", re.IGNORECASE),
    "a seed": re.compile(r"\bseeds? \d+", re.IGNORECASE),
    "a ratio": re.compile(r"\b\d+\.\d+x\b"),
}


def _prose(source: str) -> list[tuple[int, str]]:
    """(line, text) of every docstring and comment in ``source``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None and node.body:
                start = node.body[0].lineno
                found += [(start + i, line) for i, line in enumerate(doc.splitlines())]
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found.append((token.start[0], token.string))
    return found


def violations(source: str) -> list[tuple[int, str, str]]:
    return [
        (line, what, text.strip())
        for line, text in _prose(source)
        for what, pattern in FORBIDDEN.items()
        if pattern.search(text)
    ]


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ('"""Refilled late (issue 31: a batch outran it)."""', "an issue number"),
        ("# storm seed 7: nine pairs PARTIAL", "a seed"),
        ("x = 1  # 20: 1.11x, 30: 1.04x on wide-storm", "a ratio"),
        ('def f() -> None:\n    """Costs 1.84x the launches."""', "a ratio"),
    ],
)
def test_a_figure_or_an_issue_in_prose_is_found(text: str, what: str) -> None:
    assert [v[1] for v in violations(text)] == [what]


@pytest.mark.parametrize(
    "text",
    [
        '"""Where a c5.2xlarge holds one workflow pod and a c5.4xlarge three."""',
        "# docs/benchmarks-warm-pool.md#node-churn-issue-31 has the figures",
        "# Observed from the broker (ARC issue #4470)",
        "SEED = 7  # not prose: code is not checked, only comments and docstrings",
        'x = "seed 3"  # a string that is not a docstring',
    ],
)
def test_instance_types_anchors_and_code_are_not_figures(text: str) -> None:
    assert violations(text) == []


def test_product_docstrings_and_comments_carry_no_figures_or_issue_numbers() -> None:
    hits = [
        f"{path.relative_to(ROOT)}:{line}: {what}: {text}"
        for package in PRODUCT
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, what, text in violations(path.read_text())
    ]
    assert not hits, "move the figure to docs/design.md#decisions:\n" + "\n".join(hits)
