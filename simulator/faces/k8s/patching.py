"""Patch documents: JSON merge patch (RFC 7386) and JSON patch (RFC 6902).

Strategic merge patch is applied as a JSON merge patch. That is exact for everything this
project patches (maps: labels, annotations, status fields, ``spec.replicas``); it differs
from the API server only for lists with patch-merge keys (containers, conditions...), which
a merge patch replaces wholesale instead of merging by key.
"""

from __future__ import annotations

import copy
from typing import Any


class PatchError(ValueError):
    """The patch document cannot be applied (wrong shape, failed ``test``, bad path)."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"JSON pointer must start with '/': {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, tokens: list[str], path: str) -> Any:
    node = doc
    for token in tokens[:-1]:
        try:
            node = node[int(token)] if isinstance(node, list) else node[token]
        except (KeyError, IndexError, ValueError, TypeError):
            raise PatchError(f"path {path!r} does not exist") from None
    return node


def json_patch(doc: Any, operations: Any) -> Any:
    """RFC 6902 ``add``, ``remove``, ``replace`` and ``test`` on a deep copy of ``doc``."""
    if not isinstance(operations, list):
        raise PatchError('a JSON patch is a list of operations, e.g. [{"op": "add", ...}]')
    doc = copy.deepcopy(doc)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"invalid JSON patch operation: {op!r}")
        path = op["path"]
        tokens = _pointer(path)
        if not tokens:
            raise PatchError("patching the whole document is not supported")
        parent = _parent(doc, tokens, path)
        last = tokens[-1]
        kind = op["op"]
        try:
            if kind == "test":
                current = parent[int(last)] if isinstance(parent, list) else parent[last]
                if current != op.get("value"):
                    raise PatchError(f"test failed at {path!r}")
            elif kind == "remove":
                del parent[int(last) if isinstance(parent, list) else last]
            elif kind in ("add", "replace"):
                value = copy.deepcopy(op.get("value"))
                if isinstance(parent, list):
                    index = len(parent) if last == "-" else int(last)
                    if kind == "add":
                        parent.insert(index, value)
                    else:
                        parent[index] = value
                else:
                    if kind == "replace" and last not in parent:
                        raise PatchError(f"path {path!r} does not exist")
                    parent[last] = value
            else:
                raise PatchError(f"unsupported JSON patch op {kind!r} (add, remove, replace, test)")
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            if isinstance(exc, PatchError):
                raise
            raise PatchError(f"cannot {kind} at {path!r}") from None
    return doc
