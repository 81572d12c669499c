"""Expensive runs shared by the reliability tests: computed once per session."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.reliability.cases import Outcome
from tests.reliability.cases_world import CHAOS_SEEDS, ChaosResult, run_chaos


@contextmanager
def quiet_logs() -> Iterator[None]:
    """Fault runs log thousands of expected warnings (failed writes, retries): silence them
    while the runs execute, and only then (other suites assert on log output)."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(previous)


@pytest.fixture(scope="session")
def chaos_runs() -> dict[int, ChaosResult]:
    with quiet_logs():
        return {seed: run_chaos(seed) for seed in CHAOS_SEEDS}


@pytest.fixture(scope="session")
def fault_outcomes() -> dict[str, Outcome]:
    from tools.fault_matrix import run_cases

    with quiet_logs():
        return run_cases()
