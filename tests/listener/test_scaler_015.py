"""ARC 0.15's JobStarted (PR #4646): read the runner, promote it to ``Running`` under the
resourceVersion just read, never over a terminal phase or a runner being deleted, re-read on
a conflict; and how the listener tells 0.15 from 0.13/0.14."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from kubernetes import client as k8s

from listener.arc.scaler import (
    ReadForbidden,
    RunnerNotFound,
    Scaler,
    ScalerError,
    WriteConflict,
)
from listener.arc.version import (
    ArcVersion,
    ArcVersionError,
    parse_arc_version,
    version_from_env,
)
from providers.actions.models import ZERO_TIME
from providers.kubernetes.write.arc_writer import KubernetesScalerWriter
from simulator.engine.store import ObjectStore
from simulator.faces.k8s import K8sFace
from tests.listener.test_scaler import ARC_STATUS_PATCH, JOB_STARTED
from tests.providers.kubernetes import objects as o

RUNNER = JOB_STARTED.runner_name
#: 0.15's status fields for JOB_STARTED, the job context (event name, queue / scale-set /
#: runner assignment times) among them in Go's sorted key order. The JSON names and the
#: metav1.Time form are those ARC's scaler_test.go asserts at ARC 0ba3cc9.
JOB_FIELDS = (
    b'"jobDisplayName":"lint","jobEventName":"pull_request","jobId":"44d0...",'
    b'"jobQueuedAt":"2026-05-01T09:58:00Z","jobRepositoryName":"acme/web",'
    b'"jobRequestId":9001,"jobRunnerAssignedAt":"2026-05-01T09:58:20Z",'
    b'"jobScaleSetAssignedAt":"2026-05-01T09:58:01Z",'
    b'"jobWorkflowRef":"acme/web/.github/workflows/ci.yml@refs/pull/12/merge"'
)
#: 0.15 on a runner it may not promote (terminal or being deleted): job fields and context
#: only, no phase, no lock.
JOB_ONLY_015 = b'{"status":{' + JOB_FIELDS + b',"workflowRunId":554990}}'


def promote_patch(resource_version: str) -> bytes:
    """What 0.15 sends for JOB_STARTED on a runner it may promote (CreateMergePatch of the
    read runner's resourceVersion and the status: sorted keys, compact)."""
    return (
        b'{"metadata":{"resourceVersion":"'
        + resource_version.encode()
        + b'"},"status":{'
        + JOB_FIELDS
        + b',"phase":"Running","workflowRunId":554990}}'
    )


@dataclass
class FakeApiServer:
    """An in-memory API server for EphemeralRunners: resourceVersions, the merge-patch
    precondition (409), 404, and a 403 on reads for a patch-only Role."""

    runners: dict[str, dict[str, Any]] = field(default_factory=dict)
    forbid_reads: bool = False
    #: Called after each read, before the caller's patch: another writer acting in between.
    after_read: Callable[[FakeApiServer], None] | None = None
    sent: list[bytes] = field(default_factory=list)
    reads: int = 0
    rv: int = 6

    def add(self, name: str, **status: Any) -> None:
        labels = status.pop("labels", {})
        deleting = status.pop("deleting", False)
        meta: dict[str, Any] = {"name": name, "labels": labels, "resourceVersion": self._bump()}
        if deleting:
            meta["deletionTimestamp"] = "2026-05-01T10:00:00Z"
        self.runners[name] = {"metadata": meta, "status": status}

    def write_phase(self, name: str, phase: str) -> None:
        self.runners[name]["status"]["phase"] = phase
        self.runners[name]["metadata"]["resourceVersion"] = self._bump()

    def _bump(self) -> str:
        self.rv += 1
        return str(self.rv)

    def get_ephemeral_runner(self, namespace: str, name: str) -> dict[str, Any]:
        if self.forbid_reads:
            raise ReadForbidden("ephemeralrunners is forbidden: cannot get")
        if name not in self.runners:
            raise RunnerNotFound(name)
        self.reads += 1
        found = copy.deepcopy(self.runners[name])
        if self.after_read is not None:
            self.after_read(self)
        return found

    def patch_ephemeral_runner_status(self, namespace: str, name: str, body: bytes) -> None:
        import json

        self.sent.append(body)
        if name not in self.runners:
            raise RunnerNotFound(name)
        doc = json.loads(body)
        current = self.runners[name]
        wanted = (doc.get("metadata") or {}).get("resourceVersion")
        if wanted is not None and wanted != current["metadata"]["resourceVersion"]:
            raise WriteConflict(f"{name}: the object has been modified")
        current["status"].update(doc["status"])
        current["metadata"]["resourceVersion"] = self._bump()

    def patch_ephemeral_runner_set(self, namespace: str, name: str, body: bytes) -> None:
        pass


def scaler(api: Any, arc_version: ArcVersion | None = None) -> Scaler:
    return Scaler(
        api,
        namespace=o.NS,
        name=o.ERS,
        min_runners=0,
        max_runners=10,
        arc_version=arc_version,
        sleep=lambda _: None,
    )


class TestPromotion:
    def test_a_pending_runner_is_promoted_under_the_version_just_read(self) -> None:
        api = FakeApiServer()
        api.add(RUNNER, phase="Pending", runnerId=311)
        scaler(api).handle_job_started(JOB_STARTED)
        assert api.sent == [promote_patch("7")]
        assert api.runners[RUNNER]["status"]["phase"] == "Running"
        assert api.runners[RUNNER]["status"]["jobRequestId"] == 9001

    @pytest.mark.parametrize(
        "status",
        [
            {"phase": "Failed"},
            {"phase": "Succeeded"},
            {"phase": "Outdated"},
            {"phase": "Pending", "deleting": True},
        ],
        ids=["failed", "succeeded", "outdated", "being-deleted"],
    )
    def test_never_over_a_terminal_phase_or_a_runner_being_deleted(
        self, status: dict[str, Any]
    ) -> None:
        """Prevents resurrecting a finished runner: the set would never reap it."""
        api = FakeApiServer()
        api.add(RUNNER, **status)
        scaler(api).handle_job_started(JOB_STARTED)
        assert api.sent == [JOB_ONLY_015]  # job fields and context only: no phase, no lock
        assert api.runners[RUNNER]["status"]["phase"] == status["phase"]

    def test_a_terminal_phase_written_between_read_and_patch_survives(self) -> None:
        """The race PR #4646's lock closes: the controller writes Succeeded after our GET."""
        api = FakeApiServer()
        api.add(RUNNER, phase="Pending")

        def controller_finishes_it(server: FakeApiServer) -> None:
            server.after_read = None
            server.write_phase(RUNNER, "Succeeded")

        api.after_read = controller_finishes_it
        s = scaler(api)
        s.handle_job_started(JOB_STARTED)
        assert api.sent == [promote_patch("7"), JOB_ONLY_015]
        assert api.runners[RUNNER]["status"]["phase"] == "Succeeded"
        assert api.runners[RUNNER]["status"]["jobId"] == "44d0..."  # metadata still recorded
        assert (s.conflicts, api.reads) == (1, 2)

    def test_a_conflict_that_never_clears_ends_the_run_after_five_attempts(self) -> None:
        """client-go retry.DefaultRetry gives up after 5 steps; so do we, and say why."""
        api = FakeApiServer()
        api.add(RUNNER, phase="Pending")
        api.after_read = lambda server: server.write_phase(RUNNER, "Pending")
        with pytest.raises(ScalerError, match="still conflicting after 5 attempts"):
            scaler(api).handle_job_started(JOB_STARTED)
        assert len(api.sent) == 5

    def test_a_runner_gone_before_the_read_is_skipped(self) -> None:
        api = FakeApiServer()
        s = scaler(api)
        s.handle_job_started(JOB_STARTED)
        assert s.dirty and api.sent == []


class TestJobContext:
    """0.15 records the job's event and the service's timestamps on the runner (ARC's
    scaler.go after #4646, pinned by its scaler_test.go at 0ba3cc9)."""

    def _sent_status(self, update: dict[str, Any]) -> dict[str, Any]:
        import json

        api = FakeApiServer()
        api.add(RUNNER, phase="Pending")
        scaler(api).handle_job_started(JOB_STARTED.model_copy(update=update))
        (body,) = api.sent
        status: dict[str, Any] = json.loads(body)["status"]
        return status

    @pytest.mark.parametrize(
        ("update", "absent"),
        [
            ({"event_name": ""}, "jobEventName"),
            ({"queue_time": ZERO_TIME}, "jobQueuedAt"),
            ({"scale_set_assign_time": ZERO_TIME}, "jobScaleSetAssignedAt"),
            ({"runner_assign_time": ZERO_TIME}, "jobRunnerAssignedAt"),
        ],
        ids=["no-event", "no-queue-time", "no-scale-set-time", "no-runner-time"],
    )
    def test_a_value_the_message_does_not_carry_is_left_out(
        self, update: dict[str, Any], absent: str
    ) -> None:
        """Prevents recording Go's zero time (0001-01-01) or an empty event as if reported."""
        status = self._sent_status(update)
        assert absent not in status
        others = {"jobEventName", "jobQueuedAt", "jobScaleSetAssignedAt", "jobRunnerAssignedAt"}
        assert others - {absent} <= status.keys()  # the others are still recorded

    @pytest.mark.parametrize(
        ("wire", "recorded"),
        [
            (datetime(2026, 5, 1, 9, 58, 0, 999_999, tzinfo=UTC), "2026-05-01T09:58:00Z"),
            (
                datetime(2026, 5, 1, 11, 58, 1, tzinfo=timezone(timedelta(hours=2))),
                "2026-05-01T09:58:01Z",
            ),
        ],
        ids=["fraction-truncated", "offset-to-utc"],
    )
    def test_times_are_metav1_time_in_utc_to_the_second(
        self, wire: datetime, recorded: str
    ) -> None:
        assert self._sent_status({"queue_time": wire})["jobQueuedAt"] == recorded

    def test_the_0_14_patch_carries_no_job_context(self) -> None:
        """0.13/0.14 CRDs have no such fields: their patch stays ARC's bytes."""
        api = FakeApiServer()
        api.add(RUNNER, phase="Pending")
        scaler(api, ArcVersion.V0_14).handle_job_started(JOB_STARTED)
        assert api.sent == [ARC_STATUS_PATCH]
        assert b"jobQueuedAt" not in ARC_STATUS_PATCH


class TestWhichArc:
    @pytest.mark.parametrize(
        ("label", "expected"),
        [
            ("0.13.1", ARC_STATUS_PATCH),
            ("0.14.2", ARC_STATUS_PATCH),
            ("0.15.0", promote_patch("7")),
            ("0.16.0", promote_patch("7")),
            ("not-a-version", promote_patch("7")),
        ],
    )
    def test_the_runners_chart_version_label_decides(self, label: str, expected: bytes) -> None:
        api = FakeApiServer()
        api.add(RUNNER, phase="Pending", labels={"app.kubernetes.io/version": label})
        scaler(api).handle_job_started(JOB_STARTED)
        assert api.sent == [expected]

    def test_an_older_chart_is_learnt_once_and_not_read_again(self) -> None:
        api = FakeApiServer()
        for name in (RUNNER, "other-runner"):
            api.add(name, phase="Running", labels={"app.kubernetes.io/version": "0.14.2"})
        s = scaler(api)
        s.handle_job_started(JOB_STARTED)
        s.handle_job_started(JOB_STARTED.model_copy(update={"runner_name": "other-runner"}))
        assert (api.reads, s.learnt_version) == (1, ArcVersion.V0_14)
        assert len(api.sent) == 2 and all(b'"phase"' not in body for body in api.sent)

    def test_a_patch_only_role_means_0_14_from_then_on(self) -> None:
        """ARC 0.13/0.14 give the listener no GET: send their patch instead of failing."""
        api = FakeApiServer(forbid_reads=True)
        api.add(RUNNER, phase="Running")
        s = scaler(api)
        s.handle_job_started(JOB_STARTED)
        s.handle_job_started(JOB_STARTED)
        assert api.sent == [ARC_STATUS_PATCH, ARC_STATUS_PATCH]
        assert s.read_forbidden

    def test_told_0_15_but_the_role_cannot_read_ends_the_run(self) -> None:
        api = FakeApiServer(forbid_reads=True)
        api.add(RUNNER, phase="Pending")
        with pytest.raises(ScalerError, match="forbidden"):
            scaler(api, ArcVersion.V0_15).handle_job_started(JOB_STARTED)

    def test_told_0_14_it_never_reads(self) -> None:
        api = FakeApiServer()
        api.add(RUNNER, phase="Pending")
        scaler(api, ArcVersion.V0_14).handle_job_started(JOB_STARTED)
        assert (api.sent, api.reads) == ([ARC_STATUS_PATCH], 0)

    @pytest.mark.parametrize(
        ("text", "version"),
        [("0.13", "0.13"), ("0.14.2", "0.14"), ("v0.15.0", "0.15"), ("1.0.0", "0.15")],
    )
    def test_versions_parse(self, text: str, version: str) -> None:
        assert parse_arc_version(text, "test") == version

    @pytest.mark.parametrize("text", ["0.12.1", "fifteen", "0"])
    def test_a_bad_arc_version_setting_is_one_clear_error(self, text: str) -> None:
        with pytest.raises(ArcVersionError, match=r"ARC_VERSION.*0\.13, 0\.14") as caught:
            version_from_env({"ARC_VERSION": text})
        assert "environment variable ARC_VERSION" in str(caught.value)

    def test_no_setting_means_learn_it(self) -> None:
        assert version_from_env({}) is None


# --- against the Kubernetes face, through the real kubernetes client ----------------------


@pytest.fixture
def face_store() -> ObjectStore:
    store = ObjectStore(time.time, history=500)
    store.create(o.ephemeral_runner(RUNNER, phase="Pending"))
    return store


@pytest.fixture
def face(face_store: ObjectStore) -> Iterator[K8sFace]:
    with K8sFace(face_store) as f:
        yield f


class RacingWriter(KubernetesScalerWriter):
    """The real writer, recording the bodies it is given; ``between`` runs after each GET."""

    def __init__(self, api: Any, between: Callable[[], None] | None = None) -> None:
        super().__init__(api, sleep=lambda _: None)
        self.between = between
        self.bodies: list[bytes] = []

    def get_ephemeral_runner(self, namespace: str, name: str) -> dict[str, Any]:
        runner = super().get_ephemeral_runner(namespace, name)
        if self.between is not None:
            between, self.between = self.between, None
            between()
        return runner

    def patch_ephemeral_runner_status(self, namespace: str, name: str, body: bytes) -> None:
        self.bodies.append(body)
        super().patch_ephemeral_runner_status(namespace, name, body)


def api_client(face: K8sFace) -> k8s.ApiClient:
    return k8s.ApiClient(k8s.Configuration(host=face.url))


class TestAgainstTheFace:
    def test_job_started_sets_running_with_the_lock(
        self, face: K8sFace, face_store: ObjectStore
    ) -> None:
        rv = face_store.get("EphemeralRunner", o.NS, RUNNER)["metadata"]["resourceVersion"]
        writer = RacingWriter(api_client(face))
        scaler(writer).handle_job_started(JOB_STARTED)
        assert writer.bodies == [promote_patch(rv)]
        status = face_store.get("EphemeralRunner", o.NS, RUNNER)["status"]
        assert (status["phase"], status["jobRequestId"]) == ("Running", 9001)

    def test_succeeded_written_between_read_and_patch_is_kept(
        self, face: K8sFace, face_store: ObjectStore
    ) -> None:
        """The API server's 409 on the stale lock, then the re-read keeps Succeeded."""
        read_rv = face_store.get("EphemeralRunner", o.NS, RUNNER)["metadata"]["resourceVersion"]

        def controller_finishes_it() -> None:
            face_store.mutate(
                "EphemeralRunner", o.NS, RUNNER, lambda er: er["status"].update(phase="Succeeded")
            )

        writer = RacingWriter(api_client(face), between=controller_finishes_it)
        s = scaler(writer)
        s.handle_job_started(JOB_STARTED)
        assert writer.bodies == [promote_patch(read_rv), JOB_ONLY_015]
        status = face_store.get("EphemeralRunner", o.NS, RUNNER)["status"]
        assert status["phase"] == "Succeeded"
        assert status["jobId"] == "44d0..."
        assert s.conflicts == 1
