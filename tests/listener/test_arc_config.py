"""ARC's listener config file (docs/protocol.md#config-file): shape, ARC's validation rules,
clear errors."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from listener.arc.config import (
    ConfigError,
    config_path_from_env,
    load_listener_config,
    parse_listener_config,
    scaler_rate_limit,
)
from providers.actions.auth import AppAuth, PatAuth
from providers.actions.config_url import Scope

PAT = "ghp_configTestPat0123456789"
KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEsecretkeymaterial0123456789\n"
    "-----END RSA PRIVATE KEY-----\n"
)


def pat_config(**changes: Any) -> dict[str, Any]:
    """What ARC's controller writes for a PAT scale set (all four credential keys present)."""
    config: dict[str, Any] = {
        "configure_url": "https://github.com/acme",
        "vault_type": "",
        "vault_lookup_key": "",
        "github_app_id": "",
        "github_app_installation_id": 0,
        "github_app_private_key": "",
        "github_token": PAT,
        "ephemeral_runner_set_namespace": "arc-runners",
        "ephemeral_runner_set_name": "arc-runners-r6jw6",
        "max_runners": 2147483647,
        "min_runners": 0,
        "runner_scale_set_id": 42,
        "runner_scale_set_name": "arc-runners",
        "server_root_ca": "",
        "log_level": "debug",
        "log_format": "text",
        "metrics_addr": ":8080",
        "metrics_endpoint": "/metrics",
        "metrics": None,
    }
    config.update(changes)
    return config


def app_config(**changes: Any) -> dict[str, Any]:
    app: dict[str, Any] = {
        "github_token": "",
        "github_app_id": "123456",
        "github_app_installation_id": 4242,
        "github_app_private_key": KEY,
    }
    return pat_config(**{**app, **changes})


def write(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "config.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


class TestValidFiles:
    def test_a_pat_config_as_arc_writes_it(self, tmp_path: Path) -> None:
        config = load_listener_config(write(tmp_path, pat_config()))
        assert config.max_runners == 2147483647 and config.min_runners == 0
        assert config.runner_scale_set_id == 42
        assert config.metrics is None
        credentials = config.credentials()
        assert isinstance(credentials, PatAuth)
        assert credentials.token.get_secret_value() == PAT
        assert config.github_config(env={}).scope is Scope.ORGANIZATION

    def test_an_app_config(self, tmp_path: Path) -> None:
        credentials = load_listener_config(write(tmp_path, app_config())).credentials()
        assert isinstance(credentials, AppAuth)
        assert (credentials.app_id, credentials.installation_id) == ("123456", 4242)
        assert credentials.private_key.get_secret_value() == KEY

    def test_unknown_keys_are_ignored_and_null_means_unset(self, tmp_path: Path) -> None:
        config = load_listener_config(
            write(tmp_path, pat_config(some_future_key={"x": 1}, log_level=None, metrics=None))
        )
        assert config.log_level == ""

    def test_custom_metrics_block(self, tmp_path: Path) -> None:
        metrics = {
            "counters": {"gha_started_jobs_total": {"labels": ["repository"]}},
            "gauges": {"gha_assigned_jobs": {"labels": ["name"]}},
            "histograms": {"gha_job_startup_duration_seconds": {"labels": [], "buckets": [1, 5]}},
        }
        config = load_listener_config(write(tmp_path, pat_config(metrics=metrics)))
        assert config.metrics is not None
        assert config.metrics.histograms["gha_job_startup_duration_seconds"].buckets == [1, 5]

    def test_a_utf8_bom_is_accepted(self, tmp_path: Path) -> None:
        path = tmp_path / "config.json"
        path.write_bytes(b"\xef\xbb\xbf" + json.dumps(pat_config()).encode())
        assert load_listener_config(path).runner_scale_set_id == 42

    def test_secrets_are_hidden_in_repr(self, tmp_path: Path) -> None:
        config = load_listener_config(write(tmp_path, app_config()))
        assert "secretkeymaterial" not in repr(config)
        assert "secretkeymaterial" not in repr(config.credentials())


class TestArcValidationRules:
    @pytest.mark.parametrize(
        ("changes", "key", "reason"),
        [
            ({"configure_url": ""}, "configure_url", "is required"),
            ({"configure_url": "https://github.com"}, "configure_url", "enterprise, org"),
            ({"ephemeral_runner_set_namespace": ""}, "ephemeral_runner_set_namespace", "required"),
            ({"ephemeral_runner_set_name": ""}, "ephemeral_runner_set_name", "required"),
            ({"runner_scale_set_id": 0}, "runner_scale_set_id", "non-zero"),
            ({"min_runners": 5, "max_runners": 2}, "max_runners", "must be >= min_runners"),
            ({"max_runners": -1}, "max_runners", "between 0 and 2147483647"),
            ({"github_token": ""}, "github_token", "no credentials"),
            ({"vault_type": "hashicorp"}, "vault_type", "azure_key_vault"),
            ({"vault_type": "azure_key_vault"}, "vault_lookup_key", "required"),
            ({"log_level": "trace"}, "log_level", "'debug'"),
            ({"log_format": "xml"}, "log_format", "'json'"),
        ],
    )
    def test_rule(self, tmp_path: Path, changes: dict[str, Any], key: str, reason: str) -> None:
        path = write(tmp_path, pat_config(**changes))
        with pytest.raises(ConfigError) as info:
            load_listener_config(path)
        error = info.value
        assert (error.file, error.key) == (str(path), key)
        assert reason in error.reason
        assert str(error).startswith(f"{path}: {key}: ")

    def test_pat_and_complete_app_credentials_together_are_refused(self) -> None:
        with pytest.raises(ConfigError, match=r"either github_token .* not both"):
            parse_listener_config(app_config(github_token=PAT))

    def test_incomplete_app_credentials_name_the_missing_key(self) -> None:
        with pytest.raises(ConfigError) as info:
            parse_listener_config(app_config(github_app_installation_id=0))
        assert info.value.key == "github_app_installation_id"
        assert "missing: github_app_installation_id" in info.value.reason

    def test_types_are_strict_like_go(self) -> None:
        with pytest.raises(ConfigError) as info:
            parse_listener_config(pat_config(runner_scale_set_id="42"))
        assert info.value.key == "runner_scale_set_id"
        assert "valid integer" in info.value.reason and "'42'" in info.value.reason

    def test_all_problems_are_reported_the_first_is_the_key(self) -> None:
        with pytest.raises(ConfigError) as info:
            parse_listener_config(pat_config(ephemeral_runner_set_name="", runner_scale_set_id=0))
        assert [k for k, _ in info.value.problems] == [
            "ephemeral_runner_set_name",
            "runner_scale_set_id",
        ]


class TestErrorsNeverEchoSecrets:
    def test_a_wrong_type_for_a_secret_does_not_echo_it(self) -> None:
        with pytest.raises(ConfigError) as info:
            parse_listener_config(pat_config(github_token=["ghp_leakleakleak"]))
        assert info.value.key == "github_token"
        assert "leak" not in str(info.value)

    def test_a_broken_json_file_says_where(self, tmp_path: Path) -> None:
        path = write(tmp_path, '{"github_token": "ghp_secretsecret", oops}')
        with pytest.raises(ConfigError) as info:
            load_listener_config(path)
        assert info.value.key == "<document>"
        assert "not valid JSON: line 1 column" in info.value.reason
        assert "ghp_secretsecret" not in str(info.value)


class TestFileAndEnvironment:
    def test_a_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="cannot read"):
            load_listener_config(tmp_path / "nope.json")

    def test_not_an_object(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="expected a JSON object, got list"):
            load_listener_config(write(tmp_path, [1, 2]))

    def test_path_from_env(self) -> None:
        assert config_path_from_env({"LISTENER_CONFIG_PATH": "/etc/x.json"}) == "/etc/x.json"
        with pytest.raises(ConfigError, match="LISTENER_CONFIG_PATH: is not set"):
            config_path_from_env({})


class TestScalerRateLimit:
    """ARS ``spec.listenerConfig.scaler.{qps,burst}`` reaches the listener as the config's
    ``listener_config.scaler`` (ARC's ghalistener ``config.Config.ListenerConfig``, read at
    ARC 142132e) and sets its Kubernetes client's rate limit (``effectiveRateLimiterConfig``)."""

    @pytest.mark.parametrize(
        ("listener_config", "expected"),
        [
            (None, (50, 100)),
            ({}, (50, 100)),
            ({"scaler": None}, (50, 100)),
            ({"scaler": {}}, (50, 100)),
            ({"scaler": {"qps": 75, "burst": 150}}, (75, 150)),
            ({"scaler": {"burst": 150}}, (50, 150)),
            ({"scaler": {"qps": 75, "burst": None}}, (75, 100)),
            ({"scaler": {"qps": 1, "burst": 1}}, (1, 1)),
        ],
        ids=[
            "absent",
            "empty",
            "null-scaler",
            "empty-scaler",
            "both",
            "burst-only",
            "null-burst",
            "smallest",
        ],
    )
    def test_unset_means_50_and_100(
        self, listener_config: Any, expected: tuple[int, int], caplog: pytest.LogCaptureFixture
    ) -> None:
        config = parse_listener_config(pat_config(listener_config=listener_config))
        with caplog.at_level(logging.INFO, logger="listener.arc.config"):
            assert scaler_rate_limit(config) == expected
        assert caplog.records == []  # an unset value is normal: nothing at info or above

    @pytest.mark.parametrize(
        ("scaler", "expected", "named"),
        [
            ({"qps": 0, "burst": 150}, (50, 150), "qps must be at least 1, got 0"),
            ({"qps": 75, "burst": -1}, (75, 100), "burst must be at least 1, got -1"),
        ],
        ids=["zero-qps", "negative-burst"],
    )
    def test_a_value_below_1_is_one_warning_and_the_default(
        self,
        scaler: dict[str, int],
        expected: tuple[int, int],
        named: str,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        """Prevents a zero or negative limit reaching the token bucket (which refuses it) or
        being silently ignored: ARC logs it as a warning and uses the default."""
        config = parse_listener_config(pat_config(listener_config={"scaler": scaler}))
        with caplog.at_level(logging.INFO, logger="listener.arc.config"):
            assert scaler_rate_limit(config) == expected
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert [named in r.getMessage() for r in warnings] == [True]

    @pytest.mark.parametrize(
        ("scaler", "key"),
        [
            ({"qps": "50"}, "listener_config.scaler.qps"),
            ({"qps": 7.5}, "listener_config.scaler.qps"),
            ({"burst": True}, "listener_config.scaler.burst"),
            ({"burst": [100]}, "listener_config.scaler.burst"),
        ],
        ids=["string", "fraction", "bool", "list"],
    )
    def test_a_bad_type_is_one_clear_error_at_parse_time(
        self, scaler: dict[str, Any], key: str
    ) -> None:
        """Go's decoder refuses a non-integer for ``*int``: so does the listener, naming the key,
        before anything starts."""
        with pytest.raises(ConfigError) as info:
            parse_listener_config(pat_config(listener_config={"scaler": scaler}))
        assert info.value.key == key
        assert len(info.value.problems) == 1
        assert "integer" in info.value.reason

    def test_a_scaler_that_is_not_an_object_is_refused(self) -> None:
        with pytest.raises(ConfigError) as info:
            parse_listener_config(pat_config(listener_config={"scaler": 50}))
        assert info.value.key == "listener_config.scaler"
