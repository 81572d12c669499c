"""The EphemeralRunnerSet controller's view of its runners, read from their status (ARC
``newEphemeralRunnersByStates`` / ``deleteIdleEphemeralRunners``, master 2ee6b3b).

Why it reads the objects and not the simulation's own runner states: since ARC 0.15 (PR
#4646) the ``Running`` phase is written by the listener on JobStarted, not derived from the
pod, so what the controller sees depends on what the listener wrote. This module is where a
listener that does not write the phase shows up: in the pending/running counts and in the
order scale-down walks the runners.

1. Buckets: a runner being deleted is in neither; ``Running`` -> running; ``Succeeded``,
   ``Failed``, ``Outdated`` -> neither (finished); anything else (empty, ``Pending``) ->
   pending. Each bucket oldest first.
2. Scale-down walks pending, then running, and for each runner: skips it while unregistered
   (``runnerId`` 0), skips it while its status names a job (``jobId``), else asks the
   Actions service to remove it, which refuses a runner that has a job (JobStillRunning).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from simulator.engine.store import Obj

FINISHED = frozenset({"Succeeded", "Failed", "Outdated"})


@dataclass(slots=True)
class ScaleDownStats:
    """What the controller's walks and status counts came to over a run."""

    examined: int = 0
    skipped_unregistered: int = 0
    skipped_with_job: int = 0
    #: Removal asked of the service for a runner that had a job (refused: JobStillRunning).
    refused_busy: int = 0
    removed: int = 0
    #: Sums over reconciles of the pending / running counts the ERS status would publish,
    #: and of the busy runners (a job in their status) counted as pending.
    samples: int = 0
    pending_sum: int = 0
    running_sum: int = 0
    busy_pending_sum: int = 0


def phase(er: Obj) -> str:
    return str((er.get("status") or {}).get("phase") or "")


def has_job(er: Obj) -> bool:
    return bool((er.get("status") or {}).get("jobId"))


def buckets(runners: Sequence[Obj]) -> tuple[list[Obj], list[Obj]]:
    """(pending, running), each oldest first (a stable sort keeps creation order on ties)."""
    pending: list[Obj] = []
    running: list[Obj] = []
    for er in runners:
        if er["metadata"].get("deletionTimestamp") or phase(er) in FINISHED:
            continue
        (running if phase(er) == "Running" else pending).append(er)

    def created(er: Obj) -> str:
        return str(er["metadata"].get("creationTimestamp") or "")

    return sorted(pending, key=created), sorted(running, key=created)


def sample(stats: ScaleDownStats, runners: Sequence[Obj]) -> None:
    pending, running = buckets(runners)
    stats.samples += 1
    stats.pending_sum += len(pending)
    stats.running_sum += len(running)
    stats.busy_pending_sum += sum(1 for er in pending if has_job(er))


def pick_idle(
    runners: Sequence[Obj],
    count: int,
    remove: Callable[[Obj], bool],
    stats: ScaleDownStats,
) -> Iterator[Obj]:
    """Yield up to ``count`` runners the service agreed to remove, in ARC's walk order."""
    if count <= 0:
        return
    pending, running = buckets(runners)
    removed = 0
    for er in (*pending, *running):
        stats.examined += 1
        if not (er.get("status") or {}).get("runnerId"):
            stats.skipped_unregistered += 1
            continue
        if has_job(er):
            stats.skipped_with_job += 1
            continue
        if not remove(er):
            stats.refused_busy += 1
            continue
        stats.removed += 1
        removed += 1
        yield er
        if removed == count:
            return
