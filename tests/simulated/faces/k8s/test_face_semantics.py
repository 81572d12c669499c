"""Upstream API-server semantics of the face, checked with the real kubernetes client.

Each test names the kube-apiserver / apimachinery behaviour it mirrors."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from simulator.engine.store import ObjectStore
from simulator.faces.k8s import K8sFace, protobuf
from tests.providers.kubernetes import objects as o

ROOT = Path(__file__).resolve().parents[4]
LISTENER_SA = "arc-systems/arc-runners-0a1b2c3d-listener"


def status_of(exc: ApiException) -> dict:
    body = json.loads(exc.body)
    assert body["kind"] == "Status" and body["status"] == "Failure"
    assert body["code"] == exc.status
    return body


def config_objects(name: str) -> list[dict]:
    text = (ROOT / "config" / name).read_text()
    return [d for d in yaml.safe_load_all(text) if d]


@pytest.fixture
def rbac_face(store: ObjectStore) -> Iterator[K8sFace]:
    """The face with authentication on: config/rbac.yaml grants the listener's account."""
    for obj in config_objects("rbac.yaml"):
        store.create(obj)
    tokens = {"listener-token": LISTENER_SA, "stranger-token": "arc-systems/stranger"}
    with K8sFace(store, tokens=tokens, fresh_timeout=0.2) as face:
        yield face


def api_for(face: K8sFace, token: str | None) -> client.ApiClient:
    config = client.Configuration(host=face.url)
    if token is not None:
        config.api_key = {"authorization": token}
        config.api_key_prefix = {"authorization": "Bearer"}
    return client.ApiClient(config)


def can_i(api: client.ApiClient, verb: str, resource: str, group: str = "", ns: str = "") -> bool:
    review = client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=client.V1ResourceAttributes(
                verb=verb, resource=resource, group=group, namespace=ns or None
            )
        )
    )
    answer = client.AuthorizationV1Api(api).create_self_subject_access_review(review)
    return bool(answer.status.allowed)


# --- RBAC and SelfSubjectAccessReview (plugin/pkg/auth/authorizer/rbac) ----------------------


def test_access_review_evaluates_the_stored_rbac_of_the_token_s_service_account(
    rbac_face: K8sFace,
):
    with api_for(rbac_face, "listener-token") as api:
        assert can_i(api, "create", "pods", ns="arc-runners")  # Role via RoleBinding
        assert can_i(api, "watch", "nodes")  # ClusterRole via ClusterRoleBinding
        assert can_i(api, "list", "ephemeralrunnersets", "actions.github.com", "arc-runners")
        # What config/rbac.yaml deliberately does not grant:
        assert not can_i(api, "create", "pods", ns="default")  # other namespaces
        assert not can_i(api, "delete", "nodes")
        assert not can_i(api, "update", "pods", ns="arc-runners")
    with api_for(rbac_face, "stranger-token") as api:
        assert not can_i(api, "list", "pods", ns="arc-runners")


def test_a_request_without_the_permission_is_forbidden_with_upstream_s_message(
    rbac_face: K8sFace,
):
    with api_for(rbac_face, "listener-token") as api:
        core = client.CoreV1Api(api)
        assert core.list_namespaced_pod("arc-runners").items is not None
        with pytest.raises(ApiException) as err:
            core.list_namespaced_pod("default")
    body = status_of(err.value)
    assert err.value.status == 403 and body["reason"] == "Forbidden"
    assert body["message"] == (
        'pods is forbidden: User "system:serviceaccount:arc-systems:arc-runners-0a1b2c3d-'
        'listener" cannot list resource "pods" in API group "" in the namespace "default"'
    )


def test_an_unknown_or_missing_token_is_unauthorized(rbac_face: K8sFace):
    for token in ("forged", None):
        with api_for(rbac_face, token) as api, pytest.raises(ApiException) as err:
            client.CoreV1Api(api).list_node()
        assert err.value.status == 401


def test_without_a_token_map_every_review_is_allowed(face: K8sFace):
    with api_for(face, None) as api:
        assert can_i(api, "delete", "nodes")


def test_a_review_needs_exactly_one_kind_of_attributes(face: K8sFace):
    with api_for(face, None) as api, pytest.raises(ApiException) as err:
        client.AuthorizationV1Api(api).create_self_subject_access_review(
            client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec())
        )
    assert err.value.status == 422


def test_rbac_kinds_service_accounts_secrets_configmaps_and_leases_round_trip(
    api: client.ApiClient,
):
    core = client.CoreV1Api(api)
    core.create_namespaced_service_account(o.NS, {"metadata": {"name": "listener"}})
    core.create_namespaced_secret(o.NS, {"metadata": {"name": "s"}, "stringData": {"k": "v"}})
    core.create_namespaced_config_map(o.NS, {"metadata": {"name": "c"}, "data": {"k": "v"}})
    rbac = client.RbacAuthorizationV1Api(api)
    rbac.create_cluster_role({"metadata": {"name": "r"}, "rules": []})
    coord = client.CoordinationV1Api(api)
    lease = coord.create_namespaced_lease(
        o.NS, {"metadata": {"name": "leader"}, "spec": {"holderIdentity": "a"}}
    )
    assert lease.spec.holder_identity == "a"
    assert [s.metadata.name for s in core.list_namespaced_service_account(o.NS).items] == [
        "listener"
    ]
    assert core.read_namespaced_config_map("c", o.NS).data == {"k": "v"}
    assert [r.metadata.name for r in rbac.list_cluster_role().items] == ["r"]


# --- validation (pkg/apis/*/validation) ---------------------------------------------------------


def test_priority_class_value_is_immutable(api: client.ApiClient):
    sched = client.SchedulingV1Api(api)
    with pytest.raises(ApiException) as err:
        sched.patch_priority_class("arc-runner", {"value": 1000})
    body = status_of(err.value)
    assert err.value.status == 422 and body["reason"] == "Invalid"
    assert body["message"] == (
        'PriorityClass.scheduling.k8s.io "arc-runner" is invalid: value: Forbidden: may not be '
        "changed in an update."
    )
    assert body["details"] == {
        "name": "arc-runner",
        "group": "scheduling.k8s.io",
        "kind": "PriorityClass",
        "causes": [
            {
                "reason": "FieldValueForbidden",
                "message": "Forbidden: may not be changed in an update.",
                "field": "value",
            }
        ],
    }
    assert sched.read_priority_class("arc-runner").value == 20
    sched.patch_priority_class("arc-runner", {"description": "descriptions may change"})


def test_a_pod_without_containers_or_with_an_invalid_name_is_invalid(api: client.ApiClient):
    core = client.CoreV1Api(api)
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod(
            o.NS, {"metadata": {"name": "Bad_Name"}, "spec": {"containers": []}}
        )
    body = status_of(err.value)
    assert err.value.status == 422
    assert [c["field"] for c in body["details"]["causes"]] == ["metadata.name", "spec.containers"]
    assert body["message"].startswith('Pod "Bad_Name" is invalid: [metadata.name: Invalid value: ')
    assert body["message"].endswith(", spec.containers: Required value]")
    assert core.list_namespaced_pod(o.NS, field_selector="metadata.name=Bad_Name").items == []


# --- watch cache (staging/src/k8s.io/apiserver/pkg/storage/cacher) ---------------------------


def raw_watch(api: client.ApiClient, timeout: int, **kw) -> list[dict]:
    """Every event of one pod watch in arc-runners, as sent, until ``timeout`` seconds."""
    resp = client.CoreV1Api(api).list_namespaced_pod(
        o.NS, watch=True, _preload_content=False, timeout_seconds=timeout, **kw
    )
    try:
        return [json.loads(line) for line in resp.read().splitlines() if line.strip()]
    finally:
        resp.release_conn()


def test_a_plain_watch_from_a_future_resource_version_stays_silent_until_its_timeout(
    store: ObjectStore,
):
    """The watch cache serves a plain watch from a resourceVersion it has not reached an
    empty interval and its watcher drops every event not newer than that version
    (staging/src/k8s.io/apiserver/pkg/storage/cacher/watch_cache.go getAllEventsSinceLocked,
    cache_watcher.go process); only sendInitialEvents=true waits for freshness and fails
    (cacher.go waitUntilWatchCacheFreshAndForceAllEvents). A face that failed this watch
    with "Too large resource version" after fresh_timeout would send clients down an error
    path the real API server never takes."""
    with (
        K8sFace(store, fresh_timeout=0.2, bookmark_interval=0.05) as face,
        client.ApiClient(client.Configuration(host=face.url)) as api,
    ):
        events = raw_watch(
            api,
            timeout=1,
            resource_version=str(store.resource_version + 100),
            allow_watch_bookmarks=True,
        )
    assert events == []  # no ERROR, and no bookmark from before the requested version


def test_a_plain_watch_from_a_future_resource_version_sends_only_the_changes_after_it(
    store: ObjectStore, face: K8sFace, api: client.ApiClient
):
    """Once the store passes the requested version, the changes after it arrive as from
    any other version (cache_watcher.go process: only events newer than the watch's
    resourceVersion, bookmarks never older than it); the ones up to it are not re-sent."""
    future = store.resource_version + 2

    def write_three_pods() -> None:
        time.sleep(0.3)
        for name in ("up-to-1", "up-to-2", "after"):
            store.create(o.pod(name))

    writer = threading.Thread(target=write_three_pods)
    writer.start()
    events = raw_watch(api, timeout=2, resource_version=str(future), allow_watch_bookmarks=True)
    writer.join()

    changes = [
        (e["type"], e["object"]["metadata"]["name"]) for e in events if e["type"] != "BOOKMARK"
    ]
    assert changes == [("ADDED", "after")]
    bookmarks = [
        int(e["object"]["metadata"]["resourceVersion"]) for e in events if e["type"] == "BOOKMARK"
    ]
    assert all(rv >= future for rv in bookmarks)


def watch_list_events(api: client.ApiClient, **kw) -> list[dict]:
    resp = client.CoreV1Api(api).list_namespaced_pod(
        o.NS, watch=True, _preload_content=False, timeout_seconds=1, **kw
    )
    try:
        return [json.loads(line) for line in resp.read().splitlines() if line.strip()]
    finally:
        resp.release_conn()


def test_watch_list_sends_the_state_then_an_initial_events_end_bookmark(
    api: client.ApiClient, store: ObjectStore
):
    events = watch_list_events(
        api,
        send_initial_events=True,
        allow_watch_bookmarks=True,
        resource_version_match="NotOlderThan",
        resource_version=str(store.resource_version),
    )
    initial = [e for e in events if e["type"] == "ADDED"]
    assert {e["object"]["metadata"]["name"] for e in initial} == {
        "arc-runners-runner-a",
        "arc-runners-runner-a-workflow",
        "unrelated",
    }
    end = events[len(initial)]
    assert end["type"] == "BOOKMARK"
    assert end["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_watch_list_of_a_future_version_fails_as_too_large(store: ObjectStore, rbac_face: K8sFace):
    with api_for(rbac_face, "listener-token") as api:
        events = watch_list_events(
            api,
            send_initial_events=True,
            allow_watch_bookmarks=True,
            resource_version_match="NotOlderThan",
            resource_version=str(store.resource_version + 5),
        )
    assert [e["type"] for e in events] == ["ERROR"]
    status = events[0]["object"]
    assert status["code"] == 504 and status["reason"] == "Timeout"
    assert status["details"]["causes"] == [
        {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    ]


def test_watch_list_without_its_companion_options_is_invalid(api: client.ApiClient):
    with pytest.raises(ApiException) as err:
        watch_list_events(api, send_initial_events=True)
    body = status_of(err.value)
    assert err.value.status == 422
    assert [c["field"] for c in body["details"]["causes"]] == [
        "resourceVersionMatch",
        "allowWatchBookmarks",
    ]


# --- protobuf request bodies (kubectl's typed clients) ----------------------------------------


def _field(number: int, payload: bytes) -> bytes:
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def test_a_protobuf_access_review_is_decoded_like_its_json_form():
    attrs = _field(1, b"arc-runners") + _field(2, b"create") + _field(5, b"pods")
    review = _field(2, _field(1, attrs))
    type_meta = _field(1, b"authorization.k8s.io/v1") + _field(2, b"SelfSubjectAccessReview")
    body = b"k8s\x00" + _field(1, type_meta) + _field(2, review)
    assert protobuf.decode_access_review(body)["spec"] == {
        "resourceAttributes": {"namespace": "arc-runners", "verb": "create", "resource": "pods"}
    }
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode_access_review(b"k8s\x00" + _field(1, _field(2, b"Pod")))


# --- server-side apply options and defaulting ---------------------------------------------------


def test_an_apply_patch_without_a_field_manager_is_invalid(api: client.ApiClient):
    core = client.CoreV1Api(api)
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map(
            "c",
            o.NS,
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
            _content_type="application/apply-patch+yaml",
        )
    body = status_of(err.value)
    assert err.value.status == 422
    assert body["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for '
        "apply patch"
    )
    created = core.patch_namespaced_config_map(
        "c",
        o.NS,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}},
        field_manager="test",
        _content_type="application/apply-patch+yaml",
    )
    assert created.data == {"k": "v"}  # apply creates a missing object


def test_a_priority_class_without_preemption_policy_gets_upstream_s_default(
    api: client.ApiClient,
):
    sched = client.SchedulingV1Api(api)
    made = sched.create_priority_class({"metadata": {"name": "plain"}, "value": 5})
    assert made.preemption_policy == "PreemptLowerPriority"
