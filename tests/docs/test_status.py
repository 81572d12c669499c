"""The README says how mature the project is, in one place a visitor reads first:
what has been proven where, what never ran, and what to do first."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _status() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Status")
    return text[start : text.index("\n## ", start + 1)]


def test_the_readme_status_names_the_real_control_plane_and_its_versions() -> None:
    from e2e.components import ARC_VERSION, KARPENTER_VERSION, KUBERNETES_VERSION

    status = _status()
    assert "make e2e" in status
    for version in (KUBERNETES_VERSION, KARPENTER_VERSION, ARC_VERSION):
        assert version in status, version


def test_the_readme_status_says_what_never_ran_and_what_to_do_first() -> None:
    status = _status()
    assert "Never tried" in status
    for never in ("GitHub's real Actions service", "kubelets", "a cloud's capacity", "0.15"):
        assert never in status, never
    assert "verify" in status and "one low-traffic scale set" in status


def test_the_status_comes_before_any_figure_a_visitor_could_misread() -> None:
    """Every performance figure comes from the simulated world: the Status section saying so
    must come before the first results table."""
    text = (ROOT / "README.md").read_text()
    assert text.index("## Status") < text.index("## Results")
    assert "every performance and cost figure" in _status()


def test_security_policy_points_at_the_same_status() -> None:
    policy = (ROOT / "SECURITY.md").read_text()
    assert "make e2e" in policy and "Status" in policy
