"""The ``capacityAware`` settings block (Helm values / listener config), validated at the edge.

Keys are the camelCase names of the Helm values; snake_case is accepted too. Durations
accept seconds (``30``) or a unit suffix (``"30s"``, ``"5m"``, ``"1h"``). A bad value raises
:class:`SettingsError` naming the field, the value and what is allowed; nothing starts
half-configured. Inside the process the reconciler only sees the frozen
:class:`ReconcilerConfig` built by :meth:`CapacityAwareSettings.reconciler_config`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


class SettingsError(ValueError):
    """A settings value is invalid; the message names field, value and what is allowed."""


def _duration_seconds(value: Any) -> Any:
    """Accept 30, 30.0, "30", "30s", "5m", "1h", "500ms"; leave anything else to pydantic."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or a string like '30s', '5m', '1h'")
    if isinstance(value, str):
        match = _DURATION.match(value)
        if not match:
            raise ValueError("a duration is a number of seconds or a string like '30s', '5m', '1h'")
        return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    return value


Seconds = Annotated[float, BeforeValidator(_duration_seconds)]


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
    )


class PriorityClassNames(_Model):
    """Names of the four PriorityClasses of the ladder (values are checked at start-up)."""

    runner_placeholder: str = "arc-placeholder-runner"
    runner: str = "arc-runner"
    workflow_placeholder: str = "arc-placeholder-workflow"
    workflow: str = "arc-workflow"


class HudSettings(_Model):
    """Where queued-job demand comes from (best effort; fails open to the floor)."""

    url: str | None = None
    #: Environment variable holding the ``x-hud-internal-bot`` token (never the token itself).
    token_env: str = "HUD_INTERNAL_BOT_TOKEN"
    timeout: Seconds = Field(default=5.0, gt=0, le=60)
    poll_interval: Seconds = Field(default=30.0, ge=1, le=3600)


class CapacityAwareSettings(_Model):
    """The whole ``capacityAware`` block. Defaults are safe for a first install."""

    enabled: bool = False
    #: Warm pairs kept ready beyond running jobs.
    proactive_capacity: int = Field(default=1, ge=0, le=10_000)
    #: Periodic fallback between watch-triggered reconciles.
    recalculate_interval: Seconds = Field(default=30.0, ge=1, le=3600)
    #: Fraction of the interval added as random jitter so many listeners do not run in lockstep.
    recalculate_jitter: float = Field(default=0.1, ge=0, le=0.5)
    #: Watch events are coalesced for this long before a reconcile runs.
    watch_debounce: Seconds = Field(default=1.0, ge=0, le=60)
    #: A pair not READY this long after it was requested is TIMED_OUT (ICE, limits, quota...).
    placeholder_ready_timeout: Seconds = Field(default=300.0, ge=10, le=86_400)
    #: How long the surviving half of a PREEMPTED pair is protected (runner started -> its
    #: workflow pod takes over the workflow placeholder). Measured in the simulated day: the
    #: workflow pod is created 11.5 s (p50) / 15 s (p99) / 96 s (max) after its runner bound;
    #: 120 s leaves room for a slow runner image pull while a survivor held for 10 min cost
    #: about a tenth of the warm pool's idle CPU-hours.
    survivor_window: Seconds = Field(default=120.0, ge=0, le=86_400)
    #: Requests (= limits) of the workflow placeholder, e.g. {"cpu": "2", "memory": "4Gi"}.
    workflow_resources: dict[str, str] = Field(
        default_factory=lambda: {"cpu": "1", "memory": "2Gi"}
    )
    image: str = "registry.k8s.io/pause:3.10"
    #: Placeholder pods end by themselves after this long (activeDeadlineSeconds), jittered.
    placeholder_lifetime: Seconds = Field(default=4 * 3600.0, ge=60, le=7 * 86_400)
    lifetime_jitter: float = Field(default=0.2, ge=0, le=0.5)
    #: Lease on each placeholder (annotation), renewed by the reconciler at half-life;
    #: expired leases are reaped (orphans of a dead listener instance).
    placeholder_ttl: Seconds = Field(default=1800.0, ge=60, le=86_400)
    priority_classes: PriorityClassNames = Field(default_factory=PriorityClassNames)
    #: The launch ramp follows demand, bounded by maxRunners headroom, NodePool headroom (the
    #: fit estimate) and this node-launch rate: new nodes per minute that our pending pairs may
    #: cause (counted from Karpenter NodeClaims, so the registry/cache storm stays bounded).
    node_launch_rate: float = Field(default=20.0, gt=0, le=10_000)
    #: Pairs requested together so one Karpenter batch fills one node; None = estimate it from
    #: the NodePool's instance types (1 when they are unknown).
    launch_group_size: int | None = Field(default=None, ge=1, le=1_000)
    #: Put ``karpenter.sh/do-not-disrupt: "true"`` on workflow placeholders (opt-in per scale
    #: set, so per NodePool): Karpenter then does not consolidate nodes that hold warm pairs,
    #: which otherwise evicts them, makes us recreate them and launches a new node.
    do_not_disrupt: bool = False
    #: Hard ceilings kept as safety valves (the ramp above is the real bound): pairs
    #: REQUESTED/PARTIAL at once...
    max_pairs_in_flight: int = Field(default=1_000, ge=1, le=10_000)
    #: ...and pairs requested per reconcile step.
    max_requests_per_step: int = Field(default=200, ge=1, le=10_000)
    #: Queued jobs assumed when the HUD is unavailable (added to proactiveCapacity).
    hud_fallback_queued_jobs: int = Field(default=0, ge=0, le=10_000)
    hud: HudSettings = Field(default_factory=HudSettings)
    #: Namespace of the placeholder pods; default (None) = the runner namespace.
    placeholder_namespace: str | None = None
    #: Cut the in-flight long poll short when advertised capacity drops (DESIGN §6).
    cut_poll_on_drop: bool = True
    cut_poll_on_rise: bool = False
    cut_poll_debounce: Seconds = Field(default=0.25, ge=0, le=10)

    @model_validator(mode="after")
    def _check_relations(self) -> CapacityAwareSettings:
        if self.max_requests_per_step > self.max_pairs_in_flight:
            raise ValueError(
                "maxRequestsPerStep must be <= maxPairsInFlight "
                f"(got {self.max_requests_per_step} > {self.max_pairs_in_flight})"
            )
        if self.placeholder_ttl <= self.recalculate_interval:
            raise ValueError(
                "placeholderTtl must exceed recalculateInterval so leases are renewed in time "
                f"(got {self.placeholder_ttl} <= {self.recalculate_interval})"
            )
        if not self.workflow_resources:
            raise ValueError("workflowResources needs at least one resource, e.g. {cpu: '1'}")
        return self

    def reconciler_config(self, scale_set: str) -> ReconcilerConfig:
        return ReconcilerConfig(
            scale_set=scale_set,
            proactive_capacity=self.proactive_capacity,
            placeholder_ready_timeout=self.placeholder_ready_timeout,
            survivor_window=self.survivor_window,
            placeholder_ttl=self.placeholder_ttl,
            max_pairs_in_flight=self.max_pairs_in_flight,
            max_requests_per_step=self.max_requests_per_step,
            hud_fallback_queued_jobs=self.hud_fallback_queued_jobs,
            node_launch_rate=self.node_launch_rate,
            launch_group_size=self.launch_group_size,
        )


@dataclass(frozen=True, slots=True)
class ReconcilerConfig:
    """Everything decide needs, in one frozen object (timeouts included)."""

    scale_set: str
    proactive_capacity: int = 1
    placeholder_ready_timeout: float = 300.0
    survivor_window: float = 120.0
    placeholder_ttl: float = 1800.0
    max_pairs_in_flight: int = 1_000
    max_requests_per_step: int = 200
    hud_fallback_queued_jobs: int = 0
    #: New nodes per minute our pending pairs may cause (see CapacityAwareSettings).
    node_launch_rate: float = 20.0
    launch_group_size: int | None = None

    @property
    def lease_renew_before(self) -> float:
        """Renew a lease once less than half of it is left."""
        return self.placeholder_ttl / 2


def parse_capacity_aware(data: Mapping[str, Any] | None, *, where: str) -> CapacityAwareSettings:
    """Validate a ``capacityAware`` mapping; ``where`` names its origin for error messages."""
    try:
        return CapacityAwareSettings.model_validate(dict(data or {}))
    except ValidationError as exc:
        message = format_validation_error(exc, where=where, root="capacityAware")
        raise SettingsError(message) from None


def format_validation_error(exc: ValidationError, *, where: str, root: str) -> str:
    """One line per problem: ``<where>: <root>.<path>: got <value>; <what is allowed>``."""
    lines = []
    for err in exc.errors(include_url=False):
        path = ".".join(str(p) for p in (root, *err["loc"]))
        got = err.get("input")
        shown = "<missing>" if err["type"] == "missing" else _short_repr(got)
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown key (check spelling; keys are camelCase)"
        if not err["loc"]:  # a rule across fields: the message names them itself
            lines.append(f"{where}: {path}: {message}")
            continue
        lines.append(f"{where}: {path}: got {shown}; {message}")
    return "\n".join(lines)


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
