"""Jobs completed by every whole hour of a run: where stock ARC fails jobs, issue 31 asks
capacity-aware to have completed as many as stock ARC by every hour, not only in total.

A job counts from its ``finished_at`` if it succeeded; a failed job never counts. Per hour
mark ``h`` (1 h, 2 h, ... up to the run's duration) the gap is

    completed(candidate, by h) - completed(reference, by h)

and a run's figure is its worst gap (the most negative; the earliest hour on a tie), how
many of its marks were short, and how late the candidate was at its latest short mark: the
seconds after the mark until it had completed as many as the reference had by the mark
(one job finishing a second after the hour and a strategy an hour behind both show ``-1``;
the lateness tells them apart). Only the standard library is used.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class HourlyGap:
    """The worst hour mark of one run (or of many: :func:`worst_of`)."""

    gap: int
    hour: int
    short_marks: int
    marks: int
    seed: int | None = None
    #: Seconds after a short mark until the candidate had completed what the reference had by
    #: it (the most over the short marks; ``inf`` if never within the run; 0 if none short).
    late_by: float = 0.0


def hour_marks(duration: float) -> list[float]:
    """Every whole hour after the start, up to and including the run's end."""
    return [h * HOUR for h in range(1, int(duration // HOUR) + 1)]


def completed_by(finished: Iterable[float], marks: Sequence[float]) -> list[int]:
    """Jobs finished at or before each mark (``finished``: seconds since the run's start)."""
    return _counts(sorted(finished), marks)


def _counts(ordered: Sequence[float], marks: Sequence[float]) -> list[int]:
    return [bisect.bisect_right(ordered, mark) for mark in marks]


def hourly_gap(
    candidate: Iterable[float],
    reference: Iterable[float],
    duration: float,
    seed: int | None = None,
) -> HourlyGap:
    """The candidate's worst hour against the reference, over one run's hour marks."""
    marks = hour_marks(duration)
    if not marks:
        return HourlyGap(0, 0, 0, 0, seed)
    done = sorted(candidate)
    wanted = completed_by(reference, marks)
    gaps = [c - r for c, r in zip(_counts(done, marks), wanted, strict=True)]
    late = [
        (done[r - 1] if r <= len(done) else math.inf) - mark
        for mark, r, gap in zip(marks, wanted, gaps, strict=True)
        if gap < 0
    ]
    worst = min(range(len(gaps)), key=lambda i: (gaps[i], i))
    return HourlyGap(gaps[worst], worst + 1, len(late), len(gaps), seed, max(late, default=0.0))


def worst_of(runs: Sequence[HourlyGap]) -> HourlyGap | None:
    """The worst run (its seed and hour), with the short marks and marks of all runs summed."""
    if not runs:
        return None
    worst = min(runs, key=lambda g: (g.gap, g.seed or 0, g.hour))
    return HourlyGap(
        worst.gap,
        worst.hour,
        sum(g.short_marks for g in runs),
        sum(g.marks for g in runs),
        worst.seed,
        max(g.late_by for g in runs),
    )


def describe(gap: HourlyGap | None) -> str:
    """``>= ref`` when no mark was short, else the worst gap, where, how often and how late."""
    if gap is None or gap.marks == 0:
        return "-"
    if gap.short_marks == 0:
        return f">= ref ({gap.marks} marks)"
    where = f"seed {gap.seed} " if gap.seed is not None else ""
    late = "never" if math.isinf(gap.late_by) else f"{gap.late_by:.1f} s"
    return f"{gap.gap:+d} ({where}{gap.hour} h); short {gap.short_marks}/{gap.marks}, late {late}"
