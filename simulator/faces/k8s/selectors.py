"""Label and field selectors with the Kubernetes API's syntax and semantics.

Label selectors: comma-separated requirements ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``,
``k notin (a,b)``, ``k`` (exists) and ``!k`` (does not exist). ``!=`` and ``notin`` also
match objects that lack the label, as in ``k8s.io/apimachinery/pkg/labels``.

Field selectors: ``path=value``, ``path==value``, ``path!=value`` for the fields the API
server supports on the kinds served here (``metadata.name``, ``metadata.namespace`` on all
kinds; ``spec.nodeName``, ``status.phase`` on pods).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_SET_OP = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s*\(([^)]*)\)\s*$")
_BINARY = re.compile(rf"^\s*({_KEY})\s*(==|!=|=)\s*([-A-Za-z0-9_.]*)\s*$")
_EXISTS = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")

FIELDS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "metadata.name": lambda o: (o.get("metadata") or {}).get("name", ""),
    "metadata.namespace": lambda o: (o.get("metadata") or {}).get("namespace", ""),
    "spec.nodeName": lambda o: (o.get("spec") or {}).get("nodeName", ""),
    "status.phase": lambda o: (o.get("status") or {}).get("phase", ""),
}


class SelectorError(ValueError):
    """A selector string is malformed; the message quotes the offending part."""


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!exists"
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op in ("=", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        if self.op == "exists":
            return present
        return not present


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p for p in (s.strip() for s in parts) if p]


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> LabelSelector:
        reqs = []
        for part in _split_top_level(text or ""):
            if m := _SET_OP.match(part):
                values = frozenset(v.strip() for v in m.group(4).split(",") if v.strip())
                reqs.append(Requirement(m.group(1), m.group(3), values))
            elif m := _BINARY.match(part):
                op = "=" if m.group(3) in ("=", "==") else "!="
                reqs.append(Requirement(m.group(1), op, frozenset({m.group(4)})))
            elif m := _EXISTS.match(part):
                reqs.append(Requirement(m.group(2), "!exists" if m.group(1) else "exists"))
            else:
                raise SelectorError(f"unable to parse requirement: {part!r}")
        return cls(tuple(reqs))

    def matches(self, obj: Mapping[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(r.matches(labels) for r in self.requirements)


@dataclass(frozen=True)
class FieldSelector:
    terms: tuple[tuple[str, bool, str], ...] = ()  # (path, equal?, value)

    @classmethod
    def parse(cls, text: str | None, *, kind: str) -> FieldSelector:
        terms = []
        for part in _split_top_level(text or ""):
            m = re.match(r"^\s*([A-Za-z.]+)\s*(==|!=|=)\s*(.*?)\s*$", part)
            if not m:
                raise SelectorError(f"invalid field selector: {part!r}")
            path = m.group(1)
            allowed = path.startswith("metadata.") or kind == "Pod"
            if path not in FIELDS or not allowed:
                raise SelectorError(
                    f'field label not supported: "{path}" (kind {kind}; supported: '
                    + ", ".join(p for p in FIELDS if p.startswith("metadata.") or kind == "Pod")
                    + ")"
                )
            terms.append((path, m.group(2) != "!=", m.group(3)))
        return cls(tuple(terms))

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all((FIELDS[path](obj) == value) is equal for path, equal, value in self.terms)
