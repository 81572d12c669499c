"""docs/e2e-real.md names the versions the build pins (e2e/components.py), so the page cannot
drift from what `make e2e` runs."""

from __future__ import annotations

from pathlib import Path

from e2e.components import ARC_COMMIT, ARC_VERSION, COMPONENTS
from e2e.scenarios import SCENARIOS

PAGE = Path(__file__).resolve().parents[2] / "docs" / "e2e-real.md"


def test_the_page_names_every_pinned_module_version() -> None:
    text = PAGE.read_text()
    for component in COMPONENTS:
        if component.from_git:
            assert f"gha-runner-scale-set-{ARC_VERSION}" in text
            assert ARC_COMMIT[:7] in text
        else:
            assert f"`{component.module}@{component.version}`" in text, component.name


def test_the_page_describes_every_scenario_it_runs() -> None:
    text = PAGE.read_text()
    for scenario in SCENARIOS:
        assert f"| `{scenario.name}` |" in text, scenario.name
