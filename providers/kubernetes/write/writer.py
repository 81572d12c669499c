"""The few idempotent writes the reconciler's subscribers make, over the real client.

:class:`KubernetesPlaceholderWriter` implements ``reconciler.ports.PlaceholderWriter``:

- ``create_pair``: builds both pods (:class:`PlaceholderPodBuilder`) and POSTs them in
  parallel. 409 AlreadyExists is success (a retried step). A pod the watch
  cache already holds costs no call: a mend re-creates a pair whose surviving half is
  there (storm: ~400 mends per run, each one 409 before).
- ``delete_pods``: DELETE with ``gracePeriodSeconds: 0`` and a **UID precondition**, so a
  pod recreated under the same name is never deleted by mistake (409 Conflict: left alone,
  logged). 404 NotFound is success. The UID comes from the PodRef, else the watch cache,
  else the answer to this writer's own create. A pod that none of them knows is already
  gone: no call is made (the reconciler relies on that to keep deletes per pair <= 2).
- ``renew_lease``: JSON merge patch of the TTL annotation (404: gone, fine).

Calls run on a small thread pool (bounded concurrency) and every call has a request
timeout. Failures other than the idempotent ones are logged and counted, never raised:
the subscriber must go on with the other pairs, and the outcome (or its absence) is
observed in the next snapshot (docs/design.md#the-loop). Every API call is counted by verb in
:attr:`KubernetesPlaceholderWriter.calls` and every outcome in ``outcomes``.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Protocol

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from providers.kubernetes.lease.fence import LeaseFence, LeaseFenced
from providers.kubernetes.pods import labels as L
from providers.kubernetes.pods.placeholders import PlaceholderPodBuilder, format_expiry
from reconciler.ports import PairSpec, PodRef

log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"
#: Remembered uids of pods this writer created (until the cache sees them).
CREATED_MEMORY = 4096


class PodLookup(Protocol):
    """What the writer reads from the watch cache (:class:`KubeCache` satisfies it)."""

    def get(self, kind: str, namespace: str | None, name: str) -> Mapping[str, Any] | None: ...

    def was_deleted(self, kind: str, namespace: str | None, name: str, uid: str) -> bool: ...


class KubernetesPlaceholderWriter:
    def __init__(
        self,
        api_client: client.ApiClient,
        builder: PlaceholderPodBuilder,
        *,
        cache: PodLookup | None,
        max_workers: int = 4,
        request_timeout: float = 10.0,
    ) -> None:
        """``cache`` None: pods without a known uid are deleted without a precondition."""
        self.core = client.CoreV1Api(api_client)
        self.builder = builder
        self.cache = cache
        self.request_timeout = request_timeout
        #: Set once the Lease is held (listener/process/app.py): no write goes out without it.
        self.fence: LeaseFence | None = None
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="pod-writer")
        self._lock = threading.Lock()
        self._created: OrderedDict[tuple[str, str], str] = OrderedDict()
        #: API calls by verb ("create", "delete", "patch").
        self.calls: Counter[str] = Counter()
        #: Outcomes ("created", "exists", "deleted", "not_found", "uid_conflict", "skipped",
        #: "renewed", "failed_create"...).
        self.outcomes: Counter[str] = Counter()

    def close(self) -> None:
        # Every call already waited for its own requests (_run_all); what is left at close is
        # a request abandoned by a bounded shutdown, which must not hold the exit.
        self._pool.shutdown(wait=False, cancel_futures=True)

    # --- PlaceholderWriter -------------------------------------------------------------------

    def create_pair(self, spec: PairSpec) -> None:
        self._run_all([partial(self._create, pod) for pod in self.builder.build_pods(spec)])

    def delete_pods(self, pods: Sequence[PodRef]) -> None:
        self._run_all([partial(self._delete, ref) for ref in pods])

    def renew_lease(self, pods: Sequence[PodRef], expires_at: float) -> None:
        self._run_all([partial(self._renew, ref, expires_at) for ref in pods])

    # --- calls -------------------------------------------------------------------------------

    def _run_all(self, jobs: Sequence[Callable[[], None]]) -> None:
        futures = [self._pool.submit(job) for job in jobs]
        for future in futures:
            future.result()  # jobs catch their own errors; each call has a request timeout

    def _count(self, call: str | None, outcome: str) -> None:
        with self._lock:
            if call:
                self.calls[call] += 1
            self.outcomes[outcome] += 1

    def _timeout(self, what: str) -> float | None:
        """The request timeout of one write, or None: fenced off (the Lease is not ours)."""
        if self.fence is None:
            return self.request_timeout
        try:
            return self.fence.timeout_for(self.request_timeout, what)
        except LeaseFenced as exc:
            self._count(None, "fenced")
            log.warning("%s", exc)
            return None

    def _create(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        ns, name = meta["namespace"], meta["name"]
        if self.cache is not None and self.cache.get("Pod", ns, name) is not None:
            self._count(None, "exists")  # the POST could only meet AlreadyExists
            return
        timeout = self._timeout(f"create pod {ns}/{name}")
        if timeout is None:
            return
        try:
            # A plain dict body: the client validates it into V1Pod and sends it back out
            # unchanged (tests compare what the API server stored with the builder's output).
            body: Any = pod
            resp: Any = self.core.create_namespaced_pod(
                ns, body, _preload_content=False, _request_timeout=timeout
            )
            try:
                uid = (json.loads(resp.data).get("metadata") or {}).get("uid")
            finally:
                resp.release_conn()
            if uid:
                self._remember(ns, name, uid)
            self._count("create", "created")
        except ApiException as exc:
            if exc.status == 409:
                self._count("create", "exists")
                return
            self._count("create", "failed_create")
            log.warning("create pod %s/%s failed: %s %s", ns, name, exc.status, _message(exc))
        except Exception as exc:  # network errors: observed as a missing pod next step
            self._count("create", "failed_create")
            log.warning("create pod %s/%s failed: %s", ns, name, exc)

    def _remember(self, ns: str, name: str, uid: str) -> None:
        with self._lock:
            self._created[(ns, name)] = uid
            self._created.move_to_end((ns, name))
            while len(self._created) > CREATED_MEMORY:
                self._created.popitem(last=False)

    def _uid_for(self, ref: PodRef) -> tuple[bool, str | None]:
        """(known to exist?, uid). Unknown everywhere -> (False, None): already gone."""
        if ref.uid:
            return True, ref.uid
        if self.cache is not None:
            obj = self.cache.get("Pod", ref.namespace, ref.name)
            if obj is not None:
                return True, (obj.get("metadata") or {}).get("uid")
        with self._lock:
            uid = self._created.get((ref.namespace, ref.name))
        if uid is not None:
            # Created by us: either the cache has not seen it yet (delete it), or it saw it
            # come and go (preempted, ended): nothing to do.
            if self.cache is not None and self.cache.was_deleted(
                "Pod", ref.namespace, ref.name, uid
            ):
                with self._lock:
                    self._created.pop((ref.namespace, ref.name), None)
                return False, None
            return True, uid
        return self.cache is None, None

    def _delete(self, ref: PodRef) -> None:
        exists, uid = self._uid_for(ref)
        if not exists:
            self._count(None, "skipped")
            return
        timeout = self._timeout(f"delete pod {ref.namespace}/{ref.name}")
        if timeout is None:
            return
        preconditions = client.V1Preconditions(uid=uid) if uid else None
        body = client.V1DeleteOptions(grace_period_seconds=0, preconditions=preconditions)
        try:
            resp: Any = self.core.delete_namespaced_pod(
                ref.name,
                ref.namespace,
                body=body,
                _preload_content=False,
                _request_timeout=timeout,
            )
            _finish(resp)
            self._count("delete", "deleted")
        except ApiException as exc:
            if exc.status == 404:
                self._count("delete", "not_found")
            elif exc.status == 409:
                self._count("delete", "uid_conflict")
                log.info(
                    "pod %s/%s was recreated (uid is no longer %s); left alone",
                    ref.namespace,
                    ref.name,
                    uid,
                )
            else:
                self._count("delete", "failed_delete")
                log.warning(
                    "delete pod %s/%s failed: %s %s",
                    ref.namespace,
                    ref.name,
                    exc.status,
                    _message(exc),
                )
        except Exception as exc:
            self._count("delete", "failed_delete")
            log.warning("delete pod %s/%s failed: %s", ref.namespace, ref.name, exc)
        finally:
            with self._lock:
                self._created.pop((ref.namespace, ref.name), None)

    def _renew(self, ref: PodRef, expires_at: float) -> None:
        patch = {"metadata": {"annotations": {L.ANNOTATION_EXPIRES_AT: format_expiry(expires_at)}}}
        timeout = self._timeout(f"renew pod {ref.namespace}/{ref.name}")
        if timeout is None:
            return
        try:
            resp: Any = self.core.patch_namespaced_pod(
                ref.name,
                ref.namespace,
                patch,
                _content_type=MERGE_PATCH,
                _preload_content=False,
                _request_timeout=timeout,
            )
            _finish(resp)
            self._count("patch", "renewed")
        except ApiException as exc:
            if exc.status == 404:
                self._count("patch", "not_found")
            else:
                self._count("patch", "failed_patch")
                log.warning(
                    "renew lease of pod %s/%s failed: %s %s",
                    ref.namespace,
                    ref.name,
                    exc.status,
                    _message(exc),
                )
        except Exception as exc:
            self._count("patch", "failed_patch")
            log.warning("renew lease of pod %s/%s failed: %s", ref.namespace, ref.name, exc)


def _finish(resp: Any) -> None:
    """Read the whole body, then return the connection to the pool.

    Releasing an unread response would leave its body on the keep-alive connection, and
    the next request on it would read that body as its status line.
    """
    try:
        resp.read()
    finally:
        resp.release_conn()


def _message(exc: ApiException) -> str:
    """The Status message of an API error (never headers or request bodies)."""
    try:
        return str(json.loads(exc.body or "{}").get("message", exc.reason))
    except (ValueError, AttributeError):
        return str(exc.reason)
