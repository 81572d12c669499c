"""GitHub App JWT, admin-token expiry and the lazy refresh rule
(docs/protocol.md#authentication, docs/protocol.md#admin-token)."""

from __future__ import annotations

import time

import jwt
import pytest
from pydantic import SecretStr

from providers.actions.auth import AppAuth, mint_app_jwt, token_expiry
from providers.actions.errors import AuthError
from reconciler.clock import ManualClock
from simulator.faces.actions import ActionsFace, ScriptedJobFeed
from tests.providers.actions.conftest import PAT, SleepRecorder, pat_client, run, session_for

NOW = 1_777_000_000.0


class TestAppJwt:
    def test_claims_are_iat_exp_iss_only_backdated_60s_valid_9_minutes(
        self, app_keys: tuple[str, str]
    ) -> None:
        token = mint_app_jwt(AppAuth("123", 7, SecretStr(app_keys[0])), now=NOW)
        assert jwt.get_unverified_header(token)["alg"] == "RS256"
        claims = jwt.decode(token, app_keys[1], algorithms=["RS256"], options={"verify_exp": False})
        assert claims == {"iat": int(NOW) - 60, "exp": int(NOW) - 60 + 540, "iss": "123"}

    def test_a_client_id_is_used_as_issuer_verbatim(self, app_keys: tuple[str, str]) -> None:
        token = mint_app_jwt(AppAuth("Iv1.abc", 7, SecretStr(app_keys[0])), now=NOW)
        assert jwt.decode(token, options={"verify_signature": False})["iss"] == "Iv1.abc"

    def test_a_bad_key_is_an_auth_error_without_the_key(self) -> None:
        key = (
            "-----BEGIN RSA PRIVATE KEY-----\nNOTAKEYnotakeyNOTAKEY\n-----END RSA PRIVATE KEY-----"
        )
        with pytest.raises(AuthError, match="not a usable RSA private key") as info:
            mint_app_jwt(AppAuth("1", 1, SecretStr(key)), now=NOW)
        assert "NOTAKEY" not in str(info.value)
        assert info.value.__cause__ is None and info.value.__suppress_context__


class TestAdminTokenExpiry:
    def test_exp_is_read_without_verifying_the_signature(self) -> None:
        token = jwt.encode({"exp": 1234}, "some-key-we-do-not-have-0123456789", algorithm="HS256")
        assert token_expiry(token) == 1234.0

    def test_a_token_that_is_not_a_jwt_is_an_error(self) -> None:
        with pytest.raises(AuthError, match="not a JWT"):
            token_expiry("opaque-token")

    def test_a_jwt_without_exp_is_an_error(self) -> None:
        with pytest.raises(AuthError, match="no numeric 'exp'"):
            token_expiry(jwt.encode({"sub": "x"}, "k" * 32, algorithm="HS256"))


def test_admin_token_is_refreshed_60s_before_exp_and_never_by_queue_calls(
    feed: ScriptedJobFeed, sleeps: SleepRecorder
) -> None:
    clock = ManualClock(time.time())
    with ActionsFace(feed, pat=PAT, poll_window=0.05, admin_token_ttl=600, clock=clock) as face:
        client = pat_client(face, sleeps, clock=clock)
        session = session_for(client, sleeps)

        async def story() -> None:
            await session.open()  # chain #1
            clock.advance(530)  # exp - 70 s: still fresh
            await session.acquire_jobs([])
            assert len(face.requests_to("registration_token")) == 1
            clock.advance(11)  # exp - 59 s: inside the 60 s margin
            await session.acquire_jobs([])  # an actions-service call: chain #2 first
            assert len(face.requests_to("registration_token")) == 2
            assert len(face.requests_to("runner_registration")) == 2
            clock.advance(10_000)  # far past exp: queue calls do not care
            await session.get_message(0, 3)
            assert len(face.requests_to("registration_token")) == 2
            await session.close()  # an actions-service call again: chain #3
            # The face refuses the delete of a session idle for 10 000 s with a 401, and a 401
            # on an admin call re-runs the chain once (#4) before giving up (logged, not raised).
            assert len(face.requests_to("registration_token")) == 4
            await client.aclose()

        run(story())
    assert client.admin.refreshes == 4


def test_a_failed_refresh_keeps_the_old_token_and_fails_the_call(
    face: ActionsFace, sleeps: SleepRecorder
) -> None:
    clock = ManualClock(time.time())
    face.clock = clock
    face.admin_token_ttl = 600
    client = pat_client(face, sleeps, clock=clock)
    session = session_for(client, sleeps)

    async def story() -> None:
        await session.open()
        held = client.admin.current
        clock.advance(590)
        face.pat = "ghp_rotatedAway"  # the PAT no longer works
        with pytest.raises(AuthError, match="registration token: HTTP 401: Bad credentials"):
            await session.acquire_jobs([])
        assert client.admin.current is held
        await client.aclose()

    run(story())
