"""ARC's listener scaler (docs/protocol.md#scaler): the EphemeralRunnerSet merge-patch and the
EphemeralRunner status patch, byte for byte what ARC sends.

State: ``target_runners`` (-1), ``patch_seq`` (-1), ``dirty`` (False).

- :meth:`Scaler.handle_job_started`: ``dirty = True``; merge-patch the ``status`` subresource
  of EphemeralRunner ``<runnerName>`` with the job's fields (empty/zero ones left out).
  NotFound is logged and ignored (the runner is already gone); any other error ends the run.
- :meth:`Scaler.handle_job_completed`: ``dirty = True`` only.
- :meth:`Scaler.handle_desired_runner_count`:
  1. ``was_dirty = dirty; dirty = False``;
  2. ``patch_seq``: reset to 0 when it is 2**31-1, then + 1 (the first call yields 0);
  3. ``target = min(min_runners + count, max_runners)``;
  4. ``patchID = patch_seq``, but 0 when not ``was_dirty`` and the target is unchanged and
     equals ``min_runners`` (0 = "authoritative, the ERS controller may scale idle runners
     down"; > 0 = "new intent, scale up only");
  5. merge-patch ``{"spec":{"patchID":P,"replicas":N}}`` (``"replicas":null`` when N is 0,
     which is how Go's merge-patch diff says "removed"); returns ``target``.

Bodies are serialized like Go's ``encoding/json`` of a map (sorted keys, compact, ``<``, ``>``,
``&``, U+2028/9 escaped). Writes go through :class:`ScalerWriter`;
:class:`KubernetesScalerWriter` sends those exact bytes with the official kubernetes client.
The scaler is synchronous (blocking I/O): the async loop runs it in a worker thread.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any, Protocol

from providers.actions.models import JobCompleted, JobStarted

log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"
GROUP, VERSION = "actions.github.com", "v1alpha1"
MAX_INT32 = 2_147_483_647
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class RunnerNotFound(Exception):
    """The EphemeralRunner to patch does not exist (404)."""


class ScalerError(Exception):
    """A Kubernetes write failed; the listener run ends (as ARC's does)."""


class ScalerWriter(Protocol):
    """The two PATCH calls of the scaler; ``body`` is sent as is (merge-patch JSON)."""

    def patch_ephemeral_runner_set(self, namespace: str, name: str, body: bytes) -> None: ...

    def patch_ephemeral_runner_status(self, namespace: str, name: str, body: bytes) -> None:
        """Raises :class:`RunnerNotFound` on 404."""
        ...


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


def job_started_status_patch(msg: JobStarted) -> bytes:
    """ARC's merge patch of ``EphemeralRunner.status`` on JobStarted (zero values left out)."""
    status: dict[str, Any] = {
        "jobDisplayName": msg.job_display_name,
        "jobId": msg.job_id,
        "jobRepositoryName": f"{msg.owner_name}/{msg.repository_name}",
        "jobRequestId": msg.runner_request_id,
        "jobWorkflowRef": msg.job_workflow_ref,
        "workflowRunId": msg.workflow_run_id,
    }
    return go_json({"status": {k: v for k, v in status.items() if v}})


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
    ) -> None:
        if not 0 <= min_runners <= max_runners:
            raise ValueError(
                f"need 0 <= min_runners <= max_runners, got {min_runners} > {max_runners}"
            )
        self.writer = writer
        self.namespace = namespace
        self.name = name
        self.min_runners = min_runners
        self.max_runners = max_runners
        self.target_runners = -1
        self.patch_seq = -1
        self.dirty = False

    def set_max_runners(self, max_runners: int) -> None:
        """Follow a live ``maxRunners`` change (clamped at ``min_runners``)."""
        self.max_runners = max(self.min_runners, max_runners)

    def handle_job_started(self, msg: JobStarted) -> None:
        self.dirty = True
        body = job_started_status_patch(msg)
        try:
            self.writer.patch_ephemeral_runner_status(self.namespace, msg.runner_name, body)
        except RunnerNotFound:
            log.info(
                "ephemeral runner %s/%s not found; skipping its status patch (job %s)",
                self.namespace,
                msg.runner_name,
                msg.job_id,
            )
            return
        except Exception as exc:
            raise ScalerError(
                f"could not patch the status of ephemeral runner {self.namespace}/"
                f"{msg.runner_name} (patch {body.decode()}): {exc}"
            ) from exc
        log.info("ephemeral runner %s marked busy with job %s", msg.runner_name, msg.job_id)

    def handle_job_completed(self, msg: JobCompleted) -> None:
        self.dirty = True

    def handle_desired_runner_count(self, count: int) -> int:
        was_dirty, self.dirty = self.dirty, False
        if self.patch_seq == MAX_INT32:
            self.patch_seq = 0
        self.patch_seq += 1
        target = min(self.min_runners + count, self.max_runners)
        patch_id = self.patch_seq
        if not was_dirty and target == self.target_runners and target == self.min_runners:
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


class KubernetesScalerWriter:
    """:class:`ScalerWriter` over the official kubernetes client.

    ``CustomObjectsApi.patch_namespaced_custom_object(_status)`` (kubernetes 37) sends
    ``Content-Type: application/merge-patch+json`` for a dict body, but serializes it with
    ``json.dumps`` defaults (``", "`` and ``": "``): same document, different bytes from ARC.
    With ``exact_bytes=True`` (default) we let the client's ``ApiClient`` build the request
    (URL, auth incl. token refresh, TLS and proxy pool) and send ARC's compact bytes on its
    connection pool; with ``exact_bytes=False`` we call ``CustomObjectsApi`` with the decoded
    dict and force the merge-patch content type.

    Partial: client-go retries 429/5xx responses that carry Retry-After; this writer does not.
    """

    def __init__(self, api: Any, *, exact_bytes: bool = True, timeout: float = 30.0) -> None:
        from kubernetes import client as k8s

        self._k8s = k8s
        self.custom = api if isinstance(api, k8s.CustomObjectsApi) else k8s.CustomObjectsApi(api)
        self.exact_bytes = exact_bytes
        self.timeout = timeout

    def patch_ephemeral_runner_set(self, namespace: str, name: str, body: bytes) -> None:
        self._patch("ephemeralrunnersets", namespace, name, body, status=False)

    def patch_ephemeral_runner_status(self, namespace: str, name: str, body: bytes) -> None:
        self._patch("ephemeralrunners", namespace, name, body, status=True)

    def _patch(self, plural: str, namespace: str, name: str, body: bytes, *, status: bool) -> None:
        if not self.exact_bytes:
            self._patch_with_api(plural, namespace, name, body, status=status)
            return
        api_client = self.custom.api_client
        path = "/apis/{group}/{version}/namespaces/{namespace}/{plural}/{name}"
        method, url, headers, _, _ = api_client.param_serialize(
            method="PATCH",
            resource_path=path + ("/status" if status else ""),
            path_params={
                "group": GROUP,
                "version": VERSION,
                "namespace": namespace,
                "plural": plural,
                "name": name,
            },
            header_params={"Content-Type": MERGE_PATCH, "Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        import urllib3

        response = api_client.rest_client.pool_manager.request(
            method,
            url,
            body=body,
            headers=headers,
            timeout=urllib3.Timeout(total=self.timeout),
            preload_content=True,
        )
        if response.status == 404:
            raise RunnerNotFound(f"{plural} {namespace}/{name} not found")
        if not 200 <= response.status <= 299:
            raise ScalerError(
                f"PATCH {plural} {namespace}/{name}: HTTP {response.status} "
                f"{_status_message(response.data)}"
            )

    def _patch_with_api(
        self, plural: str, namespace: str, name: str, body: bytes, *, status: bool
    ) -> None:
        call = (
            self.custom.patch_namespaced_custom_object_status
            if status
            else self.custom.patch_namespaced_custom_object
        )
        try:
            call(
                GROUP,
                VERSION,
                namespace,
                plural,
                name,
                json.loads(body),
                _content_type=MERGE_PATCH,
                _request_timeout=self.timeout,
            )
        except self._k8s.exceptions.ApiException as exc:
            if exc.status == 404:
                raise RunnerNotFound(f"{plural} {namespace}/{name} not found") from None
            raise ScalerError(
                f"PATCH {plural} {namespace}/{name}: HTTP {exc.status} {exc.reason}"
            ) from None


def _status_message(data: bytes | None) -> str:
    """The ``message`` of a Kubernetes Status body, or a short excerpt."""
    try:
        doc = json.loads(data or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("message"), str):
        return str(doc["message"])[:200]
    return (data or b"").decode("utf-8", "replace")[:200]


__all__ = [
    "MERGE_PATCH",
    "KubernetesScalerWriter",
    "RunnerNotFound",
    "Scaler",
    "ScalerError",
    "ScalerWriter",
    "ephemeral_runner_set_patch",
    "go_json",
    "job_started_status_patch",
]
