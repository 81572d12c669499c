"""The environment is read once at start into a typed value; a bad variable is one clear error.

The error names the variable and what is allowed and never repeats the value: a secret pasted
into the wrong variable must not reach a log or a terminal.
"""

from __future__ import annotations

import pytest

from listener.__main__ import main
from listener.process.environment import (
    LEASE_DURATION_ENV,
    PERMISSION_RETRY_ENV,
    SYNC_TIMEOUT_ENV,
    EnvError,
    ProcessEnv,
    read_process_env,
)

SECRET = "ghp_s3cr3tTOKENvalue"


def test_unset_or_empty_variables_take_the_documented_defaults() -> None:
    """docs/configuration.md: lease 15 s, first-list wait 120 s, permission retry 5 s."""
    for env in ({}, {LEASE_DURATION_ENV: "", SYNC_TIMEOUT_ENV: " ", PERMISSION_RETRY_ENV: ""}):
        parsed = ProcessEnv.parse(env)
        assert (parsed.lease_duration, parsed.sync_timeout, parsed.permission_retry) == (
            15,
            120.0,
            5.0,
        )


@pytest.mark.parametrize(
    ("name", "raw", "field", "value"),
    [
        (LEASE_DURATION_ENV, "30", "lease_duration", 30),
        (LEASE_DURATION_ENV, " 1 ", "lease_duration", 1),
        (SYNC_TIMEOUT_ENV, "0.5", "sync_timeout", 0.5),
        (PERMISSION_RETRY_ENV, "300", "permission_retry", 300.0),
    ],
)
def test_a_set_variable_is_parsed_once_into_its_type(
    name: str, raw: str, field: str, value: float
) -> None:
    assert getattr(ProcessEnv.parse({name: raw}), field) == value


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        (LEASE_DURATION_ENV, "1.5"),  # a whole number of seconds
        (LEASE_DURATION_ENV, "0"),
        (LEASE_DURATION_ENV, "-15"),
        (SYNC_TIMEOUT_ENV, "nan"),
        (SYNC_TIMEOUT_ENV, "inf"),
        (PERMISSION_RETRY_ENV, SECRET),
    ],
)
def test_a_bad_value_is_one_error_naming_the_variable_without_the_value(
    name: str, raw: str
) -> None:
    with pytest.raises(EnvError) as caught:
        ProcessEnv.parse({name: raw})
    message = str(caught.value)
    assert name in message and "positive" in message
    assert raw not in message


def test_every_variable_is_kept_read_only_for_the_sources_that_name_their_own() -> None:
    """A demand source's ``tokenEnv`` names its variable in the config: it is looked up in the
    value read at start, which nothing can change afterwards."""
    env = {"MY_HUD_TOKEN": SECRET}
    parsed = ProcessEnv.parse(env)
    env["MY_HUD_TOKEN"] = "changed"
    assert parsed.variables["MY_HUD_TOKEN"] == SECRET
    with pytest.raises(TypeError):
        parsed.variables["MY_HUD_TOKEN"] = "x"  # type: ignore[index]


def test_the_process_reads_its_own_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LEASE_DURATION_ENV, "20")
    assert read_process_env().lease_duration == 20


@pytest.mark.parametrize("command", ["run", "verify", "rbac"])
def test_the_command_line_refuses_a_bad_variable_before_anything_starts(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(SYNC_TIMEOUT_ENV, SECRET)
    assert main([command]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"arc-capacity-listener: environment variable {SYNC_TIMEOUT_ENV}: not a positive "
        "number; expected seconds (default 120.0)"
    ]
    assert SECRET not in err
