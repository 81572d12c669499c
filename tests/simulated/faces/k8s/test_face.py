"""The simulated Kubernetes API over HTTP, exercised with the real kubernetes client."""

from __future__ import annotations

import json

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from simulator.engine.store import ObjectStore
from simulator.faces.k8s import K8sFace
from tests.providers.kubernetes import objects as o

ARC = ("actions.github.com", "v1alpha1")


def status_of(exc: ApiException) -> dict:
    body = json.loads(exc.body)
    assert body["kind"] == "Status" and body["apiVersion"] == "v1"
    assert body["status"] == "Failure" and body["code"] == exc.status
    return body


def pod_names(items) -> set[str]:
    return {p["metadata"]["name"] for p in items}


def raw_list(api: client.ApiClient, **kw) -> dict:
    resp = client.CoreV1Api(api).list_namespaced_pod(o.NS, _preload_content=False, **kw)
    return json.loads(resp.data)


def test_discovery_lists_core_and_custom_groups_but_not_absent_ones(api: client.ApiClient):
    groups = client.ApisApi(api).get_api_versions()
    assert {g.name for g in groups.groups} == {
        "actions.github.com",
        "scheduling.k8s.io",
        "rbac.authorization.k8s.io",
        "coordination.k8s.io",
        "authorization.k8s.io",
        "policy",  # PodDisruptionBudgets (the opt-in placeholder budget)
        "monitoring.coreos.com",  # PodMonitor, PrometheusRule (config/install's dry run)
    }
    core = client.CoreV1Api(api).get_api_resources()
    assert {"pods", "nodes", "pods/status"} <= {r.name for r in core.resources}
    arc = client.CustomObjectsApi(api).get_api_resources(*ARC)
    assert {r.name for r in arc.resources if "/" not in r.name} == {
        "autoscalingrunnersets",
        "ephemeralrunners",
        "ephemeralrunnersets",
    }


def test_lists_carry_a_resource_version_and_honour_selectors(
    api: client.ApiClient, store: ObjectStore
):
    body = raw_list(api)
    assert body["kind"] == "PodList" and body["metadata"]["resourceVersion"] == str(
        store.resource_version
    )
    assert pod_names(body["items"]) == {
        "arc-runners-runner-a",
        "arc-runners-runner-a-workflow",
        "unrelated",
    }
    assert pod_names(raw_list(api, label_selector="runner-pod")["items"]) == {
        "arc-runners-runner-a-workflow"
    }
    assert pod_names(raw_list(api, label_selector="!runner-pod,app notin (web)")["items"]) == {
        "arc-runners-runner-a"
    }
    assert pod_names(raw_list(api, label_selector="app in (web, db)")["items"]) == {"unrelated"}
    assert pod_names(raw_list(api, field_selector="metadata.name=unrelated")["items"]) == {
        "unrelated"
    }
    with pytest.raises(ApiException) as err:
        raw_list(api, label_selector="app in (web")
    assert err.value.status == 400 and status_of(err.value)["reason"] == "BadRequest"


def test_typed_client_calls_round_trip(api: client.ApiClient):
    core = client.CoreV1Api(api)
    pod = core.read_namespaced_pod("arc-runners-runner-a", o.NS)
    assert pod.status.phase == "Running" and pod.spec.node_name == "node-a"
    assert [n.metadata.name for n in core.list_node().items] == ["node-a", "node-b"]
    classes = client.SchedulingV1Api(api).list_priority_class().items
    assert {(c.metadata.name, c.value, c.preemption_policy) for c in classes} >= {
        ("arc-placeholder-runner", -10, "Never")
    }


def test_create_applies_priority_admission_and_errors_are_status_bodies(api: client.ApiClient):
    core = client.CoreV1Api(api)
    body = o.pod("p1")
    body["spec"]["priorityClassName"] = "arc-placeholder-runner"
    created = core.create_namespaced_pod(o.NS, body)
    assert created.spec.priority == -10 and created.spec.preemption_policy == "Never"
    assert created.status.phase == "Pending" and created.metadata.uid
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod(o.NS, body)
    assert err.value.status == 409
    assert status_of(err.value)["reason"] == "AlreadyExists"
    assert status_of(err.value)["details"] == {"kind": "pods", "name": "p1"}
    bad = o.pod("p2")
    bad["spec"]["priorityClassName"] = "no-such-class"
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod(o.NS, bad)
    assert (
        err.value.status == 403
        and "no PriorityClass with name no-such-class" in (status_of(err.value)["message"])
    )
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod("ghost", o.NS)
    assert status_of(err.value)["message"] == 'pods "ghost" not found'
    generated = o.pod("")
    generated["metadata"] = {"generateName": "gen-"}
    assert core.create_namespaced_pod(o.NS, generated).metadata.name.startswith("gen-")


def test_delete_honours_uid_preconditions_and_grace(api: client.ApiClient, store: ObjectStore):
    core = client.CoreV1Api(api)
    uid = store.get("Pod", o.NS, "unrelated")["metadata"]["uid"]
    wrong = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="not-" + uid))
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_pod("unrelated", o.NS, body=wrong)
    assert err.value.status == 409 and status_of(err.value)["reason"] == "Conflict"
    assert "Precondition failed: UID in precondition" in status_of(err.value)["message"]
    # A bound pod without grace override terminates gracefully (deletionTimestamp first).
    core.delete_namespaced_pod(
        "unrelated",
        o.NS,
        body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid)),
    )
    assert store.get("Pod", o.NS, "unrelated")["metadata"]["deletionTimestamp"]
    core.delete_namespaced_pod("unrelated", o.NS, grace_period_seconds=0)
    assert store.find("Pod", o.NS, "unrelated") is None
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_pod("unrelated", o.NS)
    assert err.value.status == 404 and status_of(err.value)["reason"] == "NotFound"


def test_merge_patch_of_ers_spec_and_runner_status_like_the_arc_scaler(
    api: client.ApiClient, store: ObjectStore
):
    custom = client.CustomObjectsApi(api)
    merge = "application/merge-patch+json"
    custom.patch_namespaced_custom_object(
        *ARC,
        o.NS,
        "ephemeralrunnersets",
        o.ERS,
        {"spec": {"patchID": 3, "replicas": 2}},
        _content_type=merge,
    )
    ers = store.get("EphemeralRunnerSet", o.NS, o.ERS)
    assert ers["spec"]["replicas"] == 2 and ers["spec"]["patchID"] == 3
    assert ers["metadata"]["generation"] == 2
    custom.patch_namespaced_custom_object(
        *ARC, o.NS, "ephemeralrunnersets", o.ERS, {"spec": {"replicas": None}}, _content_type=merge
    )
    assert "replicas" not in store.get("EphemeralRunnerSet", o.NS, o.ERS)["spec"]
    # Status goes through the status subresource only.
    custom.patch_namespaced_custom_object(
        *ARC,
        o.NS,
        "ephemeralrunners",
        "arc-runners-runner-a",
        {"status": {"jobId": "99"}},
        _content_type=merge,
    )
    assert store.get("EphemeralRunner", o.NS, "arc-runners-runner-a")["status"]["jobId"] == "1"
    custom.patch_namespaced_custom_object_status(
        *ARC,
        o.NS,
        "ephemeralrunners",
        "arc-runners-runner-a",
        {"status": {"jobId": "99"}},
        _content_type=merge,
    )
    assert store.get("EphemeralRunner", o.NS, "arc-runners-runner-a")["status"]["jobId"] == "99"
    with pytest.raises(ApiException) as err:
        custom.patch_namespaced_custom_object(
            *ARC, o.NS, "ephemeralrunnersets", "ghost", {"spec": {}}, _content_type=merge
        )
    assert status_of(err.value)["message"] == (
        'ephemeralrunnersets.actions.github.com "ghost" not found'
    )


def test_strategic_and_json_patches_and_optimistic_concurrency(
    api: client.ApiClient, store: ObjectStore
):
    core = client.CoreV1Api(api)
    core.patch_namespaced_pod(
        "unrelated",
        o.NS,
        {"metadata": {"labels": {"tier": "1"}}},
        _content_type="application/strategic-merge-patch+json",
    )
    core.patch_namespaced_pod(
        "unrelated",
        o.NS,
        [{"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}],
        _content_type="application/json-patch+json",
    )
    meta = store.get("Pod", o.NS, "unrelated")["metadata"]
    assert meta["labels"] == {"app": "web", "tier": "1"} and meta["annotations"] == {"a": "b"}
    stale = {"metadata": {"resourceVersion": "1", "labels": {"tier": "2"}}}
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_pod(
            "unrelated", o.NS, stale, _content_type="application/merge-patch+json"
        )
    assert err.value.status == 409 and status_of(err.value)["reason"] == "Conflict"
    pod = core.read_namespaced_pod("unrelated", o.NS)
    pod.metadata.resource_version = "1"
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_pod("unrelated", o.NS, pod)
    assert err.value.status == 409


def test_watch_streams_changes_and_selector_transitions(api: client.ApiClient, store: ObjectStore):
    core = client.CoreV1Api(api)
    start = str(store.resource_version)
    store.create(o.pod("web-2", labels={"app": "web"}))
    store.mutate("Pod", o.NS, "unrelated", lambda p: p["metadata"]["labels"].update(app="db"))
    store.mutate(
        "Pod", o.NS, "arc-runners-runner-a", lambda p: p["metadata"]["labels"].update(app="web")
    )
    store.delete("Pod", o.NS, "web-2")
    seen = [
        (e["type"], e["raw_object"]["metadata"]["name"])
        for e in watch.Watch().stream(
            core.list_namespaced_pod,
            o.NS,
            label_selector="app=web",
            resource_version=start,
            timeout_seconds=1,
        )
    ]
    # runner-a existed before the watch's version: its first event is MODIFIED (an upsert for
    # the client), since the face does not keep the state before the requested version.
    assert seen == [
        ("ADDED", "web-2"),
        ("DELETED", "unrelated"),
        ("MODIFIED", "arc-runners-runner-a"),
        ("DELETED", "web-2"),
    ]


def test_a_watch_from_a_compacted_version_gets_a_410_status_event(
    api: client.ApiClient, face: K8sFace
):
    old = "1"
    face.compact()
    core = client.CoreV1Api(api)
    with pytest.raises(ApiException) as err:
        list(
            watch.Watch().stream(
                core.list_namespaced_pod, o.NS, resource_version=old, timeout_seconds=1
            )
        )
    assert err.value.status == 410


def test_unknown_paths_and_absent_groups_are_404(api: client.ApiClient):
    with pytest.raises(ApiException) as err:
        client.CustomObjectsApi(api).list_cluster_custom_object("karpenter.sh", "v1", "nodepools")
    assert err.value.status == 404
    assert status_of(err.value)["message"] == "the server could not find the requested resource"


def test_a_store_without_watch_history_is_refused_with_advice():
    with pytest.raises(ValueError, match="history=N"):
        K8sFace(ObjectStore(lambda: 0.0))
