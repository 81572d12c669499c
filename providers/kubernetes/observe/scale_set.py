"""The scale set's own objects as the snapshot reads them: where it lives
(:class:`ScaleSetTarget`), its EphemeralRunnerSet and AutoscalingRunnerSet (the ARS name and
the live ``maxRunners`` / ``minRunners``), and its EphemeralRunners (names, idle ones).

Pure functions over an :class:`ObjectSource` (the watch cache, the simulated store, dicts).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from providers.kubernetes.observe.object_fields import labels_of, metadata_of, owners_of
from providers.kubernetes.pods import labels as L
from reconciler.settings import CapacityAwareSettings

Obj = Mapping[str, Any]


class ObjectSource(Protocol):
    def list(self, kind: str, namespace: str | None = None) -> Iterable[Mapping[str, Any]]: ...


@dataclass(frozen=True)
class ScaleSetTarget:
    ers_name: str  # EphemeralRunnerSet name (= scale-set label value on placeholders)
    runner_namespace: str  # namespace of ERS, EphemeralRunners, runner + workflow pods
    placeholder_namespace: str
    #: From the listener config; the live AutoscalingRunnerSet ``spec.maxRunners`` wins.
    max_runners: int
    min_runners: int = 0
    ars_name: str | None = None

    @classmethod
    def of(
        cls,
        settings: CapacityAwareSettings,
        *,
        ers_name: str,
        runner_namespace: str,
        max_runners: int,
        min_runners: int = 0,
        ars_name: str | None = None,
    ) -> ScaleSetTarget:
        """The target of one scale set; placeholders live in ``placeholderNamespace``, by
        default the runners' own namespace (the one place that default is applied)."""
        return cls(
            ers_name=ers_name,
            runner_namespace=runner_namespace,
            placeholder_namespace=settings.placeholder_namespace or runner_namespace,
            max_runners=max_runners,
            min_runners=min_runners,
            ars_name=ars_name,
        )


def find_object(
    source: ObjectSource, kind: str, namespace: str | None, name: str | None
) -> Obj | None:
    if not name:
        return None
    for obj in source.list(kind, namespace):
        if metadata_of(obj).get("name") == name:
            return obj
    return None


def scale_set_name(ers: Obj | None, target: ScaleSetTarget) -> str:
    """The ARS name carried by runner pods' ``actions.github.com/scale-set-name`` label."""
    if target.ars_name:
        return target.ars_name
    if ers is not None:
        label = labels_of(ers).get(L.LABEL_ARC_SCALE_SET_NAME)
        if label:
            return label
    return target.ers_name


def autoscaling_runner_set(
    source: ObjectSource, target: ScaleSetTarget, ers: Obj | None
) -> Obj | None:
    """The scale set's AutoscalingRunnerSet: named by the target, else the ERS's owner,
    else its scale-set-name label."""
    ars_name = target.ars_name
    if not ars_name and ers is not None:
        owners = owners_of(ers, "AutoscalingRunnerSet")
        ars_name = owners[0] if owners else scale_set_name(ers, target)
    return find_object(source, "AutoscalingRunnerSet", target.runner_namespace, ars_name)


def live_limits(source: ObjectSource, target: ScaleSetTarget, ers: Obj | None) -> tuple[int, int]:
    """(maxRunners, minRunners): the AutoscalingRunnerSet spec wins over the config."""
    ars = autoscaling_runner_set(source, target, ers)
    max_runners, min_runners = target.max_runners, target.min_runners
    if ars is not None:
        spec = ars.get("spec") or {}
        if isinstance(spec.get("maxRunners"), int) and spec["maxRunners"] >= 0:
            max_runners = spec["maxRunners"]
        if isinstance(spec.get("minRunners"), int) and spec["minRunners"] >= 0:
            min_runners = spec["minRunners"]
    return max_runners, min_runners


#: ``status.phase`` of an EphemeralRunnerSet or AutoscalingRunnerSet whose runners rejected
#: the runner spec (a runner exited 7, ARC PRs #4652, #4660).
OUTDATED = "Outdated"


def switched_off(source: ObjectSource, target: ScaleSetTarget, ers: Obj | None) -> str | None:
    """Why ARC has switched this scale set off, or None while it is on.

    A runner pod that exits 7 (the Actions service rejects the runner) makes its
    EphemeralRunner, then the EphemeralRunnerSet, then (0.15, #4652) the AutoscalingRunnerSet
    ``Outdated`` at ``status.phase``; ARC then stops the listener (AutoscalingListener
    ``spec.phase: Stopped``, its pod deleted) and pins the set at zero replicas until the
    runner spec changes (#4660). Between the first ``Outdated`` and that SIGTERM, and if a
    restart races the stop, this listener must neither hold capacity nor take jobs for it."""
    for kind, obj in (
        ("EphemeralRunnerSet", ers),
        ("AutoscalingRunnerSet", autoscaling_runner_set(source, target, ers)),
    ):
        if obj is not None and (obj.get("status") or {}).get("phase") == OUTDATED:
            return f"{kind} {metadata_of(obj).get('name')} status.phase is {OUTDATED}"
    return None


_FINISHED_RUNNER_PHASES = frozenset({"Succeeded", "Failed", "Outdated"})


def runner_view(er: Obj) -> tuple[tuple[str, ...], str | None, str, bool]:
    """An EphemeralRunner's ERS owners, scale-set-name label, name, and whether it is idle."""
    meta = metadata_of(er)
    status = er.get("status") or {}
    # Online (``ready``) and without a job. Not ``phase == Running``: since ARC 0.15 (PR
    # #4646) the listener writes Running on JobStarted, so an idle runner stays Pending.
    idle = (
        bool(status.get("ready"))
        and status.get("phase") not in _FINISHED_RUNNER_PHASES
        and not status.get("jobId")
        and not meta.get("deletionTimestamp")
    )
    owners = tuple(owners_of(er, "EphemeralRunnerSet"))
    return owners, labels_of(er).get(L.LABEL_ARC_SCALE_SET_NAME), meta.get("name", ""), idle


def runner_activity(
    source: ObjectSource, target: ScaleSetTarget, scale_set: str
) -> tuple[frozenset[str], frozenset[str]]:
    """Names of this ERS's EphemeralRunners that are idle (:func:`runner_view`), and of those
    that have a job (``status.jobId``, written by the listener's JobStarted patch under ARC
    0.13-0.15). Read only when hot slots are kept (docs/design.md#hot-runners)."""
    idle: set[str] = set()
    busy: set[str] = set()
    for er in source.list("EphemeralRunner", target.runner_namespace):
        owners, label, name, is_idle = runner_view(er)
        if not (target.ers_name in owners if owners else label == scale_set):
            continue
        if is_idle:
            idle.add(name)
        elif (er.get("status") or {}).get("jobId"):
            busy.add(name)
    return frozenset(idle), frozenset(busy)


def our_runners(
    source: ObjectSource,
    target: ScaleSetTarget,
    scale_set: str,
    view: Callable[[Obj], tuple[tuple[str, ...], str | None, str, bool]] = runner_view,
) -> tuple[set[str], int]:
    """Names of this ERS's EphemeralRunners, and how many are idle (online, no job)."""
    names: set[str] = set()
    idle = 0
    for er in source.list("EphemeralRunner", target.runner_namespace):
        owners, label, name, is_idle = view(er)
        ours = target.ers_name in owners if owners else label == scale_set
        if not ours:
            continue
        names.add(name)
        idle += is_idle
    return names, idle
