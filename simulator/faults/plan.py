"""Fault plans: the kinds, their parameters, and loading a plan (sidecar files)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from reconciler.settings_types import Seconds
from simulator.faces.actions import ROUTES


class FaultPlanError(ValueError):
    """A fault plan is unreadable or invalid; the message names file, field and reason."""


class FaultKind(StrEnum):
    K8S_5XX = "k8s_5xx"
    K8S_429 = "k8s_429"
    K8S_TIMEOUT = "k8s_timeout"
    K8S_WATCH_DROP = "k8s_watch_drop"
    K8S_GONE = "k8s_410"
    K8S_SLOW = "k8s_slow"
    ACTIONS_5XX = "actions_5xx"
    ACTIONS_429 = "actions_429"
    ACTIONS_401 = "actions_401"
    ACTIONS_409 = "actions_409"
    ACTIONS_EMPTY_200 = "actions_empty_200"
    ACTIONS_MALFORMED = "actions_malformed"
    ACTIONS_RESET = "actions_reset"
    HUD_DOWN = "hud_down"
    HUD_SLOW = "hud_slow"
    HUD_MALFORMED = "hud_malformed"
    HUD_ABSURD = "hud_absurd"
    NODE_LOSS = "node_loss"
    PLACEHOLDER_DELETED = "placeholder_deleted"
    CONSOLIDATION = "karpenter_consolidation"
    LISTENER_CRASH = "listener_crash"
    SECOND_LISTENER = "second_listener"
    CLOCK_JUMP = "clock_jump"
    FLEET_STORE_DOWN = "fleet_store_down"


@dataclass(frozen=True)
class KindInfo:
    meaning: str
    #: Keys allowed in ``params`` for this kind.
    params: frozenset[str]
    #: "instant" faults happen once at ``start``; "window" faults last from start to end.
    shape: Literal["instant", "window"]


def _info(meaning: str, shape: Literal["instant", "window"], *params: str) -> KindInfo:
    return KindInfo(meaning, frozenset(params), shape)


K = FaultKind
KIND_INFO: dict[FaultKind, KindInfo] = {
    K.K8S_5XX: _info("Kubernetes API answers 5xx", "window", "status", "ratio"),
    K.K8S_429: _info(
        "Kubernetes API throttles (429 + Retry-After)", "window", "retry_after", "ratio"
    ),
    K.K8S_TIMEOUT: _info(
        "Kubernetes API holds requests without answering", "window", "hold", "ratio"
    ),
    K.K8S_WATCH_DROP: _info(
        "open watch streams are cut (every `every` s)", "window", "every", "hold"
    ),
    K.K8S_GONE: _info("watch history compacted: resuming answers 410 Gone", "instant"),
    K.K8S_SLOW: _info("Kubernetes API answers slowly", "window", "delay"),
    K.ACTIONS_5XX: _info("Actions service answers 5xx", "instant", "status", "route", "times"),
    K.ACTIONS_429: _info(
        "Actions service throttles (429 + Retry-After)", "instant", "retry_after", "route", "times"
    ),
    K.ACTIONS_401: _info("Actions tokens expire (401)", "instant", "which"),
    K.ACTIONS_409: _info("another session holds the scale set (409)", "window"),
    K.ACTIONS_EMPTY_200: _info("GetMessage answers 200 with an empty body", "instant", "times"),
    K.ACTIONS_MALFORMED: _info(
        "Actions answers 200 with a body that is not JSON", "instant", "route", "times"
    ),
    K.ACTIONS_RESET: _info(
        "connection reset in the middle of the long poll", "instant", "route", "times"
    ),
    K.HUD_DOWN: _info("HUD answers an error status", "window", "status"),
    K.HUD_SLOW: _info("HUD answers after a delay", "window", "delay"),
    K.HUD_MALFORMED: _info("HUD answers something that is not rows", "window", "shape"),
    K.HUD_ABSURD: _info("HUD answers absurd counts (negative, 10^9)", "window", "value"),
    K.NODE_LOSS: _info("nodes hosting placeholders vanish", "instant", "count"),
    K.PLACEHOLDER_DELETED: _info(
        "placeholder pods deleted behind the listener's back", "instant", "count"
    ),
    K.CONSOLIDATION: _info("Karpenter consolidates nodes hosting placeholders", "instant", "count"),
    K.LISTENER_CRASH: _info(
        "the listener process dies mid-reconcile and restarts",
        "instant",
        "restart_after",
        "after_writes",
    ),
    K.SECOND_LISTENER: _info("a second listener runs for the same scale set", "window"),
    K.CLOCK_JUMP: _info("the listener's clock jumps (forward or back)", "instant", "seconds"),
    K.FLEET_STORE_DOWN: _info(
        "the fleet's shared metric store answers errors and records nothing", "window"
    ),
}

_KIND_VALUES = frozenset(k.value for k in FaultKind)

#: The Actions face's routes: one list, owned by the face that answers them.
ACTIONS_ROUTES = ROUTES


class FaultParams(BaseModel):
    """Every parameter any kind takes (each kind allows a subset, see :data:`KIND_INFO`)."""

    # NaN and infinities are refused: NaN compares false with everything (a NaN ``end`` once
    # slipped past the end > start rule; tests/fuzz/regressions/fault_plan_nan_end.json).
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    status: int | None = Field(default=None, ge=400, le=599)
    #: Fraction of requests hit while the fault is active (deterministic per seed).
    ratio: float = Field(default=1.0, gt=0, le=1)
    retry_after: Seconds | None = Field(default=None, ge=0, le=3600)
    delay: Seconds | None = Field(default=None, gt=0, le=600)
    hold: Seconds | None = Field(default=None, gt=0, le=600)
    every: Seconds | None = Field(default=None, gt=0, le=3600)
    count: int = Field(default=1, ge=1, le=1000)
    times: int = Field(default=1, ge=1, le=1000)
    route: Literal[ACTIONS_ROUTES] | None = None  # type: ignore[valid-type]
    shape: Literal["not-json", "not-a-list", "wrong-types"] | None = None
    value: int | None = Field(default=None, ge=-(10**12), le=10**12)
    seconds: float | None = Field(default=None, ge=-86_400, le=86_400)
    restart_after: Seconds | None = Field(default=None, ge=0, le=86_400)
    #: listener_crash: die after this many placeholder writes of the step (0 = before any).
    after_writes: int | None = Field(default=None, ge=0, le=1000)
    which: Literal["queue", "admin"] | None = None


class Fault(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    kind: FaultKind
    start: Seconds = Field(ge=0)
    end: Seconds | None = None
    params: FaultParams = Field(default_factory=FaultParams)

    @model_validator(mode="before")
    @classmethod
    def _params_of_kind(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        params = data.get("params")
        kind = data.get("kind")
        # ``kind`` may be anything a YAML file holds (a list is unhashable): check the type.
        if isinstance(params, Mapping) and isinstance(kind, str) and kind in _KIND_VALUES:
            allowed = KIND_INFO[FaultKind(kind)].params
            unknown = sorted(str(k) for k in params if k not in allowed)
            if unknown:
                raise ValueError(
                    f"params {', '.join(unknown)} not allowed for kind {kind}; allowed: "
                    f"{', '.join(sorted(allowed)) or 'none'}"
                )
        return data

    @model_validator(mode="after")
    def _window(self) -> Fault:
        if self.end is not None and self.end <= self.start:
            raise ValueError(f"end ({self.end}) must be after start ({self.start})")
        if self.end is not None and KIND_INFO[self.kind].shape == "instant":
            raise ValueError(f"{self.kind} happens at an instant: give start only, not end")
        return self

    @property
    def instant(self) -> bool:
        return KIND_INFO[self.kind].shape == "instant"

    def active_at(self, elapsed: float) -> bool:
        if self.instant:
            return elapsed == self.start
        return self.start <= elapsed and (self.end is None or elapsed < self.end)

    def label(self) -> str:
        """``kind@start[-end]`` for logs and reports."""
        span = f"{self.start:g}s" if self.end is None else f"{self.start:g}-{self.end:g}s"
        return f"{self.kind.value}@{span}"


class FaultPlan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    faults: list[Fault] = Field(default_factory=list)

    def of(self, *kinds: FaultKind) -> list[Fault]:
        return [f for f in self.faults if f.kind in kinds]

    def active(self, kind: FaultKind, elapsed: float) -> list[Fault]:
        return [f for f in self.faults if f.kind is kind and f.active_at(elapsed)]

    @property
    def kinds(self) -> frozenset[FaultKind]:
        return frozenset(f.kind for f in self.faults)


# --- loading -------------------------------------------------------------------------------


def _path(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<top level>"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _format(exc: ValidationError, where: str) -> str:
    lines = []
    kinds = ", ".join(k.value for k in FaultKind)
    for err in exc.errors(include_url=False):
        loc = [p for p in err["loc"] if not (isinstance(p, str) and "[" in p)]
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing":
            message = "required field is missing"
        elif err["type"] == "extra_forbidden":
            message = "unknown field (a fault has kind, start, end, params)"
        elif err["type"] == "enum":
            message = f"unknown fault kind; one of: {kinds}"
            message += f" (got {_shown(err.get('input'))})"
        else:
            message += f" (got {_shown(err.get('input'))})"
        lines.append(f"{where}: {_path(loc)}: {message}")
    return "\n".join(lines)


def parse_fault_plan(data: Any, *, where: str) -> FaultPlan:
    """A plan from a decoded document: ``{faults: [...]}`` (other top-level keys, e.g. a whole
    scenario, are ignored), a bare list, or ``None`` (no faults)."""
    if data is None:
        return FaultPlan()
    if isinstance(data, Mapping):
        if "faults" not in data:
            raise FaultPlanError(
                f"{where}: no 'faults' key (expected faults: [{{kind, start, end, params}}, ...]])"
            )
        data = data["faults"]
    if data is None:
        return FaultPlan()
    if not isinstance(data, list):
        raise FaultPlanError(
            f"{where}: faults must be a list of {{kind, start, end, params}} (got "
            f"{type(data).__name__})"
        )
    try:
        return FaultPlan.model_validate({"faults": data})
    except ValidationError as exc:
        raise FaultPlanError(_format(exc, where)) from None


def load_fault_plan(path: str | Path) -> FaultPlan:
    file = Path(path)
    try:
        text = file.read_bytes().decode("utf-8")
    except OSError as exc:
        raise FaultPlanError(f"{file}: cannot read the fault plan: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise FaultPlanError(f"{file}: not UTF-8 text (byte {exc.start})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise FaultPlanError(f"{file}: {at}not valid YAML") from None
    return parse_fault_plan(data, where=str(file))


def sidecar_path(scenario: str | Path) -> Path:
    """``chaos.yaml`` -> ``chaos.faults.yaml`` (same directory)."""
    path = Path(scenario)
    return path.with_name(f"{path.stem}.faults.yaml")


def plan_for_scenario(scenario: str | Path) -> FaultPlan:
    """The scenario's sidecar plan, or an empty plan when it has none."""
    sidecar = sidecar_path(scenario)
    return load_fault_plan(sidecar) if sidecar.exists() else FaultPlan()
