"""ARC's listener scaler (docs/protocol.md#scaler): the EphemeralRunnerSet merge-patch and the
EphemeralRunner status patch, byte for byte what ARC sends.

State: ``target_runners`` (-1), ``patch_seq`` (-1), ``dirty`` (False).

- :meth:`Scaler.handle_job_started`: ``dirty = True``; merge-patch the ``status`` subresource
  of EphemeralRunner ``<runnerName>`` with the job's fields (empty/zero ones left out).
  ARC 0.15 (PR #4646, :mod:`listener.arc.version`) first GETs the runner and, unless it is
  being deleted or its phase is ``Failed``/``Succeeded``/``Outdated``, also sets
  ``phase: Running`` under ``metadata.resourceVersion`` = the one just read; a 409 re-reads
  and tries again (client-go ``retry.DefaultRetry``: 5 attempts, 10 ms apart), so a terminal
  phase written between our read and our patch is never overwritten. The 0.15 patch also
  carries the job's event name and the service's queue / scale-set / runner assignment times
  (:func:`job_context`). NotFound is logged and ignored (the runner is already gone); any
  other error ends the run.
- :meth:`Scaler.handle_job_completed`: ``dirty = True`` only.
- :meth:`Scaler.handle_desired_runner_count`:
  1. ``was_dirty = dirty; dirty = False``;
  2. ``patch_seq``: reset to 0 when it is 2**31-1, then + 1 (the first call yields 0);
  3. ``target = min(min_runners + hot_runners + count, max_runners)``;
  4. ``patchID = patch_seq``, but 0 when not ``was_dirty`` and the target is unchanged and
     equals ``min_runners + hot_runners`` (0 = "authoritative, the ERS controller may scale
     idle runners down"; > 0 = "new intent, scale up only");
  5. merge-patch ``{"spec":{"patchID":P,"replicas":N}}`` (``"replicas":null`` when N is 0,
     which is how Go's merge-patch diff says "removed"); returns ``target``.

While ARC has switched the scale set off (:meth:`Scaler.set_switched_off`, from the capacity
side: its runners are ``Outdated``) the target is 0 and the floor 0, so the patch agrees with
the zero replicas ARC's controller pins the set at (stock ARC's listener, which cannot see it,
keeps asking for ``minRunners`` + assigned jobs until its pod is deleted).

``hot_runners`` (0 unless ``capacityAware.hotRunners`` is set) is the reconciler's number of
live hot slots (reconciler/hot_slots.py ``scaler_hot_runners``): like ``minRunners`` in ARC
0.8+, idle runners kept on top of the assigned jobs, within ``maxRunners``. Stock ARC's bytes
are unchanged while it is 0.

Bodies are serialized like Go's ``encoding/json`` of a map (sorted keys, compact, ``<``, ``>``,
``&``, U+2028/9 escaped). Writes go through :class:`ScalerWriter`;
:class:`providers.kubernetes.write.arc_writer.KubernetesScalerWriter` sends those exact bytes with
the official kubernetes client, retried like client-go.
The scaler is synchronous (blocking I/O): the async loop runs it in a worker thread.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from listener.arc.version import ArcVersion, version_of_runner
from providers.actions.models import JobCompleted, JobStarted, is_zero_time
from providers.kubernetes.write.arc_wire import (
    MERGE_PATCH,
    PermanentWriteError,
    ReadForbidden,
    RunnerNotFound,
    ScalerError,
    ScalerWriter,
    WriteConflict,
)
from reconciler.max_runners import MAX_INT32, clamp_max_runners

log = logging.getLogger(__name__)

#: client-go ``retry.DefaultRetry``: 5 steps of 10 ms (jitter 0.1, factor 1).
CONFLICT_ATTEMPTS = 5
CONFLICT_WAIT = 0.01
#: Phases the listener must never overwrite with ``Running`` (PR #4646).
TERMINAL_PHASES = frozenset({"Failed", "Succeeded", "Outdated"})
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def go_json(value: Any) -> bytes:
    """Serialize like Go's ``json.Marshal`` of maps: sorted keys, compact, HTML-safe."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    text = (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )
    return _LONE_SURROGATE.sub("\ufffd", text).encode("utf-8")


def ephemeral_runner_set_patch(patch_id: int, replicas: int) -> bytes:
    """ARC's merge patch of ``EphemeralRunnerSet.spec`` (docs/protocol.md#scaler step 5)."""
    return go_json({"spec": {"patchID": patch_id, "replicas": replicas or None}})


def job_started_status_patch(msg: JobStarted, runner: Mapping[str, Any] | None = None) -> bytes:
    """ARC's merge patch of ``EphemeralRunner.status`` on JobStarted (zero values left out).

    Without ``runner``: the 0.13/0.14 patch, job fields only. With the runner as just read
    (0.15): also the job's context (:func:`job_context`), and ``phase: Running`` with that
    read's ``metadata.resourceVersion`` as the lock unless :func:`may_promote` says no, in
    which case the job fields and context go, unlocked."""
    status: dict[str, Any] = {
        "jobDisplayName": msg.job_display_name,
        "jobId": msg.job_id,
        "jobRepositoryName": f"{msg.owner_name}/{msg.repository_name}",
        "jobRequestId": msg.runner_request_id,
        "jobWorkflowRef": msg.job_workflow_ref,
        "workflowRunId": msg.workflow_run_id,
    }
    if runner is not None:
        status.update(job_context(msg))
    doc: dict[str, Any] = {"status": {k: v for k, v in status.items() if v}}
    if runner is not None and may_promote(runner):
        doc["status"]["phase"] = "Running"
        doc["metadata"] = {"resourceVersion": runner["metadata"]["resourceVersion"]}
    return go_json(doc)


def job_context(msg: JobStarted) -> dict[str, str]:
    """The event and the service's timestamps ARC 0.15's scaler records on the runner status
    (``cmd/ghalistener/scaler/scaler.go`` and its ``scaler_test.go`` at ARC 0ba3cc9): a
    timestamp is a ``metav1.Time``, so RFC 3339 in UTC to the second; an empty event name or
    a zero time is left out."""
    times = {
        "jobQueuedAt": msg.queue_time,
        "jobScaleSetAssignedAt": msg.scale_set_assign_time,
        "jobRunnerAssignedAt": msg.runner_assign_time,
    }
    context = {key: metav1_time(value) for key, value in times.items() if not is_zero_time(value)}
    if msg.event_name:
        context["jobEventName"] = msg.event_name
    return context


def metav1_time(value: datetime) -> str:
    """Kubernetes' ``metav1.Time`` JSON: ``t.UTC().Format(time.RFC3339)``, seconds truncated."""
    utc = value.astimezone(UTC) if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return f"{utc.year:04d}-{utc:%m-%dT%H:%M:%S}Z"


def may_promote(runner: Mapping[str, Any]) -> bool:
    """PR #4646's guard: not being deleted, and not already Failed/Succeeded/Outdated."""
    meta = runner.get("metadata") or {}
    phase = (runner.get("status") or {}).get("phase")
    return not meta.get("deletionTimestamp") and phase not in TERMINAL_PHASES


class Scaler:
    """See the module docstring. Not thread-safe: one listener loop drives it."""

    def __init__(
        self,
        writer: ScalerWriter,
        *,
        namespace: str,
        name: str,
        min_runners: int,
        max_runners: int,
        arc_version: ArcVersion | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """``arc_version`` None: learn it per runner (:mod:`listener.arc.version`)."""
        if not 0 <= min_runners <= max_runners:
            raise ValueError(
                f"need 0 <= min_runners <= max_runners, got {min_runners} > {max_runners}"
            )
        self.writer = writer
        self.namespace = namespace
        self.name = name
        self.min_runners = min_runners
        self.max_runners = max_runners
        #: Idle runners kept for hot slots (docs/design.md#hot-runners); set by the reconciler.
        self.hot_runners = 0
        #: ARC switched the scale set off (its runners ``Outdated``, seen by the capacity side):
        #: ask for no runner, as ARC's controller pins the set at zero replicas.
        self.switched_off = False
        self.target_runners = -1
        self.patch_seq = -1
        self.dirty = False
        self.arc_version = arc_version
        #: The version a runner's chart label showed (a listener serves one ARC release for
        #: its whole life: an upgrade recreates it); once it says 0.13/0.14, no more reads.
        self.learnt_version: ArcVersion | None = None
        self._sleep = sleep
        #: Set once a 403 on the runner GET showed a patch-only (0.13/0.14) Role.
        self.read_forbidden = False
        #: JobStarted patches that met a 409 and were re-read (what a race cost).
        self.conflicts = 0
        #: JobStarted patches the API refused for good (skipped, logged).
        self.refused = 0

    def set_max_runners(self, max_runners: int) -> None:
        """Follow a live ``maxRunners`` change, clamped by the one rule
        (reconciler/max_runners.py) at ``min_runners``."""
        self.max_runners = clamp_max_runners(max_runners, floor=self.min_runners)

    def set_hot_runners(self, hot_runners: int) -> None:
        """The live hot slots changed; the next ERS patch keeps that many idle runners."""
        if hot_runners < 0:
            raise ValueError(f"hot_runners must be >= 0, got {hot_runners}")
        self.hot_runners = hot_runners

    def set_switched_off(self, switched_off: bool) -> None:
        """ARC switched the scale set off (or back on); the next ERS patch follows."""
        self.switched_off = switched_off

    def handle_job_started(self, msg: JobStarted) -> None:
        self.dirty = True
        try:
            body = self._job_started(msg)
        except RunnerNotFound:
            log.info(
                "ephemeral runner %s/%s not found; skipping its status patch (job %s)",
                self.namespace,
                msg.runner_name,
                msg.job_id,
            )
            return
        except PermanentWriteError as exc:
            # A replay would meet the same refusal: ending the run for it would stop every
            # later message behind it (a poison message), so it is skipped like a 404.
            log.error(
                "the status patch of ephemeral runner %s/%s (job %s) was refused: %s; skipping it",
                self.namespace,
                msg.runner_name,
                msg.job_id,
                exc,
            )
            self.refused += 1
            return
        except Exception as exc:
            raise ScalerError(
                f"could not patch the status of ephemeral runner {self.namespace}/"
                f"{msg.runner_name} (job {msg.job_id}): {exc}"
            ) from exc
        log.info(
            "ephemeral runner %s marked busy with job %s (%s)",
            msg.runner_name,
            msg.job_id,
            body.decode(),
        )

    def _job_started(self, msg: JobStarted) -> bytes:
        """Send the patch of this ARC version; returns the bytes that were accepted."""
        name = msg.runner_name
        if self._legacy(self.learnt_version):
            return self._patch_status(name, job_started_status_patch(msg))
        for attempt in range(CONFLICT_ATTEMPTS):
            try:
                runner = self.writer.get_ephemeral_runner(self.namespace, name)
            except ReadForbidden:
                if self.arc_version is not None:
                    raise  # told 0.15, but the Role cannot read runners: say so, loudly
                self._note_patch_only_role()
                return self._patch_status(name, job_started_status_patch(msg))
            self.learnt_version = version_of_runner(runner) or self.learnt_version
            if self._legacy(self.learnt_version):
                return self._patch_status(name, job_started_status_patch(msg))
            try:
                return self._patch_status(name, job_started_status_patch(msg, runner))
            except WriteConflict:
                self.conflicts += 1
                log.info("ephemeral runner %s changed under us (409); re-reading", name)
                if attempt + 1 < CONFLICT_ATTEMPTS:
                    self._sleep(CONFLICT_WAIT)
        raise ScalerError(f"still conflicting after {CONFLICT_ATTEMPTS} attempts")

    def _legacy(self, seen: ArcVersion | None) -> bool:
        """True when the 0.13/0.14 patch (no read, no phase) is the one to send."""
        if self.read_forbidden and self.arc_version is None:
            return True
        version = self.arc_version or seen
        return version is not None and not version.listener_sets_running

    def _note_patch_only_role(self) -> None:
        self.read_forbidden = True
        log.warning(
            "the listener Role cannot GET ephemeralrunners (ARC 0.13/0.14 make it patch-only): "
            "sending the 0.14 JobStarted patch, without phase Running, from now on; set "
            "ARC_VERSION to say which ARC this is"
        )

    def _patch_status(self, name: str, body: bytes) -> bytes:
        self.writer.patch_ephemeral_runner_status(self.namespace, name, body)
        return body

    def handle_job_completed(self, msg: JobCompleted) -> None:
        self.dirty = True

    def handle_desired_runner_count(self, count: int) -> int:
        was_dirty, self.dirty = self.dirty, False
        if self.patch_seq == MAX_INT32:
            self.patch_seq = 0
        self.patch_seq += 1
        floor = 0 if self.switched_off else self.min_runners + self.hot_runners
        target = 0 if self.switched_off else min(floor + count, self.max_runners)
        patch_id = self.patch_seq
        if not was_dirty and target == self.target_runners and target == floor:
            patch_id = 0
        self.target_runners = target
        body = ephemeral_runner_set_patch(patch_id, target)
        try:
            self.writer.patch_ephemeral_runner_set(self.namespace, self.name, body)
        except Exception as exc:
            raise ScalerError(
                f"could not patch ephemeral runner set {self.namespace}/{self.name} "
                f"(patch {body.decode()}): {exc}"
            ) from exc
        log.debug(
            "ephemeral runner set %s/%s patched: replicas %d, patchID %d (assigned jobs %d)",
            self.namespace,
            self.name,
            target,
            patch_id,
            count,
        )
        return target


__all__ = [
    "MERGE_PATCH",
    "PermanentWriteError",
    "ReadForbidden",
    "RunnerNotFound",
    "Scaler",
    "ScalerError",
    "ScalerWriter",
    "WriteConflict",
    "ephemeral_runner_set_patch",
    "go_json",
    "job_context",
    "job_started_status_patch",
    "may_promote",
    "metav1_time",
]
