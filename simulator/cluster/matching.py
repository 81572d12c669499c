"""Pod-to-node matching predicates: nodeSelector, required node affinity, taints/tolerations.

Pure functions over compiled, hashable forms so the scheduler, the kubelet and Karpenter's
simulation use exactly the same rules. Semantics follow the API docs:

* nodeSelector: every key must equal.
* requiredDuringSchedulingIgnoredDuringExecution: the node must match ANY term; a term matches
  when ALL its matchExpressions (In, NotIn, Exists, DoesNotExist, Gt, Lt on labels) and
  matchFields (``metadata.name`` In / NotIn) match. A term with nothing in it matches nothing.
* Taints: NoSchedule and NoExecute block unless tolerated; PreferNoSchedule never blocks.
  A toleration with an empty key and operator Exists tolerates everything; an empty effect
  matches every effect; operator defaults to Equal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Requirement = tuple[str, str, tuple[str, ...]]  # (key, operator, values)
TaintT = tuple[str, str, str]  # (key, value, effect)
Toleration = tuple[str, str, str, str]  # (key, operator, value, effect)

BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True, slots=True)
class Term:
    expressions: tuple[Requirement, ...]
    fields: tuple[Requirement, ...]


@dataclass(frozen=True, slots=True)
class Placement:
    """What a pod requires of its node (selector, affinity, tolerations), compiled."""

    selector: tuple[tuple[str, str], ...]
    terms: tuple[Term, ...] | None  # None: no required node affinity
    tolerations: tuple[Toleration, ...]
    #: Stable text identity: pods with the same key are interchangeable for matching.
    key: str

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        for k, v in self.selector:
            if labels.get(k) != v:
                return False
        if self.terms is None:
            return True
        return any(_term_matches(t, labels, node_name) for t in self.terms)

    def untolerated(self, taints: Sequence[TaintT]) -> TaintT | None:
        """The first NoSchedule/NoExecute taint the pod does not tolerate, else None."""
        for taint in taints:
            if taint[2] in BLOCKING_EFFECTS and not tolerates(self.tolerations, taint):
                return taint
        return None


def _req_matches(req: Requirement, value: str | None) -> bool:
    _key, op, values = req
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt"):
        if value is None or not values:
            return False
        try:
            have, want = int(value), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def _term_matches(term: Term, labels: Mapping[str, str], node_name: str) -> bool:
    if not term.expressions and not term.fields:
        return False
    for req in term.expressions:
        if not _req_matches(req, labels.get(req[0])):
            return False
    for req in term.fields:
        value = node_name if req[0] == "metadata.name" else None
        if not _req_matches(req, value):
            return False
    return True


def requirement_matches(req: Requirement, labels: Mapping[str, str]) -> bool:
    return _req_matches(req, labels.get(req[0]))


def tolerates(tolerations: Sequence[Toleration], taint: TaintT) -> bool:
    key, value, effect = taint
    for t_key, t_op, t_value, t_effect in tolerations:
        if t_effect and t_effect != effect:
            continue
        if not t_key:
            if t_op == "Exists":
                return True
            continue
        if t_key != key:
            continue
        if t_op == "Exists" or t_value == value:
            return True
    return False


def compile_requirements(items: Sequence[Mapping[str, Any]] | None) -> tuple[Requirement, ...]:
    return tuple(
        (str(r["key"]), str(r.get("operator", "In")), tuple(str(v) for v in r.get("values") or ()))
        for r in items or ()
    )


def compile_taints(items: Sequence[Mapping[str, Any]] | None) -> tuple[TaintT, ...]:
    return tuple(
        (str(t["key"]), str(t.get("value", "") or ""), str(t.get("effect", "")))
        for t in items or ()
    )


def compile_placement(spec: Mapping[str, Any]) -> Placement:
    """Compile a pod spec's nodeSelector, required node affinity and tolerations."""
    selector = tuple(sorted((str(k), str(v)) for k, v in (spec.get("nodeSelector") or {}).items()))
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or None
    terms: tuple[Term, ...] | None = None
    if required is not None:
        terms = tuple(
            Term(
                compile_requirements(term.get("matchExpressions")),
                compile_requirements(term.get("matchFields")),
            )
            for term in required.get("nodeSelectorTerms") or ()
        )
    tolerations = tuple(
        (
            str(t.get("key", "") or ""),
            str(t.get("operator", "Equal") or "Equal"),
            str(t.get("value", "") or ""),
            str(t.get("effect", "") or ""),
        )
        for t in spec.get("tolerations") or ()
    )
    key = json.dumps(
        [
            selector,
            None if terms is None else [[t.expressions, t.fields] for t in terms],
            tolerations,
        ],
        separators=(",", ":"),
    )
    return _intern(Placement(selector, terms, tolerations, key))


_PLACEMENTS: dict[str, Placement] = {}


def _intern(p: Placement) -> Placement:
    """Share one Placement object per distinct key (pods of one template are alike)."""
    if len(_PLACEMENTS) > 10_000:  # bounded: distinct placements are few in practice
        _PLACEMENTS.clear()
    return _PLACEMENTS.setdefault(p.key, p)
