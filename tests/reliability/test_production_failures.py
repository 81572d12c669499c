"""Issue 10's numbered failures, as an operator met them: real ``python -m listener run``
processes against the live simulated world's faces. One test per failure, named after it.

Each listener gets its own Kubernetes face over the world's one object store, so the calls
*that process* made are counted separately (``K8sFace.calls``), like per-client audit logs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from providers.kubernetes.pods.labels import LABEL_INSTANCE, LABEL_SCALE_SET
from simulator.faces.actions import Fault
from simulator.faces.k8s import K8sFace
from simulator.faces.live_spec import LiveSpec
from simulator.faces.live_world import LiveWorld
from tests.e2e.conftest import ListenerProcess

#: Short leases so a takeover fits in a test (renew deadline 2.7 s, retry every 0.5 s).
LEASE_SECONDS = 4


@pytest.fixture
def world() -> Iterator[LiveWorld]:
    # No ICE window and no burst during these tests: the scale set idles with its warm pool.
    spec = LiveSpec(ice_start=500.0, ice_end=501.0, lose_nodes_at_ice_start=False, burst_count=0)
    with LiveWorld(spec) as running:
        yield running


class Started:
    """Listener processes of one test, each with its own face; killed and shown at the end."""

    def __init__(self, world: LiveWorld, tmp_path: Path) -> None:
        self.world = world
        self.tmp_path = tmp_path
        self.processes: list[ListenerProcess] = []
        self.faces: list[K8sFace] = []

    def start(
        self,
        name: str,
        *,
        config: Callable[[dict[str, Any]], None] | None = None,
        absent_groups: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        capacity: dict[str, Any] | None = None,
    ) -> tuple[ListenerProcess, K8sFace]:
        face = K8sFace(self.world.store, absent_groups=absent_groups, bookmark_interval=1.0)
        self.faces.append(face.start())
        workdir = self.tmp_path / name
        workdir.mkdir()
        block = self.world.capacity_aware() if capacity is None else capacity
        process = ListenerProcess(self.world, workdir, block)
        kubeconfig = self.world.kubeconfig()
        kubeconfig["clusters"][0]["cluster"]["server"] = face.url
        (workdir / "kubeconfig.yaml").write_text(json.dumps(kubeconfig))
        if config is not None:
            path = workdir / "listener-config.json"
            data = json.loads(path.read_text())
            config(data)
            path.write_text(json.dumps(data))
        process.env["CAPACITY_AWARE_LEASE_DURATION"] = str(LEASE_SECONDS)
        process.env.update(env or {})
        self.processes.append(process.start())
        return process, face

    def close(self) -> None:
        for process in self.processes:
            process.kill()
            print(process.logs())
        for face in self.faces:
            face.stop()


@pytest.fixture
def started(world: LiveWorld, tmp_path: Path) -> Iterator[Started]:
    group = Started(world, tmp_path)
    yield group
    group.close()


def pod_writes(face: K8sFace) -> dict[str, int]:
    return {
        k: v
        for k, v in face.calls.items()
        if k.split(" ")[-1] == "Pod" and not k.startswith(("list", "watch", "get"))
    }


def placeholders(world: LiveWorld) -> list[dict[str, Any]]:
    with world.store.lock:
        return [
            p
            for p in world.store.list("Pod", world.spec.namespace)
            if (p["metadata"].get("labels") or {}).get(LABEL_SCALE_SET) == world.spec.scale_set
        ]


def wait_for(predicate: Callable[[], bool], timeout: float, step: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def ready(process: ListenerProcess) -> bool:
    return process.get("/readyz")[0] == 200


def test_two_listeners_for_one_scale_set_the_second_waits_and_never_touches_the_owners_pods(
    world: LiveWorld, started: Started
) -> None:
    owner, owner_face = started.start("owner")
    assert wait_for(lambda: ready(owner) and len(placeholders(world)) >= 2, 60), owner.logs()
    owner_pods = {p["metadata"]["name"] for p in placeholders(world)}

    second, second_face = started.start("second")
    # Several lease durations: the owner renews, the second keeps waiting.
    time.sleep(3 * LEASE_SECONDS)
    assert second.running, second.logs()
    assert not ready(second)
    assert pod_writes(second_face) == {}, "the waiting listener wrote placeholder pods"
    alive = {p["metadata"]["name"] for p in placeholders(world)}
    assert owner_pods <= alive, "an owner's placeholder disappeared while it was alive"
    instances = {
        (p["metadata"].get("labels") or {}).get(LABEL_INSTANCE) for p in placeholders(world)
    }
    assert len(instances) == 1  # all the owner's

    # Rollout: the owner stops; it deletes its pods and releases the lease, the second takes
    # over at once (no full lease duration) and builds its own warm pool.
    assert owner.terminate(20) == 0, owner.logs()
    assert wait_for(lambda: ready(second), 30), second.logs()
    assert wait_for(lambda: len(placeholders(world)) >= 2, 60), second.logs()
    assert pod_writes(second_face).get("create Pod", 0) >= 2
    lease = world.store.find(
        "Lease", world.spec.namespace, f"arc-capacity-listener-{world.spec.scale_set}"
    )
    assert lease is not None and lease["spec"]["leaseTransitions"] == 1
    assert owner_face.calls.get("delete Pod", 0) >= len(owner_pods)


def test_two_listeners_the_second_takes_over_when_the_owner_is_killed_without_releasing(
    world: LiveWorld, started: Started
) -> None:
    owner, _ = started.start("owner")
    assert wait_for(lambda: ready(owner) and len(placeholders(world)) >= 2, 60), owner.logs()
    second, _ = started.start("second")
    assert wait_for(lambda: "waiting" in second.logs(400), 30), second.logs()
    owner.kill()  # SIGKILL: no release, no deletes, no session delete
    killed_at = time.monotonic()
    lease_name = f"arc-capacity-listener-{world.spec.scale_set}"

    def second_holds_lease() -> bool:
        with world.store.lock:
            lease = world.store.find("Lease", world.spec.namespace, lease_name)
        return lease is not None and lease["spec"].get("leaseTransitions") == 1

    assert wait_for(second_holds_lease, 30), second.logs()
    # Not before the dead owner's lease expired on the second's own clock.
    assert time.monotonic() - killed_at >= LEASE_SECONDS - 1.0
    # The killed owner's message session is still held (the face never expires it), but its
    # id rode in the Lease with every renewal: the new owner deletes it on its first 409 and
    # opens its own (issue 34), then takes over the placeholders (the dead owner's pairs are
    # adopted or swept, never both kept).
    assert wait_for(lambda: ready(second), 60), second.logs()
    assert "left behind by the previous listener" in second.logs(400)
    assert wait_for(lambda: len(placeholders(world)) >= 2, 60)


def test_bad_credentials_stop_the_listener_before_it_writes_a_placeholder(
    world: LiveWorld, started: Started
) -> None:
    """A wrong PAT ends the process (exit 1) before the capacity side writes anything, and
    the token is not logged. Prevents production failure 4: bad credentials still created
    placeholders, which then held nodes for a listener that could never take a job."""

    def wrong_pat(config: dict[str, Any]) -> None:
        config["github_token"] = "ghp_" + "x" * 36

    process, face = started.start("bad-pat", config=wrong_pat)
    assert process.proc is not None
    code = process.proc.wait(60)
    assert code == 1, process.logs()
    assert pod_writes(face) == {}
    assert placeholders(world) == []
    assert "ghp_xxxx" not in process.logs(400)


def test_sigterm_ends_the_listener_while_waiting_for_the_first_cache_sync(
    world: LiveWorld, started: Started
) -> None:
    """ARC's CRDs unreachable (the EphemeralRunnerSet never lists), so the cache never
    syncs: SIGTERM still ends the process within 5 s, exit 0. Prevents production failure 5,
    where SIGTERM was ignored in that wait and the pod hung until SIGKILL."""
    process, _ = started.start(
        "no-sync",
        absent_groups=("actions.github.com",),
        env={"CAPACITY_AWARE_SYNC_TIMEOUT": "300"},
    )
    assert wait_for(
        lambda: (
            "first Kubernetes" in process.logs(400)
            or ("session" in process.logs(400) and "created" in process.logs(400))
        ),
        30,
    )
    time.sleep(1.0)
    assert process.running, process.logs()
    assert not ready(process)
    started_at = time.monotonic()
    assert process.terminate(10) == 0, process.logs()
    assert time.monotonic() - started_at < 5.0


def test_sigterm_is_honoured_while_waiting_for_the_lease(
    world: LiveWorld, started: Started
) -> None:
    owner, _ = started.start("owner")
    assert wait_for(lambda: ready(owner), 60), owner.logs()
    second, _ = started.start("second")
    assert wait_for(lambda: "waiting" in second.logs(400), 30), second.logs()
    began = time.monotonic()
    assert second.terminate(10) == 0, second.logs()
    assert time.monotonic() - began < 5.0
    assert ready(owner)


def _outer(message_id: int, jobs: Any, **overrides: Any) -> bytes:
    message = {
        "messageId": message_id,
        "messageType": "RunnerScaleSetJobMessages",
        "body": jobs if isinstance(jobs, str) else json.dumps(jobs),
        "statistics": {"totalAssignedJobs": 0, "totalAvailableJobs": 0},
    }
    message.update(overrides)
    return json.dumps({k: v for k, v in message.items() if v is not ...}).encode()


def _null_fields_job() -> dict[str, Any]:
    return {
        "messageType": "JobAssigned",
        "runnerRequestId": 77,
        "requestLabels": None,
        "runnerId": None,
        "jobDisplayName": None,
        "queueTime": "0001-01-01T00:00:00",
        "finishTime": None,
    }


#: (id, body, understood): ids below the face's first real id, so real messages follow.
POISON = [
    (100_000_001, _outer(100_000_001, [_null_fields_job()]), True),
    (100_000_002, _outer(100_000_002, [], body=None), True),
    (100_000_003, _outer(100_000_003, [], messageType="RunnerScaleSetSomethingNew"), False),
    (100_000_004, _outer(100_000_004, [], statistics=...), False),
    (100_000_005, _outer(100_000_005, "[" * 200_000 + "]" * 200_000), False),
    (100_000_006, _outer(100_000_006, " " * (9 * 1024 * 1024)), False),
]


@pytest.fixture
def busy_world() -> Iterator[LiveWorld]:
    spec = LiveSpec(
        ice_start=500.0,
        ice_end=501.0,
        lose_nodes_at_ice_start=False,
        burst_at=6.0,
        burst_count=3,
        burst_over=1.0,
    )
    with LiveWorld(spec) as running:
        yield running


def test_poison_messages_are_skipped_and_jobs_keep_flowing(
    busy_world: LiveWorld, tmp_path: Path
) -> None:
    """Each message Go's listener would take (nulls, a zone-less zero time) is understood,
    and each it would not (an unknown outer messageType, missing statistics, deep nesting,
    an oversized body) is logged with its id, counted, acked and skipped: the process lives
    and jobs flow on. Prevents production failure 2, where one such message wedged the
    scale set."""
    world = busy_world
    for _, body, _ in POISON:
        world.actions.fail_next("get_message", Fault.http(200, body))
    group = Started(world, tmp_path)
    try:
        process, _ = group.start("poison", capacity={"enabled": False})

        ids = {mid for mid, _, _ in POISON}
        assert wait_for(lambda: ids <= set(world.actions.acked()), 60), process.logs()
        assert wait_for(world.all_jobs_finished, 90), world.status_line()
        assert process.running, process.logs()
        status, text = process.get("/metrics")
        assert status == 200
        skipped = [
            line
            for line in text.splitlines()
            if line.startswith("arc_capacity_undecodable_messages_total")
        ]
        assert skipped and float(skipped[0].rsplit(" ", 1)[1]) == sum(
            1 for _, _, understood in POISON if not understood
        ), skipped
        logs = process.logs(400)
        for mid, _, understood in POISON:
            if not understood:
                assert f"message {mid} cannot be understood" in logs
        assert "RecursionError" not in logs and "Traceback" not in logs
    finally:
        group.close()
