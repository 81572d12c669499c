"""Label values of the ARC families: the scale-set identity, workflow refs, wire timestamps."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlparse


@dataclass(frozen=True, slots=True)
class ScaleSetIdentity:
    """The scale-set label values (docs/protocol.md#metrics: from the config URL and the ERS)."""

    name: str
    namespace: str
    enterprise: str = ""
    organization: str = ""
    repository: str = ""

    @classmethod
    def from_config_url(cls, url: str, *, name: str, namespace: str) -> ScaleSetIdentity:
        """Parse ``configure_url`` like docs/protocol.md#config-url; an unparsable URL leaves them
        empty (the config loader rejects it before metrics exist; labels must never raise)."""
        path = urlparse(url.strip("/")).path.strip("/")
        parts = path.split("/") if path else []
        if len(parts) == 1 and parts[0]:
            return cls(name, namespace, organization=parts[0])
        if len(parts) == 2 and parts[0].lower() == "enterprises":
            return cls(name, namespace, enterprise=parts[1])
        if len(parts) == 2:
            return cls(name, namespace, organization=parts[0], repository=parts[1])
        return cls(name, namespace)

    def labels(self) -> dict[str, str]:
        return {
            "enterprise": self.enterprise,
            "organization": self.organization,
            "repository": self.repository,
            "name": self.name,
            "namespace": self.namespace,
        }


def parse_workflow_ref(ref: str) -> tuple[str, str]:
    """``(job_workflow_name, job_workflow_target)`` of a ``jobWorkflowRef`` (ARC's rules).

    ``owner/repo/.github/workflows/ci.yml@refs/heads/main`` -> ``("ci", "heads/main")``;
    ``refs/tags/X`` -> ``tags/X``; ``refs/pull/N/merge`` -> ``pull/N``; any other ref -> "";
    both empty unless the ref has exactly one ``@``.
    """
    parts = ref.split("@")
    if len(parts) != 2:
        return "", ""
    path, target_ref = parts
    file_name = path.rsplit("/", 1)[-1]
    name = file_name.removesuffix(".yml").removesuffix(".yaml")
    target = ""
    if target_ref.startswith("refs/heads/"):
        target = "heads/" + target_ref.removeprefix("refs/heads/")
    elif target_ref.startswith("refs/tags/"):
        target = "tags/" + target_ref.removeprefix("refs/tags/")
    elif target_ref.startswith("refs/pull/"):
        number, slash, _ = target_ref.removeprefix("refs/pull/").partition("/")
        if slash and number:
            target = "pull/" + number
    return name, target


def _snake(camel: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", camel).lower()


def _field(obj: Any, camel: str, default: Any = None) -> Any:
    """Read a wire field whether the model names it ``totalAssignedJobs`` or
    ``total_assigned_jobs``, or the object is a plain mapping (duck-typed on purpose: the
    Actions wire models live in ``providers/actions`` and are built independently)."""
    if isinstance(obj, Mapping):
        return obj.get(camel, obj.get(_snake(camel), default))
    for attr in (camel, _snake(camel)):
        value = getattr(obj, attr, None)
        if value is not None:
            return value
    return default


#: Go's zero time: ``0001-01-01T00:00:00Z`` means "unset".
_ZERO_YEAR = 1


def unix_seconds(value: Any) -> int | None:
    """Whole Unix seconds of a wire timestamp (datetime, RFC 3339 text or epoch number);
    ``None`` for Go's zero time or a missing / unparsable value."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return math.floor(value)
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    if value.year <= _ZERO_YEAR:
        return None
    when: datetime = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return math.floor(when.timestamp())
