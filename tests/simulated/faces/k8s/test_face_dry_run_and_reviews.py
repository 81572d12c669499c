"""The Kubernetes face's server-side dry run and SubjectAccessReview, through the real client:
what ``verify`` asks of an API server."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from simulator.engine.store import ObjectStore
from tests.providers.kubernetes import objects as o


def probe_pod(name: str, priority_class: str = "arc-placeholder-runner") -> dict[str, object]:
    return {
        "metadata": {"name": name},
        "spec": {
            "priorityClassName": priority_class,
            "containers": [{"name": "c", "image": "pause"}],
        },
    }


def test_a_dry_run_create_answers_with_the_admitted_pod_and_stores_nothing(
    api: client.ApiClient, store: ObjectStore
) -> None:
    """dryRun=All runs admission (the priority is filled in) but persists nothing (prevents
    verify's dry run leaving pods behind)."""
    core = client.CoreV1Api(api)
    answer = core.create_namespaced_pod(o.NS, probe_pod("dry"), dry_run="All")
    assert answer.spec.priority == -10
    assert store.find("Pod", o.NS, "dry") is None


@pytest.mark.parametrize(
    ("body", "dry_run", "status"),
    [
        (probe_pod("dry", "no-such-class"), "All", 403),  # admission refuses, as for real
        (probe_pod("dry"), "Some", 400),  # upstream accepts only "All"
    ],
)
def test_a_dry_run_refusal_is_the_api_s_own_error(
    api: client.ApiClient, store: ObjectStore, body: dict[str, object], dry_run: str, status: int
) -> None:
    with pytest.raises(ApiException) as raised:
        client.CoreV1Api(api).create_namespaced_pod(o.NS, body, dry_run=dry_run)
    assert raised.value.status == status
    assert store.find("Pod", o.NS, "dry") is None


def test_a_subject_access_review_answers_for_the_named_service_account(
    api: client.ApiClient, store: ObjectStore
) -> None:
    """RBAC is evaluated for ``spec.user``, not for the caller (prevents verify judging the
    listener's permissions by the admin's)."""
    store.create(
        {
            "kind": "Role",
            "metadata": {"name": "reader", "namespace": o.NS},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
        }
    )
    store.create(
        {
            "kind": "RoleBinding",
            "metadata": {"name": "reader", "namespace": o.NS},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "listener", "namespace": "ctl"}],
        }
    )
    authz = client.AuthorizationV1Api(api)

    def allowed(user: str, verb: str) -> bool:
        review = client.V1SubjectAccessReview(
            spec=client.V1SubjectAccessReviewSpec(
                user=user,
                resource_attributes=client.V1ResourceAttributes(
                    verb=verb, resource="pods", namespace=o.NS
                ),
            )
        )
        return bool(authz.create_subject_access_review(review).status.allowed)

    assert allowed("system:serviceaccount:ctl:listener", "list")
    assert not allowed("system:serviceaccount:ctl:listener", "delete")
    assert not allowed("system:serviceaccount:ctl:other", "list")
    assert not allowed("alice", "list")  # only ServiceAccounts are modelled
