"""The pure core imports no pydantic: pydantic validates at the edge (reconciler/settings.py
and its helpers), the core works on the frozen values they build (reconciler/config.py).

Each module is imported in a fresh interpreter with ``pydantic`` blocked
(``sys.modules["pydantic"] = None`` makes any import of it raise), so an import that reaches
the settings module, directly or through another module, fails here by name.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The edge: where the ``capacityAware`` block is validated with pydantic.
EDGE = {
    "reconciler.settings",
    "reconciler.settings_types",
    "reconciler.demand_settings",
    "reconciler.fleet_settings",
}


def _modules(package: str) -> list[str]:
    return sorted(
        f"{package}.{path.stem}" if path.stem != "__init__" else package
        for path in (ROOT / package).glob("*.py")
    )


CORE = [m for m in _modules("state_machine") + _modules("reconciler") if m not in EDGE]


def _import_without_pydantic(module: str) -> subprocess.CompletedProcess[str]:
    code = f"import sys; sys.modules['pydantic'] = None; import {module}"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_the_core_is_every_module_but_the_edge() -> None:
    """A new module is core unless it is named as edge: the list cannot silently shrink."""
    assert "reconciler.decide" in CORE and "reconciler.sync" in CORE
    assert "state_machine.table" in CORE and "reconciler.config" in CORE
    assert not any(m in CORE for m in EDGE)


def test_no_core_module_imports_pydantic() -> None:
    """All core modules in one interpreter (one start-up, not one per module); on a failure
    each is retried alone so the message names the module that reaches pydantic."""
    joined = "; ".join(f"import {m}" for m in CORE)
    together = _import_without_pydantic(joined.removeprefix("import "))
    if together.returncode == 0:
        return
    offenders = {
        m: r.stderr.strip().splitlines()[-1]
        for m in CORE
        if (r := _import_without_pydantic(m)).returncode != 0
    }
    pytest.fail(f"core modules that import pydantic: {offenders}")


def test_the_controller_imports_no_pydantic() -> None:
    """The controller takes its timings as values (``CapacityAwareSettings.controller_timings``
    builds them at the edge)."""
    result = _import_without_pydantic("reconciler.controller")
    assert result.returncode == 0, result.stderr
