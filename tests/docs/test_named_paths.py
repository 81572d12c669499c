"""Every file, folder and module the design and the package docstrings name exists.

A newcomer follows these names first (docs/design.md's layout table, then each package's
``__init__`` docstring), so a renamed or removed module must take its mentions with it:
``reconciler/__init__.py`` once sent readers to a ``loop`` module that was not there.

Checked:
- docs/design.md, layout table: each folder in the first column; each ``*.py`` in the second
  column, inside the first column's folder.
- docs/design.md, anywhere: a backticked path into the project's own top-level folders
  (``reconciler/capacity.py``, ``listener/``; a ``::name`` or ``#anchor`` suffix is dropped).
- package docstrings: ``:mod:`` references (relative ones from the package), backticked
  dotted names into the product packages (``providers.hud.client.HudDemandSource``: the
  longest importable module, then its attributes), and backticked paths as above.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "design.md"
PRODUCT = (
    "state_machine",
    "reconciler",
    "providers",
    "scaleset",
    "listener",
    "simulator",
    "tuning",
)
TOP_DIRS = (*PRODUCT, "config", "bench", "tools", "tests", "docs")

_BACKTICKED = re.compile(r"``?([^`\s]+)``?")
_MOD_REF = re.compile(r":mod:`~?([.\w]+)`")
_DOTTED = re.compile(r"^(?:" + "|".join(PRODUCT) + r")(?:\.\w+)+$")
_PATH = re.compile(r"^(?:" + "|".join(TOP_DIRS) + r")/[\w./-]*$")


def _path_exists(token: str) -> bool:
    token = token.split("::", 1)[0].split("#", 1)[0].rstrip(".,:;")
    return (ROOT / token).exists()


def _layout_rows() -> list[tuple[str, str]]:
    text = DESIGN.read_text()
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`"):
            rows.append((cells[0], cells[1]))
    return rows


def _design_paths() -> list[str]:
    return sorted({t for t in _BACKTICKED.findall(DESIGN.read_text()) if _PATH.match(t)})


def _package_inits() -> list[Path]:
    return sorted(p for top in PRODUCT for p in (ROOT / top).rglob("__init__.py"))


def _docstring(init: Path) -> str:
    return ast.get_docstring(ast.parse(init.read_text())) or ""


def _package_of(init: Path) -> str:
    return ".".join(init.parent.relative_to(ROOT).parts)


def _resolves(dotted: str) -> bool:
    """The longest importable module prefix of ``dotted``, then attributes from there."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            continue
        obj: object = importlib.import_module(name)
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_the_layout_table_names_existing_folders_and_modules() -> None:
    rows = _layout_rows()
    assert rows, "docs/design.md has no layout table under '## Layout'"
    missing = []
    for where, what in rows:
        folders = _BACKTICKED.findall(where)
        missing += [f for f in folders if not (ROOT / f).exists()]
        for module in (m for m in _BACKTICKED.findall(what) if m.endswith(".py")):
            if not any((ROOT / folder / module).exists() for folder in folders):
                missing.append(f"{module} (in {', '.join(folders)})")
    assert missing == []


@pytest.mark.parametrize("token", _design_paths())
def test_a_path_the_design_names_exists(token: str) -> None:
    assert _path_exists(token), f"docs/design.md names {token}, which does not exist"


@pytest.mark.parametrize("init", _package_inits(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_package_docstring_names_only_what_exists(init: Path) -> None:
    package = _package_of(init)
    doc = _docstring(init)
    missing = []
    for ref in _MOD_REF.findall(doc):
        name = package + ref if ref.startswith(".") else ref
        if not _resolves(name):
            missing.append(f":mod:`{ref}`")
    for token in _BACKTICKED.findall(doc):
        token = token.rstrip(".,:;")
        dotted_missing = _DOTTED.match(token) is not None and not _resolves(token)
        path_missing = _PATH.match(token) is not None and not _path_exists(token)
        if dotted_missing or path_missing:
            missing.append(token)
    assert missing == [], f"{init.relative_to(ROOT)} names what does not exist: {missing}"


def test_the_checks_find_a_missing_module() -> None:
    """The checks above can fail: a module that is not there does not resolve."""
    assert _resolves("reconciler.controller.ScaleSetController")
    assert not _resolves("reconciler.loop")
    assert not _path_exists("reconciler/loop.py")
