"""Create-time validation the API server applies that the simulated store repeats, so a
spec the real API server refuses is refused in the simulated world too (the store raises
:class:`~simulator.engine.store.Invalid`, 422, with the API server's message).

Only what a writer of this project could get wrong is checked; the rest of
``pkg/apis/core/validation`` is not modelled:

- node affinity ``matchFields`` requirements (required and preferred terms): operator ``In``
  or ``NotIn`` with exactly one value, key ``metadata.name``
  (``ValidateNodeFieldSelectorRequirement``, kubernetes v1.36.3
  ``pkg/apis/core/validation/validation.go``). The real control plane refused placeholders
  whose busy-node preference named several nodes in one term; the simulated store took them
  (docs/real-vs-simulated.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

ONE_VALUE = "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"


def pod_problems(pod: dict[str, Any]) -> list[str]:
    """``<field path>: <reason>`` for each part of a pod the API server would refuse."""
    node_affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    problems: list[str] = []
    for path, term in _terms(node_affinity):
        for i, req in enumerate(term.get("matchFields") or ()):
            where = f"{path}.matchFields[{i}]"
            operator = req.get("operator")
            if operator not in ("In", "NotIn"):
                problems.append(
                    f'{where}.operator: Invalid value: "{operator}": not a valid selector operator'
                )
            elif len(req.get("values") or ()) != 1:
                problems.append(f"{where}.values: Required value: {ONE_VALUE}")
            if req.get("key") != "metadata.name":
                problems.append(
                    f'{where}.key: Invalid value: "{req.get("key")}": '
                    "not a valid field selector key"
                )
    return problems


def _terms(node_affinity: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    base = "spec.affinity.nodeAffinity"
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for i, term in enumerate(required.get("nodeSelectorTerms") or ()):
        yield f"{base}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]", term
    for i, entry in enumerate(
        node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    ):
        yield (
            f"{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}].preference",
            entry.get("preference") or {},
        )
