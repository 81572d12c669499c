"""Put an imported history and a set of dials into a base scenario.

The base scenario (``--scenario``) brings the team's clusters, scale sets, ARC timings and the
strategy settings; its own job streams are replaced by one CSV trace written from the
history. A job whose labels no scale set of the scenario serves is reported (index, labels,
what the scale sets serve) and left out, never silently.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from reconciler.settings import CapacityAwareSettings, parse_capacity_aware
from simulator.scenarios.blocks import CapacityAwareModel, JobStream
from simulator.scenarios.scenario import Scenario, format_errors
from tuning import karpenter
from tuning.history import History, HistoryJob, Problem

#: The replay runs this long after the last job was queued, so late jobs can finish.
TAIL = 3600.0
MAX_DURATION = 14 * 86_400.0


def served(scenario: Scenario, labels: tuple[str, ...]) -> bool:
    """The simulator's rule: some scale set's labels include all of the job's."""
    return any(set(labels) <= set(ss.labels) for ss in scenario.scale_sets)


def replayable(scenario: Scenario, history: History) -> tuple[list[HistoryJob], list[Problem]]:
    jobs: list[HistoryJob] = []
    problems: list[Problem] = []
    offered = sorted({label for ss in scenario.scale_sets for label in ss.labels})
    for job in history.jobs:
        if served(scenario, job.labels):
            jobs.append(job)
        else:
            problems.append(
                Problem(
                    job.index,
                    "labels",
                    f"no scale set of scenario {scenario.name!r} serves {list(job.labels)} "
                    f"(its scale sets serve {offered})",
                )
            )
    return jobs, problems


def write_trace(jobs: list[HistoryJob], path: Path) -> Path:
    """The scenario CSV trace shape: queue_time,labels,duration,name,repository."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["queue_time", "labels", "duration", "name", "repository"])
        for job in jobs:
            writer.writerow(
                [f"{job.queued:.3f}", ";".join(job.labels), job.duration, job.name, job.repository]
            )
    return path


def with_trace(base: Scenario, trace: Path, jobs: list[HistoryJob]) -> Scenario:
    """``base`` replaying ``trace`` (its jobs replaced), long enough for every job."""
    labels = sorted({label for job in jobs for label in job.labels})
    last = max(job.queued for job in jobs)
    duration = min(MAX_DURATION, math.ceil((last + TAIL) / 3600.0) * 3600.0)
    stream = JobStream.model_validate(
        {"labels": labels[:1], "trace": str(trace.resolve())}, context={"base_dir": None}
    )
    return base.model_copy(update={"jobs": [stream], "duration": duration})


#: Dials with this prefix set the simulator's side of the strategy (``capacity_aware_sim``,
#: e.g. ``sim.fit_refresh``: how often the fit estimate is recomputed), not the listener's block.
SIM_PREFIX = "sim."


class DialError(ValueError):
    """A simulator dial (``sim.*``) is invalid; the message names the point and the key."""


def split_dials(dials: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(capacityAware dials, simulator dials without their prefix); Karpenter's NodePool
    dials (``karpenter.``, :mod:`tuning.karpenter`) are neither."""
    dials = karpenter.split(dials)[0]
    block = {k: v for k, v in dials.items() if not k.startswith(SIM_PREFIX)}
    sim = {k.removeprefix(SIM_PREFIX): v for k, v in dials.items() if k.startswith(SIM_PREFIX)}
    return block, sim


def sim_settings(
    base: CapacityAwareModel, dials: Mapping[str, Any], *, where: str
) -> CapacityAwareModel:
    try:
        return CapacityAwareModel.model_validate({**base.model_dump(), **dials})
    except ValidationError as exc:
        raise DialError(format_errors(exc, f"{where}: sim")) from None


def apply_dials(base: Scenario, dials: Mapping[str, Any], *, where: str) -> Scenario:
    """``base`` with the ``capacityAware`` block (dotted camelCase keys), the simulator's
    ``capacity_aware_sim`` knobs (``sim.`` keys) and every NodePool (``karpenter.`` keys)
    changed by ``dials``."""
    block_dials, sim_dials = split_dials(dials)
    pools = karpenter.nodepool_fields(karpenter.split(dials)[1], where=where)
    settings = dial_settings(base.strategies.capacity_aware, block_dials, where=where)
    sim = sim_settings(base.strategies.capacity_aware_sim, sim_dials, where=where)
    strategies = base.strategies.model_copy(
        update={"capacity_aware": settings, "capacity_aware_sim": sim}
    )
    return karpenter.with_nodepools(base.model_copy(update={"strategies": strategies}), pools)


def dial_settings(
    base: CapacityAwareSettings, dials: Mapping[str, Any], *, where: str
) -> CapacityAwareSettings:
    """Validated settings: the base block with every dial set (``warmPool.missProbability``)."""
    block = settings_block(base)
    for key, value in dials.items():
        node = block
        *parents, leaf = key.split(".")
        for part in parents:
            child = node.get(part)
            node[part] = child = dict(child) if isinstance(child, Mapping) else {}
            node = child
        node[leaf] = value
    return parse_capacity_aware(block, where=where)


def settings_block(settings: CapacityAwareSettings) -> dict[str, Any]:
    """The block as a user writes it (camelCase; what differs from the defaults, plus the
    switch and the warm pool size, which a reader looks for even at their default)."""
    block = settings.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    return {
        "enabled": settings.enabled,
        "proactiveCapacity": settings.proactive_capacity,
        **{k: v for k, v in block.items() if k not in ("enabled", "proactiveCapacity")},
    }
