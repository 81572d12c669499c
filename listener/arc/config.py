"""ARC's listener config file (docs/protocol.md#config-file): the JSON the controller writes,
as a pydantic model.

The file is read from ``$LISTENER_CONFIG_PATH`` (``/etc/gha-listener/config.json`` in the pod).
Keys are snake_case; unknown keys are ignored and ``null`` means "not set", as in Go.
Types are strict like Go's decoder (``"42"`` is not an int). Validation (ARC's rules):

1. ``configure_url``, ``ephemeral_runner_set_namespace`` and ``ephemeral_runner_set_name``
   are non-empty; ``runner_scale_set_id`` is non-zero.
2. ``0 <= min_runners <= max_runners <= 2147483647`` (2147483647 = unbounded).
3. With a vault: ``vault_type`` is ``azure_key_vault`` and ``vault_lookup_key`` is set.
   Without: exactly one of a PAT (``github_token``) or complete App credentials (app id,
   installation id > 0, private key). An empty ``github_token`` selects App auth.
4. ``log_level`` in debug/info/warn/error, ``log_format`` in text/json (empty = default).
5. ``listener_config.scaler.{qps,burst}`` (ARC 0.15+, the AutoscalingRunnerSet's
   ``spec.listenerConfig.scaler``): integers or null; :func:`scaler_rate_limit` turns them
   into the Kubernetes client's rate limit.

Credentials are :class:`SecretStr`; a :class:`ConfigError` names the file, the key and the
reason and never echoes a credential.

Vault-held credentials (Azure Key Vault, ``providers.azure.keyvault``) are fetched by
:func:`resolve_vault_credentials` before anything starts, exactly as ARC's ``config.Read`` does.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from providers.actions.auth import AppAuth, Credentials, PatAuth
from providers.actions.config_url import ConfigUrlError, GitHubConfig, parse_config_url
from providers.azure import keyvault
from reconciler.max_runners import MAX_INT32

log = logging.getLogger(__name__)

CONFIG_PATH_ENV = "LISTENER_CONFIG_PATH"
DEFAULT_CONFIG_PATH = "/etc/gha-listener/config.json"
#: Largest accepted config file (ARC's is under 10 KiB even with an App key and a CA bundle).
MAX_CONFIG_BYTES = 1024 * 1024
#: ARC 0.15's listener Kubernetes client (PR #4558), when ``listener_config.scaler`` is unset.
DEFAULT_SCALER_QPS = 50
DEFAULT_SCALER_BURST = 100
_SECRET_KEYS = frozenset({"github_token", "github_app_private_key"})


class ConfigError(ValueError):
    """The listener config is unusable: which file, which key, why (first problem; all in
    ``problems``)."""

    def __init__(
        self, file: str, key: str, reason: str, problems: tuple[tuple[str, str], ...] = ()
    ):
        self.file = file
        self.key = key
        self.reason = reason
        self.problems = problems or ((key, reason),)
        where = f"{file}: " if file else ""  # no file: the key says where (an env var)
        lines = [f"{where}{k}: {r}" for k, r in self.problems]
        super().__init__("\n".join(lines))


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class AzureKeyVault(_Strict):
    tenant_id: str = ""
    client_id: str = ""
    url: str = ""
    certificate_path: str = ""


class CounterMetric(_Strict):
    labels: list[str] = Field(default_factory=list)


class HistogramMetric(_Strict):
    labels: list[str] = Field(default_factory=list)
    #: None = the default buckets of docs/protocol.md#metrics.
    buckets: list[float] | None = None


class MetricsConfig(_Strict):
    """ARS ``spec.listenerMetrics`` (docs/protocol.md#custom-metrics); when present it replaces
    the default set."""

    counters: dict[str, CounterMetric] = Field(default_factory=dict)
    gauges: dict[str, CounterMetric] = Field(default_factory=dict)
    histograms: dict[str, HistogramMetric] = Field(default_factory=dict)


class ScalerConfig(_Strict):
    """ARS ``spec.listenerConfig.scaler`` (ARC's ``v1alpha1.ScalerConfig``): the listener's
    Kubernetes client rate limit; None = not set (ARC's default)."""

    qps: int | None = None
    burst: int | None = None


class ListenerConfigBlock(_Strict):
    """ARS ``spec.listenerConfig`` as the controller copies it into ``listener_config``."""

    scaler: ScalerConfig | None = None


class ListenerConfig(_Strict):
    configure_url: str = ""
    vault_type: str = ""
    vault_lookup_key: str = ""
    azure_key_vault: AzureKeyVault | None = None
    github_app_id: str = ""
    github_app_installation_id: int = 0
    github_app_private_key: SecretStr = SecretStr("")
    github_token: SecretStr = SecretStr("")
    ephemeral_runner_set_namespace: str = ""
    ephemeral_runner_set_name: str = ""
    max_runners: int = 0
    min_runners: int = 0
    runner_scale_set_id: int = 0
    runner_scale_set_name: str = ""
    server_root_ca: str = ""
    log_level: Literal["", "debug", "info", "warn", "error"] = ""
    log_format: Literal["", "text", "json"] = ""
    metrics_addr: str = ""
    metrics_endpoint: str = ""
    metrics: MetricsConfig | None = None
    listener_config: ListenerConfigBlock | None = None

    @model_validator(mode="before")
    @classmethod
    def _null_is_unset(cls, data: Any) -> Any:
        # Go leaves a field at its zero value when the JSON says null.
        if isinstance(data, Mapping):
            return {k: v for k, v in data.items() if v is not None}
        return data

    @field_validator("max_runners", "min_runners")
    @classmethod
    def _runner_bounds(cls, value: int) -> int:
        if not 0 <= value <= MAX_INT32:
            raise ValueError(f"must be between 0 and {MAX_INT32}")
        return value

    @field_validator("github_app_installation_id")
    @classmethod
    def _installation_id(cls, value: int) -> int:
        if value < 0:
            raise ValueError("must be >= 0 (0 = not using a GitHub App)")
        return value

    @property
    def uses_vault(self) -> bool:
        return bool(self.vault_type)

    @property
    def uses_app(self) -> bool:
        """ARC's auth choice: an empty ``github_token`` means GitHub App auth."""
        return not self.github_token.get_secret_value()

    def github_config(self, env: Mapping[str, str]) -> GitHubConfig:
        return parse_config_url(self.configure_url, env=env)

    def credentials(self, *, file: str = "<config>") -> Credentials:
        has_any = self.github_token.get_secret_value() or self.github_app_id
        if self.uses_vault and not has_any:
            raise ConfigError(
                file,
                "vault_type",
                "the credentials are in Azure Key Vault and were not read yet "
                "(resolve_vault_credentials)",
            )
        if not self.uses_app:
            return PatAuth(self.github_token)
        return AppAuth(
            app_id=self.github_app_id,
            installation_id=self.github_app_installation_id,
            private_key=self.github_app_private_key,
        )


def _problems(config: ListenerConfig) -> list[tuple[str, str]]:
    """ARC's validation rules (module docstring, items 1-3), in its order."""
    problems: list[tuple[str, str]] = []
    if not config.configure_url:
        problems.append(("configure_url", "is required (the GitHub config URL)"))
    else:
        try:
            # Whether the URL parses; the environment only sets is_hosted (FORCE_GHES).
            parse_config_url(config.configure_url, env={})
        except ConfigUrlError as exc:
            problems.append(("configure_url", str(exc)))
    if not config.ephemeral_runner_set_namespace:
        problems.append(("ephemeral_runner_set_namespace", "is required"))
    if not config.ephemeral_runner_set_name:
        problems.append(("ephemeral_runner_set_name", "is required"))
    if config.runner_scale_set_id == 0:
        problems.append(("runner_scale_set_id", "is required and must be non-zero"))
    if config.max_runners < config.min_runners:
        problems.append(
            (
                "max_runners",
                f"must be >= min_runners (got max_runners={config.max_runners}, "
                f"min_runners={config.min_runners})",
            )
        )
    if config.uses_vault:
        if config.vault_type != "azure_key_vault":
            problems.append(("vault_type", "must be 'azure_key_vault' or empty"))
        if not config.vault_lookup_key:
            problems.append(("vault_lookup_key", "is required when vault_type is set"))
        if config.vault_type == "azure_key_vault":
            if config.azure_key_vault is None:
                problems.append(("azure_key_vault", "is required when vault_type is set"))
            else:
                problems += keyvault.validate_settings(_vault_settings(config.azure_key_vault))
        return problems
    has_pat = bool(config.github_token.get_secret_value())
    app_fields = (
        bool(config.github_app_id),
        config.github_app_installation_id > 0,
        bool(config.github_app_private_key.get_secret_value()),
    )
    if has_pat and all(app_fields):
        problems.append(
            ("github_token", "set either github_token (PAT) or the github_app_* keys, not both")
        )
    elif not has_pat and not all(app_fields):
        missing = [
            name
            for name, present in zip(
                ("github_app_id", "github_app_installation_id", "github_app_private_key"),
                app_fields,
                strict=True,
            )
            if not present
        ]
        problems.append(
            (
                missing[0] if any(app_fields) else "github_token",
                "no credentials: set github_token (PAT), or github_app_id, "
                "github_app_installation_id (> 0) and github_app_private_key "
                f"(missing: {', '.join(missing)})",
            )
        )
    return problems


def scaler_rate_limit(config: ListenerConfig) -> tuple[int, int]:
    """The Kubernetes client's ``(qps, burst)``, as ARC's ``effectiveRateLimiterConfig``
    (``cmd/ghalistener/scaler/scaler.go``): an unset value is the default 50 / 100 (PR #4558);
    a value below 1 is logged as a warning and replaced by the default. Call it once."""
    scaler = config.listener_config.scaler if config.listener_config else None
    qps = _rate_value(scaler.qps if scaler else None, "qps", DEFAULT_SCALER_QPS)
    burst = _rate_value(scaler.burst if scaler else None, "burst", DEFAULT_SCALER_BURST)
    return qps, burst


def _rate_value(value: int | None, key: str, default: int) -> int:
    if value is None:
        log.debug("listener_config.scaler.%s is not set; using the default %d", key, default)
        return default
    if value < 1:
        log.warning(
            "listener_config.scaler.%s must be at least 1, got %d; using the default %d",
            key,
            value,
            default,
        )
        return default
    return value


def parse_listener_config(data: Any, *, file: str = "<config>") -> ListenerConfig:
    """Validate an already-decoded config document."""
    if not isinstance(data, Mapping):
        raise ConfigError(file, "<document>", f"expected a JSON object, got {type(data).__name__}")
    try:
        config = ListenerConfig.model_validate(data)
    except ValidationError as exc:
        found = []
        for err in exc.errors(include_url=False):
            key = ".".join(str(p) for p in err["loc"]) or "<document>"
            reason = err["msg"].removeprefix("Value error, ")
            if str(err["loc"][0]) not in _SECRET_KEYS and "input" in err:
                reason += f" (got {_short(err['input'])})"
            found.append((key, reason))
        raise ConfigError(file, found[0][0], found[0][1], tuple(found)) from None
    problems = _problems(config)
    if problems:
        raise ConfigError(file, problems[0][0], problems[0][1], tuple(problems))
    return config


def load_listener_config(path: str | os.PathLike[str]) -> ListenerConfig:
    """Read and validate the config file; every failure is a :class:`ConfigError`."""
    file = str(path)
    try:
        size = Path(path).stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise ConfigError(
                file, "<file>", f"{size} bytes; a listener config may be {MAX_CONFIG_BYTES}"
            )
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(file, "<file>", f"cannot read: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except RecursionError:
        raise ConfigError(file, "<document>", "not valid JSON: nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            file, "<document>", f"not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except UnicodeDecodeError:
        raise ConfigError(file, "<document>", "not valid JSON: the file is not UTF-8") from None
    return parse_listener_config(data, file=file)


def _vault_settings(vault: AzureKeyVault) -> keyvault.AzureKeyVaultSettings:
    return keyvault.AzureKeyVaultSettings(
        tenant_id=vault.tenant_id,
        client_id=vault.client_id,
        url=vault.url,
        certificate_path=vault.certificate_path,
    )


def resolve_vault_credentials(
    config: ListenerConfig,
    *,
    file: str = "<config>",
    env: Mapping[str, str] | None = None,
    fetch: Callable[..., keyvault.AppConfig] = keyvault.fetch_app_config,
) -> ListenerConfig:
    """With ``vault_type`` set: the config with the GitHub credentials read from the vault
    (ARC's ``config.Read``); without: the config unchanged. ``env``: the process's environment
    (``AZURE_AUTHORITY_HOST``)."""
    if not config.uses_vault or config.azure_key_vault is None:
        return config
    # None: an empty environment (Azure's default authority); nothing here reads os.environ.
    authority = (env or {}).get(keyvault.AUTHORITY_HOST_ENV)
    try:
        app = fetch(
            _vault_settings(config.azure_key_vault),
            config.vault_lookup_key,
            **({"authority": authority} if authority else {}),
        )
    except keyvault.VaultError as exc:
        raise ConfigError(file, "vault_lookup_key", str(exc)) from None
    return config.model_copy(
        update={
            "github_token": app.github_token,
            "github_app_id": app.github_app_id,
            "github_app_installation_id": app.github_app_installation_id,
            "github_app_private_key": app.github_app_private_key,
        }
    )


def config_path_from_env(env: Mapping[str, str]) -> str:
    """``$LISTENER_CONFIG_PATH``; ARC requires it, so its absence is an error here too."""
    path = env.get(CONFIG_PATH_ENV, "")
    if not path:
        raise ConfigError(
            "",
            f"${CONFIG_PATH_ENV}",
            f"is not set (ARC mounts the config at {DEFAULT_CONFIG_PATH})",
        )
    return path


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = [
    "CONFIG_PATH_ENV",
    "DEFAULT_CONFIG_PATH",
    "DEFAULT_SCALER_BURST",
    "DEFAULT_SCALER_QPS",
    "MAX_INT32",
    "AzureKeyVault",
    "ConfigError",
    "ListenerConfig",
    "ListenerConfigBlock",
    "MetricsConfig",
    "ScalerConfig",
    "config_path_from_env",
    "load_listener_config",
    "parse_listener_config",
    "resolve_vault_credentials",
    "scaler_rate_limit",
]
