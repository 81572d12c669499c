"""Shutdown deletes only what this instance owns (issue 10, failure 1)."""

from __future__ import annotations


def test_every_shutdown_deletes_all_placeholders_of_the_scale_set() -> None:
    """Regression (issue 10, failure 1): shutdown deleted every placeholder of the scale
    set, whoever owned it. Now: only pods this instance created or adopted."""
    from listener.process.capacity_side import owned_by
    from providers.kubernetes.pods import labels as L

    def pod(scale_set: str, instance: str, pair: str) -> dict[str, object]:
        return {
            "metadata": {
                "labels": {
                    L.LABEL_SCALE_SET: scale_set,
                    L.LABEL_INSTANCE: instance,
                    L.LABEL_PAIR: pair,
                }
            }
        }

    mine = {"scale_set": "arc", "instance": "abcde", "adopted": {"old12-3"}}
    assert owned_by(pod("arc", "abcde", "abcde-1"), **mine)  # type: ignore[arg-type]
    assert owned_by(pod("arc", "old12", "old12-3"), **mine)  # type: ignore[arg-type]
    assert not owned_by(pod("arc", "other", "other-1"), **mine)  # type: ignore[arg-type]
    assert not owned_by(pod("team-b", "abcde", "abcde-1"), **mine)  # type: ignore[arg-type]
