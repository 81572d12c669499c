"""Validation and admission the face applies to writes, with upstream's 422 wording.

From kube-apiserver: ``ValidateObjectMeta`` (names are DNS-1123 subdomains for the kinds
below), ``ValidatePod`` (at least one container), ``ValidatePriorityClassUpdate`` (``value``
forbidden to change, ``preemptionPolicy`` immutable), ``ValidateRoleBindingUpdate``
(``roleRef`` immutable) and the Priority admission plugin (fills ``spec.priority`` and
``spec.preemptionPolicy`` from the PriorityClass, refuses unknown classes with 403).
Defaulting: a PriorityClass's ``preemptionPolicy`` defaults to ``PreemptLowerPriority``.
Everything else of upstream's validation and defaulting is not modelled.
"""

from __future__ import annotations

import json
import re
from typing import Any

from simulator.engine.store import KindInfo, ObjectStore
from simulator.faces.k8s.errors import ApiError, invalid

Obj = dict[str, Any]

_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
#: RBAC kinds name objects as path segments, not subdomains (``ValidateRBACName``).
_PATH_SEGMENT_NAMES = {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}

Cause = tuple[str, str, str]  # (field, reason type, message body)


def _go(value: Any) -> str:
    return json.dumps(value)


def name_causes(info: KindInfo, name: str) -> list[Cause]:
    if info.kind in _PATH_SEGMENT_NAMES:
        if name in (".", "..") or "/" in name or "%" in name:
            return [
                (
                    "metadata.name",
                    "FieldValueInvalid",
                    f"Invalid value: {_go(name)}: may not contain '/' or '%'",
                )
            ]
        return []
    if len(name) > 253:
        return [
            (
                "metadata.name",
                "FieldValueInvalid",
                f"Invalid value: {_go(name)}: must be no more than 253 characters",
            )
        ]
    if not _DNS1123_SUBDOMAIN.fullmatch(name):
        return [
            ("metadata.name", "FieldValueInvalid", f"Invalid value: {_go(name)}: {_SUBDOMAIN_MSG}")
        ]
    return []


def _pod_causes(pod: Obj) -> list[Cause]:
    if not (pod.get("spec") or {}).get("containers"):
        return [("spec.containers", "FieldValueRequired", "Required value")]
    return []


def default(info: KindInfo, obj: Obj) -> None:
    """Defaulting the API server applies before validation (``SetDefaults_PriorityClass``)."""
    if info.kind == "PriorityClass" and not obj.get("preemptionPolicy"):
        obj["preemptionPolicy"] = "PreemptLowerPriority"


def validate_create(info: KindInfo, obj: Obj) -> None:
    """422 for an object upstream would refuse to create."""
    name = str(obj["metadata"].get("name") or "")
    causes = name_causes(info, name)
    if info.kind == "Pod":
        causes += _pod_causes(obj)
    if causes:
        raise invalid(info.kind, name, causes, info.group)


def validate_update(info: KindInfo, old: Obj, new: Obj) -> None:
    """422 for a change of an immutable field."""
    name = str(old["metadata"].get("name") or "")
    causes: list[Cause] = []
    if info.kind == "PriorityClass":
        if new.get("value") != old.get("value"):
            causes.append(
                ("value", "FieldValueForbidden", "Forbidden: may not be changed in an update.")
            )
        if new.get("preemptionPolicy") != old.get("preemptionPolicy"):
            causes.append(
                (
                    "preemptionPolicy",
                    "FieldValueInvalid",
                    f"Invalid value: {_go(new.get('preemptionPolicy'))}: field is immutable",
                )
            )
    elif info.kind in ("RoleBinding", "ClusterRoleBinding") and new.get("roleRef") != old.get(
        "roleRef"
    ):
        causes.append(("roleRef", "FieldValueInvalid", 'Invalid value: "": cannot change roleRef'))
    if causes:
        raise invalid(info.kind, name, causes, info.group)


def admit_priority(store: ObjectStore, pod: Obj, *, strict: bool) -> None:
    """The Priority admission plugin: resolve ``priorityClassName`` into ``spec.priority``."""
    spec = pod.setdefault("spec", {})
    name = spec.get("priorityClassName")
    if not name:
        return
    pc = store.find("PriorityClass", None, name)
    if pc is None:
        if strict:
            raise ApiError(
                403,
                "Forbidden",
                f'pods "{pod["metadata"]["name"]}" is forbidden: no PriorityClass with name '
                f"{name} was found",
                {"name": pod["metadata"]["name"], "kind": "pods"},
            )
        return
    spec["priority"] = int(pc.get("value", 0))
    spec["preemptionPolicy"] = pc.get("preemptionPolicy") or "PreemptLowerPriority"
