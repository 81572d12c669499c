"""Pair breaks by cause, from the event log alone: which pod took which half of a warm pair.

A capacity-aware warm pair is two placeholder pods, a runner half (``<pair>-r``) and a workflow
half (``<pair>-w``). It is *used* when a runner pod takes (preempts) its runner half and a
workflow pod takes its workflow half: ideally the same job's two pods, but kube-scheduler
picks victims per node, not per pair, so the two halves of one pair often go to two jobs; the
ledger counts halves, so that is still a use of the room both halves proved. A pair is
**broken** when one half is used or lost and the other is not used by a pod of its own kind:
a workflow pod took a runner half (issue 24: a 2-cpu workflow pod evicting four runner halves
breaks four pairs), Karpenter disrupted a half, a half expired, or one half was used and the
other was released unused. Every broken pair means room held twice or a node launched again.

Two views, per strategy log:

- :func:`halves_taken`: every ``pod_disrupted`` of a placeholder, as ``"<taker> took the
  <runner|workflow> half"`` for a preemption (``by`` names the preemptor, its
  ``pod_created`` its role) or ``"disrupted: <reason>"`` (Karpenter consolidation, eviction).
  It counts events; it works for the warm pool's pause pods too (they are not pairs).
- :func:`pair_report`: per capacity-aware pair (both halves seen in ``pod_created``), the
  outcome of each half (taken by whom, disrupted, expired, ``released`` = deleted by the
  listener with no disruption, ``held`` = still there at the end), the fates counted, and
  the broken pairs counted by cause: the first half lost to a wrong-kind pod, a disruption
  or expiry; otherwise ``"<taker> took the <half> half; the other half went unused"``.

**Mended.** When the listener mends a pair (issue 24: it creates the missing half again beside
the survivor), a ``pod_created`` for a half that already ended appears under the same name.
The earlier end is then a *mend* (counted by cause in ``mended_by_cause``), not the pair's
fate: the pair is whole again and its fate is decided by what ends its halves afterwards.

What the log cannot say: why the listener deleted a pair (a timeout of
placeholderReadyTimeout, a surplus pair, a survivor at the end of survivorWindow all read
``pod_deleted`` reason ``deleted``). A pair released unused is therefore not a break here
whatever the listener's reason.

Only the standard library is used (like the checker), so a log can be read anywhere.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

PLACEHOLDER_HALF = {"placeholder-runner": "runner", "placeholder-workflow": "workflow"}
#: The pod kind that uses each half.
USER = {"runner": "runner", "workflow": "workflow pod"}
RELEASED = "released"
HELD = "held"
SAME_JOB = "both halves taken by one job"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What ended one half: ``cause`` as printed, and the preemptor's pod name if any."""

    t: float
    cause: str
    taker: str | None = None


@dataclass(slots=True)
class _Pair:
    halves: dict[str, str] = field(default_factory=dict)  # half -> pod name
    ends: dict[str, Outcome] = field(default_factory=dict)  # half -> first end
    #: Ends of halves created again afterwards (the listener mended the pair).
    mends: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class PairReport:
    pairs: int
    fates: Counter[str]
    broken_by_cause: Counter[str]
    #: Halves lost and created again by the listener, by how they were lost.
    mended_by_cause: Counter[str] = field(default_factory=Counter)

    @property
    def broken(self) -> int:
        return sum(self.broken_by_cause.values())


def _taker(role: str | None) -> str:
    if role == "runner":
        return "runner"
    if role == "workflow":
        return "workflow pod"
    return role or "unknown pod"


def _disruption(event: Mapping[str, Any], half: str, roles: Mapping[str, str]) -> Outcome:
    reason = event.get("reason") or "unknown"
    taker = event.get("by")
    if reason == "preempted" and taker is not None:
        return Outcome(float(event["t"]), f"{_taker(roles.get(taker))} took the {half} half", taker)
    return Outcome(float(event["t"]), f"disrupted: {reason}")


def halves_taken(events: Iterable[Mapping[str, Any]]) -> Counter[str]:
    """Every placeholder disruption, by cause (see the module docstring)."""
    roles: dict[str, str] = {}
    out: Counter[str] = Counter()
    for event in events:
        kind = event.get("type")
        if kind == "pod_created":
            roles[event["pod"]] = event["role"]
        elif kind == "pod_disrupted":
            half = PLACEHOLDER_HALF.get(roles.get(event["pod"], ""))
            if half is not None:
                out[_disruption(event, half, roles).cause] += 1
    return out


def _pair_of(name: str, role: str) -> tuple[str, str] | None:
    half = PLACEHOLDER_HALF.get(role)
    if half is None or not name.endswith("-" + half[0]):
        return None
    return name[:-2], half


def _replay(events: Iterable[Mapping[str, Any]]) -> list[_Pair]:
    roles: dict[str, str] = {}
    pairs: dict[str, _Pair] = {}
    half_of: dict[str, tuple[_Pair, str]] = {}
    for event in events:
        kind, pod = event.get("type"), str(event.get("pod", ""))
        if kind == "pod_created":
            roles[pod] = event["role"]
            found = _pair_of(pod, event["role"])
            if found is not None:
                pair = pairs.setdefault(found[0], _Pair())
                ended = pair.ends.pop(found[1], None)
                if ended is not None:
                    pair.mends.append(ended.cause)
                pair.halves[found[1]] = pod
                half_of[pod] = (pair, found[1])
            continue
        if pod not in half_of:
            continue
        pair, half = half_of[pod]
        if half in pair.ends:
            continue
        if kind == "pod_disrupted":
            pair.ends[half] = _disruption(event, half, roles)
        elif kind == "pod_ended":
            pair.ends[half] = Outcome(float(event["t"]), "expired")
        elif kind == "pod_deleted":
            pair.ends[half] = Outcome(float(event["t"]), RELEASED)
    return [p for p in pairs.values() if set(p.halves) == {"runner", "workflow"}]


def _used(half: str, outcome: Outcome) -> bool:
    return outcome.cause == f"{USER[half]} took the {half} half"


def _fate(pair: _Pair) -> tuple[str, str | None]:
    """(fate, cause of the break or None when the pair is not broken)."""
    runner = pair.ends.get("runner", Outcome(float("inf"), HELD))
    workflow = pair.ends.get("workflow", Outcome(float("inf"), HELD))
    if _used("runner", runner) and _used("workflow", workflow):
        same = runner.taker is not None and workflow.taker == f"{runner.taker}-workflow"
        return (SAME_JOB if same else "halves taken by the pods of two jobs"), None
    fate = f"runner half: {runner.cause}; workflow half: {workflow.cause}"
    idle = (RELEASED, HELD)
    if runner.cause in idle and workflow.cause in idle:
        return fate, None
    lost = [
        (o.t, half != "runner", o.cause)
        for half, o in (("runner", runner), ("workflow", workflow))
        if o.cause not in idle and not _used(half, o)
    ]
    if lost:
        return fate, min(lost)[2]
    taken = runner if runner.cause not in idle else workflow
    return fate, f"{taken.cause}; the other half went unused"


def pair_report(events: Iterable[Mapping[str, Any]]) -> PairReport:
    """Fates and breaks by cause of every capacity-aware pair in one strategy's log."""
    fates: Counter[str] = Counter()
    broken: Counter[str] = Counter()
    mended: Counter[str] = Counter()
    pairs = _replay(events)
    for pair in pairs:
        fate, cause = _fate(pair)
        fates[fate] += 1
        mended.update(pair.mends)
        if cause is not None:
            broken[cause] += 1
    return PairReport(len(pairs), fates, broken, mended)
