"""The blocks a scenario file is made of (:mod:`simulator.scenarios.scenario` assembles and
loads them): clusters, scale sets, job streams, HUD outages, ARC and listener timings, and the
strategy settings. Validated at the edge with pydantic; unknown keys are errors."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from providers.kubernetes.placement.resources import QuantityError, quantity
from reconciler.settings import CapacityAwareSettings
from reconciler.settings_types import Seconds
from simulator.cluster import ClusterSpec
from simulator.cluster.spec import default_catalog

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _quantities(values: dict[str, Any]) -> dict[str, str]:
    out = {}
    for name, value in values.items():
        try:
            quantity(value, where=name)
        except QuantityError as exc:
            raise ValueError(str(exc)) from None
        out[name] = str(value)
    return out


class PodShape(StrictModel):
    """Requests (= limits for the workflow pod) and placement of a runner or workflow pod."""

    requests: dict[str, str]
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[dict[str, Any]] = Field(default_factory=list)

    @field_validator("requests", mode="before")
    @classmethod
    def _requests(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            return v  # pydantic reports the type error
        if not v:
            raise ValueError("needs at least one resource, e.g. {cpu: '500m', memory: 1Gi}")
        return _quantities(v)

    def placement(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.node_selector:
            out["nodeSelector"] = dict(self.node_selector)
        if self.tolerations:
            out["tolerations"] = [dict(t) for t in self.tolerations]
        return out


class MaxRunnersChange(StrictModel):
    """At ``at`` a user sets ``maxRunners`` on the AutoscalingRunnerSet (0 = drain)."""

    at: Seconds = Field(ge=0)
    max_runners: int = Field(ge=0)


class ScaleSetModel(StrictModel):
    name: str
    cluster: str
    namespace: str = "arc-runners"
    labels: list[str] = Field(min_length=1)
    min_runners: int = Field(default=0, ge=0)
    max_runners: int = Field(ge=0)
    container_mode: Literal["kubernetes-novolume", "kubernetes"] = "kubernetes-novolume"
    runner: PodShape
    workflow: PodShape
    #: Warm slots for the ``overprovision`` strategy (default: strategies.overprovision.slots).
    warm_slots: int | None = Field(default=None, ge=0)
    changes: list[MaxRunnersChange] = Field(default_factory=list)
    #: This scale set's own ``capacityAware`` keys, merged over ``strategies.capacity_aware``
    #: (merge rule and validation: simulator/scenarios/overrides.py).
    capacity_aware: dict[str, Any] | None = None

    @field_validator("name", "namespace")
    @classmethod
    def _dns(cls, v: str) -> str:
        if len(v) > 40 or not _DNS_LABEL.match(v):
            raise ValueError("must be a DNS label of at most 40 characters (a-z, 0-9, '-')")
        return v

    @model_validator(mode="after")
    def _min_max(self) -> ScaleSetModel:
        if self.min_runners > self.max_runners:
            raise ValueError(f"min_runners ({self.min_runners}) > max_runners ({self.max_runners})")
        return self


class ClusterModel(StrictModel):
    name: str
    spec: ClusterSpec

    @field_validator("name")
    @classmethod
    def _dns(cls, v: str) -> str:
        if not _DNS_LABEL.match(v):
            raise ValueError("must be a DNS label (a-z, 0-9, '-')")
        return v

    @model_validator(mode="before")
    @classmethod
    def _default_catalog(cls, data: Any) -> Any:
        # The instance type catalog is long and rarely changes: default to the built-in one.
        if isinstance(data, dict) and isinstance(data.get("spec"), dict):
            spec = data["spec"]
            if "instance_types" not in spec:
                data = {**data, "spec": {**spec, "instance_types": default_catalog()}}
        return data


class Duration(StrictModel):
    median: Seconds = Field(gt=0)
    sigma: float = Field(default=0.5, ge=0, le=3)
    min: Seconds = Field(default=30.0, gt=0)
    max: Seconds = Field(default=6 * 3600.0, gt=0)

    @model_validator(mode="after")
    def _order(self) -> Duration:
        if not self.min <= self.median <= self.max:
            raise ValueError(
                f"need min <= median <= max (got {self.min}, {self.median}, {self.max})"
            )
        return self


class RateStep(StrictModel):
    at: Seconds = Field(ge=0)
    per_hour: float = Field(ge=0)


class Burst(StrictModel):
    at: Seconds = Field(ge=0)
    count: int = Field(ge=1, le=100_000)
    over: Seconds = Field(default=0.0, ge=0)


class JobStream(StrictModel):
    """Jobs with the same labels: a rate (or rate schedule), bursts, and/or a CSV trace."""

    labels: list[str] = Field(min_length=1)
    name: str = "build"
    repository: str = "acme/app"
    duration: Duration | None = None
    per_hour: float | None = Field(default=None, ge=0)
    schedule: list[RateStep] = Field(default_factory=list)
    #: Arrivals stop at this offset (default: the end of the scenario).
    until: Seconds | None = Field(default=None, ge=0)
    bursts: list[Burst] = Field(default_factory=list)
    #: CSV trace path, relative to the scenario file.
    trace: str | None = None

    @model_validator(mode="after")
    def _shape(self) -> JobStream:
        if self.per_hour is not None and self.schedule:
            raise ValueError("give either per_hour or schedule, not both")
        generated = self.per_hour is not None or bool(self.schedule) or bool(self.bursts)
        if not generated and self.trace is None:
            raise ValueError("a stream needs per_hour, schedule, bursts or trace")
        if generated and self.duration is None:
            raise ValueError("duration is required for generated jobs (per_hour/schedule/bursts)")
        return self

    @field_validator("trace")
    @classmethod
    def _trace_exists(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is None:
            return v
        base = (info.context or {}).get("base_dir")
        path = Path(v) if base is None else Path(base) / v
        if not path.is_file():
            raise ValueError(f"trace file {str(path)!r} does not exist")
        return str(path)


class Outage(StrictModel):
    start: Seconds = Field(ge=0)
    end: Seconds

    @model_validator(mode="after")
    def _order(self) -> Outage:
        if self.end <= self.start:
            raise ValueError(f"end ({self.end}) must be after start ({self.start})")
        return self


class HudModel(StrictModel):
    outages: list[Outage] = Field(default_factory=list)


class ArcModel(StrictModel):
    #: Which ARC release the world runs (docs/arc-versions.md): 0.15 by default; 0.13 and
    #: 0.14 derive the runner's Running phase from its pod and scale up without #4642.
    version: Literal["0.13", "0.14", "0.15"] = "0.15"
    #: False: the listener sends the 0.14 JobStarted patch (no phase) whatever the world
    #: runs; for measuring what not writing the phase costs in a 0.15 world.
    listener_sets_phase: bool = True
    controller_delay: Seconds = Field(default=0.5, ge=0)
    runner_startup: tuple[Seconds, Seconds] = (3.0, 6.0)
    hook_delay: tuple[Seconds, Seconds] = (2.0, 5.0)
    prepare_job_timeout: Seconds = Field(default=600.0, gt=0)
    runner_exit: Seconds = Field(default=1.0, ge=0)


class ActionsModel(StrictModel):
    """The simulated Actions service (:mod:`simulator.workload.actions`)."""

    #: ``capacity``: a scale set is assigned at most what its latest poll advertised, in
    #: total, and idle runners take jobs only within that room (docs/semantics.md cites the
    #: evidence). ``idle-runners``: the older world, where each idle registered runner adds
    #: one to the room whatever was advertised; kept to measure what the difference moves.
    broker: Literal["capacity", "idle-runners"] = "capacity"


class ListenerModel(StrictModel):
    long_poll: Seconds = Field(default=50.0, gt=0)
    handling_latency: Seconds = Field(default=0.05, ge=0)
    restart_delay: Seconds = Field(default=5.0, ge=0)


class OverprovisionModel(StrictModel):
    #: Warm slots (runner-sized + workflow-sized pause pod) per scale set.
    slots: int = Field(default=2, ge=0)
    recreate_delay: Seconds = Field(default=1.0, ge=0)


class CapacityAwareModel(StrictModel):
    """Simulator-side knobs of the capacity-aware strategy (the block itself is ``settings``)."""

    #: Pass a NodePool/free-allocatable fit estimate to the reconciler (bounds launches).
    fit_estimate: bool = True
    #: Recompute the fit estimate at most this often (it scans every pod).
    fit_refresh: Seconds = Field(default=10.0, ge=0)
    #: Install the opt-in placeholder PodDisruptionBudget (config/placeholder-pdb.yaml) for
    #: every scale set, as a user would apply it (docs/benchmarks-pairs.md).
    placeholder_pdb: bool = False


class Strategies(StrictModel):
    overprovision: OverprovisionModel = Field(default_factory=OverprovisionModel)
    capacity_aware: CapacityAwareSettings = Field(
        default_factory=lambda: CapacityAwareSettings(enabled=True)
    )
    capacity_aware_sim: CapacityAwareModel = Field(default_factory=CapacityAwareModel)
