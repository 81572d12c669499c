"""Who is asking and what RBAC lets them do: the face's authenticator and authorizer.

Written from upstream's RBAC authorizer (``plugin/pkg/auth/authorizer/rbac`` and the
``rbac/v1`` rule helpers of kubernetes/kubernetes):

- a bearer token maps to a ServiceAccount (the face's ``tokens`` option); its user name is
  ``system:serviceaccount:<ns>:<name>`` and its groups ``system:serviceaccounts``,
  ``system:serviceaccounts:<ns>`` and ``system:authenticated``;
- ClusterRoleBindings grant their ClusterRole everywhere; RoleBindings grant their Role (same
  namespace) or ClusterRole inside the binding's namespace only;
- a rule matches when its verbs, apiGroups and resources hold the request's (``*`` matches
  all; ``pods/status`` names a subresource; ``*/status`` that subresource of every resource)
  and its resourceNames is empty or holds the request's name;
- non-resource URLs match exactly or by a trailing ``*`` prefix.

Not modelled: ClusterRole aggregation, impersonation, users and groups other than those
derived from a ServiceAccount, escalation checks when writing RBAC objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from simulator.engine.store import ObjectStore

Obj = dict[str, Any]


@dataclass(frozen=True)
class Identity:
    """The user behind a request, as the API server's authenticator would name it."""

    namespace: str
    service_account: str

    @property
    def user(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.service_account}"

    @property
    def groups(self) -> tuple[str, ...]:
        return (
            "system:serviceaccounts",
            f"system:serviceaccounts:{self.namespace}",
            "system:authenticated",
        )


@dataclass(frozen=True)
class Attributes:
    """One request's authorization attributes (``authorizer.Attributes`` upstream)."""

    verb: str
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""  # set for non-resource requests only

    @property
    def is_resource(self) -> bool:
        return not self.path


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str


def parse_identity(text: str) -> Identity:
    """``"<namespace>/<serviceaccount>"`` (the face's token map values)."""
    namespace, sep, name = text.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise ValueError(
            f"token identity {text!r}: expected '<namespace>/<serviceaccount>', "
            "e.g. 'arc-systems/arc-runners-listener'"
        )
    return Identity(namespace, name)


def _has(values: Iterable[str], wanted: str) -> bool:
    return any(v == "*" or v == wanted for v in values)


def _resource_matches(rule: Mapping[str, Any], attrs: Attributes) -> bool:
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    for res in rule.get("resources") or ():
        if res in ("*", combined):
            return True
        if attrs.subresource and res == f"*/{attrs.subresource}":
            return True
    return False


def rule_allows(rule: Mapping[str, Any], attrs: Attributes) -> bool:
    """One PolicyRule against one request (pure)."""
    if not _has(rule.get("verbs") or (), attrs.verb):
        return False
    if not attrs.is_resource:
        for url in rule.get("nonResourceURLs") or ():
            if url == attrs.path or (url.endswith("*") and attrs.path.startswith(url[:-1])):
                return True
        return False
    if not _has(rule.get("apiGroups") or (), attrs.group):
        return False
    if not _resource_matches(rule, attrs):
        return False
    names = rule.get("resourceNames") or ()
    return not names or attrs.name in names


def _subject_matches(subject: Mapping[str, Any], who: Identity, binding_ns: str) -> bool:
    kind = subject.get("kind")
    if kind == "ServiceAccount":
        # A ServiceAccount subject without a namespace means the binding's own namespace.
        ns = subject.get("namespace") or binding_ns
        return subject.get("name") == who.service_account and ns == who.namespace
    if kind == "User":
        return subject.get("name") == who.user
    if kind == "Group":
        return subject.get("name") in who.groups
    return False


def _bound(binding: Obj, who: Identity) -> bool:
    ns = binding["metadata"].get("namespace", "")
    return any(_subject_matches(s, who, ns) for s in binding.get("subjects") or ())


def _role_rules(store: ObjectStore, ref: Mapping[str, Any], namespace: str) -> list[Obj]:
    if ref.get("kind") == "ClusterRole":
        role = store.find("ClusterRole", None, str(ref.get("name", "")))
    elif ref.get("kind") == "Role":
        role = store.find("Role", namespace, str(ref.get("name", "")))
    else:
        role = None
    return list(role.get("rules") or ()) if role else []


def authorize(store: ObjectStore, who: Identity, attrs: Attributes) -> Decision:
    """Allowed when any binding of ``who`` grants a rule matching ``attrs``."""
    with store.lock:
        for crb in store.list("ClusterRoleBinding"):
            if _bound(crb, who):
                ref = crb.get("roleRef") or {}
                if any(rule_allows(r, attrs) for r in _role_rules(store, ref, "")):
                    return Decision(
                        True,
                        f'RBAC: allowed by ClusterRoleBinding "{crb["metadata"]["name"]}" of '
                        f'ClusterRole "{ref.get("name")}" to ServiceAccount '
                        f'"{who.service_account}/{who.namespace}"',
                    )
        if attrs.is_resource and attrs.namespace:
            for rb in store.list("RoleBinding", attrs.namespace):
                if _bound(rb, who):
                    ref = rb.get("roleRef") or {}
                    if any(rule_allows(r, attrs) for r in _role_rules(store, ref, attrs.namespace)):
                        return Decision(
                            True,
                            f'RBAC: allowed by RoleBinding "{rb["metadata"]["name"]}/'
                            f'{attrs.namespace}" of {ref.get("kind")} "{ref.get("name")}" to '
                            f'ServiceAccount "{who.service_account}/{who.namespace}"',
                        )
    return Decision(False, "")


def forbidden_message(who: Identity, attrs: Attributes) -> str:
    """The 403 message of upstream's ``forbiddenMessage`` for this request."""
    user = f'User "{who.user}"'
    if not attrs.is_resource:
        return f'{user} cannot {attrs.verb} path "{attrs.path}"'
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    where = f' in the namespace "{attrs.namespace}"' if attrs.namespace else " at the cluster scope"
    return f'{user} cannot {attrs.verb} resource "{resource}" in API group "{attrs.group}"{where}'


_SA_USER = "system:serviceaccount:"


def subject_review(store: ObjectStore, body: Any) -> Obj:
    """Answer a SubjectAccessReview: RBAC for the named ``spec.user``. Only ServiceAccount
    users (``system:serviceaccount:<ns>:<name>``) can hold bindings here; any other user is
    denied with a reason that says so."""
    spec = (body or {}).get("spec") or {}
    attrs = _resource_attributes(spec.get("resourceAttributes") or {})
    user = str(spec.get("user", ""))
    namespace, _, name = user.removeprefix(_SA_USER).partition(":")
    if not user.startswith(_SA_USER) or not namespace or not name:
        decision = Decision(False, f"user {user!r} is not a ServiceAccount (not modelled)")
    else:
        decision = authorize(store, Identity(namespace, name), attrs)
    return _answer("SubjectAccessReview", spec, decision)


def review(store: ObjectStore, who: Identity | None, body: Any) -> Obj:
    """Answer a SelfSubjectAccessReview ``body`` for ``who`` (None: no authorizer, allow)."""
    spec = (body or {}).get("spec") or {}
    res = spec.get("resourceAttributes")
    non = spec.get("nonResourceAttributes")
    if res:
        attrs = _resource_attributes(res)
    else:
        attrs = Attributes(
            verb=str((non or {}).get("verb", "")), path=str((non or {}).get("path", ""))
        )
    if who is None:
        decision = Decision(True, "no authorizer configured: everything is allowed")
    else:
        decision = authorize(store, who, attrs)
    return _answer("SelfSubjectAccessReview", spec, decision)


def _resource_attributes(res: Any) -> Attributes:
    """``spec.resourceAttributes`` of an access review, as the authorizer reads them."""
    return Attributes(
        verb=str(res.get("verb", "")),
        group=str(res.get("group", "")),
        resource=str(res.get("resource", "")),
        subresource=str(res.get("subresource", "")),
        namespace=str(res.get("namespace", "")),
        name=str(res.get("name", "")),
    )


def _answer(kind: str, spec: Any, decision: Decision) -> Obj:
    """The review object the API server returns: the request's spec and its status."""
    status: Obj = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return {
        "kind": kind,
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": status,
    }
