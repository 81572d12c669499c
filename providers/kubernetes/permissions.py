"""What the listener may do in Kubernetes, and a start-up check that it really may.

:data:`CLUSTER_RULES` and :data:`NAMESPACED_RULES` are the permissions the listener needs on
top of ARC's own listener Role (config/rbac.yaml holds the same rules; a test keeps them
equal). :func:`missing_permissions` asks the API server with one SelfSubjectAccessReview per
(verb, resource, namespace), the way ``kubectl auth can-i`` does, and returns what is denied.
A connection failure raises :class:`CannotCheck` so it is never reported as missing RBAC.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError as Urllib3Error


@dataclass(frozen=True, slots=True)
class Rule:
    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    #: Granted by ``rbac`` and config/rbac.yaml, but the listener runs without it (with the
    #: fallback its reader names), so a missing grant never holds readiness back: an upgrade
    #: that has not re-applied RBAC yet keeps working.
    optional: bool = False

    def as_dict(self) -> dict[str, list[str]]:
        return {
            "apiGroups": list(self.api_groups),
            "resources": list(self.resources),
            "verbs": list(self.verbs),
        }


#: Cluster-scoped reads (a ClusterRole): node state, the PriorityClass ladder, Karpenter.
CLUSTER_RULES: tuple[Rule, ...] = (
    Rule(("",), ("nodes",), ("list", "watch")),
    Rule(("scheduling.k8s.io",), ("priorityclasses",), ("list", "watch")),
    Rule(("karpenter.sh",), ("nodepools", "nodeclaims"), ("list", "watch")),
)
#: In the runner namespace (and the placeholder namespace, when it differs).
NAMESPACED_RULES: tuple[Rule, ...] = (
    Rule(("",), ("pods",), ("list", "watch", "create", "patch", "delete")),
    Rule(
        ("actions.github.com",),
        ("ephemeralrunnersets", "ephemeralrunners", "autoscalingrunnersets"),
        ("list", "watch"),
    ),
    # The owner election (providers/kubernetes/lease/election.py): one Lease per scale set.
    Rule(("coordination.k8s.io",), ("leases",), ("get", "create", "update")),
    # The hook template (providers/kubernetes/pods/hook_template.py), which places workflow pods
    # and so the workflow placeholders; without it they are placed like the runner pod.
    Rule(("",), ("configmaps",), ("list", "watch"), optional=True),
)


#: What ARC's controller grants its own listener ServiceAccount (resourcebuilder.go
#: ``rulesForListenerRole``: scale the EphemeralRunnerSet, mark EphemeralRunners). A listener
#: that runs as a ServiceAccount of our own (the declarative install, config/install/) needs
#: them from us; ARC's Role limits the first to the set's name, which is generated, so here it
#: is the runner namespace's.
ARC_LISTENER_RULES: tuple[Rule, ...] = (
    Rule(("actions.github.com",), ("ephemeralrunnersets",), ("patch",)),
    Rule(("actions.github.com",), ("ephemeralrunners", "ephemeralrunners/status"), ("patch",)),
)


@dataclass(frozen=True, slots=True, order=True)
class Permission:
    verb: str
    group: str
    resource: str
    #: None = cluster-wide.
    namespace: str | None = None
    #: The listener runs without it (:attr:`Rule.optional`).
    optional: bool = False

    def __str__(self) -> str:
        where = f"in namespace {self.namespace}" if self.namespace else "cluster-wide"
        return f"{self.verb} {self.group or 'core'}/{self.resource} {where}"


class CannotCheck(Exception):
    """The API server could not be asked: connection refused, TLS, timeout (said as such),
    or the identity itself refused. Never reported as missing RBAC."""


def required_permissions(namespaces: Iterable[str], *, optional: bool = False) -> list[Permission]:
    """Every (verb, resource, namespace) the listener needs, cluster rules first; with
    ``optional``, also those it runs without (:attr:`Rule.optional`)."""
    needed = [
        Permission(verb, group, resource, None, rule.optional)
        for rule in CLUSTER_RULES
        if optional or not rule.optional
        for group in rule.api_groups
        for resource in rule.resources
        for verb in rule.verbs
    ]
    for namespace in dict.fromkeys(namespaces):  # ordered, no duplicates
        needed += [
            Permission(verb, group, resource, namespace, rule.optional)
            for rule in NAMESPACED_RULES
            if optional or not rule.optional
            for group in rule.api_groups
            for resource in rule.resources
            for verb in rule.verbs
        ]
    return needed


def missing_permissions(
    api_client: k8s.ApiClient, needed: Sequence[Permission], *, timeout: float = 10.0
) -> list[Permission]:
    """The permissions of ``needed`` that the API server denies to this process's identity."""
    authz = k8s.AuthorizationV1Api(api_client)
    missing = []
    for permission in needed:
        review = k8s.V1SelfSubjectAccessReview(
            spec=k8s.V1SelfSubjectAccessReviewSpec(
                resource_attributes=k8s.V1ResourceAttributes(
                    verb=permission.verb,
                    group=permission.group,
                    resource=permission.resource,
                    namespace=permission.namespace,
                )
            )
        )
        try:
            answer = authz.create_self_subject_access_review(review, _request_timeout=timeout)
        except ApiException as exc:
            if exc.status in (401, 403):  # cannot even ask: an identity problem, say so
                raise CannotCheck(
                    f"the API server refused the access review (HTTP {exc.status} {exc.reason})"
                ) from None
            raise CannotCheck(f"access review failed: HTTP {exc.status} {exc.reason}") from None
        except (Urllib3Error, OSError) as exc:
            host = api_client.configuration.host
            raise CannotCheck(f"cannot reach the Kubernetes API at {host}: {exc}") from None
        if not (answer.status and answer.status.allowed):
            missing.append(permission)
    return missing
