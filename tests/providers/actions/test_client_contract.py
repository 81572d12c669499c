"""Contract tests: the real httpx client against the loopback Actions face
(docs/protocol.md#sequence)."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pydantic import SecretStr

from providers.actions.auth import PatAuth
from providers.actions.client import ActionsClient
from providers.actions.config_url import parse_config_url
from providers.actions.errors import (
    ActionsHttpError,
    AuthError,
    MessageDecodeError,
    QueueTokenExpiredError,
    RetriesExhaustedError,
    ScaleSetGoneError,
    SessionConflictError,
    TransportError,
)
from providers.actions.models import JobAssigned, JobAvailable, JobCompleted, JobStarted
from providers.actions.session import ConflictPolicy, MessageSession
from simulator.faces.actions import ActionsFace, Fault, ScriptedJobFeed
from tests.providers.actions.conftest import (
    PAT,
    SCALE_SET_ID,
    SleepRecorder,
    app_client,
    pat_client,
    run,
    session_for,
)

T = TypeVar("T")


def routes(face: ActionsFace) -> list[str]:
    return [r.route for r in face.requests]


async def opened_then_closed(client: ActionsClient, sleeps: SleepRecorder, **kwargs: Any) -> None:
    """Open a session (leaving it held) and close the client, in one event loop."""
    try:
        await session_for(client, sleeps, **kwargs).open()
    finally:
        await client.aclose()


async def with_session(
    face: ActionsFace,
    sleeps: SleepRecorder,
    call: Callable[[MessageSession], Awaitable[T]],
) -> T:
    """Open a PAT session on ``face``, run ``call`` with it, close the client."""
    client = pat_client(face, sleeps)
    try:
        session = session_for(client, sleeps)
        await session.open()
        return await call(session)
    finally:
        await client.aclose()


class TestProtocolSequence:
    """docs/protocol.md#sequence end to end: auth, session, poll/ack/acquire/handle, delete."""

    def test_pat_sequence(self, face: ActionsFace, feed: ScriptedJobFeed, sleeps: SleepRecorder):
        client = pat_client(face, sleeps)
        session = session_for(client, sleeps)
        job = feed.add_job(SCALE_SET_ID)

        async def story() -> None:
            opened = await session.open()
            assert opened.statistics is not None and opened.runner_scale_set is not None
            first = await session.get_message(0, 5)
            assert first is not None
            await session.delete_message(first.message_id)
            ids = [j.runner_request_id for j in first.of_type(JobAvailable)]
            assert await session.acquire_jobs(ids) == [job]
            feed.start(job, "arc-runners-runner-abcde")
            feed.complete(job)
            second = await session.get_message(first.message_id, 5)
            assert second is not None and second.message_id > first.message_id
            assert [type(j) for j in second.jobs] == [JobAssigned, JobStarted, JobCompleted]
            assert second.of_type(JobStarted)[0].runner_name == "arc-runners-runner-abcde"
            assert second.of_type(JobCompleted)[0].result == "succeeded"
            await session.delete_message(second.message_id)
            assert await session.get_message(second.message_id, 5) is None  # 202 at window end
            await session.close()
            await client.aclose()

        run(story())
        assert routes(face) == [
            "registration_token",
            "runner_registration",
            "create_session",
            "get_message",
            "delete_message",
            "acquire_jobs",
            "get_message",
            "delete_message",
            "get_message",
            "delete_session",
        ]
        assert all(r.status in (200, 201, 202, 204) for r in face.requests)
        assert face.session_of(SCALE_SET_ID) is None

    def test_pat_wire_details(self, face: ActionsFace, feed: ScriptedJobFeed, sleeps):
        client = pat_client(face, sleeps)
        session = session_for(client, sleeps)
        feed.add_job(SCALE_SET_ID)

        async def story() -> None:
            await session.open()
            message = await session.get_message(0, 7)
            assert message is not None
            await session.delete_message(message.message_id)
            await session.acquire_jobs([j.runner_request_id for j in message.jobs])
            await session.get_message(message.message_id, 6)
            await client.aclose()

        run(story())
        registration, connection, create, get1, ack, acquire, get2 = face.requests
        # registration token: PAT bearer, v3 content type, no Accept, empty body
        assert registration.path == "/api/v3/orgs/acme/actions/runners/registration-token"
        assert registration.headers["authorization"] == "Bearer <redacted>"
        assert registration.headers["content-type"] == "application/vnd.github.v3+json"
        assert "accept" not in registration.headers
        assert registration.body == b""
        # runner-registration: RemoteAuth, JSON body with the trimmed configure_url
        assert connection.headers["authorization"] == "RemoteAuth <redacted>"
        assert connection.json() == {"url": face.configure_url(), "runner_event": "register"}
        # create session: tenant prefix kept, api-version added, zero UUID + owner
        assert create.path == f"/tenant/_apis/runtime/runnerscalesets/{SCALE_SET_ID}/sessions"
        assert create.query == {"api-version": ["6.0-preview"]}
        assert create.json() == {
            "sessionId": "00000000-0000-0000-0000-000000000000",
            "ownerName": "arc-runners-listener",
        }
        assert create.headers["content-type"] == "application/json"
        # get message: queue URL as given, capacity header, Accept with api-version
        assert get1.query == {"sessionId": [face.session_of(SCALE_SET_ID)]}
        assert get1.headers["x-scalesetmaxcapacity"] == "7"
        assert get1.headers["accept"] == "application/json; api-version=6.0-preview"
        assert "content-type" not in get1.headers
        assert get2.query["lastMessageId"] == [str(message_id := ack.path.rsplit("/", 1)[1])]
        assert get2.capacity == 6
        # ack: message id appended to the path, query kept
        assert ack.path == f"/broker/message/{message_id}"
        assert ack.query == {"sessionId": [face.session_of(SCALE_SET_ID)]}
        # acquire: compact JSON array, queue token (the face refuses the admin token)
        assert acquire.body == b"[9001]"
        assert acquire.status == 200
        assert face.capacity_history == [7, 6]

    def test_user_agent_is_compact_json_in_go_key_order(self, face: ActionsFace, sleeps):
        client = pat_client(face, sleeps)
        run(opened_then_closed(client, sleeps))
        agents = {r.headers["user-agent"] for r in face.requests}
        assert len(agents) == 1
        agent = agents.pop()
        assert agent.startswith('{"system":"actions-runner-controller","version":')
        assert list(json.loads(agent)) == [
            "system",
            "version",
            "commit_sha",
            "scale_set_id",
            "subsystem",
            "build_version",
            "build_commit_sha",
            "kind",
        ]
        assert '"scale_set_id":42,"subsystem":"ghalistener"' in agent
        assert agent.endswith(
            '"build_version":"v0.4.0","build_commit_sha":"v0.4.0","kind":"scaleset"}'
        )

    def test_app_auth_sequence(self, face: ActionsFace, sleeps, app_keys: tuple[str, str]):
        client = app_client(face, sleeps, app_keys[0])
        session = session_for(client, sleeps)

        async def story() -> None:
            await session.open()
            assert await session.get_message(0, 1) is None
            await session.close()
            await client.aclose()

        run(story())
        assert routes(face) == [
            "installation_token",
            "registration_token",
            "runner_registration",
            "create_session",
            "get_message",
            "delete_session",  # the admin token is still fresh: no new chain
        ]
        installation = face.requests_to("installation_token")[0]
        assert installation.path == "/api/v3/app/installations/4242/access_tokens"
        assert installation.headers["content-type"] == "application/vnd.github+json"
        # the face verified the RS256 JWT (iss, exp, exactly three claims) and answered 201
        assert installation.status == 201

    def test_a_wrong_app_key_fails_at_the_installation_token(
        self, face: ActionsFace, sleeps: SleepRecorder
    ) -> None:
        from simulator.faces.actions import generate_rsa_key_pem

        other_private, _ = generate_rsa_key_pem()
        client = app_client(face, sleeps, other_private)
        with pytest.raises(AuthError, match="github app installation token: HTTP 401"):
            run(opened_then_closed(client, sleeps))
        assert routes(face) == ["installation_token"]

    def test_a_bad_pat_fails_at_the_registration_token(self, face: ActionsFace, sleeps):
        client = ActionsClient(
            parse_config_url(face.configure_url(), env={}),
            PatAuth(SecretStr("ghp_wrongwrongwrong")),
            scale_set_id=SCALE_SET_ID,
            sleep=sleeps,
        )
        with pytest.raises(AuthError, match="registration token: HTTP 401: Bad credentials"):
            run(opened_then_closed(client, sleeps))


class TestSessionFaults:
    def test_401_on_get_message_refreshes_the_session_and_retries_once(
        self, face: ActionsFace, sleeps: SleepRecorder
    ) -> None:
        client = pat_client(face, sleeps)
        session = session_for(client, sleeps)

        async def story() -> None:
            first = await session.open()
            face.expire_queue_tokens()
            assert await session.get_message(0, 2) is None
            assert session.refreshes == 1
            assert session.session.message_queue_access_token != first.message_queue_access_token
            await client.aclose()

        run(story())
        assert routes(face)[-3:] == ["get_message", "refresh_session", "get_message"]
        assert [r.status for r in face.requests[-3:]] == [401, 200, 202]

    @pytest.mark.parametrize("route", ["get_message", "delete_message", "acquire_jobs"])
    def test_a_second_401_is_returned(self, face: ActionsFace, sleeps, route: str) -> None:
        client = pat_client(face, sleeps)
        session = session_for(client, sleeps)
        calls = {
            "get_message": lambda: session.get_message(0, 1),
            "delete_message": lambda: session.delete_message(1),
            "acquire_jobs": lambda: session.acquire_jobs([1]),
        }

        async def story() -> None:
            await session.open()
            face.fail_next(route, Fault.http(401), times=2)
            with pytest.raises(QueueTokenExpiredError, match="HTTP 401"):
                await calls[route]()
            await client.aclose()

        run(story())
        assert routes(face).count("refresh_session") == 1
        assert routes(face).count(route) == 2

    def test_409_is_retried_with_backoff_until_the_session_is_released(
        self, face: ActionsFace
    ) -> None:
        face.hold_session(SCALE_SET_ID)

        class ReleasingSleep(SleepRecorder):
            async def __call__(self, seconds: float) -> None:
                await super().__call__(seconds)
                if len(self.delays) == 2:
                    face.release_session(SCALE_SET_ID)

        sleeps = ReleasingSleep()
        client = pat_client(face, sleeps)
        run(opened_then_closed(client, sleeps, conflict=ConflictPolicy(attempts=10)))
        assert sleeps.delays == [5, 10]
        assert [r.status for r in face.requests_to("create_session")] == [409, 409, 200]

    def test_409_gives_up_after_a_bounded_wait_with_a_clear_error(self, face: ActionsFace, sleeps):
        face.hold_session(SCALE_SET_ID)
        client = pat_client(face, sleeps)
        with pytest.raises(SessionConflictError) as info:
            run(opened_then_closed(client, sleeps, conflict=ConflictPolicy(attempts=4)))
        text = str(info.value)
        assert "scale set 42 already has an active session" in text
        assert "gave up after 4 attempts over 35 s" in text
        assert "RunnerScaleSetSessionConflictException" in text
        assert sleeps.delays == [5, 10, 20]

    def test_other_session_errors_are_not_retried(self, face: ActionsFace, sleeps) -> None:
        face.fail_next("create_session", Fault.http(400))
        client = pat_client(face, sleeps)
        with pytest.raises(ActionsHttpError, match=r"create session: POST .* HTTP 400"):
            run(opened_then_closed(client, sleeps))
        assert sleeps.delays == []

    def test_a_scale_set_gone_from_the_service_ends_the_run_saying_how_to_recover(
        self, face: ActionsFace, sleeps
    ) -> None:
        """ARC #4571: a deleted or re-registered scale set is not retried against; the
        operator is told what rebuilds it (0.15) or what to do before 0.15."""
        body = json.dumps(
            {"typeName": "RunnerScaleSetNotFoundException", "message": "not found"}
        ).encode()
        face.fail_next("create_session", Fault.http(404, body))
        client = pat_client(face, sleeps)
        with pytest.raises(ScaleSetGoneError) as info:
            run(opened_then_closed(client, sleeps))
        text = str(info.value)
        assert "runner scale set 42 no longer exists" in text
        assert "RunnerScaleSetNotFoundException" in text
        assert "kubectl delete autoscalinglistener" in text
        assert sleeps.delays == [] and len(face.requests_to("create_session")) == 1


class TestTransportFaults:
    def test_429_waits_for_retry_after(self, face: ActionsFace, sleeps: SleepRecorder) -> None:
        face.fail_next("get_message", Fault.too_many_requests(retry_after="17"))
        assert run(with_session(face, sleeps, lambda s: s.get_message(0, 1))) is None
        assert sleeps.delays == [17]
        assert [r.status for r in face.requests_to("get_message")] == [429, 202]

    def test_5xx_is_retried_with_backoff(self, face: ActionsFace, sleeps: SleepRecorder) -> None:
        face.fail_next("acquire_jobs", Fault.server_error(502), times=2)
        assert run(with_session(face, sleeps, lambda s: s.acquire_jobs([]))) == []
        assert sleeps.delays == [1, 2]

    def test_5xx_gives_up_after_five_attempts(self, face: ActionsFace, sleeps) -> None:
        face.fail_next("get_message", Fault.server_error(503), times=5)
        with pytest.raises(RetriesExhaustedError, match=r"get message: GET .* giving up after 5"):
            run(with_session(face, sleeps, lambda s: s.get_message(0, 1)))
        assert sleeps.delays == [1, 2, 4, 8]

    def test_501_is_not_retried(self, face: ActionsFace, sleeps: SleepRecorder) -> None:
        face.fail_next("delete_message", Fault.http(501))
        with pytest.raises(ActionsHttpError, match="HTTP 501: InjectedFault"):
            run(with_session(face, sleeps, lambda s: s.delete_message(5)))
        assert sleeps.delays == []

    def test_connection_reset_is_retried(self, face: ActionsFace, sleeps: SleepRecorder) -> None:
        face.fail_next("get_message", Fault.reset())
        assert run(with_session(face, sleeps, lambda s: s.get_message(0, 1))) is None
        assert [r.outcome for r in face.requests_to("get_message")] == ["reset", "answered"]
        assert sleeps.delays == [1]

    def test_empty_200_is_treated_as_202(self, face: ActionsFace, sleeps: SleepRecorder) -> None:
        face.fail_next("get_message", Fault.empty_ok())
        assert run(with_session(face, sleeps, lambda s: s.get_message(0, 1))) is None
        assert [r.status for r in face.requests_to("get_message")] == [200]

    def test_garbage_body_is_a_decode_error(self, face: ActionsFace, sleeps) -> None:
        face.fail_next("get_message", Fault.garbage())
        with pytest.raises(MessageDecodeError, match="get message: body is not valid JSON"):
            run(with_session(face, sleeps, lambda s: s.get_message(0, 1)))

    def test_a_revoked_admin_token_is_refreshed_once_and_the_call_retried(
        self, face: ActionsFace, sleeps
    ) -> None:
        """Deliberate deviation from scaleset v0.4.0 (which fails the call): an admin token the
        service refuses before its own exp (revoked, or our clock behind the service's) would
        otherwise end the run, fail the session delete too, and strand the session (409 for the
        restarted pod). Found by the reliability fault matrix (actions_401 admin + queue)."""

        async def refresh_after_revocation(session: MessageSession) -> object:
            before = len(face.requests_to("registration_token"))
            face.expire_admin_tokens()
            refreshed = await session.refresh()
            assert len(face.requests_to("registration_token")) == before + 1
            return refreshed

        assert run(with_session(face, sleeps, refresh_after_revocation)) is not None


class TestQueueSemantics:
    def test_unacked_messages_are_redelivered(self, face: ActionsFace, feed, sleeps) -> None:
        client = pat_client(face, sleeps)
        session = session_for(client, sleeps)
        feed.add_job(SCALE_SET_ID)

        async def story() -> None:
            await session.open()
            first = await session.get_message(0, 1)
            again = await session.get_message(0, 1)  # not acked, same lastMessageId
            assert first is not None and again is not None
            assert again.message_id == first.message_id
            await session.delete_message(first.message_id)
            assert await session.get_message(0, 1) is None
            await client.aclose()

        run(story())

    def test_capacity_bounds_assignment_and_messages_hold_at_most_50_jobs(
        self, face: ActionsFace, feed: ScriptedJobFeed, sleeps: SleepRecorder
    ) -> None:
        for _ in range(120):
            feed.add_job(SCALE_SET_ID)
        client = pat_client(face, sleeps)
        session = session_for(client, sleeps)

        async def story() -> list[int]:
            await session.open()
            sizes, last = [], 0
            for _ in range(5):  # bounded
                message = await session.get_message(last, 110)
                if message is None:
                    break
                sizes.append(len(message.jobs))
                last = message.message_id
                await session.delete_message(last)
            await client.aclose()
            return sizes

        assert run(story()) == [50, 50, 10]
        assert len(feed.jobs_in("assigned")) == 110
        assert len(feed.jobs_in("queued")) == 10


class TestTransportSetup:
    def test_proxy_environment_variables_are_honoured(
        self, face: ActionsFace, sleeps: SleepRecorder, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The proxy comes from the environment the process read at start (handed down)."""
        client = ActionsClient(
            parse_config_url("http://ghes.example.invalid/acme", env={}),
            PatAuth(SecretStr(PAT)),
            scale_set_id=SCALE_SET_ID,
            sleep=sleeps,
            env={"HTTP_PROXY": face.url},
        )
        run(opened_then_closed(client, sleeps))
        registration = face.requests_to("registration_token")[0]
        assert registration.via_proxy
        assert registration.path == "/api/v3/orgs/acme/actions/runners/registration-token"

    def test_a_custom_root_ca_is_trusted_and_without_it_tls_fails_fast(
        self, feed: ScriptedJobFeed, sleeps: SleepRecorder, tmp_path: Path
    ) -> None:
        ca_pem, context = tls_server_context(tmp_path)
        with ActionsFace(feed, pat=PAT, poll_window=0.05, tls=context) as face:
            assert face.url.startswith("https://")
            run(opened_then_closed(pat_client(face, sleeps, root_ca=ca_pem), sleeps))
            assert face.session_of(SCALE_SET_ID) is not None

            with pytest.raises(TransportError, match="TLS certificate verification failed"):
                run(opened_then_closed(pat_client(face, sleeps), sleeps))
        assert sleeps.delays == []  # certificate errors are not retried

    def test_a_bad_root_ca_is_refused_with_a_clear_error(self, face: ActionsFace, sleeps) -> None:
        with pytest.raises(ValueError, match="server_root_ca is not a PEM"):
            pat_client(face, sleeps, root_ca="-----BEGIN CERTIFICATE-----\nnope\n")


def tls_server_context(tmp_path: Path) -> tuple[str, ssl.SSLContext]:
    """A throwaway CA and a 127.0.0.1 server certificate it signed (EC keys: fast)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test root CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "server.pem", tmp_path / "server.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return ca.public_bytes(serialization.Encoding.PEM).decode(), context


class TestErrorsAreCountedForTheMetrics:
    def test_every_failed_attempt_is_heard_with_its_kind(self, face: ActionsFace, sleeps) -> None:
        """arc_capacity_actions_errors_total sees retried attempts too: a 5xx storm that
        ends in a success is still the degraded service an on-call is paged for."""
        heard: list[str] = []
        face.fail_next("get_message", Fault.server_error(503), times=2)
        face.fail_next("acquire_jobs", Fault.too_many_requests(retry_after="1"))
        face.fail_next("delete_message", Fault.http(404))

        async def story() -> None:
            client = pat_client(face, sleeps, on_error=heard.append)
            session = session_for(client, sleeps)
            try:
                await session.open()
                assert await session.get_message(0, 1) is None
                assert await session.acquire_jobs([]) == []
                with pytest.raises(ActionsHttpError, match="HTTP 404"):
                    await session.delete_message(5)
            finally:
                await session.close()
                await client.aclose()

        run(story())
        assert heard == ["server", "server", "throttled", "client"]

    def test_failures_getting_the_admin_token_are_heard_too(self, face: ActionsFace, sleeps):
        """The token chain (registration token, runner registration) is part of every
        Actions call: a GitHub API outage there must show in the same counter."""
        heard: list[str] = []
        face.fail_next("registration_token", Fault.server_error(502))
        face.fail_next("runner_registration", Fault.reset())

        async def story() -> None:
            client = pat_client(face, sleeps, on_error=heard.append)
            session = session_for(client, sleeps)
            try:
                await session.open()
            finally:
                await session.close()
                await client.aclose()

        run(story())
        assert heard == ["server", "transport"]
