"""Every relative link in README.md and docs/*.md resolves, and so does every citation of
docs/design.md or docs/protocol.md in the code.

A relative link must name an existing file; a ``#fragment`` must name a heading of the target
(GitHub's slug rules: lower case, punctuation dropped, spaces to hyphens, ``-1``, ``-2``... for
repeats) or an explicit ``<a id=...>`` / ``<a name=...>`` anchor. Code cites the design as
``docs/design.md#<section>`` (see docs/design.md), so renaming a heading without its citations
fails here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(```|~~~)")
_INLINE_CODE = re.compile(r"`[^`]*`")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"", re.IGNORECASE)
#: ``docs/design.md#<section>`` or ``docs/protocol.md#<section>`` anywhere in code, config or tests.
_CITATION = re.compile(r"docs/(design|protocol)\.md#([A-Za-z0-9_-]+)")
_CODE_DIRS = ("bench", "config", "listener", "providers", "reconciler", "scaleset", "simulator")
_CODE_DIRS += ("state_machine", "tests", "tools", "tuning")
_CODE_SUFFIXES = {".py", ".yaml", ".yml", ".json", ".toml", ".md", ".txt", ".cfg"}


def _prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """Lines outside fenced code blocks, with inline code removed."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            yield number, _INLINE_CODE.sub("", line)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text (markup removed first)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links -> their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)  # \w keeps letters, digits and underscores
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if fenced:
            continue
        found.update(a.lower() for a in _ANCHOR.findall(line))
        match = _HEADING.match(line)
        if match:
            base = slug(match.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    problems = []
    for number, line in _prose_lines(page.read_text(encoding="utf-8")):
        for target in _LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
                continue  # https:, mailto: ...
            path_part, _, fragment = target.partition("#")
            dest = (page.parent / path_part).resolve() if path_part else page
            where = f"{page.relative_to(root)}:{number}: {target}"
            if not dest.exists():
                problems.append(f"{where}: no such file")
            elif fragment and dest.suffix == ".md" and fragment.lower() not in anchors(dest):
                problems.append(f"{where}: no heading or anchor #{fragment} in {dest.name}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_every_design_and_protocol_citation_in_the_code_names_a_section() -> None:
    known = {name: anchors(ROOT / "docs" / f"{name}.md") for name in ("design", "protocol")}
    problems = []
    for directory in _CODE_DIRS:
        for path in sorted((ROOT / directory).rglob("*")):
            if path.suffix not in _CODE_SUFFIXES or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for number, line in enumerate(text.splitlines(), 1):
                for doc, fragment in _CITATION.findall(line):
                    if fragment.lower() not in known[doc]:
                        where = path.relative_to(ROOT)
                        problems.append(f"{where}:{number}: docs/{doc}.md#{fragment}")
    assert problems == []


def test_slugs_follow_githubs_rules() -> None:
    assert slug("Priority ladder") == "priority-ladder"
    assert slug("Capacity drop to the wire (`python bench/x.py --changes 200`)") == (
        "capacity-drop-to-the-wire-python-benchxpy---changes-200"
    )
    assert slug("The listener (drop-in for ARC's `ghalistener`)") == (
        "the-listener-drop-in-for-arcs-ghalistener"
    )
    assert slug("Upgrading, rolling back, uninstalling") == "upgrading-rolling-back-uninstalling"


def test_a_broken_link_and_a_missing_heading_are_reported(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    (tmp_path / "other.md").write_text("# Title\n\n## Same\n\n## Same\n")
    page.write_text(
        "[ok](other.md#same-1) [gone](missing.md) [bad](other.md#nope) "
        "[self](#here) `[code](nowhere.md)`\n\n## Here\n"
    )
    assert broken_links(page, root=tmp_path) == [
        "p.md:1: missing.md: no such file",
        "p.md:1: other.md#nope: no heading or anchor #nope in other.md",
    ]
