"""Wire models and the message decoder, from the example payloads of docs/protocol.md#examples."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from providers.actions.decode import decode_message
from providers.actions.errors import MessageDecodeError
from providers.actions.models import (
    ZERO_TIME,
    CreateSessionRequest,
    JobAssigned,
    JobAvailable,
    JobCompleted,
    JobStarted,
    Session,
    format_rfc3339,
    is_zero_time,
    parse_rfc3339,
)

SESSION_EXAMPLE = """
{"sessionId":"6a1e2f0c-4b7d-4f61-9a3e-2c5d8b9e0f11","ownerName":"arc-runners-5c7f9d2a-listener",
 "runnerScaleSet":{"id":42,"name":"arc-runners","runnerGroupId":1,"runnerGroupName":"Default",
   "labels":[{"type":"System","name":"arc-runners"}],"RunnerSetting":{"disableUpdate":true}},
 "messageQueueUrl":"https://broker.actions.githubusercontent.com/scalesets/message",
 "messageQueueAccessToken":"eyJhbGciOiJSUzI1NiJ9.example.sig",
 "statistics":{"totalAvailableJobs":0,"totalAcquiredJobs":0,"totalAssignedJobs":2,"totalRunningJobs":1,
   "totalRegisteredRunners":2,"totalBusyRunners":1,"totalIdleRunners":1}}
"""

DECODED_BODY_EXAMPLE = """
[
 {"messageType":"JobAvailable","acquireJobUrl":"https://example.invalid/acquire/9003","runnerRequestId":9003,
  "repositoryName":"web","ownerName":"acme","jobId":"7b1c...","jobWorkflowRef":"acme/web/.github/workflows/ci.yml@refs/heads/main",
  "jobDisplayName":"build (linux)","workflowRunId":555001,"eventName":"push","requestLabels":["arc-runners"],
  "queueTime":"2026-05-01T10:00:00.1234567Z","scaleSetAssignTime":"0001-01-01T00:00:00Z",
  "runnerAssignTime":"0001-01-01T00:00:00Z","finishTime":"0001-01-01T00:00:00Z"},
 {"messageType":"JobAssigned","runnerRequestId":9002,"repositoryName":"web","ownerName":"acme","jobId":"91aa...",
  "jobWorkflowRef":"acme/web/.github/workflows/ci.yml@refs/heads/main","jobDisplayName":"test","workflowRunId":555000,
  "eventName":"push","requestLabels":["arc-runners"],"queueTime":"2026-05-01T09:59:40Z",
  "scaleSetAssignTime":"2026-05-01T09:59:41Z","runnerAssignTime":"0001-01-01T00:00:00Z","finishTime":"0001-01-01T00:00:00Z"},
 {"messageType":"JobStarted","runnerId":311,"runnerName":"arc-runners-runner-x7k2p","runnerRequestId":9001,
  "repositoryName":"web","ownerName":"acme","jobId":"44d0...","jobWorkflowRef":"acme/web/.github/workflows/ci.yml@refs/pull/12/merge",
  "jobDisplayName":"lint","workflowRunId":554990,"eventName":"pull_request","requestLabels":["arc-runners"],
  "queueTime":"2026-05-01T09:58:00Z","scaleSetAssignTime":"2026-05-01T09:58:01Z","runnerAssignTime":"2026-05-01T09:58:20Z",
  "finishTime":"0001-01-01T00:00:00Z"},
 {"messageType":"JobCompleted","result":"succeeded","runnerId":305,"runnerName":"arc-runners-runner-q9w4d","runnerRequestId":8990,
  "repositoryName":"web","ownerName":"acme","jobId":"3e2f...","jobWorkflowRef":"acme/web/.github/workflows/ci.yml@refs/tags/v1.2.0",
  "jobDisplayName":"release","workflowRunId":554900,"eventName":"release","requestLabels":["arc-runners"],
  "queueTime":"2026-05-01T09:40:00Z","scaleSetAssignTime":"2026-05-01T09:40:01Z","runnerAssignTime":"2026-05-01T09:40:30Z",
  "finishTime":"2026-05-01T09:52:10Z"}
]
"""  # noqa: E501

STATISTICS = {
    "totalAvailableJobs": 1,
    "totalAcquiredJobs": 1,
    "totalAssignedJobs": 3,
    "totalRunningJobs": 1,
    "totalRegisteredRunners": 2,
    "totalBusyRunners": 1,
    "totalIdleRunners": 1,
}


def outer(body: object, **overrides: object) -> bytes:
    """An outer message whose ``body`` is the JSON *string* of ``body`` (or a raw string)."""
    message = {
        "messageId": 100000172,
        "messageType": "RunnerScaleSetJobMessages",
        "statistics": STATISTICS,
        "body": body if isinstance(body, str) else json.dumps(body),
    }
    message.update(overrides)
    return json.dumps(message).encode()


class TestSessionExample:
    def test_every_field_is_read(self) -> None:
        session = Session.model_validate_json(SESSION_EXAMPLE)
        assert session.session_id == "6a1e2f0c-4b7d-4f61-9a3e-2c5d8b9e0f11"
        assert session.owner_name == "arc-runners-5c7f9d2a-listener"
        assert session.message_queue_url.endswith("/scalesets/message")
        assert session.statistics is not None
        assert session.statistics.total_assigned_jobs == 2
        assert session.statistics.total_idle_runners == 1
        scale_set = session.runner_scale_set
        assert scale_set is not None
        assert (scale_set.id, scale_set.name, scale_set.runner_group_id) == (42, "arc-runners", 1)
        assert scale_set.runner_setting is not None and scale_set.runner_setting.disable_update
        assert scale_set.label_names == ("arc-runners",)

    def test_the_queue_token_is_secret_in_repr_and_revealed_only_on_the_wire(self) -> None:
        session = Session.model_validate_json(SESSION_EXAMPLE)
        assert "eyJhbGciOiJSUzI1NiJ9" not in repr(session)
        assert "eyJhbGciOiJSUzI1NiJ9" not in str(session.model_dump())
        token = session.message_queue_access_token.get_secret_value()
        assert token == "eyJhbGciOiJSUzI1NiJ9.example.sig"
        assert session.to_wire()["messageQueueAccessToken"] == token

    def test_nil_session_id_is_detectable(self) -> None:
        data = json.loads(SESSION_EXAMPLE)
        data["sessionId"] = "00000000-0000-0000-0000-000000000000"
        assert Session.model_validate(data).is_nil

    def test_create_session_body_serializes_the_zero_uuid(self) -> None:
        assert CreateSessionRequest(owner_name="pod-1").to_wire() == {
            "sessionId": "00000000-0000-0000-0000-000000000000",
            "ownerName": "pod-1",
        }

    def test_a_scale_set_without_labels_is_targeted_by_its_name(self) -> None:
        data = json.loads(SESSION_EXAMPLE)
        data["runnerScaleSet"]["labels"] = []
        scale_set = Session.model_validate(data).runner_scale_set
        assert scale_set is not None and scale_set.label_names == ("arc-runners",)


class TestMessageExample:
    def test_body_is_decoded_a_second_time_in_order_with_types(self) -> None:
        decoded = decode_message(outer(DECODED_BODY_EXAMPLE))
        assert decoded.message_id == 100000172
        assert decoded.statistics.total_assigned_jobs == 3
        assert [type(job) for job in decoded.jobs] == [
            JobAvailable,
            JobAssigned,
            JobStarted,
            JobCompleted,
        ]

    def test_job_available(self) -> None:
        (available,) = decode_message(outer(DECODED_BODY_EXAMPLE)).of_type(JobAvailable)
        assert available.runner_request_id == 9003
        assert available.acquire_job_url == "https://example.invalid/acquire/9003"
        assert available.job_id == "7b1c..."
        assert available.request_labels == ["arc-runners"]
        assert available.queue_time == datetime(2026, 5, 1, 10, 0, 0, 123456, tzinfo=UTC)
        assert is_zero_time(available.scale_set_assign_time)

    def test_job_started(self) -> None:
        (started,) = decode_message(outer(DECODED_BODY_EXAMPLE)).of_type(JobStarted)
        assert (started.runner_id, started.runner_name) == (311, "arc-runners-runner-x7k2p")
        assert (started.owner_name, started.repository_name) == ("acme", "web")
        assert started.event_name == "pull_request"
        assert started.workflow_run_id == 554990
        assert started.job_workflow_ref.endswith("@refs/pull/12/merge")
        assert started.runner_assign_time == datetime(2026, 5, 1, 9, 58, 20, tzinfo=UTC)
        assert is_zero_time(started.finish_time)

    def test_job_completed(self) -> None:
        (completed,) = decode_message(outer(DECODED_BODY_EXAMPLE)).of_type(JobCompleted)
        assert completed.result == "succeeded"
        assert completed.runner_name == "arc-runners-runner-q9w4d"
        assert completed.finish_time - completed.runner_assign_time == timedelta(
            minutes=11, seconds=40
        )

    def test_unknown_job_types_are_skipped_not_fatal(self) -> None:
        body = json.loads(DECODED_BODY_EXAMPLE)
        body.insert(1, {"messageType": "JobRequeued", "runnerRequestId": 1})
        decoded = decode_message(outer(body))
        assert len(decoded.jobs) == 4
        assert decoded.skipped_types == ("JobRequeued",)

    @pytest.mark.parametrize("body", ["", "null", "[]"])
    def test_an_empty_body_means_no_job_messages(self, body: str) -> None:
        decoded = decode_message(outer(body))
        assert decoded.jobs == ()
        assert decoded.statistics.total_assigned_jobs == 3

    def test_a_missing_body_means_no_job_messages(self) -> None:
        raw = json.loads(outer("[]"))
        del raw["body"]
        assert decode_message(json.dumps(raw).encode()).jobs == ()

    def test_a_utf8_bom_is_stripped(self) -> None:
        assert decode_message(b"\xef\xbb\xbf" + outer("[]")).message_id == 100000172

    def test_message_ids_are_64_bit(self) -> None:
        assert decode_message(outer("[]", messageId=2**62 + 7)).message_id == 2**62 + 7


class TestZeroTimes:
    @pytest.mark.parametrize(
        "text",
        ["0001-01-01T00:00:00Z", "0001-01-01T00:00:00.0000000Z", "0001-01-01T00:00:00.000000000Z"],
    )
    def test_go_zero_time_in_every_spelling_is_zero(self, text: str) -> None:
        assert is_zero_time(parse_rfc3339(text))

    def test_zero_time_with_seven_fractional_digits_in_a_job_message(self) -> None:
        body = [{"messageType": "JobCompleted", "runnerAssignTime": "0001-01-01T00:00:00.0000000Z"}]
        (completed,) = decode_message(outer(body)).jobs
        assert completed.runner_assign_time == ZERO_TIME

    def test_seven_and_nine_fractional_digits_are_truncated_to_microseconds(self) -> None:
        assert parse_rfc3339("2026-05-01T10:00:00.1234567Z").microsecond == 123456
        assert parse_rfc3339("2026-05-01T10:00:00.987654321Z").microsecond == 987654
        assert parse_rfc3339("2026-05-01T10:00:00.5Z").microsecond == 500000

    def test_offsets_are_kept(self) -> None:
        moment = parse_rfc3339("2026-05-01T12:00:00+02:00")
        assert moment.utcoffset() == timedelta(hours=2)
        assert moment == datetime(2026, 5, 1, 10, tzinfo=UTC)

    def test_format_round_trips(self) -> None:
        assert format_rfc3339(ZERO_TIME) == "0001-01-01T00:00:00Z"
        moment = datetime(2026, 5, 1, 10, 0, 0, 123400, tzinfo=UTC)
        assert format_rfc3339(moment) == "2026-05-01T10:00:00.1234Z"
        assert parse_rfc3339(format_rfc3339(moment)) == moment


class TestMalformedMessages:
    def test_garbage_is_a_decode_error(self) -> None:
        with pytest.raises(MessageDecodeError, match="not valid JSON"):
            decode_message(b"<html>bad gateway</html>")

    def test_the_outer_type_must_be_job_messages(self) -> None:
        with pytest.raises(MessageDecodeError, match="unexpected messageType 'SomethingElse'"):
            decode_message(outer("[]", messageType="SomethingElse"))

    def test_statistics_are_required(self) -> None:
        raw = json.loads(outer("[]"))
        del raw["statistics"]
        with pytest.raises(MessageDecodeError, match="statistics missing"):
            decode_message(json.dumps(raw).encode())

    def test_a_body_that_is_not_json_is_an_error(self) -> None:
        with pytest.raises(MessageDecodeError, match="body is not a JSON array"):
            decode_message(outer("[{"))

    def test_a_body_that_is_an_object_is_an_error(self) -> None:
        with pytest.raises(MessageDecodeError, match="expected an array"):
            decode_message(outer({"messageType": "JobStarted"}))

    def test_types_are_strict_like_go(self) -> None:
        body = [{"messageType": "JobStarted", "runnerRequestId": "9001"}]
        with pytest.raises(
            MessageDecodeError, match=r"job message 0 \(JobStarted\): runnerRequestId"
        ):
            decode_message(outer(body))

    def test_job_id_is_a_string_on_the_wire(self) -> None:
        with pytest.raises(MessageDecodeError, match="jobId"):
            decode_message(outer([{"messageType": "JobAssigned", "jobId": 7}]))

    def test_a_bad_timestamp_is_an_error(self) -> None:
        with pytest.raises(MessageDecodeError, match="queueTime"):
            decode_message(outer([{"messageType": "JobAssigned", "queueTime": "yesterday"}]))
