"""What ARC's resources look like on the wire for the scaler's writes: the API group and
version of the EphemeralRunner(Set), the merge-patch content type, the errors a write ends
in, and the writer port (:class:`ScalerWriter`) that listener/arc/scaler.py calls and
providers/kubernetes/write/arc_writer.py implements."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

MERGE_PATCH = "application/merge-patch+json"
GROUP, VERSION = "actions.github.com", "v1alpha1"


class RunnerNotFound(Exception):
    """The EphemeralRunner to patch does not exist (404)."""


class ScalerError(Exception):
    """A Kubernetes write failed; the listener run ends (as ARC's does)."""


class PermanentWriteError(ScalerError):
    """The API refused the write for good (a 4xx other than 404/409/429): retrying, or
    replaying the message, would meet the same answer."""


class WriteConflict(ScalerError):
    """409: the resourceVersion precondition failed; re-read and try again."""


class ReadForbidden(ScalerError):
    """403 on a read: the listener Role is patch-only (ARC 0.13/0.14)."""


class ScalerWriter(Protocol):
    """The scaler's calls; ``body`` is sent as is (merge-patch JSON)."""

    def patch_ephemeral_runner_set(self, namespace: str, name: str, body: bytes) -> None: ...

    def patch_ephemeral_runner_status(self, namespace: str, name: str, body: bytes) -> None:
        """Raises :class:`RunnerNotFound` on 404, :class:`WriteConflict` on 409."""
        ...

    def get_ephemeral_runner(self, namespace: str, name: str) -> Mapping[str, Any]:
        """Raises :class:`RunnerNotFound` on 404, :class:`ReadForbidden` on 403."""
        ...
