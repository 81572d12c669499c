"""Pod-to-node matching predicates: nodeSelector, node affinity, taints/tolerations.

Pure functions over compiled, hashable forms so the scheduler, the kubelet and Karpenter's
simulation use exactly the same rules. Semantics follow the API docs:

* nodeSelector: every key must equal.
* requiredDuringSchedulingIgnoredDuringExecution: the node must match ANY term; a term matches
  when ALL its matchExpressions (In, NotIn, Exists, DoesNotExist, Gt, Lt on labels) and
  matchFields (``metadata.name`` In / NotIn) match. A term with nothing in it matches nothing.
* preferredDuringSchedulingIgnoredDuringExecution: never filters. kube-scheduler scores a node
  by the weights of the terms it matches (:meth:`Placement.preference_score`, see
  :mod:`.scoring`); Karpenter first treats the heaviest term as a requirement and drops it
  only when the pod fits nowhere (:meth:`Placement.strict`, :meth:`Placement.relaxed`, see
  :mod:`.provisioner`).
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


PreferredTerm = tuple[int, Term]  # (weight, preference)


@dataclass(frozen=True, slots=True)
class Placement:
    """What a pod requires of its node (selector, affinity, tolerations), compiled, and the
    node affinity it prefers."""

    selector: tuple[tuple[str, str], ...]
    terms: tuple[Term, ...] | None  # None: no required node affinity
    tolerations: tuple[Toleration, ...]
    #: Preferred node-affinity terms, heaviest first (a stable sort: equal weights keep the
    #: pod's order, the order Karpenter drops them in). Empty for nearly every pod.
    preferred: tuple[PreferredTerm, ...]
    #: Stable text identity: pods with the same key are interchangeable for matching and
    #: scoring (preferences are part of it: they change where a pod goes).
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

    def preference_score(self, labels: Mapping[str, str], node_name: str) -> int:
        """The NodeAffinity Score plugin's raw score: the sum of the weights of the preferred
        terms the node matches (``PreferredSchedulingTerms.Score`` in
        k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go, which skips
        weight-0 and empty terms; an empty term matches nothing here anyway)."""
        return sum(w for w, term in self.preferred if w and _term_matches(term, labels, node_name))

    def strict(self) -> Placement:
        """What Karpenter's simulation requires first: the heaviest preferred term ANDed into
        the requirements (``NewPodRequirements`` in karpenter pkg/scheduling/requirements.go
        adds ``preferred[0].Preference.MatchExpressions`` - matchFields are not read - to the
        nodeSelector and required terms). Without preferences, the placement itself."""
        if not self.preferred:
            return self
        return _derived(self)[0]

    def relaxed(self) -> Placement:
        """The placement once Karpenter drops the heaviest preferred term
        (``removePreferredNodeAffinityTerm`` in karpenter
        pkg/controllers/provisioning/scheduling/preferences.go); the lighter terms stay
        preferred. Without preferences, the placement itself."""
        if not self.preferred:
            return self
        return _derived(self)[1]


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


def _compile_term(term: Mapping[str, Any]) -> Term:
    return Term(
        compile_requirements(term.get("matchExpressions")),
        compile_requirements(term.get("matchFields")),
    )


def compile_placement(spec: Mapping[str, Any]) -> Placement:
    """Compile a pod spec's nodeSelector, node affinity and tolerations."""
    selector = tuple(sorted((str(k), str(v)) for k, v in (spec.get("nodeSelector") or {}).items()))
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or None
    terms: tuple[Term, ...] | None = None
    if required is not None:
        terms = tuple(_compile_term(term) for term in required.get("nodeSelectorTerms") or ())
    weighted = [
        (int(p.get("weight", 0) or 0), _compile_term(p.get("preference") or {}))
        for p in affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    ]
    # Heaviest first, stable: the order Karpenter turns them into requirements and drops them.
    preferred = tuple(sorted(weighted, key=lambda wt: -wt[0]))
    tolerations = tuple(
        (
            str(t.get("key", "") or ""),
            str(t.get("operator", "Equal") or "Equal"),
            str(t.get("value", "") or ""),
            str(t.get("effect", "") or ""),
        )
        for t in spec.get("tolerations") or ()
    )
    return _make(selector, terms, tolerations, preferred)


def _make(
    selector: tuple[tuple[str, str], ...],
    terms: tuple[Term, ...] | None,
    tolerations: tuple[Toleration, ...],
    preferred: tuple[PreferredTerm, ...],
) -> Placement:
    parts: list[Any] = [
        selector,
        None if terms is None else [[t.expressions, t.fields] for t in terms],
        tolerations,
    ]
    if preferred:  # absent otherwise: the keys of pods without preferences are unchanged
        parts.append([[w, t.expressions, t.fields] for w, t in preferred])
    key = json.dumps(parts, separators=(",", ":"))
    return _intern(Placement(selector, terms, tolerations, preferred, key))


def _derived(p: Placement) -> tuple[Placement, Placement]:
    """(strict, relaxed) for a placement with preferences, built once per key."""
    pair = _DERIVED.get(p.key)
    if pair is None:
        pair = _DERIVED[p.key] = (
            _strict(p),
            _make(p.selector, p.terms, p.tolerations, p.preferred[1:]),
        )
    return pair


def _strict(p: Placement) -> Placement:
    extra = p.preferred[0][1].expressions
    if not extra:  # a term of matchFields only adds no requirement for Karpenter
        terms = p.terms
    elif p.terms is None:
        terms = (Term(extra, ()),)
    else:
        # AND into every required term (OR of ANDs); an empty term still matches nothing.
        terms = tuple(
            Term(t.expressions + extra, t.fields) if t.expressions or t.fields else t
            for t in p.terms
        )
    return _make(p.selector, terms, p.tolerations, ())


_PLACEMENTS: dict[str, Placement] = {}
_DERIVED: dict[str, tuple[Placement, Placement]] = {}


def _intern(p: Placement) -> Placement:
    """Share one Placement object per distinct key (pods of one template are alike)."""
    if len(_PLACEMENTS) > 10_000:  # bounded: distinct placements are few in practice
        _PLACEMENTS.clear()
        _DERIVED.clear()
    return _PLACEMENTS.setdefault(p.key, p)
