"""ARC's scaler (docs/protocol.md#scaler): patch rules, and byte-for-byte bodies through the real
kubernetes client against a loopback server that records what it receives."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from kubernetes import client as k8s

from listener.arc.config import MAX_INT32
from listener.arc.scaler import (
    PermanentWriteError,
    RunnerNotFound,
    Scaler,
    ScalerError,
    go_json,
)
from listener.arc.version import ArcVersion
from providers.actions.models import JobCompleted, JobStarted
from providers.kubernetes.write.arc_writer import KubernetesScalerWriter

NS, ERS = "arc-runners", "arc-runners-r6jw6"

JOB_STARTED = JobStarted.model_validate(
    {
        "messageType": "JobStarted",
        "runnerId": 311,
        "runnerName": "arc-runners-runner-x7k2p",
        "runnerRequestId": 9001,
        "repositoryName": "web",
        "ownerName": "acme",
        "jobId": "44d0...",
        "jobWorkflowRef": "acme/web/.github/workflows/ci.yml@refs/pull/12/merge",
        "jobDisplayName": "lint",
        "workflowRunId": 554990,
        "eventName": "pull_request",
        "requestLabels": ["arc-runners"],
        "queueTime": "2026-05-01T09:58:00Z",
        "scaleSetAssignTime": "2026-05-01T09:58:01Z",
        "runnerAssignTime": "2026-05-01T09:58:20Z",
        "finishTime": "0001-01-01T00:00:00Z",
    }
)

#: What ARC's Go code puts on the wire for JOB_STARTED (json-patch CreateMergePatch of the
#: EphemeralRunner status: sorted keys, compact).
ARC_STATUS_PATCH = (
    b'{"status":{"jobDisplayName":"lint","jobId":"44d0...","jobRepositoryName":"acme/web",'
    b'"jobRequestId":9001,"jobWorkflowRef":"acme/web/.github/workflows/ci.yml@refs/pull/12/merge",'
    b'"workflowRunId":554990}}'
)


@dataclass
class RecordingWriter:
    """A real in-memory ScalerWriter: records bodies; knows which runners exist."""

    missing_runners: set[str] = field(default_factory=set)
    fail: bool = False
    sets: list[bytes] = field(default_factory=list)
    statuses: list[tuple[str, bytes]] = field(default_factory=list)

    def patch_ephemeral_runner_set(self, namespace: str, name: str, body: bytes) -> None:
        if self.fail:
            raise RuntimeError("apiserver said 500")
        self.sets.append(body)

    def patch_ephemeral_runner_status(self, namespace: str, name: str, body: bytes) -> None:
        if name in self.missing_runners:
            raise RunnerNotFound(name)
        self.statuses.append((name, body))


def scaler(writer: RecordingWriter, min_runners: int = 0, max_runners: int = 10) -> Scaler:
    """A scaler told it runs under ARC 0.14: the JobStarted patch without a read (the 0.15
    read-then-promote flow is specified in test_scaler_015.py)."""
    return Scaler(
        writer,
        namespace=NS,
        name=ERS,
        min_runners=min_runners,
        max_runners=max_runners,
        arc_version=ArcVersion.V0_14,
    )


def ers(patch_id: int, replicas: int | None) -> bytes:
    shown = "null" if replicas is None else str(replicas)
    return f'{{"spec":{{"patchID":{patch_id},"replicas":{shown}}}}}'.encode()


class TestDesiredRunnerCount:
    def test_the_first_call_sends_patch_id_0_and_zero_replicas_as_null(self) -> None:
        writer = RecordingWriter()
        assert scaler(writer).handle_desired_runner_count(0) == 0
        assert writer.sets == [b'{"spec":{"patchID":0,"replicas":null}}']

    def test_new_intent_gets_the_sequence_number(self) -> None:
        writer = RecordingWriter()
        s = scaler(writer)
        assert [s.handle_desired_runner_count(n) for n in (0, 3, 3, 1)] == [0, 3, 3, 1]
        assert writer.sets == [ers(0, None), ers(1, 3), ers(2, 3), ers(3, 1)]

    def test_target_is_min_plus_count_clamped_to_max(self) -> None:
        writer = RecordingWriter()
        s = scaler(writer, min_runners=1, max_runners=5)
        assert s.handle_desired_runner_count(10) == 5
        assert s.handle_desired_runner_count(2) == 3
        assert writer.sets == [ers(0, 5), ers(1, 3)]

    def test_idle_at_min_runners_is_authoritative_patch_id_0(self) -> None:
        writer = RecordingWriter()
        s = scaler(writer, min_runners=2)
        for _ in range(3):
            s.handle_desired_runner_count(0)
        assert writer.sets == [ers(0, 2), ers(0, 2), ers(0, 2)]
        assert s.patch_seq == 2  # the sequence keeps counting underneath

    def test_a_job_event_since_the_last_call_makes_it_new_intent(self) -> None:
        writer = RecordingWriter()
        s = scaler(writer, min_runners=2)
        s.handle_desired_runner_count(0)
        s.handle_job_started(JOB_STARTED)
        s.handle_desired_runner_count(0)  # dirty: patchID = seq even though target == min
        s.handle_desired_runner_count(0)  # clean again
        assert writer.sets == [ers(0, 2), ers(1, 2), ers(0, 2)]

    def test_job_completed_also_marks_dirty_without_an_api_call(self) -> None:
        writer = RecordingWriter()
        s = scaler(writer)
        s.handle_desired_runner_count(0)
        s.handle_job_completed(JobCompleted(message_type="JobCompleted", result="succeeded"))
        assert writer.statuses == []
        s.handle_desired_runner_count(0)
        assert writer.sets[-1] == ers(1, None)

    def test_target_unchanged_but_above_min_is_not_authoritative(self) -> None:
        writer = RecordingWriter()
        s = scaler(writer)
        s.handle_desired_runner_count(2)
        s.handle_desired_runner_count(2)
        assert writer.sets == [ers(0, 2), ers(1, 2)]

    def test_the_sequence_wraps_at_max_int32(self) -> None:
        writer = RecordingWriter()
        s = scaler(writer)
        s.patch_seq = MAX_INT32 - 1
        s.handle_desired_runner_count(1)
        s.handle_desired_runner_count(2)
        assert writer.sets == [ers(MAX_INT32, 1), ers(1, 2)]

    def test_a_live_max_runners_change_clamps_the_target(self) -> None:
        writer = RecordingWriter()
        s = scaler(writer, max_runners=10)
        s.set_max_runners(0)
        assert s.handle_desired_runner_count(4) == 0

    def test_switched_off_by_arc_it_asks_for_no_runner_even_with_min_runners(self) -> None:
        """Prevents asking for ``minRunners`` + assigned jobs of a scale set ARC pinned at zero
        replicas (runners Outdated, #4652): the runners would only reject the spec again.
        Back on, ARC's arithmetic resumes (a new intent: the first patch after is > 0)."""
        writer = RecordingWriter()
        s = scaler(writer, min_runners=2, max_runners=10)
        s.handle_desired_runner_count(3)
        s.set_switched_off(True)
        assert [s.handle_desired_runner_count(3) for _ in range(2)] == [0, 0]
        s.set_switched_off(False)
        assert s.handle_desired_runner_count(3) == 5
        assert writer.sets == [ers(0, 5), ers(1, None), ers(0, None), ers(3, 5)]

    def test_a_write_error_ends_the_run_with_the_patch_in_the_message(self) -> None:
        with pytest.raises(ScalerError, match=r'\{"spec":\{"patchID":0,"replicas":4\}\}'):
            scaler(RecordingWriter(fail=True)).handle_desired_runner_count(4)


class TestJobStarted:
    def test_status_patch_matches_arc(self) -> None:
        writer = RecordingWriter()
        scaler(writer).handle_job_started(JOB_STARTED)
        assert writer.statuses == [("arc-runners-runner-x7k2p", ARC_STATUS_PATCH)]

    def test_zero_values_are_left_out(self) -> None:
        writer = RecordingWriter()
        bare = JobStarted(message_type="JobStarted", runner_name="r1", job_id="j")
        scaler(writer).handle_job_started(bare)
        assert writer.statuses == [("r1", b'{"status":{"jobId":"j","jobRepositoryName":"/"}}')]

    def test_html_characters_are_escaped_like_go(self) -> None:
        assert go_json({"a": "<b> & \u2028"}) == b'{"a":"\\u003cb\\u003e \\u0026 \\u2028"}'
        assert go_json({"a": "caf\u00e9 \n"}) == '{"a":"caf\u00e9 \\n"}'.encode()

    def test_an_unknown_runner_is_ignored(self) -> None:
        writer = RecordingWriter(missing_runners={"arc-runners-runner-x7k2p"})
        s = scaler(writer)
        s.handle_job_started(JOB_STARTED)
        assert s.dirty and writer.statuses == []

    @pytest.mark.parametrize(
        ("error", "skipped"),
        [
            (PermanentWriteError("HTTP 422 invalid"), True),  # a replay would meet it again
            (ScalerError("no answer; gave up after 11 attempts"), False),  # can heal: redeliver
        ],
    )
    def test_a_patch_refused_for_good_is_skipped_and_one_that_can_heal_ends_the_run(
        self, error: ScalerError, skipped: bool
    ) -> None:
        """At least once without poison (issue 34 item 4): a refusal that a replay would meet
        again must not hold every later message behind it; a failure that can heal must end
        the run unacked so the next process handles the message."""

        class Refusing(RecordingWriter):
            def patch_ephemeral_runner_status(self, namespace: str, name: str, body: bytes) -> None:
                raise error

        s = scaler(Refusing())
        if skipped:
            s.handle_job_started(JOB_STARTED)
            assert s.refused == 1
        else:
            with pytest.raises(ScalerError, match="gave up"):
                s.handle_job_started(JOB_STARTED)
            assert s.refused == 0


# --- the real kubernetes client on the wire -------------------------------------------------


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    answered: int


class ApiServerRecorder:
    """A loopback HTTP server standing in for the API server: records, answers 200 or 404."""

    def __init__(self, missing: set[str]) -> None:
        self.requests: list[Recorded] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_PATCH(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                # /apis/<group>/<version>/namespaces/<ns>/<plural>/<name>[/status]
                name = self.path.split("/")[7]
                status, answer = (
                    (404, b'{"kind":"Status","message":"not found"}')
                    if name in missing
                    else (200, b"{}")
                )
                headers = {k.lower(): v for k, v in self.headers.items()}
                recorder.requests.append(Recorded("PATCH", self.path, headers, body, status))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def apiserver() -> Iterator[ApiServerRecorder]:
    server = ApiServerRecorder(missing={"gone-runner"})
    yield server
    server.close()


def kube_writer(
    apiserver: ApiServerRecorder, *, exact_bytes: bool = True
) -> KubernetesScalerWriter:
    configuration = k8s.Configuration(host=apiserver.url)
    configuration.api_key = {"authorization": "test-sa-token"}
    configuration.api_key_prefix = {"authorization": "Bearer"}
    return KubernetesScalerWriter(k8s.ApiClient(configuration), exact_bytes=exact_bytes)


class TestOnTheWire:
    def test_bodies_match_arc_byte_for_byte(self, apiserver: ApiServerRecorder) -> None:
        s = scaler(RecordingWriter(), min_runners=1, max_runners=5)
        s.writer = kube_writer(apiserver)  # type: ignore[assignment]
        s.handle_desired_runner_count(0)  # first call: patchID 0
        s.handle_desired_runner_count(10)  # clamp to max
        s.handle_job_started(JOB_STARTED)
        s.handle_desired_runner_count(0)  # dirty, back to min
        s.handle_desired_runner_count(0)  # idle at min: authoritative
        zero = scaler(RecordingWriter())
        zero.writer = kube_writer(apiserver)  # type: ignore[assignment]
        zero.handle_desired_runner_count(0)  # replicas 0 -> null
        bodies = [r.body for r in apiserver.requests]
        assert bodies == [
            b'{"spec":{"patchID":0,"replicas":1}}',
            b'{"spec":{"patchID":1,"replicas":5}}',
            ARC_STATUS_PATCH,
            b'{"spec":{"patchID":2,"replicas":1}}',
            b'{"spec":{"patchID":0,"replicas":1}}',
            b'{"spec":{"patchID":0,"replicas":null}}',
        ]
        ers_path = f"/apis/actions.github.com/v1alpha1/namespaces/{NS}/ephemeralrunnersets/{ERS}"
        status_path = (
            f"/apis/actions.github.com/v1alpha1/namespaces/{NS}/ephemeralrunners/"
            "arc-runners-runner-x7k2p/status"
        )
        assert [r.path for r in apiserver.requests] == [ers_path] * 2 + [status_path] + [
            ers_path
        ] * 3
        for request in apiserver.requests:
            assert request.method == "PATCH"
            assert request.headers["content-type"] == "application/merge-patch+json"
            assert request.headers["authorization"] == "Bearer test-sa-token"

    def test_stock_custom_objects_api_sends_merge_patch_but_not_arcs_bytes(
        self, apiserver: ApiServerRecorder
    ) -> None:
        writer = kube_writer(apiserver, exact_bytes=False)
        writer.patch_ephemeral_runner_set(NS, ERS, b'{"spec":{"patchID":0,"replicas":null}}')
        writer.patch_ephemeral_runner_status(NS, "arc-runners-runner-x7k2p", ARC_STATUS_PATCH)
        for request, arc in zip(
            apiserver.requests,
            (b'{"spec":{"patchID":0,"replicas":null}}', ARC_STATUS_PATCH),
            strict=True,
        ):
            assert request.headers["content-type"] == "application/merge-patch+json"
            assert json.loads(request.body) == json.loads(arc)
            assert request.body != arc  # json.dumps adds ", " and ": ": why exact_bytes exists

    @pytest.mark.parametrize("exact_bytes", [True, False])
    def test_not_found_runner_is_ignored_on_the_wire(
        self, apiserver: ApiServerRecorder, exact_bytes: bool
    ) -> None:
        s = scaler(RecordingWriter())
        s.writer = kube_writer(apiserver, exact_bytes=exact_bytes)  # type: ignore[assignment]
        gone = JOB_STARTED.model_copy(update={"runner_name": "gone-runner"})
        s.handle_job_started(gone)  # no exception: a 404 is logged and ignored
        assert apiserver.requests[0].path.endswith("/ephemeralrunners/gone-runner/status")
        assert apiserver.requests[0].answered == 404

    def test_not_found_set_ends_the_run(self, apiserver: ApiServerRecorder) -> None:
        s = Scaler(
            kube_writer(apiserver), namespace=NS, name="gone-runner", min_runners=0, max_runners=3
        )
        with pytest.raises(ScalerError, match="could not patch ephemeral runner set"):
            s.handle_desired_runner_count(1)
        assert apiserver.requests[0].answered == 404
