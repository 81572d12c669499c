"""The process's environment, read once where the process starts.

:func:`read_process_env` is the one place that reads ``os.environ``: the command line calls it
at entry and hands the :class:`ProcessEnv` down. Nothing reads the environment at import time
or deep in a call. The typed values are parsed here, so a bad one is refused before anything
starts, in one line naming the variable and what is allowed, never echoing the value (a token
pasted into the wrong variable must not reach a log).

Variables and their meaning: docs/configuration.md#environment-variables.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TypeVar

#: Seconds a Lease holder is trusted without renewing (client-go's default 15).
LEASE_DURATION_ENV = "CAPACITY_AWARE_LEASE_DURATION"
#: Seconds to wait for the first list of every watched kind.
SYNC_TIMEOUT_ENV = "CAPACITY_AWARE_SYNC_TIMEOUT"
#: First delay of the start-up permission check's retry.
PERMISSION_RETRY_ENV = "CAPACITY_AWARE_PERMISSION_RETRY"

T = TypeVar("T", int, float)


class EnvError(ValueError):
    """An environment variable holds a value the listener cannot use."""


@dataclass(frozen=True, slots=True)
class ProcessEnv:
    """What the process was started with: every variable (read-only) and the typed ones."""

    #: Every variable, as read at start. Sources whose variable is named in the config (a
    #: demand source's ``tokenEnv``) and the proxy rules look names up here.
    variables: Mapping[str, str]
    lease_duration: int = 15
    sync_timeout: float = 120.0
    permission_retry: float = 5.0

    @classmethod
    def parse(cls, env: Mapping[str, str]) -> ProcessEnv:
        """Raises :class:`EnvError` naming the first variable that is not usable."""
        return cls(
            variables=MappingProxyType(dict(env)),
            lease_duration=_positive(env, LEASE_DURATION_ENV, 15, int, "a whole number of seconds"),
            sync_timeout=_positive(env, SYNC_TIMEOUT_ENV, 120.0, float, "seconds"),
            permission_retry=_positive(env, PERMISSION_RETRY_ENV, 5.0, float, "seconds"),
        )


def read_process_env() -> ProcessEnv:
    """The one read of ``os.environ``: call it at process start, then pass the value down."""
    return ProcessEnv.parse(os.environ)


def _positive(
    env: Mapping[str, str], name: str, default: T, kind: Callable[[str], T], unit: str
) -> T:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = kind(raw.strip())
        usable = math.isfinite(value) and value > 0
    except ValueError:
        usable = False
    if not usable:
        raise EnvError(
            f"environment variable {name}: not a positive number; expected {unit} "
            f"(default {default})"
        )
    return value
