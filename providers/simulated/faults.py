"""Fault injection: a fault plan loadable from a scenario's sidecar file, and the hooks that
apply each fault to the simulated world (virtual time) or to its HTTP faces (real time).

A plan is a list of ``{kind, start, end, params}``: ``start``/``end`` are offsets from the
start of the run (seconds or ``"30s"``, ``"5m"``, ``"1h"``); ``end`` omitted means an instant
fault (node loss, crash, clock jump) or "until the end of the run" for a window fault.
``params`` are checked per kind (unknown keys and out-of-range values are errors).

The scenario model (:mod:`providers.simulated.scenario`) forbids unknown keys and has no
``faults`` key, so a scenario's plan lives beside it: ``<name>.faults.yaml``
(:func:`sidecar_path`, :func:`plan_for_scenario`); a document with a top-level ``faults`` key
or a bare list is accepted too. A bad plan raises :class:`FaultPlanError`, one line per
problem: ``<file>: faults[2].params.status: <reason> (got <value>)``.

Where each kind is applied (see :data:`KIND_INFO` for the one-line meaning of each):

- ``k8s_*``: over HTTP by :class:`providers.simulated.k8s_fault_proxy.K8sFaultProxy` in front
  of the Kubernetes face; in virtual time by :class:`ApiFaultGate` (writes fail or are slow)
  and :class:`StaleSource` (a dropped watch or a 410 leaves the cache stale until it relists).
- ``actions_*``: over HTTP by :func:`apply_actions_fault` (the Actions face's own knobs). The
  virtual-time listener has no HTTP, so these are not applied in virtual time.
- ``hud_*``: over HTTP by :func:`apply_hud_fault` (the HUD face's knobs); in virtual time by
  :class:`DemandFaults`, which turns them into what :class:`providers.hud.client.HudDemandSource`
  reports for them (``Demand(None, error)``; a slow answer keeps the previous demand).
- cluster faults (``node_loss``, ``placeholder_deleted``, ``karpenter_consolidation``): in
  virtual time by :func:`lose_placeholder_nodes`, :func:`delete_placeholders`,
  :func:`consolidate_placeholder_nodes`.
- ``listener_crash``, ``second_listener``, ``clock_jump``: in virtual time by
  :class:`WorldChaos` (crash = the reconciler object is dropped mid-step and a new instance
  starts after ``restart_after``; clock jump = :class:`SkewClock`).

:class:`FaultScheduler` puts a plan on the world's :class:`EventLoop`; :class:`WorldChaos` wires
a plan into a :class:`providers.simulated.world.World` running the ``capacity-aware`` strategy.
Partial: ``WorldChaos`` reaches into ``strategies.CapacityAwareDriver`` attributes (``reconciler``,
``writer``, ``source``, ``builder``, ``instance``, ``demand``) because the world runner has no
fault hooks yet; see its docstring for the hooks the runner should offer instead.
"""

from __future__ import annotations

import contextlib
import copy
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from providers.kubernetes import labels as L
from providers.simulated.actions_face import ROUTES
from providers.simulated.engine import EventLoop
from providers.simulated.store import Obj, ObjectStore, StoreError
from reconciler.ports import PairSpec, PlaceholderWriter, PodRef
from reconciler.settings import Seconds
from reconciler.snapshot import Demand


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


# --- scheduling in virtual time -------------------------------------------------------------


class FaultHandler(Protocol):
    def start(self, fault: Fault) -> None: ...

    def end(self, fault: Fault) -> None: ...


class FaultScheduler:
    """Puts every fault of a plan on the loop: ``handler.start`` at ``start``, ``handler.end``
    at ``end`` (window faults with an end). Faults of a kind without a handler are recorded
    in :attr:`skipped` (so a report can say what was not applied, never silently)."""

    def __init__(
        self, loop: EventLoop, plan: FaultPlan, handlers: Mapping[FaultKind, FaultHandler]
    ) -> None:
        self.loop = loop
        self.plan = plan
        self.handlers = dict(handlers)
        self.applied: list[tuple[float, str, Fault]] = []
        self.skipped: list[Fault] = []

    def schedule(self) -> None:
        start = self.loop.start
        for fault in self.plan.faults:
            handler = self.handlers.get(fault.kind)
            if handler is None:
                self.skipped.append(fault)
                continue
            self.loop.call_at(start + fault.start, self._run, handler.start, fault, "start")
            if fault.end is not None:
                self.loop.call_at(start + fault.end, self._run, handler.end, fault, "end")

    def _run(self, call: Callable[[Fault], None], fault: Fault, what: str) -> None:
        self.applied.append((self.loop.now() - self.loop.start, what, fault))
        call(fault)


class Hook:
    """A :class:`FaultHandler` from two callables (``end`` optional)."""

    def __init__(
        self, start: Callable[[Fault], None], end: Callable[[Fault], None] | None = None
    ) -> None:
        self._start = start
        self._end = end

    def start(self, fault: Fault) -> None:
        self._start(fault)

    def end(self, fault: Fault) -> None:
        if self._end is not None:
            self._end(fault)


# --- virtual-time hooks: the listener's view -------------------------------------------------


class SkewClock:
    """A Clock reading ``base() + offset``; ``jump`` moves the offset (NTP step, VM resume)."""

    def __init__(self, base: Callable[[], float]) -> None:
        self._base = base
        self.offset = 0.0

    def now(self) -> float:
        return self._base() + self.offset

    def jump(self, seconds: float) -> None:
        self.offset += seconds


class SimulatedApiError(Exception):
    """What the Kubernetes writer raises for an injected API fault (status as the API's)."""

    def __init__(self, status: int, reason: str) -> None:
        self.status = status
        self.reason = reason
        super().__init__(f"injected Kubernetes API fault: HTTP {status} {reason}")


class ApiFaultGate:
    """The Kubernetes API's health as seen by the listener's writes, in virtual time.

    ``check()`` raises :class:`SimulatedApiError` while a 5xx / 429 / timeout window is active
    (for the ``ratio`` of calls, drawn from ``rng``); ``delay()`` is the extra latency of an
    active ``k8s_slow`` window.
    """

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.active: list[Fault] = []
        self.failed = 0

    def start(self, fault: Fault) -> None:
        self.active.append(fault)

    def end(self, fault: Fault) -> None:
        with contextlib.suppress(ValueError):
            self.active.remove(fault)

    def check(self) -> None:
        for fault in self.active:
            if fault.kind is FaultKind.K8S_SLOW or self.rng.random() >= fault.params.ratio:
                continue
            self.failed += 1
            if fault.kind is FaultKind.K8S_5XX:
                raise SimulatedApiError(fault.params.status or 503, "ServiceUnavailable")
            if fault.kind is FaultKind.K8S_429:
                raise SimulatedApiError(429, "TooManyRequests")
            if fault.kind is FaultKind.K8S_TIMEOUT:
                raise SimulatedApiError(504, "Timeout")

    def delay(self) -> float:
        return sum(f.params.delay or 1.0 for f in self.active if f.kind is FaultKind.K8S_SLOW)


class FaultyWriter:
    """A :class:`PlaceholderWriter` whose calls go through an :class:`ApiFaultGate`.

    Like :class:`providers.kubernetes.writer.KubernetesPlaceholderWriter`, a failed call is
    counted (:attr:`failed`) and dropped, never raised: the subscriber goes on with the other
    pairs and the next snapshot shows what did not happen. While the API is slow the call
    lands after the delay. Granularity is one writer call (a pair's two creates fail
    together), coarser than the real writer's per-pod calls.
    """

    def __init__(self, inner: PlaceholderWriter, gate: ApiFaultGate, loop: EventLoop) -> None:
        self.inner = inner
        self.gate = gate
        self.loop = loop
        self.failed = 0

    def _call(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            self.gate.check()
        except SimulatedApiError:
            self.failed += 1
            return
        delay = self.gate.delay()
        if delay > 0:
            self.loop.call_later(delay, fn, *args)
        else:
            fn(*args)

    def create_pair(self, spec: PairSpec) -> None:
        self._call(self.inner.create_pair, spec)

    def delete_pods(self, pods: Sequence[PodRef]) -> None:
        self._call(self.inner.delete_pods, list(pods))

    def renew_lease(self, pods: Sequence[PodRef], expires_at: float) -> None:
        self._call(self.inner.renew_lease, list(pods), expires_at)


class ObjectSource(Protocol):
    def list(self, kind: str, namespace: str | None = None) -> Iterable[Obj]: ...


class StaleSource:
    """An ObjectSource that can go stale: what a watch-fed cache holds while its watches are
    down (dropped, or answering 410 until the relist). ``freeze()`` keeps a deep copy of what
    the inner source shows; ``thaw()`` goes live again (the relist)."""

    def __init__(self, inner: ObjectSource, clock: Callable[[], float] | None = None) -> None:
        self.inner = inner
        self._frozen: dict[tuple[str, str | None], list[Obj]] | None = None
        self._depth = 0
        self._clock = clock
        self._since: float | None = None

    def stale_for(self) -> float:
        """Like ``KubeCache.stale_for``: seconds since the watches stopped answering."""
        if self._since is None or self._clock is None:
            return 0.0
        return self._clock() - self._since

    @property
    def stale(self) -> bool:
        return self._frozen is not None

    def freeze(self, fault: Fault | None = None) -> None:
        self._depth += 1
        if self._frozen is None:
            self._frozen = {}
            self._since = self._clock() if self._clock is not None else None

    def thaw(self, fault: Fault | None = None) -> None:
        self._depth = max(0, self._depth - 1)
        if self._depth == 0:
            self._frozen = None
            self._since = None

    def list(self, kind: str, namespace: str | None = None) -> list[Obj]:
        frozen = self._frozen
        if frozen is None:
            return list(self.inner.list(kind, namespace))
        key = (kind, namespace)
        if key not in frozen:
            # First read of this kind since the freeze: what the cache held at that moment
            # is (to within one event) what the store held at the first read.
            frozen[key] = copy.deepcopy(list(self.inner.list(kind, namespace)))
        return frozen[key]


class DemandFaults:
    """HUD faults in virtual time, as the production HUD poller reports them.

    ``hud_down``/``hud_malformed``/``hud_absurd``: ``Demand(None, error)`` (HudClient rejects
    them: see the HTTP fault tests); ``hud_slow``: the answer is late, so the previous demand
    stays in force.
    """

    def __init__(self) -> None:
        self.active: list[Fault] = []
        self._last: Demand | None = None

    def start(self, fault: Fault) -> None:
        self.active.append(fault)

    def end(self, fault: Fault) -> None:
        with contextlib.suppress(ValueError):
            self.active.remove(fault)

    def filter(self, demand: Demand) -> Demand:
        kinds = {f.kind for f in self.active}
        for kind, error in (
            (FaultKind.HUD_DOWN, "HUD http error: HUD answered HTTP 503"),
            (FaultKind.HUD_MALFORMED, "HUD decode error: answer is not JSON"),
            (FaultKind.HUD_ABSURD, "HUD decode error: num_queued_jobs outside 0..1000000"),
        ):
            if kind in kinds:
                return Demand(queued_jobs=None, error=error)
        if FaultKind.HUD_SLOW in kinds and self._last is not None:
            return self._last
        self._last = demand
        return demand


# --- virtual-time hooks: the cluster ---------------------------------------------------------


def placeholder_pods(store: ObjectStore, scale_set: str) -> list[Obj]:
    return [
        p
        for p in store.list("Pod")
        if (p["metadata"].get("labels") or {}).get(L.LABEL_SCALE_SET) == scale_set
    ]


def _placeholder_nodes(store: ObjectStore, scale_set: str) -> list[str]:
    nodes = {(p.get("spec") or {}).get("nodeName") for p in placeholder_pods(store, scale_set)}
    return sorted(n for n in nodes if n)


def lose_placeholder_nodes(
    cluster: Any, store: ObjectStore, rng: random.Random, scale_set: str, count: int
) -> list[str]:
    """``count`` nodes hosting this scale set's placeholders vanish (their pods with them)."""
    nodes = _placeholder_nodes(store, scale_set)
    chosen = rng.sample(nodes, min(count, len(nodes)))
    for name in chosen:
        cluster.lose_node(name, reason="node_lost")
    return chosen


def delete_placeholders(
    store: ObjectStore, rng: random.Random, scale_set: str, count: int
) -> list[str]:
    """Someone (a human, a policy engine) deletes ``count`` placeholder pods directly."""
    pods = [
        p for p in placeholder_pods(store, scale_set) if not p["metadata"].get("deletionTimestamp")
    ]
    chosen = rng.sample(pods, min(count, len(pods)))
    names = []
    for pod in chosen:
        meta = pod["metadata"]
        with contextlib.suppress(StoreError):
            store.delete("Pod", meta["namespace"], meta["name"])
            names.append(meta["name"])
    return names


def consolidate_placeholder_nodes(
    cluster: Any, store: ObjectStore, rng: random.Random, scale_set: str, count: int
) -> list[str]:
    """Karpenter disrupts ``count`` Karpenter nodes hosting placeholders: disrupted taint, then
    eviction of every pod through the eviction API (DisruptionTarget, graceful delete).

    Uses the simulated Karpenter's own termination path (``cluster.lifecycle``), which the
    cluster package keeps internal; static nodes are never consolidated.
    """
    lifecycle = cluster.lifecycle
    nodes = [n for n in _placeholder_nodes(store, scale_set) if n in lifecycle.claims]
    chosen = rng.sample(nodes, min(count, len(nodes)))
    for name in chosen:
        lifecycle.add_disrupted_taint(name)
        lifecycle.terminate(name, "consolidated")
    return chosen


# --- HTTP faces (real time) -------------------------------------------------------------------


def apply_actions_fault(face: Any, fault: Fault) -> None:
    """Arm the Actions face (:class:`providers.simulated.actions_face.ActionsFace`) for one
    fault; ``actions_409`` lasts until :func:`clear_actions_fault`."""
    from providers.simulated.actions_face import Fault as Answer

    p = fault.params
    route = p.route or "get_message"
    kind = fault.kind
    if kind is FaultKind.ACTIONS_5XX:
        face.fail_next(route, Answer.server_error(p.status or 503), times=p.times)
    elif kind is FaultKind.ACTIONS_429:
        retry_after = f"{p.retry_after if p.retry_after is not None else 1:g}"
        face.fail_next(route, Answer.too_many_requests(retry_after), times=p.times)
    elif kind is FaultKind.ACTIONS_401:
        if p.which == "admin":
            face.expire_admin_tokens()
        else:
            face.expire_queue_tokens()
    elif kind is FaultKind.ACTIONS_409:
        for scale_set_id in face.scale_sets:
            face.hold_session(scale_set_id)
    elif kind is FaultKind.ACTIONS_EMPTY_200:
        face.fail_next("get_message", Answer.empty_ok(), times=p.times)
    elif kind is FaultKind.ACTIONS_MALFORMED:
        face.fail_next(route, Answer.garbage(), times=p.times)
    elif kind is FaultKind.ACTIONS_RESET:
        face.fail_next(route, Answer.reset(), times=p.times)
    else:
        raise ValueError(f"{kind} is not an Actions-service fault")


def clear_actions_fault(face: Any, fault: Fault) -> None:
    if fault.kind is FaultKind.ACTIONS_409:
        for scale_set_id in face.scale_sets:
            face.release_session(scale_set_id)


def apply_hud_fault(face: Any, fault: Fault) -> None:
    """Arm the HUD face (:class:`providers.simulated.hud_face.HudFace`); cleared by
    ``face.healthy()``."""
    p = fault.params
    if fault.kind is FaultKind.HUD_DOWN:
        face.outage(p.status or 503)
    elif fault.kind is FaultKind.HUD_SLOW:
        face.slow(p.delay or 1.0)
    elif fault.kind is FaultKind.HUD_MALFORMED:
        face.malformed(p.shape or "not-json")
    elif fault.kind is FaultKind.HUD_ABSURD:
        face.absurd(p.value if p.value is not None else 10**9)
    else:
        raise ValueError(f"{fault.kind} is not a HUD fault")


# --- a whole world -----------------------------------------------------------------------------


#: Seconds a watch-fed cache is stale after a dropped watch: the informer's reconnect
#: (backoff 0.5 s x 2^n, first retry within 0.25-0.5 s; one more for a relist after a 410).
WATCH_RECONNECT = 1.0


class KillSignal(BaseException):
    """The listener process dies here. A BaseException, like SIGKILL ending a process: the
    reconciler's own ``except Exception`` (a failing subscriber is logged, not fatal) must not
    swallow it."""


class KillSwitch:
    """Counts placeholder writes and raises :class:`KillSignal` at the armed one."""

    def __init__(self, inner: PlaceholderWriter) -> None:
        self.inner = inner
        self.armed_at: int | None = None
        self.writes = 0

    def arm(self, after_writes: int) -> None:
        self.writes = 0
        self.armed_at = after_writes

    def _tick(self) -> None:
        if self.armed_at is not None and self.writes >= self.armed_at:
            self.armed_at = None
            raise KillSignal(f"killed after {self.writes} writes")
        self.writes += 1

    def create_pair(self, spec: PairSpec) -> None:
        self._tick()
        self.inner.create_pair(spec)

    def delete_pods(self, pods: Sequence[PodRef]) -> None:
        self._tick()
        self.inner.delete_pods(pods)

    def renew_lease(self, pods: Sequence[PodRef], expires_at: float) -> None:
        self._tick()
        self.inner.renew_lease(pods, expires_at)


@dataclass
class ChaosRecord:
    """What :class:`WorldChaos` did, for reports: (elapsed seconds, fault label, detail)."""

    events: list[tuple[float, str, str]] = field(default_factory=list)
    crashes: int = 0
    restarts: int = 0


class WorldChaos:
    """Wires a fault plan into a ``World`` running the ``capacity-aware`` strategy.

    For every capacity-aware driver of the world (one per scale set) it installs, in this
    order: a :class:`SkewClock` as the reconciler's clock, a :class:`StaleSource` in front of
    the driver's cache view, a :class:`FaultyWriter` (API faults) and a :class:`KillSwitch`
    (crashes) around the placeholder writer, and :class:`DemandFaults` on the HUD demand.
    Then :class:`FaultScheduler` puts the plan on the world's loop.

    This reaches into ``CapacityAwareDriver`` attributes (``reconciler``, ``writer``,
    ``source``, ``builder``, ``instance``, ``_poll_hud``...) because the world runner offers no
    fault hooks yet. The hooks it needs are: a clock factory for the reconciler, a wrapper
    for the ObjectSource and for the PlaceholderWriter, a demand filter, and
    "restart the listener of scale set X" (new instance id, same store). ``actions_*`` kinds
    are not applied in virtual time (the simulated listener has no HTTP): they are skipped and
    reported, and covered by the HTTP fault tests instead.
    """

    def __init__(self, world: Any, plan: FaultPlan, *, seed: int = 0) -> None:
        self.world = world
        self.plan = plan
        self.rng = random.Random(f"{seed}/chaos")
        self.record = ChaosRecord()
        self.drivers = list(getattr(world.strategy, "drivers", ()))
        if not self.drivers:
            raise ValueError("WorldChaos needs a world running the capacity-aware strategy")
        self.gate = ApiFaultGate(random.Random(self.rng.random()))
        self.demand = DemandFaults()
        self.clocks: list[SkewClock] = []
        self.stale: list[StaleSource] = []
        self.kills: list[KillSwitch] = []
        self.seconds: list[Any] = []  # second listeners (reconcilers) while active
        self.on_restart: list[Callable[[Any], None]] = []
        self._pending_kill: dict[int, Fault] = {}
        self._armed_by: dict[int, Fault] = {}

    # --- installation -------------------------------------------------------------------

    def install(self) -> FaultScheduler:
        loop = self.world.loop
        for index, driver in enumerate(self.drivers):
            self._wrap(driver, index)
        handlers: dict[FaultKind, FaultHandler] = {
            FaultKind.K8S_5XX: self.gate,
            FaultKind.K8S_429: self.gate,
            FaultKind.K8S_TIMEOUT: self.gate,
            FaultKind.K8S_SLOW: self.gate,
            FaultKind.K8S_WATCH_DROP: Hook(self._watch_drops),
            FaultKind.K8S_GONE: Hook(self._gone),
            FaultKind.HUD_DOWN: self.demand,
            FaultKind.HUD_SLOW: self.demand,
            FaultKind.HUD_MALFORMED: self.demand,
            FaultKind.HUD_ABSURD: self.demand,
            FaultKind.NODE_LOSS: Hook(self._node_loss),
            FaultKind.PLACEHOLDER_DELETED: Hook(self._delete_placeholders),
            FaultKind.CONSOLIDATION: Hook(self._consolidate),
            FaultKind.LISTENER_CRASH: Hook(self._crash),
            FaultKind.SECOND_LISTENER: Hook(self._second_start, self._second_end),
            FaultKind.CLOCK_JUMP: Hook(self._clock_jump),
        }
        scheduler = FaultScheduler(loop, self.plan, handlers)
        scheduler.schedule()
        self.scheduler = scheduler
        return scheduler

    def _wrap(self, driver: Any, index: int) -> None:
        loop = self.world.loop
        clock = SkewClock(loop.now)
        self.clocks.append(clock)
        self._set_clock(driver.reconciler, clock)
        stale = StaleSource(_LateSource(driver), clock=loop.now)
        self.stale.append(stale)
        driver._source = lambda stale=stale: stale
        kill = KillSwitch(FaultyWriter(driver.writer, self.gate, loop))
        self.kills.append(kill)
        self._set_writer(driver.reconciler, kill)
        driver.hud_filter = self.demand.filter
        step = driver._step

        def guarded_step(driver: Any = driver, index: int = index) -> None:
            fault = self._pending_kill.pop(index, None)
            if fault is not None:
                self.kills[index].arm(fault.params.after_writes or 0)
                self._armed_by[index] = fault
            try:
                step()
            except KillSignal:
                self._died(driver, index, self._armed_by.pop(index, None))

        driver._step = guarded_step

    @staticmethod
    def _set_clock(reconciler: Any, clock: SkewClock) -> None:
        reconciler.clock = clock
        for sub in reconciler.subscribers:
            if hasattr(sub, "clock"):
                sub.clock = clock

    @staticmethod
    def _set_writer(reconciler: Any, writer: PlaceholderWriter) -> None:
        for sub in reconciler.subscribers:
            if hasattr(sub, "writer"):
                sub.writer = writer

    # --- fault actions ----------------------------------------------------------------------

    def _note(self, fault: Fault, detail: str) -> None:
        loop = self.world.loop
        self.record.events.append((loop.now() - loop.start, fault.label(), detail))

    def _each(self) -> Iterable[tuple[Any, Any]]:
        for driver in self.drivers:
            cluster = self.world.clusters[self._cluster_of(driver)]
            yield driver, cluster

    def _cluster_of(self, driver: Any) -> str:
        name = driver.ctx.spec.name
        return str(self.world.scale_sets[name].cluster)

    def _node_loss(self, fault: Fault) -> None:
        for driver, handle in self._each():
            lost = lose_placeholder_nodes(
                handle.cluster, handle.store, self.rng, driver.target.ers_name, fault.params.count
            )
            self._note(fault, f"lost nodes {lost}")

    def _delete_placeholders(self, fault: Fault) -> None:
        for driver, handle in self._each():
            gone = delete_placeholders(
                handle.store, self.rng, driver.target.ers_name, fault.params.count
            )
            self._note(fault, f"deleted {gone}")

    def _consolidate(self, fault: Fault) -> None:
        for driver, handle in self._each():
            nodes = consolidate_placeholder_nodes(
                handle.cluster, handle.store, self.rng, driver.target.ers_name, fault.params.count
            )
            self._note(fault, f"consolidated {nodes}")

    def _freeze(self, fault: Fault) -> None:
        for stale in self.stale:
            stale.freeze(fault)
        self._note(fault, "cache stale (watches down)")

    def _thaw(self, fault: Fault) -> None:
        for stale in self.stale:
            stale.thaw(fault)
        self._note(fault, "watches back: relisted")

    def _watch_drops(self, fault: Fault) -> None:
        """Watches are cut every ``every`` seconds (default 60) until ``end``; each cut leaves
        the cache stale for ``hold`` seconds (default :data:`WATCH_RECONNECT`, the informer's
        reconnect time: it resumes from its last resourceVersion without a relist, see the
        HTTP tests). A long ``hold`` models an API server the watches cannot reach."""
        loop = self.world.loop
        every = fault.params.every or 60.0
        hold = fault.params.hold or WATCH_RECONNECT
        end = loop.start + (fault.end if fault.end is not None else fault.start)
        at = loop.now()
        drops = 0
        while at < end and drops < 10_000:
            loop.call_at(at, self._freeze_for, fault, hold)
            at += every
            drops += 1
        self._note(fault, f"{drops} watch drop(s), {hold:g}s stale each")

    def _freeze_for(self, fault: Fault, seconds: float) -> None:
        for stale in self.stale:
            stale.freeze(fault)
        self.world.loop.call_later(seconds, self._thaw_quietly, fault)

    def _thaw_quietly(self, fault: Fault) -> None:
        for stale in self.stale:
            stale.thaw(fault)

    def _gone(self, fault: Fault) -> None:
        # A 410 on resume makes the cache relist: stale from the drop until the relist lands
        # (one LIST call per kind after the reconnect).
        self._freeze(fault)
        self.world.loop.call_later(2 * WATCH_RECONNECT, self._thaw, fault)

    def _clock_jump(self, fault: Fault) -> None:
        for clock in self.clocks:
            clock.jump(fault.params.seconds or 0.0)
        self._note(fault, f"clock offset now {self.clocks[0].offset:+g}s")

    def _crash(self, fault: Fault) -> None:
        """Arm a kill inside the next step of every driver (at the given write)."""
        for index, driver in enumerate(self.drivers):
            self._pending_kill[index] = fault
            driver.trigger()
        self._note(fault, f"armed: die after {fault.params.after_writes or 0} writes")

    def _died(self, driver: Any, index: int, fault: Fault | None) -> None:
        self.record.crashes += 1
        loop = self.world.loop
        self.record.events.append(
            (
                loop.now() - loop.start,
                fault.label() if fault else "?",
                f"died in a step of instance {driver.instance}",
            )
        )
        # The process is gone and its long poll with it; modelled as the service holding 0
        # for this scale set until the new pod's first poll (which sends 0 until its first
        # step confirms capacity: CapacityGate(initial=0)). Through the sink, so the
        # simulated listener re-polls at once like a cut.
        driver.sink.set_max_runners(0)
        old = driver.reconciler
        old.subscribers = []  # the dead process does nothing more
        restart = (fault.params.restart_after if fault is not None else None) or 5.0
        self._step_paused(driver, True)
        loop.call_later(restart, self._restart, driver, index)

    def _step_paused(self, driver: Any, paused: bool) -> None:
        if paused:
            timer = getattr(driver, "_timer", None)
            if timer is not None:
                timer.cancel()
            driver._arm_saved = driver._arm
            driver._arm = lambda: None
        else:
            driver._arm = driver._arm_saved

    def _restart(self, driver: Any, index: int) -> None:
        from providers.kubernetes.placeholders import PlaceholderPodBuilder
        from providers.simulated.strategies import StorePlaceholderWriter
        from reconciler.reconciler import Reconciler
        from reconciler.subscribers import PlaceholderSubscriber

        self.record.restarts += 1
        alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
        instance = "".join(self.rng.choice(alphabet) for _ in range(5))
        old_builder = driver.builder
        ers = driver.ctx.arc.ers()
        builder = PlaceholderPodBuilder(
            driver.settings,
            ers,
            instance=instance,
            namespace=driver.namespace,
            owner=ers if driver.namespace == driver.ctx.spec.namespace else None,
            workflow_pod_spec=driver.ctx.spec.workflow_pod_spec(),
        )
        del old_builder
        writer = StorePlaceholderWriter(driver.ctx.store, builder)
        kill = KillSwitch(FaultyWriter(writer, self.gate, self.world.loop))
        self.kills[index] = kill
        clock = self.clocks[index]
        driver.builder, driver.writer, driver.instance = builder, writer, instance
        driver.reconciler = Reconciler(
            driver.config,
            clock=clock,
            subscribers=[
                PlaceholderSubscriber(
                    kill, namespace=driver.namespace, clock=clock, config=driver.config
                )
            ],
            sink=driver.sink,
            instance=instance,
        )
        self._step_paused(driver, False)
        driver.trigger()
        self.record.events.append(
            (loop_elapsed(self.world.loop), "restart", f"instance {instance} started")
        )
        for callback in self.on_restart:
            callback(driver)

    def _second_start(self, fault: Fault) -> None:
        """A second listener pod for the same scale set (a rolling update, a stuck pod): its
        session is refused (409) so it advertises nothing, but its reconciler runs."""
        from providers.kubernetes.placeholders import PlaceholderPodBuilder
        from providers.simulated.strategies import StorePlaceholderWriter
        from reconciler.reconciler import Reconciler
        from reconciler.subscribers import PlaceholderSubscriber

        for driver in self.drivers:
            instance = "".join(self.rng.choice("abcdefghij0123456789") for _ in range(5))
            ers = driver.ctx.arc.ers()
            builder = PlaceholderPodBuilder(
                driver.settings,
                ers,
                instance=instance,
                namespace=driver.namespace,
                owner=ers if driver.namespace == driver.ctx.spec.namespace else None,
                workflow_pod_spec=driver.ctx.spec.workflow_pod_spec(),
            )
            writer = StorePlaceholderWriter(driver.ctx.store, builder)
            second = _SecondListener(
                driver,
                Reconciler(
                    driver.config,
                    clock=self.world.loop,
                    subscribers=[
                        PlaceholderSubscriber(
                            writer,
                            namespace=driver.namespace,
                            clock=self.world.loop,
                            config=driver.config,
                        )
                    ],
                    sink=None,
                    instance=instance,
                ),
                interval=driver.settings.recalculate_interval,
            )
            self.seconds.append(second)
            second.start()
        self._note(fault, f"{len(self.drivers)} second listener(s) started")

    def _second_end(self, fault: Fault) -> None:
        for second in self.seconds:
            second.stop()
            self._note(
                fault,
                f"second listener exited after {second.steps} steps "
                f"({second.errors} failed), holding {len(second.reconciler.store)} "
                "pairs",
            )
        self.seconds = []


def loop_elapsed(loop: EventLoop) -> float:
    return loop.now() - loop.start


class _LateSource:
    """The driver's cache view, looked up at each call (it is created in ``driver.start``)."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver

    def list(self, kind: str, namespace: str | None = None) -> Iterable[Obj]:
        source = self.driver.source
        if source is None:
            raise RuntimeError("the driver has not started")
        return source.list(kind, namespace)  # type: ignore[no-any-return]


class _SecondListener:
    """A second reconciler stepping every interval on the same store (no sink)."""

    def __init__(self, driver: Any, reconciler: Any, *, interval: float) -> None:
        self.driver = driver
        self.reconciler = reconciler
        self.interval = interval
        self._timer: Any = None
        self.steps = 0
        self.errors = 0

    def start(self) -> None:
        self._timer = self.driver.ctx.loop.call_soon(self._step)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def _step(self) -> None:
        from providers.kubernetes.translate import build_snapshot

        loop = self.driver.ctx.loop
        snapshot = build_snapshot(
            self.driver.source, self.driver.target, now=loop.now(), demand=self.driver.demand
        )
        try:
            self.reconciler.step(snapshot)
        except Exception:  # like the production loop: logged, retried next interval
            self.errors += 1
        self.steps += 1
        self._timer = loop.call_later(self.interval, self._step)


__all__ = [
    "ACTIONS_ROUTES",
    "KIND_INFO",
    "ApiFaultGate",
    "ChaosRecord",
    "DemandFaults",
    "Fault",
    "FaultHandler",
    "FaultKind",
    "FaultParams",
    "FaultPlan",
    "FaultPlanError",
    "FaultScheduler",
    "FaultyWriter",
    "Hook",
    "KillSignal",
    "KillSwitch",
    "SimulatedApiError",
    "SkewClock",
    "StaleSource",
    "WorldChaos",
    "apply_actions_fault",
    "apply_hud_fault",
    "clear_actions_fault",
    "consolidate_placeholder_nodes",
    "delete_placeholders",
    "load_fault_plan",
    "lose_placeholder_nodes",
    "parse_fault_plan",
    "placeholder_pods",
    "plan_for_scenario",
    "sidecar_path",
]
