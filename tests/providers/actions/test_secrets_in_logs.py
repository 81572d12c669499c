"""No PAT, private key or token ever reaches a log line or an exception's text.

The stories below drive the whole client (both auth kinds, refreshes, retries, failures)
with DEBUG logging on for every logger (httpx and httpcore included), then grep everything
captured for every secret the face issued or the test handed in.
"""

from __future__ import annotations

import logging

import pytest
from pydantic import SecretStr

from providers.actions.auth import AppAuth, PatAuth
from providers.actions.errors import ActionsError
from providers.actions.redact import REDACTED, RedactingFilter, SecretRegistry
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


def leaks(text: str, secrets: list[str]) -> list[str]:
    return [s for s in secrets if len(s) >= 8 and s in text]


def key_lines(pem: str) -> list[str]:
    return [line for line in pem.splitlines() if line and "-----" not in line]


async def pat_story(face: ActionsFace, feed: ScriptedJobFeed, errors: list[str]) -> None:
    sleeps = SleepRecorder()
    client = pat_client(face, sleeps)
    session = session_for(client, sleeps)
    try:
        await session.open()
        job = feed.add_job(SCALE_SET_ID)
        face.fail_next("get_message", Fault.server_error(503))
        message = await session.get_message(0, 2)
        assert message is not None
        await session.delete_message(message.message_id)
        face.expire_queue_tokens()  # 401 -> refresh -> retry
        await session.acquire_jobs([job])
        for fault, times in ((Fault.garbage(), 1), (Fault.http(401), 2)):
            face.fail_next("get_message", fault, times=times)
            try:
                await session.get_message(message.message_id, 2)
            except ActionsError as exc:
                errors += [str(exc), repr(exc)]
        face.hold_session(SCALE_SET_ID)
        try:
            await session_for(client, sleeps).open()
        except ActionsError as exc:
            errors += [str(exc), repr(exc)]
        errors += [repr(session.session), repr(PatAuth(SecretStr(PAT)))]
        face.release_session(SCALE_SET_ID)
        await session.close()
    finally:
        await client.aclose()


async def app_story(face: ActionsFace, private_key: str, errors: list[str]) -> None:
    sleeps = SleepRecorder()
    client = app_client(face, sleeps, private_key)
    try:
        session = session_for(client, sleeps)
        await session.open()
        await session.get_message(0, 1)
        await session.close()
        errors.append(repr(AppAuth("1", 2, SecretStr(private_key))))
    finally:
        await client.aclose()
    broken = app_client(face, sleeps, private_key.replace("M", "N", 3))
    try:
        await session_for(broken, sleeps).open()
    except ActionsError as exc:
        errors += [str(exc), repr(exc)]
    finally:
        await broken.aclose()


def test_no_secret_in_logs_or_errors(
    face: ActionsFace,
    feed: ScriptedJobFeed,
    app_keys: tuple[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    errors: list[str] = []
    run(pat_story(face, feed, errors))
    run(app_story(face, app_keys[0], errors))

    secrets = [PAT, app_keys[0], *key_lines(app_keys[0]), *face.issued_secrets()]
    assert len(face.issued_secrets()) >= 8  # PAT + installation, registration, admin, queue
    assert len(errors) >= 6
    assert "giving up" not in " ".join(errors)  # the stories hit the intended failures
    assert leaks(caplog.text, secrets) == []
    assert leaks("\n".join(errors), secrets) == []
    # and the face's own request records never kept a credential either
    recorded = "\n".join(str(r.headers) for r in face.requests)
    assert leaks(recorded, secrets) == []


class TestRedactingFilter:
    def test_a_registered_secret_is_replaced_in_message_args_and_traceback(self) -> None:
        registry = SecretRegistry()
        registry.add(SecretStr("tok_abcdefghijklmnop"))
        record = logging.LogRecord(
            "x", logging.ERROR, __file__, 1, "header was %s", ("Bearer tok_abcdefghijklmnop",), None
        )
        try:
            raise RuntimeError("boom tok_abcdefghijklmnop")
        except RuntimeError:
            import sys

            record.exc_info = sys.exc_info()
        assert RedactingFilter(registry).filter(record)
        assert record.getMessage() == f"header was Bearer {REDACTED}"
        assert record.exc_text is not None and "tok_abcdefghijklmnop" not in record.exc_text

    def test_pem_body_lines_are_registered_one_by_one(self, app_keys: tuple[str, str]) -> None:
        registry = SecretRegistry()
        registry.add(app_keys[0])
        line = key_lines(app_keys[0])[3]
        assert registry.redact(f"oops {line}") == f"oops {REDACTED}"

    def test_short_values_are_not_registered(self) -> None:
        registry = SecretRegistry()
        registry.add("abc")
        assert registry.redact("abc") == "abc"

    def test_the_registry_is_bounded(self) -> None:
        registry = SecretRegistry(max_entries=3)
        for n in range(5):
            registry.add(f"secret-number-{n}")
        assert sorted(registry.values()) == [
            "secret-number-2",
            "secret-number-3",
            "secret-number-4",
        ]
