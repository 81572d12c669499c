"""Pair records: a move or an observation changes only what it is about."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

import pytest

from state_machine.record import HistoryEntry, PairRecord
from state_machine.states import PairState, Role

S = PairState


def _record() -> PairRecord:
    """A record with every field away from its default, built directly (not through the
    methods under test), so a field they drop shows."""
    return PairRecord(
        pair_id="p1",
        scale_set="ss",
        state=S.PARTIAL,
        version=3,
        runner_pod="ss-ph-p1-r",
        workflow_pod="ss-ph-p1-w",
        reason="runner Running",
        since=3.0,
        first_entered=MappingProxyType({S.QUEUED: 1.0, S.REQUESTED: 2.0, S.PARTIAL: 3.0}),
        history=(HistoryEntry(S.PARTIAL, 3.0, "runner Running"),),
        seen=frozenset((Role.RUNNER,)),
    )


@pytest.mark.parametrize(
    ("change", "changed"),
    [
        (
            lambda r: r.moved(S.READY, at=4.0, reason="both Running"),
            {"state", "version", "reason", "since", "first_entered", "history"},
        ),
        (lambda r: r.observed(frozenset((Role.WORKFLOW,))), {"seen"}),
    ],
    ids=["moved", "observed"],
)
def test_a_copy_keeps_every_field_it_does_not_change(change, changed) -> None:  # type: ignore[no-untyped-def]
    """moved() and observed() build the copy field by field (dataclasses.replace cost 4x
    on the reconcile hot path), so a field added to PairRecord and forgotten there would be
    silently reset to its default on the next change; this lists each field that may change."""
    before = _record()
    after = change(before)
    differs = {
        f.name
        for f in dataclasses.fields(PairRecord)
        if getattr(before, f.name) != getattr(after, f.name)
    }
    assert differs == changed


def test_moving_to_a_state_entered_before_keeps_its_first_entry_time() -> None:
    """Timeouts measure from the first entry: a PARTIAL -> REQUESTED -> PARTIAL flap must not
    restart placeholderReadyTimeout (the first_entered mapping is shared, not rebuilt)."""
    flapped = (
        _record()
        .moved(S.REQUESTED, at=5.0, reason="stalled")
        .moved(S.PARTIAL, at=6.0, reason="Running again")
    )
    assert flapped.entered(S.REQUESTED) == 2.0
    assert flapped.entered(S.PARTIAL) == 3.0
    assert flapped.since == 6.0
