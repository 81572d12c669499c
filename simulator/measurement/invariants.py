"""The listener's promises, checked continuously over a simulated (or real-time) run.

An :class:`InvariantObserver` is told what the listener advertised and what the cluster holds,
with timestamps, and records every :class:`Violation` (time + detail). The invariants:

1. ``capacity_within_max_runners``: the advertised capacity never exceeds the live
   ``maxRunners`` (AutoscalingRunnerSet ``spec.maxRunners``; 0 during a drain). Checked on
   every advertisement and every ``maxRunners`` change; a change gets ``max_runners_grace``
   seconds (default 0) for the listener to follow.
2. ``capacity_reservable``: the advertised capacity never exceeds what is really reservable
   (``reservable()``: the ledger recomputed from the cluster's ground truth) for longer than
   one reconcile interval. Checked on every :meth:`InvariantObserver.check`.
3. ``placeholder_ttl``: no placeholder outlives its lease (TTL annotation) plus one interval.
4. ``no_leftover_placeholders``: no placeholder of the scale set is left one interval after
   the scale set or the listener is gone (:meth:`scale_set_gone`, :meth:`listener_gone`).
5. ``messages_exactly_once``: every job message delivered is handled exactly once
   (:meth:`message_delivered`, :meth:`message_handled`; checked at :meth:`finish`).
6. ``memory_bounded``: a footprint sampled with :meth:`memory` does not grow under constant
   load (the last quarter of the run is compared with the second; see :meth:`finish`).

Wiring: call :meth:`watch_store` once (it subscribes to the ObjectStore for placeholder pods
and the AutoscalingRunnerSet), :meth:`advertised` whenever a capacity reaches the service,
:meth:`check` periodically (e.g. every few virtual seconds), and :meth:`finish` at the end.
The observer never changes the world. Violations are bounded (``max_violations`` kept, all
counted) so a broken run cannot eat memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from providers.kubernetes.pods import labels as L
from reconciler.clock import Clock
from simulator.engine.store import Obj, ObjectStore


class Invariant(StrEnum):
    CAPACITY_WITHIN_MAX_RUNNERS = "capacity_within_max_runners"
    CAPACITY_RESERVABLE = "capacity_reservable"
    PLACEHOLDER_TTL = "placeholder_ttl"
    NO_LEFTOVER_PLACEHOLDERS = "no_leftover_placeholders"
    MESSAGES_EXACTLY_ONCE = "messages_exactly_once"
    MEMORY_BOUNDED = "memory_bounded"


DESCRIPTIONS: dict[Invariant, str] = {
    Invariant.CAPACITY_WITHIN_MAX_RUNNERS: "advertised capacity never exceeds live maxRunners",
    Invariant.CAPACITY_RESERVABLE: (
        "never advertises a slot that is not reservable for longer than one reconcile interval"
    ),
    Invariant.PLACEHOLDER_TTL: "no placeholder outlives its TTL plus one interval",
    Invariant.NO_LEFTOVER_PLACEHOLDERS: (
        "no placeholder left one interval after the scale set or the listener is gone"
    ),
    Invariant.MESSAGES_EXACTLY_ONCE: "no job message lost or handled twice",
    Invariant.MEMORY_BOUNDED: "memory stays bounded under constant load",
}


@dataclass(frozen=True, slots=True)
class Violation:
    invariant: Invariant
    at: float  # seconds since the observer's start
    detail: str

    def __str__(self) -> str:
        return f"{self.at:10.1f}s {self.invariant.value}: {self.detail}"


@dataclass
class Report:
    violations: list[Violation]
    counts: dict[Invariant, int]
    checks: int
    #: Largest advertised - reservable seen, and the longest time it lasted (seconds).
    max_excess: int
    longest_excess: float
    placeholders_seen: int
    messages_delivered: int
    memory_samples: int

    @property
    def ok(self) -> bool:
        return not any(self.counts.values())

    def summary(self) -> str:
        if self.ok:
            return (
                f"all invariants held ({self.checks} checks, {self.placeholders_seen} "
                f"placeholders, longest over-advertisement {self.longest_excess:.1f}s)"
            )
        broken = ", ".join(f"{k.value} x{n}" for k, n in self.counts.items() if n)
        return f"violated: {broken}; first: {self.violations[0] if self.violations else '-'}"


@dataclass
class _Placeholder:
    created: float
    expires_at: float | None
    name: str


@dataclass
class _Messages:
    delivered: dict[int, float] = field(default_factory=dict)
    handled: dict[int, int] = field(default_factory=dict)


class InvariantObserver:
    def __init__(
        self,
        *,
        scale_set: str,
        interval: float,
        start: float,
        reservable: Callable[[], int] | None = None,
        max_runners: int | None = None,
        max_runners_grace: float = 0.0,
        memory_tolerance: float = 0.10,
        memory_floor: int = 1_000_000,
        max_violations: int = 200,
    ) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be > 0 seconds, got {interval}")
        self.scale_set = scale_set
        self.interval = interval
        self.start = start
        self.reservable = reservable
        self.max_runners_grace = max_runners_grace
        self.memory_tolerance = memory_tolerance
        self.memory_floor = memory_floor
        self.max_violations = max_violations
        self.violations: list[Violation] = []
        self.counts: dict[Invariant, int] = {inv: 0 for inv in Invariant}
        self.checks = 0
        self._advertised: int | None = None
        self._max_runners = max_runners
        self._max_changed_at: float | None = None
        self._excess_since: float | None = None
        self.max_excess = 0
        self.longest_excess = 0.0
        self._placeholders: dict[tuple[str, str], _Placeholder] = {}
        self.placeholders_seen = 0
        self._gone_at: float | None = None
        self._gone_what = ""
        self._messages = _Messages()
        self._memory: list[tuple[float, int]] = []
        self._reported: set[tuple[Invariant, str]] = set()

    # --- inputs -------------------------------------------------------------------------

    def watch_store(self, store: ObjectStore, clock: Clock) -> None:
        """Follow placeholder pods of the scale set and the AutoscalingRunnerSet's maxRunners
        (existing objects included); ``clock`` is the store's (the time its events happen)."""
        for pod in store.list("Pod"):
            self._on_pod("ADDED", pod, now=clock.now())
        for ars in store.list("AutoscalingRunnerSet"):
            self._on_ars("ADDED", ars, now=clock.now())

        def on_change(event_type: str, obj: Obj) -> None:
            if obj["kind"] == "Pod":
                self._on_pod(event_type, obj, now=clock.now())
            else:
                self._on_ars(event_type, obj, now=clock.now())

        store.subscribe(on_change, kinds=("Pod", "AutoscalingRunnerSet"))

    def _on_pod(self, event_type: str, pod: Obj, *, now: float) -> None:
        meta = pod["metadata"]
        if (meta.get("labels") or {}).get(L.LABEL_SCALE_SET) != self.scale_set:
            return
        key = (meta.get("namespace", ""), meta["name"])
        if event_type == "DELETED":
            self._placeholders.pop(key, None)
            return
        annotation = (meta.get("annotations") or {}).get(L.ANNOTATION_EXPIRES_AT)
        try:
            expires = float(annotation) if annotation is not None else None
        except ValueError:
            expires = None
        current = self._placeholders.get(key)
        if current is None:
            self.placeholders_seen += 1
            self._placeholders[key] = _Placeholder(now, expires, meta["name"])
        else:
            current.expires_at = expires

    def _on_ars(self, event_type: str, ars: Obj, *, now: float) -> None:
        labels = ars["metadata"].get("labels") or {}
        name = ars["metadata"]["name"]
        if name != self.scale_set and labels.get(L.LABEL_ARC_SCALE_SET_NAME) != self.scale_set:
            return
        if event_type == "DELETED":
            self.scale_set_gone(now)
            return
        value = (ars.get("spec") or {}).get("maxRunners")
        if isinstance(value, int):
            self.max_runners(now, value)

    def advertised(self, at: float, value: int) -> None:
        """The service now holds ``value`` as this scale set's capacity."""
        self._advertised = value
        self._check_max(at)
        self._check_reservable(at)

    def max_runners(self, at: float, value: int) -> None:
        if value != self._max_runners:
            self._max_runners = value
            self._max_changed_at = at
        self._check_max(at)

    def scale_set_gone(self, at: float) -> None:
        self._gone_at, self._gone_what = at, "the scale set was deleted"

    def listener_gone(self, at: float) -> None:
        self._gone_at, self._gone_what = at, "the listener stopped"

    def listener_back(self, at: float) -> None:
        self._gone_at = None

    def message_delivered(self, at: float, message_id: int) -> None:
        self._messages.delivered.setdefault(message_id, at)

    def message_handled(self, at: float, message_id: int) -> None:
        handled = self._messages.handled
        handled[message_id] = handled.get(message_id, 0) + 1
        if handled[message_id] == 2:
            self._violate(
                Invariant.MESSAGES_EXACTLY_ONCE, at, f"message {message_id} handled twice"
            )

    def memory(self, at: float, size: int) -> None:
        self._memory.append((at, size))

    # --- checks -------------------------------------------------------------------------

    def check(self, at: float) -> None:
        """Periodic check: over-advertisement, leases, leftovers."""
        self.checks += 1
        self._check_max(at)
        self._check_reservable(at)
        grace = self.interval
        for ph in self._placeholders.values():
            if ph.expires_at is not None and at > ph.expires_at + grace:
                self._violate_once(
                    Invariant.PLACEHOLDER_TTL,
                    at,
                    ph.name,
                    f"placeholder {ph.name} alive {at - ph.expires_at:.0f}s past its lease",
                )
        if self._gone_at is not None and at > self._gone_at + grace and self._placeholders:
            names = sorted(p.name for p in self._placeholders.values())
            self._violate_once(
                Invariant.NO_LEFTOVER_PLACEHOLDERS,
                at,
                self._gone_what,
                f"{len(names)} placeholder(s) left {at - self._gone_at:.0f}s after "
                f"{self._gone_what}: {', '.join(names[:3])}",
            )

    def _check_max(self, at: float) -> None:
        if self._advertised is None or self._max_runners is None:
            return
        if self._advertised <= self._max_runners:
            return
        since = self._max_changed_at if self._max_changed_at is not None else self.start
        if at - since >= self.max_runners_grace:
            # Once per (maxRunners change, advertised value): a lasting excess is one problem.
            self._violate_once(
                Invariant.CAPACITY_WITHIN_MAX_RUNNERS,
                at,
                f"{since}:{self._advertised}:{self._max_runners}",
                f"advertised {self._advertised} > live maxRunners {self._max_runners} "
                f"({at - since:.0f}s after it changed)",
            )

    def _check_reservable(self, at: float) -> None:
        if self.reservable is None or self._advertised is None:
            return
        excess = self._advertised - self.reservable()
        if excess <= 0:
            self._excess_since = None
            return
        self.max_excess = max(self.max_excess, excess)
        if self._excess_since is None:
            self._excess_since = at
        lasted = at - self._excess_since
        self.longest_excess = max(self.longest_excess, lasted)
        if lasted > self.interval:
            self._violate(
                Invariant.CAPACITY_RESERVABLE,
                at,
                f"advertised {self._advertised}, only {self._advertised - excess} reservable, "
                f"for {lasted:.0f}s (> interval {self.interval:g}s)",
            )
            self._excess_since = at  # report again only if it lasts another interval

    # --- results ------------------------------------------------------------------------

    def finish(self, at: float) -> Report:
        self.check(at)
        messages = self._messages
        lost = sorted(set(messages.delivered) - set(messages.handled))
        if lost:
            self._violate(
                Invariant.MESSAGES_EXACTLY_ONCE,
                at,
                f"{len(lost)} delivered message(s) never handled: {lost[:5]}",
            )
        self._check_memory(at)
        return Report(
            violations=list(self.violations),
            counts=dict(self.counts),
            checks=self.checks,
            max_excess=self.max_excess,
            longest_excess=self.longest_excess,
            placeholders_seen=self.placeholders_seen,
            messages_delivered=len(messages.delivered),
            memory_samples=len(self._memory),
        )

    def _check_memory(self, at: float) -> None:
        samples = [size for _, size in self._memory]
        if len(samples) < 8:
            return
        quarter = len(samples) // 4
        early = max(samples[quarter : 2 * quarter])
        late = max(samples[-quarter:])
        allowed = early * (1 + self.memory_tolerance) + self.memory_floor
        if late > allowed:
            self._violate(
                Invariant.MEMORY_BOUNDED,
                at,
                f"footprint grew from {early} to {late} (allowed up to {allowed:.0f})",
            )

    def _violate_once(self, invariant: Invariant, at: float, key: str, detail: str) -> None:
        if (invariant, key) in self._reported:
            return
        self._reported.add((invariant, key))
        self._violate(invariant, at, detail)

    def _violate(self, invariant: Invariant, at: float, detail: str) -> None:
        self.counts[invariant] += 1
        if len(self.violations) < self.max_violations:
            self.violations.append(Violation(invariant, at - self.start, detail))


def describe(invariants: Iterable[Invariant] = tuple(Invariant)) -> list[tuple[str, str]]:
    return [(inv.value, DESCRIPTIONS[inv]) for inv in invariants]


__all__ = [
    "DESCRIPTIONS",
    "Invariant",
    "InvariantObserver",
    "Report",
    "Violation",
    "describe",
]
