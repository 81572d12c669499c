"""Generate docs/semantics.md: what the simulated world models, after which upstream source,
and which test pins it down.

    python -m tools.semantics           # regenerate docs/semantics.md
    python -m tools.semantics --check   # exit 1 if the page is stale or a row is broken

Rows live in ``tools/semantics/*.yaml`` (one file per area: ``cluster.yaml``,
``workload.yaml``, ``k8s_face.yaml``, ``informer.yaml`` for the listener's own informer),
each a list of::

    - semantic: what the world does, in one sentence
      component: kube-scheduler | Karpenter | kubelet | ARC | container hook | ...
      upstream: {repo: owner/name, path: file the behaviour was read from,
                 version: the tag it was checked against (optional; e.g. v1.36.3)}
      test: tests/path/test_file.py::test_name   (a pytest node id; [param] allowed)

A row is broken when its ``test`` does not name a test function (or ``Class::method``) that
exists in that file; this is checked by parsing the file, so it needs no pytest run.
``tests/docs/test_generated_docs.py`` fails when the page differs from :func:`render` or a row
is broken. ``python -m tools.gendocs`` regenerates this page too.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

ROOT = Path(__file__).resolve().parent.parent
ROWS_DIR = ROOT / "tools" / "semantics"
DOC = ROOT / "docs" / "semantics.md"


class RowError(ValueError):
    """A rows file or a row is malformed, or a row points at a missing test."""


class Upstream(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    repo: str = Field(pattern=r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
    path: str = Field(min_length=1)
    #: The tag the row was checked against (a row held against the real control plane,
    #: docs/real-vs-simulated.md); None: read at HEAD.
    version: str | None = Field(default=None, pattern=r"^[\w.+-]+$")


class Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    semantic: str = Field(min_length=1)
    component: str = Field(min_length=1)
    upstream: Upstream
    test: str = Field(pattern=r"^tests/[\w/.-]+\.py::\w+(::\w+)?(\[.*\])?$")

    @field_validator("semantic", "component")
    @classmethod
    def _one_line(cls, v: str) -> str:
        if "\n" in v.strip() or "|" in v:
            raise ValueError("must be one line without '|'")
        return v.strip()


def load_rows(directory: Path = ROWS_DIR) -> list[tuple[str, Row]]:
    """Every row of every ``*.yaml`` file, as (file name, row), files in name order."""
    out: list[tuple[str, Row]] = []
    for path in sorted(directory.glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        if not isinstance(data, list):
            raise RowError(f"{path.name}: expected a list of rows, got {type(data).__name__}")
        for i, item in enumerate(data):
            try:
                out.append((path.name, Row.model_validate(item)))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise RowError(f"{path.name}[{i}].{where}: {first['msg']}") from None
    return out


def _defined_tests(path: Path) -> set[str]:
    """``name`` and ``Class::name`` of every test function defined in a file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.add(f"{node.name}::{item.name}")
    return names


def missing_tests(rows: Iterable[tuple[str, Row]], root: Path = ROOT) -> list[str]:
    """One message per row whose test does not exist (empty when all do)."""
    cache: dict[Path, set[str]] = {}
    problems: list[str] = []
    for source, row in rows:
        file_part, _, name = row.test.partition("::")
        name = name.split("[", 1)[0]
        path = root / file_part
        if not path.is_file():
            problems.append(f"{source}: {row.test}: no such file {file_part}")
            continue
        if path not in cache:
            cache[path] = _defined_tests(path)
        if name not in cache[path]:
            problems.append(f"{source}: {row.test}: no test {name} in {file_part}")
    return problems


def _link(up: Upstream) -> str:
    ref = up.version or "HEAD"
    at = f" @ {up.version}" if up.version else ""
    return f"[{up.repo} `{up.path}`{at}](https://github.com/{up.repo}/blob/{ref}/{up.path})"


def render(rows: list[tuple[str, Row]]) -> str:
    lines = [
        "# What the simulated world models, and after which source",
        "",
        "<!-- Generated by `python -m tools.semantics` from tools/semantics/*.yaml. "
        "Do not edit. -->",
        "",
        "Each row is one behaviour of the simulated world (`simulator/`), the",
        "upstream file it was read from, and the test that pins it. A test listed here was",
        "written from that upstream source (its docstring cites it). "
        "`tests/docs/test_generated_docs.py`",
        "fails when this page is stale or a row names a test that does not exist.",
        "A link naming a version (`@ v1.36.3`) is a row checked against that release",
        "running as the real control plane ([real-vs-simulated.md](real-vs-simulated.md)).",
        "",
    ]
    by_file: dict[str, list[Row]] = {}
    for source, row in rows:
        by_file.setdefault(source, []).append(row)
    for source, group in by_file.items():
        lines += [f"## {source.removesuffix('.yaml')}", ""]
        lines += ["| component | semantic | upstream | test |", "|---|---|---|---|"]
        for row in group:
            lines.append(
                f"| {row.component} | {row.semantic} | {_link(row.upstream)} | `{row.test}` |"
            )
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def write() -> Path:
    rows = load_rows()
    problems = missing_tests(rows)
    if problems:
        raise RowError("; ".join(problems))
    DOC.write_text(render(rows))
    return DOC


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.semantics", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = parser.parse_args(argv)
    try:
        rows = load_rows()
    except RowError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    problems = missing_tests(rows)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        return 1
    text = render(rows)
    if args.check:
        if not DOC.exists() or DOC.read_text() != text:
            print(
                f"{DOC.relative_to(ROOT)} is stale: run python -m tools.semantics", file=sys.stderr
            )
            return 1
        return 0
    DOC.write_text(text)
    print(f"wrote {DOC.relative_to(ROOT)} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
