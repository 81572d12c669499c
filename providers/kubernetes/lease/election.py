"""One owner of a scale set's placeholders: a ``coordination.k8s.io/v1`` Lease election.

The standard Kubernetes leader-election pattern (client-go ``leaderelection`` with a Lease
lock), written against the ``kubernetes`` client:

1. **Acquire.** GET the Lease. Absent: CREATE it holding it. Present: a holder other than us
   counts as live while ``leaseDurationSeconds`` have not passed since *we* last saw the record
   change (our own monotonic clock, never the holder's ``renewTime``: clocks of two nodes may
   disagree). An empty holder (released) or an expired record is taken with a PUT carrying the
   record's ``resourceVersion`` (optimistic concurrency: of two takers exactly one wins, the
   other gets 409 and keeps waiting). ``leaseTransitions`` grows by one when the holder changes.
2. **Hold.** Renew (PUT, same holder, new ``renewTime``) every ``retry_period``. When no renew
   succeeded for ``renew_deadline`` (< ``leaseDurationSeconds``, so we stop before anybody else
   may take over), leadership is lost: :class:`LeaseLostError`. The process then exits (the pod
   restarts and waits again) instead of acting on a lease somebody else may hold.
3. **Release** on shutdown: holder cleared, ``leaseDurationSeconds`` 1, so a waiting process
   takes over within a retry period instead of a full lease duration.
4. **Hand-over note**: the holder writes the id of its message session in the annotation
   :data:`SESSION_ANNOTATION` with every renewal and at release (empty once deleted). The next
   holder reads it when it takes the Lease (:attr:`LeaseElector.inherited_session`) and deletes
   a session its predecessor could not (providers/actions/session.py rule 5).

Blocking calls (the client is synchronous) run in worker threads; every request has a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from reconciler.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)

#: (connect, read) timeout of every Lease call: short, so a SIGTERM during an attempt is not
#: held up for long (the thread running it is waited for at exit), and well under the renew
#: deadline so a hung renew still leaves time for another one.
REQUEST_TIMEOUT = (2.0, 3.0)
#: (connect, read) timeout of the release at exit (two calls: both within the exit deadline).
RELEASE_TIMEOUT = (0.5, 0.5)


class LeaseLostError(Exception):
    """This process could not renew its Lease in time: another process may own it now."""


#: The message session of the holder (hand-over note, step 4).
SESSION_ANNOTATION = "arc-capacity.dev/message-session"


@dataclass(frozen=True, slots=True)
class LeaseTiming:
    """client-go's defaults (15 s / 10 s / 2 s); ``renew_deadline`` < ``duration``."""

    duration: int = 15
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.duration:
            raise ValueError(
                "lease timing needs 0 < retry_period < renew_deadline < duration, got "
                f"{self.retry_period} / {self.renew_deadline} / {self.duration}"
            )

    @classmethod
    def for_duration(cls, duration: int) -> LeaseTiming:
        """client-go's proportions (15 / 10 / 2) for another lease duration (seconds >= 2)."""
        if duration < 2:
            raise ValueError(f"lease duration must be >= 2 seconds, got {duration}")
        return cls(duration, duration * 2 / 3, duration * 2 / 15)


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The parts of a LeaseSpec the election reads, plus the object's resourceVersion."""

    holder: str
    duration: int
    renew_time: str
    transitions: int
    resource_version: str

    def same_record(self, other: LeaseRecord | None) -> bool:
        """Did the holder write since ``other`` was seen? (resourceVersion moves on any write)"""
        return other is not None and other.resource_version == self.resource_version


def held_by_other(record: LeaseRecord, identity: str, observed_at: float, now: float) -> bool:
    """Pure rule of step 1: is ``record`` a live lease of somebody else?"""
    if not record.holder or record.holder == identity:
        return False
    return observed_at + record.duration > now


def lease_name(scale_set: str) -> str:
    """One Lease per scale set (EphemeralRunnerSet name), next to its placeholders."""
    return f"arc-capacity-listener-{scale_set}"[:253]


class LeaseElector:
    """Acquire, hold and release one Lease (see the module docstring)."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        *,
        namespace: str,
        name: str,
        identity: str,
        timing: LeaseTiming | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.api = k8s.CoordinationV1Api(api_client)
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.timing = timing or LeaseTiming()
        self._clock = clock
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0
        self._renewed_at: float | None = None  # monotonic time of our last successful write
        self.transitions_seen = 0
        #: The session id the previous holder noted (step 4), read when we took the Lease.
        self.inherited_session = ""
        #: Our note, written with every renewal and at release (None: write nothing).
        self.session_note: str | None = None

    @property
    def is_leader(self) -> bool:
        """We renewed within ``renew_deadline`` (nobody else can have taken the lease)."""
        renewed = self._renewed_at
        return (
            renewed is not None and self._clock.monotonic() - renewed <= self.timing.renew_deadline
        )

    def renewable_for(self) -> float | None:
        """Seconds left in which a renewal still keeps us leader (None: never held)."""
        renewed = self._renewed_at
        if renewed is None:
            return None
        return renewed + self.timing.renew_deadline - self._clock.monotonic()

    def exclusive_for(self) -> float | None:
        """Seconds before another process could take the Lease over: it must see our record
        unchanged for ``duration`` after our last write (None: never held)."""
        renewed = self._renewed_at
        if renewed is None:
            return None
        return renewed + self.timing.duration - self._clock.monotonic()

    @property
    def holder(self) -> str:
        """The holder we last observed ("" if none)."""
        return self._observed.holder if self._observed is not None else ""

    # --- one attempt (blocking) ---------------------------------------------------------

    def try_acquire_or_renew(self) -> bool:
        """One round of steps 1/2: True if we hold the lease after it."""
        now = self._clock.monotonic()
        try:
            lease = self.api.read_namespaced_lease(
                self.name, self.namespace, _request_timeout=REQUEST_TIMEOUT
            )
        except ApiException as exc:
            if exc.status != 404:
                raise
            return self._create(now)
        record = _record_of(lease)
        if not record.same_record(self._observed):
            self._observed, self._observed_at = record, now
        if held_by_other(record, self.identity, self._observed_at, now):
            return False
        taking_over = record.holder != self.identity
        inherited = _annotation(lease, SESSION_ANNOTATION)
        if not self._update(lease, record, now):
            return False
        if taking_over:
            self.inherited_session = inherited
        return True

    def release(self, timeout: tuple[float, float] = RELEASE_TIMEOUT) -> None:
        """Step 3 (best effort: a failure is logged; the lease then simply expires). Short
        timeouts: it runs inside the exit's 5 s, and an API that does not answer at once
        cannot be helped by waiting."""
        if self._renewed_at is None:
            return
        self._renewed_at = None
        try:
            lease = self.api.read_namespaced_lease(
                self.name, self.namespace, _request_timeout=timeout
            )
            spec = lease.spec
            if spec is None or (spec.holder_identity or "") != self.identity:
                return  # somebody else holds it already: nothing of ours to release
            stamp = datetime.fromtimestamp(self._clock.now(), UTC)
            spec.holder_identity = None
            spec.lease_duration_seconds = 1
            spec.renew_time = stamp
            spec.acquire_time = stamp
            self._write_note(lease)
            self.api.replace_namespaced_lease(
                self.name, self.namespace, lease, _request_timeout=timeout
            )
            log.info("lease %s/%s released", self.namespace, self.name)
        except Exception as exc:  # shutdown goes on: the lease expires by itself
            log.warning("could not release lease %s/%s: %s", self.namespace, self.name, exc)

    def _create(self, now: float) -> bool:
        stamp = datetime.fromtimestamp(self._clock.now(), UTC)
        body = k8s.V1Lease(
            metadata=k8s.V1ObjectMeta(name=self.name, namespace=self.namespace),
            spec=k8s.V1LeaseSpec(
                holder_identity=self.identity,
                lease_duration_seconds=self.timing.duration,
                acquire_time=stamp,
                renew_time=stamp,
                lease_transitions=0,
            ),
        )
        try:
            created = self.api.create_namespaced_lease(
                self.namespace, body, _request_timeout=REQUEST_TIMEOUT
            )
        except ApiException as exc:
            if exc.status == 409:  # somebody created it first: they hold it
                return False
            raise
        self._won(created, now)
        return True

    def _update(self, lease: Any, record: LeaseRecord, now: float) -> bool:
        stamp = datetime.fromtimestamp(self._clock.now(), UTC)
        spec = lease.spec
        if record.holder != self.identity:
            spec.lease_transitions = record.transitions + 1
            spec.acquire_time = stamp
        spec.holder_identity = self.identity
        spec.lease_duration_seconds = self.timing.duration
        spec.renew_time = stamp
        self._write_note(lease)
        try:
            # metadata.resourceVersion is the precondition: a concurrent writer wins, we get 409
            updated = self.api.replace_namespaced_lease(
                self.name, self.namespace, lease, _request_timeout=REQUEST_TIMEOUT
            )
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise
        self._won(updated, now)
        return True

    def _write_note(self, lease: Any) -> None:
        if self.session_note is None:
            return
        if lease.metadata.annotations is None:
            lease.metadata.annotations = {}
        lease.metadata.annotations[SESSION_ANNOTATION] = self.session_note

    def _won(self, lease: Any, now: float) -> None:
        record = _record_of(lease)
        self._observed, self._observed_at = record, now
        self._renewed_at = now
        self.transitions_seen = record.transitions

    # --- loops (async) -------------------------------------------------------------------

    async def acquire(self, stop: asyncio.Event) -> bool:
        """Try every ``retry_period`` until we hold the lease (True) or ``stop`` is set."""
        waiting_logged = False
        while not stop.is_set():
            if await self._attempt():
                log.info(
                    "lease %s/%s acquired by %s (transitions %d)",
                    self.namespace,
                    self.name,
                    self.identity,
                    self.transitions_seen,
                )
                return True
            if not waiting_logged:
                log.info(
                    "lease %s/%s held by %s: waiting (not ready, no placeholders)",
                    self.namespace,
                    self.name,
                    self.holder or "?",
                )
                waiting_logged = True
            await _wait(stop, self.timing.retry_period)
        return False

    async def hold(self, stop: asyncio.Event) -> None:
        """Renew until ``stop``; raises :class:`LeaseLostError` when the deadline passes."""
        while not stop.is_set():
            await _wait(stop, self.timing.retry_period)
            if stop.is_set():
                return
            # An attempt against a hanging API can outlast the renew deadline (timeouts and
            # the client's own retries): the loss is declared at the deadline, not after it.
            attempt = asyncio.ensure_future(self._attempt())
            await asyncio.wait({attempt}, timeout=max(self.renewable_for() or 0.0, 0.0))
            if not self.is_leader:
                raise LeaseLostError(
                    f"lease {self.namespace}/{self.name} not renewed for "
                    f"{self.timing.renew_deadline:.0f}s (holder now {self.holder or '?'})"
                )

    async def _attempt(self) -> bool:
        try:
            return await asyncio.to_thread(self.try_acquire_or_renew)
        except Exception as exc:  # an API blip: the next attempt decides
            log.warning("lease %s/%s: %s", self.namespace, self.name, _short(exc))
            return False


def _annotation(lease: Any, key: str) -> str:
    annotations = getattr(lease.metadata, "annotations", None) or {}
    return str(annotations.get(key) or "")


def _record_of(lease: Any) -> LeaseRecord:
    spec = lease.spec or k8s.V1LeaseSpec()
    renew = spec.renew_time
    return LeaseRecord(
        holder=spec.holder_identity or "",
        duration=int(spec.lease_duration_seconds or 0),
        renew_time=renew.isoformat() if isinstance(renew, datetime) else str(renew or ""),
        transitions=int(spec.lease_transitions or 0),
        resource_version=str(lease.metadata.resource_version or ""),
    )


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


def _short(exc: BaseException) -> str:
    if isinstance(exc, ApiException):
        return f"HTTP {exc.status} {exc.reason}"
    return f"{type(exc).__name__}: {exc}"


__all__ = [
    "SESSION_ANNOTATION",
    "LeaseElector",
    "LeaseLostError",
    "LeaseRecord",
    "LeaseTiming",
    "held_by_other",
    "lease_name",
]
