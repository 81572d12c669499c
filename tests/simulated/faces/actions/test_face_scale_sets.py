"""The face's controller routes (what ARC's controller calls through the scaleset client):
runner groups, scale-set CRUD, JIT runner registration and runners, over loopback with httpx."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from simulator.faces.actions import ROUTES, ActionsFace, Fault, RunnerInfo, ScriptedJobFeed
from tests.providers.actions.conftest import PAT

SCALE_SETS = "/tenant/_apis/runtime/runnerscalesets"
AGENTS = "/tenant/_apis/distributedtask/pools/0/agents"
GROUPS = "/tenant/_apis/runtime/runnergroups/"
API = {"api-version": "6.0-preview"}


@pytest.fixture
def ctl_face() -> Iterator[ActionsFace]:
    groups = {1: "Default", 7: "gpu"}
    with ActionsFace(ScriptedJobFeed(), pat=PAT, poll_window=0.3, runner_groups=groups) as face:
        yield face


def admin_token(face: ActionsFace) -> str:
    """The admin token through the auth chain the controller walks (PAT, RemoteAuth)."""
    with httpx.Client(base_url=face.url, timeout=5.0) as http:
        reg = http.post(
            "/api/v3/orgs/acme/actions/runners/registration-token",
            headers={"Authorization": f"Bearer {PAT}"},
        )
        reg.raise_for_status()
        conn = http.post(
            "/api/v3/actions/runner-registration",
            headers={"Authorization": f"RemoteAuth {reg.json()['token']}"},
            json={"url": face.configure_url(), "runner_event": "register"},
        )
        conn.raise_for_status()
        return str(conn.json()["token"])


@pytest.fixture
def ctl(ctl_face: ActionsFace) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {admin_token(ctl_face)}"}
    with httpx.Client(base_url=ctl_face.url, headers=headers, params=API, timeout=5.0) as http:
        yield http


def create(ctl: httpx.Client, name: str, group: int = 1, **extra: Any) -> httpx.Response:
    body = {"name": name, "runnerGroupId": group, "RunnerSetting": {"disableUpdate": True}}
    body.update(extra)
    return ctl.post(SCALE_SETS, json=body)


def jit(ctl: httpx.Client, scale_set_id: int, name: str) -> httpx.Response:
    return ctl.post(
        f"{SCALE_SETS}/{scale_set_id}/generatejitconfig", json={"name": name, "workFolder": ""}
    )


def type_name(response: httpx.Response) -> str:
    return str(response.json()["typeName"])


# --- runner groups -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group_name", "ids"),
    [("default", [1]), ("Default", [1]), ("GPU", [7]), ("nope", [])],
)
def test_runner_groups_by_name_match_case_insensitively_and_absent_is_an_empty_list(
    ctl: httpx.Client, group_name: str, ids: list[int]
) -> None:
    answer = ctl.get(GROUPS, params={"groupName": group_name})
    assert answer.status_code == 200
    assert answer.json()["count"] == len(ids)
    assert [g["id"] for g in answer.json()["value"]] == ids


def test_the_default_group_says_it_is_the_default(ctl: httpx.Client) -> None:
    (group,) = ctl.get(GROUPS, params={"groupName": "default"}).json()["value"]
    assert group == {"id": 1, "name": "Default", "size": 0, "isDefaultGroup": True}


# --- find, create, get ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "name", "ids"),
    [(1, "arc-runners", [42]), (1, "other", []), (7, "arc-runners", [])],
)
def test_find_by_group_and_name_answers_a_count_value_list(
    ctl: httpx.Client, group: int, name: str, ids: list[int]
) -> None:
    answer = ctl.get(SCALE_SETS, params={"runnerGroupId": group, "name": name})
    assert answer.status_code == 200
    assert answer.json()["count"] == len(ids)
    assert [s["id"] for s in answer.json()["value"]] == ids


def test_create_answers_the_scale_set_with_an_id_past_the_fixed_one(
    ctl: httpx.Client, ctl_face: ActionsFace
) -> None:
    labels = [{"type": "System", "name": "linux-x64"}, {"type": "System", "name": "gpu"}]
    answer = create(ctl, "linux-x64", labels=labels)
    assert answer.status_code == 200
    created = answer.json()
    assert created["id"] == 43
    assert (created["name"], created["runnerGroupId"], created["runnerGroupName"]) == (
        "linux-x64",
        1,
        "Default",
    )
    assert created["labels"] == labels
    assert created["RunnerSetting"] == {"disableUpdate": True}
    assert created["createdOn"] != "0001-01-01T00:00:00Z"
    assert created["runnerJitConfigUrl"] == f"{ctl_face.url}{SCALE_SETS}/43/generatejitconfig"
    assert set(created["statistics"]) >= {"totalAssignedJobs", "totalRegisteredRunners"}
    assert create(ctl, "second").json()["id"] == 44


def test_a_created_scale_set_is_found_by_name_and_by_id(ctl: httpx.Client) -> None:
    created = create(ctl, "linux-x64", group=7).json()
    found = ctl.get(SCALE_SETS, params={"runnerGroupId": 7, "name": "linux-x64"}).json()
    assert found["count"] == 1 and found["value"][0]["id"] == created["id"]
    by_id = ctl.get(f"{SCALE_SETS}/{created['id']}")
    assert by_id.status_code == 200
    assert by_id.json()["runnerGroupName"] == "gpu"


def test_a_scale_set_without_labels_is_labelled_by_its_name(ctl: httpx.Client) -> None:
    created = create(ctl, "bare").json()
    assert created["labels"] == [{"type": "System", "name": "bare"}]


@pytest.mark.parametrize(
    ("body", "status", "type_suffix"),
    [
        ({"name": "arc-runners", "runnerGroupId": 1}, 400, "RunnerScaleSetExistsException"),
        ({"name": "arc-runners"}, 400, "RunnerScaleSetExistsException"),
        ({"runnerGroupId": 1}, 400, "ArgumentException"),
        ({"name": "x", "runnerGroupId": 99}, 404, "RunnerGroupNotFoundException"),
        ({"name": "x", "runnerGroupId": "1"}, 400, "ArgumentException"),
        ({"name": "x", "labels": [{"type": "System"}]}, 400, "ArgumentException"),
        ([1, 2], 400, "ArgumentException"),
    ],
)
def test_create_refuses_a_duplicate_name_in_the_group_and_bad_bodies(
    ctl: httpx.Client, body: object, status: int, type_suffix: str
) -> None:
    answer = ctl.post(SCALE_SETS, json=body)
    assert answer.status_code == status
    assert type_name(answer).endswith(type_suffix)


def test_the_same_name_in_another_group_is_a_new_scale_set(ctl: httpx.Client) -> None:
    answer = create(ctl, "arc-runners", group=7)
    assert answer.status_code == 200
    assert answer.json()["id"] == 43


def test_a_body_that_is_not_json_is_a_400(ctl: httpx.Client) -> None:
    answer = ctl.post(SCALE_SETS, content=b"{not json")
    assert answer.status_code == 400


def test_get_by_unknown_id_is_a_404_scale_set_not_found(ctl: httpx.Client) -> None:
    answer = ctl.get(f"{SCALE_SETS}/999")
    assert answer.status_code == 404
    assert type_name(answer).endswith("RunnerScaleSetNotFoundException")


# --- update ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("patch", "field", "value"),
    [
        ({"name": "renamed", "RunnerSetting": {}}, "name", "renamed"),
        ({"runnerGroupId": 7, "RunnerSetting": {}}, "runnerGroupName", "gpu"),
        (
            {"labels": [{"type": "System", "name": "new"}]},
            "labels",
            [{"type": "System", "name": "new"}],
        ),
        ({"RunnerSetting": {}}, "RunnerSetting", {"disableUpdate": True}),
        ({"RunnerSetting": {"disableUpdate": False}}, "RunnerSetting", {"disableUpdate": False}),
    ],
)
def test_update_replaces_only_the_fields_the_body_carries(
    ctl: httpx.Client, patch: dict[str, Any], field: str, value: object
) -> None:
    created = create(ctl, "linux-x64").json()
    answer = ctl.patch(f"{SCALE_SETS}/{created['id']}", json=patch)
    assert answer.status_code == 200
    updated = answer.json()
    assert updated[field] == value
    assert updated["id"] == created["id"]
    assert ctl.get(f"{SCALE_SETS}/{created['id']}").json()[field] == value


@pytest.mark.parametrize(
    ("target", "patch", "status", "type_suffix"),
    [
        ("created", {"name": "arc-runners"}, 400, "RunnerScaleSetExistsException"),
        ("created", {"runnerGroupId": 99}, 404, "RunnerGroupNotFoundException"),
        ("created", {"name": ""}, 400, "ArgumentException"),
        ("unknown", {"name": "x"}, 404, "RunnerScaleSetNotFoundException"),
    ],
)
def test_update_refuses_a_taken_name_an_unknown_group_and_an_unknown_scale_set(
    ctl: httpx.Client, target: str, patch: dict[str, Any], status: int, type_suffix: str
) -> None:
    scale_set_id = create(ctl, "linux-x64").json()["id"] if target == "created" else 999
    answer = ctl.patch(f"{SCALE_SETS}/{scale_set_id}", json=patch)
    assert answer.status_code == status
    assert type_name(answer).endswith(type_suffix)


# --- delete ----------------------------------------------------------------------------------


def test_delete_removes_the_scale_set_its_session_and_its_runners(
    ctl: httpx.Client, ctl_face: ActionsFace
) -> None:
    created = create(ctl, "linux-x64").json()
    scale_set_id = created["id"]
    assert jit(ctl, scale_set_id, "linux-x64-runner-a").status_code == 200
    session = ctl.post(f"{SCALE_SETS}/{scale_set_id}/sessions", json={"ownerName": "l"})
    assert session.status_code == 200
    assert ctl.delete(f"{SCALE_SETS}/{scale_set_id}").status_code == 204
    assert ctl.get(f"{SCALE_SETS}/{scale_set_id}").status_code == 404
    found = ctl.get(SCALE_SETS, params={"runnerGroupId": 1, "name": "linux-x64"}).json()
    assert found == {"count": 0, "value": []}
    assert ctl_face.session_of(scale_set_id) is None
    assert ctl_face.registered_runners(scale_set_id) == []
    assert "linux-x64" not in ctl_face.registered_scale_sets()


def test_delete_of_an_unknown_scale_set_is_a_404(ctl: httpx.Client) -> None:
    answer = ctl.delete(f"{SCALE_SETS}/999")
    assert answer.status_code == 404
    assert type_name(answer).endswith("RunnerScaleSetNotFoundException")


# --- runners ---------------------------------------------------------------------------------


def test_generate_jit_config_registers_a_runner_and_answers_an_opaque_base64_config(
    ctl: httpx.Client, ctl_face: ActionsFace
) -> None:
    answer = jit(ctl, 42, "arc-runners-runner-a")
    assert answer.status_code == 200
    body = answer.json()
    assert body["runner"] == {"id": 1001, "name": "arc-runners-runner-a", "runnerScaleSetId": 42}
    config = json.loads(base64.b64decode(body["encodedJITConfig"]))
    assert (config["runnerId"], config["runnerName"], config["scaleSetId"]) == (
        1001,
        "arc-runners-runner-a",
        42,
    )
    assert jit(ctl, 42, "arc-runners-runner-b").json()["runner"]["id"] == 1002
    assert ctl_face.runner_by_name("arc-runners-runner-a") == RunnerInfo(
        1001, "arc-runners-runner-a", 42
    )


@pytest.mark.parametrize(
    ("scale_set_id", "body", "status", "type_suffix"),
    [
        (42, {"name": "taken"}, 409, "AgentExistsException"),
        (999, {"name": "fresh"}, 404, "RunnerScaleSetNotFoundException"),
        (42, {"workFolder": "_work"}, 400, "ArgumentException"),
        (42, [], 400, "ArgumentException"),
    ],
)
def test_generate_jit_config_refuses_a_taken_name_an_unknown_scale_set_and_no_name(
    ctl: httpx.Client, scale_set_id: int, body: object, status: int, type_suffix: str
) -> None:
    assert jit(ctl, 42, "taken").status_code == 200
    answer = ctl.post(f"{SCALE_SETS}/{scale_set_id}/generatejitconfig", json=body)
    assert answer.status_code == status
    assert type_name(answer).endswith(type_suffix)


@pytest.mark.parametrize(
    ("name", "ids"), [("arc-runners-runner-a", [1001]), ("arc-runners-runner-z", [])]
)
def test_find_runner_by_agent_name_answers_a_count_value_list(
    ctl: httpx.Client, name: str, ids: list[int]
) -> None:
    jit(ctl, 42, "arc-runners-runner-a")
    answer = ctl.get(AGENTS, params={"agentName": name})
    assert answer.status_code == 200
    assert answer.json()["count"] == len(ids)
    assert [r["id"] for r in answer.json()["value"]] == ids


def test_get_runner_by_id_and_an_unknown_id_is_a_404_agent_not_found(ctl: httpx.Client) -> None:
    runner_id = jit(ctl, 42, "arc-runners-runner-a").json()["runner"]["id"]
    answer = ctl.get(f"{AGENTS}/{runner_id}")
    assert answer.status_code == 200
    assert answer.json() == {
        "id": runner_id,
        "name": "arc-runners-runner-a",
        "runnerScaleSetId": 42,
    }
    missing = ctl.get(f"{AGENTS}/5")
    assert missing.status_code == 404
    assert type_name(missing).endswith("AgentNotFoundException")


def test_remove_runner_forgets_it_and_removing_an_unknown_runner_is_also_204(
    ctl: httpx.Client, ctl_face: ActionsFace
) -> None:
    runner_id = jit(ctl, 42, "arc-runners-runner-a").json()["runner"]["id"]
    assert ctl.delete(f"{AGENTS}/{runner_id}").status_code == 204
    assert ctl.get(f"{AGENTS}/{runner_id}").status_code == 404
    assert ctl.get(AGENTS, params={"agentName": "arc-runners-runner-a"}).json()["count"] == 0
    assert ctl_face.registered_runners(42) == []
    assert ctl.delete(f"{AGENTS}/{runner_id}").status_code == 204
    assert jit(ctl, 42, "arc-runners-runner-a").status_code == 200


def test_a_busy_runner_cannot_be_removed_until_its_job_ends(
    ctl: httpx.Client, ctl_face: ActionsFace
) -> None:
    runner_id = jit(ctl, 42, "arc-runners-runner-a").json()["runner"]["id"]
    ctl_face.mark_runner_busy(runner_id)
    refused = ctl.delete(f"{AGENTS}/{runner_id}")
    assert refused.status_code == 400
    assert type_name(refused).endswith("JobStillRunningException")
    ctl_face.mark_runner_busy(runner_id, busy=False)
    assert ctl.delete(f"{AGENTS}/{runner_id}").status_code == 204


def test_drop_runner_is_the_service_forgetting_a_finished_runner(
    ctl: httpx.Client, ctl_face: ActionsFace
) -> None:
    runner_id = jit(ctl, 42, "arc-runners-runner-a").json()["runner"]["id"]
    assert ctl_face.drop_runner(runner_id) is True
    assert ctl_face.drop_runner(runner_id) is False
    assert ctl.get(f"{AGENTS}/{runner_id}").status_code == 404


# --- the harness's view ----------------------------------------------------------------------


def test_the_harness_lists_scale_sets_by_name_and_runners_per_scale_set(
    ctl: httpx.Client, ctl_face: ActionsFace
) -> None:
    created = create(ctl, "linux-x64").json()["id"]
    jit(ctl, created, "linux-x64-runner-b")
    jit(ctl, created, "linux-x64-runner-a")
    jit(ctl, 42, "arc-runners-runner-a")
    assert ctl_face.registered_scale_sets() == {"arc-runners": 42, "linux-x64": created}
    assert [(r.id, r.name) for r in ctl_face.registered_runners(created)] == [
        (1001, "linux-x64-runner-b"),
        (1002, "linux-x64-runner-a"),
    ]
    assert ctl_face.runner_by_name("nobody") is None


# --- sessions on created scale sets, auth, routing -------------------------------------------


def test_a_created_scale_set_takes_a_session_and_polls_like_the_fixed_one(
    ctl: httpx.Client, ctl_face: ActionsFace
) -> None:
    created = create(ctl, "linux-x64", group=7).json()["id"]
    session = ctl.post(f"{SCALE_SETS}/{created}/sessions", json={"ownerName": "listener"})
    assert session.status_code == 200
    body = session.json()
    assert body["runnerScaleSet"]["name"] == "linux-x64"
    assert body["runnerScaleSet"]["runnerGroupName"] == "gpu"
    poll = httpx.get(
        body["messageQueueUrl"],
        headers={
            "Authorization": f"Bearer {body['messageQueueAccessToken']}",
            "X-ScaleSetMaxCapacity": "2",
        },
        timeout=5.0,
    )
    assert poll.status_code == 202
    assert ctl_face.capacity_history == [2]
    conflict = ctl.post(f"{SCALE_SETS}/{created}/sessions", json={"ownerName": "other"})
    assert conflict.status_code == 409


CONTROLLER_CALLS = [
    ("GET", GROUPS, None),
    ("GET", SCALE_SETS, None),
    ("POST", SCALE_SETS, {"name": "x"}),
    ("GET", f"{SCALE_SETS}/42", None),
    ("PATCH", f"{SCALE_SETS}/42", {"name": "y"}),
    ("DELETE", f"{SCALE_SETS}/42", None),
    ("POST", f"{SCALE_SETS}/42/generatejitconfig", {"name": "r"}),
    ("GET", AGENTS, None),
    ("GET", f"{AGENTS}/1001", None),
    ("DELETE", f"{AGENTS}/1001", None),
]


@pytest.mark.parametrize(("method", "path", "body"), CONTROLLER_CALLS)
@pytest.mark.parametrize("authorization", [None, "Bearer not-a-jwt"])
def test_every_controller_route_wants_the_admin_token(
    ctl_face: ActionsFace, method: str, path: str, body: object, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    answer = httpx.request(
        method, ctl_face.url + path, json=body, headers=headers, params=API, timeout=5.0
    )
    assert answer.status_code == 401
    assert ctl_face.registered_scale_sets() == {"arc-runners": 42}


def test_each_controller_call_maps_to_its_route_name(
    ctl: httpx.Client, ctl_face: ActionsFace
) -> None:
    for method, path, body in CONTROLLER_CALLS:
        ctl.request(method, path, json=body)
    routes = [r.route for r in ctl_face.requests if r.path.startswith("/tenant/")]
    assert routes == list(ROUTES[-10:])


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", f"{SCALE_SETS}/abc"),
        ("DELETE", f"{AGENTS}/abc"),
        ("GET", "/tenant/_apis/distributedtask/pools/x/agents"),
        ("PUT", f"{SCALE_SETS}/42"),
    ],
)
def test_malformed_ids_and_unknown_methods_are_no_route(
    ctl: httpx.Client, method: str, path: str
) -> None:
    assert ctl.request(method, path).status_code in (404, 501)


def test_fault_knobs_name_the_controller_routes(ctl: httpx.Client, ctl_face: ActionsFace) -> None:
    ctl_face.fail_next("create_scale_set", Fault.server_error(503))
    assert create(ctl, "linux-x64").status_code == 503
    assert create(ctl, "linux-x64").status_code == 200
