"""docs/: the metrics reference is generated and fresh; the guides' links resolve."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from listener.observability.metrics import ARC_FAMILIES, CAPACITY_FAMILIES, main, render_metrics_doc

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GUIDES = (
    "quickstart.md",
    "operations.md",
    "troubleshooting.md",
    "metrics.md",
    "configuration.md",
    "migrate-kubernetes-novolume.md",
    "image.md",
)


def test_metrics_doc_is_up_to_date() -> None:
    current = (DOCS / "metrics.md").read_text(encoding="utf-8")
    assert current == render_metrics_doc(), (
        "docs/metrics.md is stale: run `python -m listener.observability.metrics`"
    )


def test_the_check_command_detects_a_stale_file(tmp_path: Path) -> None:
    stale = tmp_path / "metrics.md"
    stale.write_text("old\n")
    assert main(["--check", "--output", str(stale)]) == 1
    assert main(["--output", str(stale)]) == 0
    assert main(["--check", "--output", str(stale)]) == 0


def test_metrics_doc_lists_every_family() -> None:
    text = render_metrics_doc()
    for family in (*ARC_FAMILIES, *CAPACITY_FAMILIES):
        assert f"| `{family.name}` |" in text


@pytest.mark.parametrize("guide", GUIDES)
def test_relative_links_resolve(guide: str) -> None:
    text = (DOCS / guide).read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if re.match(r"^[a-z]+://", target):
            continue
        assert (DOCS / target).resolve().exists(), f"{guide}: broken link {target}"


def test_the_operations_guide_explains_every_state_and_capacity_metric() -> None:
    from state_machine.states import PairState

    text = (DOCS / "operations.md").read_text(encoding="utf-8")
    for state in PairState:
        assert f"`{state.value}`" in text, state
    for family in CAPACITY_FAMILIES:
        assert family.name in text, family.name


def test_the_operations_guide_documents_every_capacity_aware_key() -> None:
    from reconciler.settings import CapacityAwareSettings, HudSettings, WarmPoolSettings

    text = (DOCS / "operations.md").read_text(encoding="utf-8")
    keys = [f.alias for f in CapacityAwareSettings.model_fields.values() if f.alias != "hud"]
    keys += [f"hud.{f.alias}" for f in HudSettings.model_fields.values()]
    keys += [f"warmPool.{f.alias}" for f in WarmPoolSettings.model_fields.values()]
    missing = [key for key in keys if f"| `{key}` |" not in text]
    assert not missing, f"docs/operations.md lacks rows for {missing}"
