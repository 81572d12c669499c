"""At start, with permissions missing, the listener stays up but not ready, logs each missing
verb/resource, and retries with backoff; an unreachable API is reported as such."""

from __future__ import annotations

import asyncio
import logging

import pytest

import listener.process.capacity_side as side_module
from listener.arc.config import parse_listener_config
from listener.process.app import ListenerApp
from listener.process.environment import ProcessEnv
from providers.kubernetes.permissions import CannotCheck, Permission
from reconciler.settings import parse_capacity_aware

CONFIG = parse_listener_config(
    {
        "configure_url": "https://github.com/acme",
        "github_token": "ghp_" + "t" * 36,
        "ephemeral_runner_set_namespace": "arc-runners",
        "ephemeral_runner_set_name": "arc-runners-x1",
        "runner_scale_set_name": "arc-runners",
        "runner_scale_set_id": 1,
        "max_runners": 5,
    }
)
POD_CREATE = Permission("create", "", "pods", "arc-runners")


def app() -> ListenerApp:
    return ListenerApp(
        CONFIG, parse_capacity_aware({"enabled": True}, where="t"), ProcessEnv.parse({})
    )


def scripted(monkeypatch: pytest.MonkeyPatch, answers: list[object]) -> list[float]:
    """missing_permissions answers from ``answers`` (a list or an exception per call);
    returns the backoff delays the app waited (no real waiting: the delay is recorded)."""
    delays: list[float] = []

    def fake_missing(_api: object, _needed: object) -> list[Permission]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[return-value]

    async def fake_wait_for(awaitable: object, timeout: float) -> None:
        delays.append(timeout)
        awaitable.close()  # type: ignore[attr-defined]
        raise TimeoutError

    monkeypatch.setattr(side_module, "missing_permissions", fake_missing)
    monkeypatch.setattr(side_module.asyncio, "wait_for", fake_wait_for)
    return delays


def test_missing_permissions_keep_it_up_not_ready_until_granted(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    listener = app()
    readiness: list[bool] = []
    answers: list[object] = [[POD_CREATE], [POD_CREATE], []]
    delays = scripted(monkeypatch, answers)
    original = side_module.missing_permissions

    def observe(api: object, needed: object) -> list[Permission]:
        readiness.append(listener._ready())
        return original(api, needed)  # type: ignore[arg-type]

    monkeypatch.setattr(side_module, "missing_permissions", observe)
    caplog.set_level(logging.WARNING, logger="listener")
    granted = asyncio.run(listener.side.await_permissions(object(), {"arc-runners"}))  # type: ignore[arg-type]
    assert granted is True
    assert readiness == [False, False, False]  # not ready while checking
    # Granted: the permission part of readiness clears (the session, the Lease and a fresh
    # cache are the other parts; none of them is started in this test).
    assert listener.side.permissions_pending is False
    assert delays == [5.0, 10.0]  # backoff doubles
    assert "missing permission: create core/pods in namespace arc-runners" in caplog.text
    assert (
        "arc-capacity-listener rbac --scale-set arc-runners --namespace arc-runners" in caplog.text
    )


def test_an_unreachable_api_is_reported_as_such_and_retried(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    scripted(
        monkeypatch,
        [CannotCheck("cannot reach the Kubernetes API at https://10.0.0.1: refused"), []],
    )
    caplog.set_level(logging.WARNING, logger="listener")
    assert asyncio.run(app().side.await_permissions(object(), {"arc-runners"})) is True  # type: ignore[arg-type]
    assert "permission check: cannot reach the Kubernetes API at https://10.0.0.1" in caplog.text
    assert "missing permission" not in caplog.text


def test_the_backoff_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    delays = scripted(monkeypatch, [[POD_CREATE]] * 9 + [[]])
    asyncio.run(app().side.await_permissions(object(), {"arc-runners"}))  # type: ignore[arg-type]
    assert delays == [5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 300.0, 300.0]


def test_stopping_while_waiting_ends_the_wait_without_starting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    listener = app()
    answers: list[object] = [[POD_CREATE]]
    scripted(monkeypatch, answers)
    original = side_module.missing_permissions

    def stop_after(api: object, needed: object) -> list[Permission]:
        listener.stop.set()
        return original(api, needed)  # type: ignore[arg-type]

    monkeypatch.setattr(side_module, "missing_permissions", stop_after)
    assert asyncio.run(listener.side.await_permissions(object(), {"arc-runners"})) is False  # type: ignore[arg-type]


def test_the_log_says_when_and_why_capacity_aware_mode_is_off() -> None:
    from listener.process.startup import capacity_off_reason

    assert capacity_off_reason({}).startswith(
        "no capacityAware block (neither $CAPACITY_AWARE_CONFIG"
    )
    assert capacity_off_reason({"CAPACITY_AWARE_JSON": "{}"}).startswith(
        "capacityAware.enabled is false"
    )


def test_scale_to_zero_with_statistics_only_and_no_refresh_is_flagged_at_start() -> None:
    """Regression (bench/demand_sources.py, scale-to-zero): statistics come only with job
    messages, none come while 0 is advertised, so no job ever started. The statistics refresh
    (default 2 s) removes the blindness; turned off, the listener warns."""
    from listener.process.startup import blind_at_zero

    def settings(block: dict[str, object]) -> object:
        return parse_capacity_aware({"enabled": True, **block}, where="t")

    no_refresh = {"proactiveCapacity": 0, "demand": {"statisticsRefresh": "0"}}
    assert blind_at_zero(settings(no_refresh))  # type: ignore[arg-type]
    assert not blind_at_zero(settings({"proactiveCapacity": 0}))  # type: ignore[arg-type]
    assert not blind_at_zero(settings({"proactiveCapacity": 1}))  # type: ignore[arg-type]
    assert not blind_at_zero(settings({"proactiveCapacity": 0, "hud": {"url": "http://h"}}))  # type: ignore[arg-type]
    github = {"proactiveCapacity": 0, "demand": {"sources": ["github", "statistics"]}}
    assert not blind_at_zero(settings(github))  # type: ignore[arg-type]
