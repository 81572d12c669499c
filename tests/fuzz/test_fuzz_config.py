"""Fuzz: configuration parsers raise only their own typed errors, and never echo a secret.

- ARC's listener config (``listener.arc.config``): ``ConfigError``, from a decoded document or
  from the raw bytes of the file.
- The ``capacityAware`` block (``reconciler.settings.parse_capacity_aware``): ``SettingsError``.
- Where the block comes from (``listener.process.capacity_config.load_capacity_aware``: a file named
  by ``CAPACITY_AWARE_CONFIG`` or inline ``CAPACITY_AWARE_JSON``): ``SettingsError``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from listener.arc.config import ConfigError, load_listener_config, parse_listener_config
from listener.process.capacity_config import ENV_FILE, ENV_JSON, load_capacity_aware
from reconciler.settings import CapacityAwareSettings, parse_capacity_aware
from reconciler.settings_types import SettingsError
from tests.fuzz.support import fuzz_settings, json_bytes, mutated, only_typed

PAT = "ghp_FuzzSecretValue0123456789"
LISTENER_CONFIG = {
    "configure_url": "https://github.com/acme",
    "github_token": PAT,
    "github_app_id": "",
    "github_app_installation_id": 0,
    "github_app_private_key": "",
    "ephemeral_runner_set_namespace": "arc-runners",
    "ephemeral_runner_set_name": "arc-runners-r6jw6",
    "max_runners": 20,
    "min_runners": 0,
    "runner_scale_set_id": 42,
    "runner_scale_set_name": "arc-runners",
    "log_level": "info",
    "log_format": "json",
    "metrics": {"counters": {"gha_started_jobs_total": {"labels": ["repository"]}}},
}
CAPACITY_AWARE = {
    "enabled": True,
    "proactiveCapacity": 2,
    "recalculateInterval": "30s",
    "placeholderReadyTimeout": "5m",
    "survivorWindow": 600,
    "placeholderTtl": "30m",
    "maxPairsInFlight": 10,
    "maxRequestsPerStep": 5,
    "workflowResources": {"cpu": "2", "memory": "4Gi"},
    "hud": {"url": "https://hud.example.invalid/q", "timeout": "5s"},
    "priorityClasses": {"runner": "arc-runner"},
}


@fuzz_settings(300)
@given(mutated(LISTENER_CONFIG, max_changes=4))
@example({**LISTENER_CONFIG, "max_runners": 2**31})
@example({**LISTENER_CONFIG, "configure_url": "https://github.com/a/b/c"})
@example({**LISTENER_CONFIG, "configure_url": "https://[x/org"})  # found by fuzzing (regressions/)
@example({**LISTENER_CONFIG, "github_token": None, "github_app_installation_id": -1})
def test_listener_config_documents(doc: Any) -> None:
    result = only_typed(ConfigError, parse_listener_config, doc, file="config.json")
    if isinstance(result, ConfigError):
        assert PAT not in str(result), "a config error echoed the PAT"
        assert str(result).startswith("config.json: ")


@fuzz_settings(150)
@given(
    st.one_of(
        st.binary(max_size=200),
        mutated(LISTENER_CONFIG).map(lambda d: json_bytes(d, bom=False)),
        mutated(LISTENER_CONFIG).map(lambda d: json_bytes(d, bom=True)),
    )
)
@example(b"\xff\xfe{}")
def test_listener_config_files(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"
        path.write_bytes(raw)
        result = only_typed(ConfigError, load_listener_config, path)
    if isinstance(result, ConfigError):
        assert PAT not in str(result)


@fuzz_settings(300)
@given(mutated(CAPACITY_AWARE, max_changes=4))
@example({**CAPACITY_AWARE, "placeholderTtl": "10s"})
@example({**CAPACITY_AWARE, "recalculateInterval": "1e309"})
@example({**CAPACITY_AWARE, "survivorWindow": float("nan")})
@example({**CAPACITY_AWARE, "workflowResources": {}})
def test_capacity_aware_blocks(doc: Any) -> None:
    # parse_capacity_aware takes a mapping (callers unwrap first); anything else is the
    # caller's job, which load_capacity_aware does (fuzzed below).
    if not isinstance(doc, dict):
        doc = {"capacityAware": doc}
    result = only_typed(SettingsError, parse_capacity_aware, doc, where="values.yaml")
    if isinstance(result, CapacityAwareSettings):
        config = result.reconciler_config("arc-runners")
        # Every accepted block satisfies the cross-field rules the reconciler relies on.
        assert config.max_requests_per_step <= config.max_pairs_in_flight
        assert config.placeholder_ttl > result.recalculate_interval


@st.composite
def capacity_env(draw: st.DrawFn) -> tuple[dict[str, str], bytes | None]:
    """An environment naming a file (fuzzed bytes), inline JSON, both, or neither."""
    doc = draw(mutated(CAPACITY_AWARE))
    wrapped = {"capacityAware": doc} if draw(st.booleans()) else doc
    text = json.dumps(wrapped, allow_nan=True)
    content = draw(
        st.one_of(
            st.just(text.encode()), st.binary(max_size=80), st.text(max_size=80).map(str.encode)
        )
    )
    env: dict[str, str] = {}
    use_file, use_inline = draw(
        st.sampled_from([(True, False), (False, True), (True, True), (False, False)])
    )
    if use_inline:
        env[ENV_JSON] = draw(st.one_of(st.just(text), st.text(max_size=60)))
    return env, content if use_file else None


@fuzz_settings(200)
@given(capacity_env())
@example(({}, b"\xff\xfe\x00"))  # found by fuzzing (regressions/)
@example(({}, b"capacityAware: [1, 2]"))
@example(({ENV_JSON: "null"}, None))
def test_capacity_aware_from_the_environment(case: tuple[dict[str, str], bytes | None]) -> None:
    env, content = case
    with tempfile.TemporaryDirectory() as tmp:
        if content is not None:
            path = Path(tmp) / "capacity-aware.yaml"
            path.write_bytes(content)
            env = {**env, ENV_FILE: str(path)}
        only_typed(SettingsError, load_capacity_aware, env)
