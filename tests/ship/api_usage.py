"""Which Kubernetes API permissions the code needs, derived from its source text at test time.

Three patterns cover every way the code talks to the API server today; a new pattern must
be added here (the RBAC test then shows what it found):

1. **Watched kinds.** The watch cache (``providers/kubernetes/watch/cache.py``) lists then watches
   every ``WatchTarget("<Kind>", <namespace>, ...)`` built anywhere in the scanned code:
   ``list`` + ``watch`` on that kind, namespaced when a namespace argument is given,
   cluster-wide otherwise. Kinds map to (group, plural) through ``RESOURCES`` of
   providers/kubernetes/watch/targets.py.
2. **Typed client writes and reads.** ``<api>.<verb>_namespaced_<kind>(...)`` and
   ``<verb>_<kind>(...)`` calls (``create_namespaced_pod``, ``read_node``...), with
   ``read`` -> ``get`` and ``replace`` -> ``update``.
3. **Custom-object and raw writes.** In a file that writes custom objects
   (``patch_namespaced_custom_object``, ``method="PATCH"``...), each call that passes a known
   plural as a string literal is a write of that plural with the file's write verbs; with
   ``status=True`` (or a ``*_custom_object_status`` call) it is the ``/status`` subresource.

A permission is ``(api group, resource, verb, scope)``; scope is ``namespaced`` or
``cluster``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The code that runs in the listener pod and talks to the API server.
SCANNED = ("providers/kubernetes", "listener")
#: Operator commands (``verify``, ``rbac``, ``values``...): they run with the operator's
#: kubeconfig, not as the listener's ServiceAccount, so their calls need no listener grant
#: (``verify`` creates a ConfigMap as its probes' owner, for one).
NOT_THE_LISTENER = ("listener/commands",)

_TYPED = re.compile(
    r"^(?P<verb>create|delete|patch|replace|read|list|watch)_"
    r"(?P<ns>namespaced_)?(?P<kind>[a-z_]+?)(?P<all>_for_all_namespaces)?(?P<status>_status)?$"
)
_CUSTOM = re.compile(
    r"^(?P<verb>create|delete|patch|replace|get|list)_(namespaced|cluster)_custom_object(?P<status>_status)?$"
)
_VERBS = {"read": "get", "replace": "update"}
_RAW_METHODS = {"POST": "create", "PATCH": "patch", "PUT": "update", "DELETE": "delete"}


@dataclass(frozen=True, order=True)
class Permission:
    group: str
    resource: str
    verb: str
    scope: str  # "namespaced" | "cluster"

    def __str__(self) -> str:
        group = self.group or "core"
        return f"{self.verb} {group}/{self.resource} ({self.scope})"


@dataclass(frozen=True)
class Kind:
    group: str
    plural: str
    namespaced: bool


CACHE = ROOT / "providers" / "kubernetes" / "watch" / "targets.py"


def kinds() -> dict[str, Kind]:
    """Kind name -> (group, plural, namespaced), read from the watch cache's ``RESOURCES``
    table in its source: ``Resource("Pod", "", "v1", "pods", True)``, group and version as
    literals or ``labels`` constants (``L.ARC_GROUP``).

    Parsed rather than imported: importing it imports ``kubernetes.client``, whose lazy
    model loading breaks freezegun-based tests that run later in the same process.
    """
    from providers.kubernetes.pods import labels

    def resolve(node: ast.AST) -> object:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Attribute):
            return getattr(labels, node.attr)
        raise ValueError(f"{CACHE.name}:{node.lineno}: cannot resolve {ast.dump(node)}")

    table: dict[str, Kind] = {}
    for node in ast.walk(ast.parse(CACHE.read_text(), filename=str(CACHE))):
        if isinstance(node, ast.Call) and _call_name(node) == "Resource" and len(node.args) == 5:
            kind, group, _version, plural, namespaced = (resolve(a) for a in node.args)
            table[str(kind)] = Kind(str(group), str(plural), bool(namespaced))
    if not table:
        raise ValueError(f"{CACHE}: no Resource(...) entries found; has the table moved?")
    # Written but never watched, so not in the cache's table: the owner election's Lease.
    table.update(WRITTEN_ONLY)
    return table


#: Kinds the code reads and writes through the typed client without watching them.
WRITTEN_ONLY = {"Lease": Kind("coordination.k8s.io", "leases", True)}


def _snake_to_plural(kind: str, table: dict[str, Kind]) -> Kind | None:
    """``priority_class`` -> the PriorityClass entry (typed client names are snake_case)."""
    flat = kind.replace("_", "")
    for name, entry in table.items():
        if name.lower() == flat:
            return entry
    return None


def source_files() -> list[Path]:
    files: list[Path] = []
    for folder in SCANNED:
        files += sorted((ROOT / folder).rglob("*.py"))
    skipped = tuple(ROOT / folder for folder in NOT_THE_LISTENER)
    return [f for f in files if not any(f.is_relative_to(s) for s in skipped)]


def _string(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _call_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _has_namespace(call: ast.Call) -> bool:
    for keyword in call.keywords:
        if keyword.arg == "namespace":
            return not (isinstance(keyword.value, ast.Constant) and keyword.value.value is None)
    if len(call.args) >= 2:
        arg = call.args[1]
        return not (isinstance(arg, ast.Constant) and arg.value is None)
    return False


def _status_keyword(call: ast.Call) -> bool:
    return any(
        k.arg == "status" and isinstance(k.value, ast.Constant) and k.value.value is True
        for k in call.keywords
    )


@dataclass
class Usage:
    permissions: set[Permission]
    #: Where each permission was found ("file:line what"), for failure messages.
    evidence: dict[Permission, list[str]]
    #: WatchTarget kinds the cache table does not know (the test fails on these).
    unknown: list[str]

    def add(self, permission: Permission, where: str) -> None:
        self.permissions.add(permission)
        self.evidence.setdefault(permission, []).append(where)


def scan() -> Usage:
    table = kinds()
    plurals = {entry.plural: entry for entry in table.values()}
    usage = Usage(set(), {}, [])
    for path in source_files():
        text = path.read_text()
        tree = ast.parse(text, filename=str(path))
        rel = path.relative_to(ROOT)
        write_verbs = _custom_write_verbs(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = _call_name(node)
            where = f"{rel}:{node.lineno} {name}"
            if name == "WatchTarget" and node.args and (kind_name := _string(node.args[0])):
                entry = table.get(kind_name)
                if entry is None:
                    usage.unknown.append(f"{where}({kind_name!r})")
                    continue
                scope = "namespaced" if entry.namespaced and _has_namespace(node) else "cluster"
                for verb in ("list", "watch"):
                    usage.add(Permission(entry.group, entry.plural, verb, scope), where)
                continue
            if _CUSTOM.match(name):
                continue  # handled through the plural literals below
            typed = _TYPED.match(name)
            if typed and name not in ("list_call",):
                entry = _snake_to_plural(typed["kind"], table)
                # The typed client always says ``namespaced_`` (or ``_for_all_namespaces``)
                # for namespaced kinds: anything else is one of our own methods.
                client_name = entry is not None and (
                    not entry.namespaced or typed["ns"] or typed["all"]
                )
                if entry is not None and client_name:
                    verb = _VERBS.get(typed["verb"], typed["verb"])
                    resource = entry.plural + ("/status" if typed["status"] else "")
                    scope = "namespaced" if typed["ns"] else "cluster"
                    if verb in ("list", "watch"):
                        continue  # reads go through the cache: counted by WatchTarget above
                    usage.add(Permission(entry.group, resource, verb, scope), where)
                continue
            if write_verbs:
                for arg in node.args:
                    plural = _string(arg)
                    if plural in plurals:
                        entry = plurals[plural]
                        resource = plural + ("/status" if _status_keyword(node) else "")
                        for verb in write_verbs:
                            usage.add(Permission(entry.group, resource, verb, "namespaced"), where)
    return usage


def _custom_write_verbs(tree: ast.AST) -> set[str]:
    """Write verbs a file uses on custom objects or through raw requests."""
    verbs: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            match = _CUSTOM.match(node.attr)
            if match and match["verb"] not in ("get", "list"):
                verbs.add(_VERBS.get(match["verb"], match["verb"]))
        if isinstance(node, ast.keyword) and node.arg == "method":
            method = _string(node.value)
            if method in _RAW_METHODS:
                verbs.add(_RAW_METHODS[method])
    return verbs
