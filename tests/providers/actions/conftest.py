"""Shared fixtures of the Actions/HUD provider tests: a loopback face, its feed, clients."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pytest
from pydantic import SecretStr

from providers.actions.auth import AppAuth, PatAuth
from providers.actions.client import ActionsClient
from providers.actions.config_url import parse_config_url
from providers.actions.redact import SecretRegistry
from providers.actions.retry import RetryPolicy
from providers.actions.session import ConflictPolicy, MessageSession
from simulator.faces.actions import (
    ActionsFace,
    AppIdentity,
    ScriptedJobFeed,
    generate_rsa_key_pem,
)

T = TypeVar("T")

PAT = "ghp_contractTestPat0123456789abcdef"
APP_ID = "123456"
INSTALLATION_ID = 4242
SCALE_SET_ID = 42


def run(coro: Coroutine[Any, Any, T], timeout: float = 20.0) -> T:
    """Run one async test body with a hard bound, so a hang fails instead of blocking."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


class SleepRecorder:
    """An injectable ``sleep`` that records the delays and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


@pytest.fixture(scope="session")
def app_keys() -> tuple[str, str]:
    return generate_rsa_key_pem()


@pytest.fixture
def feed() -> ScriptedJobFeed:
    return ScriptedJobFeed()


@pytest.fixture
def face(feed: ScriptedJobFeed, app_keys: tuple[str, str]) -> Iterator[ActionsFace]:
    identity = AppIdentity(APP_ID, INSTALLATION_ID, app_keys[1], client_id="Iv1.clientid")
    with ActionsFace(feed, pat=PAT, app=identity, poll_window=0.3) as running:
        yield running


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


def pat_client(face: ActionsFace, sleeps: SleepRecorder, **kwargs: Any) -> ActionsClient:
    kwargs.setdefault("registry", SecretRegistry())
    return ActionsClient(
        parse_config_url(face.configure_url(), env={}),
        PatAuth(SecretStr(PAT)),
        scale_set_id=SCALE_SET_ID,
        sleep=sleeps,
        retry=RetryPolicy(),
        **kwargs,
    )


def app_client(
    face: ActionsFace, sleeps: SleepRecorder, private_key: str, **kwargs: Any
) -> ActionsClient:
    kwargs.setdefault("registry", SecretRegistry())
    return ActionsClient(
        parse_config_url(face.configure_url(), env={}),
        AppAuth(APP_ID, INSTALLATION_ID, SecretStr(private_key)),
        scale_set_id=SCALE_SET_ID,
        sleep=sleeps,
        **kwargs,
    )


def session_for(client: ActionsClient, sleeps: SleepRecorder, **kwargs: Any) -> MessageSession:
    kwargs.setdefault("conflict", ConflictPolicy(attempts=3, first_delay=5, max_delay=30))
    return MessageSession(client, owner_name="arc-runners-listener", sleep=sleeps, **kwargs)
