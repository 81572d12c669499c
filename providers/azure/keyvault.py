"""GitHub credentials held in Azure Key Vault, read the way ARC's listener reads them.

ARC (``vault/azurekeyvault``, ``cmd/ghalistener/config``): with ``vault_type:
azure_key_vault`` the listener config carries ``azure_key_vault: {tenant_id, client_id, url,
certificate_path}`` and ``vault_lookup_key``. The listener authenticates as the Entra ID
application ``client_id`` of ``tenant_id`` with the certificate (PEM: certificate and private
key) at ``certificate_path``, reads the secret named ``vault_lookup_key`` from the vault at
``url``, and decodes its value as the app config JSON of a GitHub config secret::

    {"github_token": "..."}   or
    {"github_app_id": "...", "github_app_installation_id": 123, "github_app_private_key": "..."}

Exactly one of the two must be complete (ARC's ``appconfig.Validate``). Any failure is one
:class:`VaultError` that names the step and never contains the secret value. Calls are retried
by azure-core's retry policy (4 retries, as ARC's retryablehttp client), each bounded by the
timeouts below. The standard proxy variables apply (azure-core honours them).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import SecretStr

log = logging.getLogger(__name__)

#: Per-attempt bounds and retries of every Key Vault / Entra ID call.
CONNECT_TIMEOUT = 10
READ_TIMEOUT = 30
RETRIES = 4


class VaultError(Exception):
    """Reading credentials from the vault failed: ``step`` says where, the message why."""

    def __init__(self, step: str, reason: str) -> None:
        self.step = step
        self.reason = reason
        super().__init__(f"azure key vault: {step}: {reason}")


@dataclass(frozen=True, slots=True)
class AzureKeyVaultSettings:
    tenant_id: str
    client_id: str
    url: str
    certificate_path: str


@dataclass(frozen=True, slots=True)
class AppConfig:
    """The GitHub credentials decoded from the secret (one of the two kinds is set)."""

    github_token: SecretStr = field(default_factory=lambda: SecretStr(""))
    github_app_id: str = ""
    github_app_installation_id: int = 0
    github_app_private_key: SecretStr = field(default_factory=lambda: SecretStr(""))


def parse_app_config(value: str) -> AppConfig:
    """Pure: decode and validate the secret's value (never echoes it)."""
    try:
        data = json.loads(value)
    except json.JSONDecodeError as exc:
        raise VaultError("app config", f"the secret is not JSON (line {exc.lineno})") from None
    if not isinstance(data, Mapping):
        raise VaultError("app config", "the secret is not a JSON object")
    token = data.get("github_token") or ""
    app_id = data.get("github_app_id") or ""
    installation = data.get("github_app_installation_id") or 0
    key = data.get("github_app_private_key") or ""
    if not all(isinstance(v, str) for v in (token, app_id, key)) or isinstance(installation, bool):
        raise VaultError("app config", "github_* values have the wrong type (strings; int id)")
    if not isinstance(installation, int):
        raise VaultError("app config", "github_app_installation_id must be an integer")
    has_app = bool(app_id) and installation > 0 and bool(key)
    if token and has_app:
        raise VaultError("app config", "both a PAT and GitHub App credentials; keep one")
    if not token and not has_app:
        raise VaultError(
            "app config",
            "no credentials: set github_token, or github_app_id, github_app_installation_id "
            "and github_app_private_key",
        )
    if token:
        return AppConfig(github_token=SecretStr(token))
    return AppConfig(
        github_app_id=app_id,
        github_app_installation_id=installation,
        github_app_private_key=SecretStr(key),
    )


def validate_settings(settings: AzureKeyVaultSettings) -> list[tuple[str, str]]:
    """ARC's ``azurekeyvault.Config.Validate``, as (key, reason) problems."""
    problems = []
    if not settings.tenant_id:
        problems.append(("azure_key_vault.tenant_id", "is not set"))
    if not settings.client_id:
        problems.append(("azure_key_vault.client_id", "is not set"))
    if not settings.url.startswith("https://"):
        problems.append(("azure_key_vault.url", "must be an https:// vault URL"))
    if not settings.certificate_path:
        problems.append(("azure_key_vault.certificate_path", "must be provided"))
    elif not Path(settings.certificate_path).is_file():
        problems.append(
            ("azure_key_vault.certificate_path", f"{settings.certificate_path} does not exist")
        )
    return problems


#: The Entra ID authority for sovereign clouds (docs/configuration.md).
AUTHORITY_HOST_ENV = "AZURE_AUTHORITY_HOST"


def fetch_app_config(
    settings: AzureKeyVaultSettings,
    lookup_key: str,
    *,
    authority: str | None = None,
    ca_bundle: str | None = None,
    disable_instance_discovery: bool = False,
    verify_challenge_resource: bool = True,
) -> AppConfig:
    """Authenticate with the certificate, read secret ``lookup_key``, decode it.

    ``authority`` defaults to the public cloud (the caller reads ``$AZURE_AUTHORITY_HOST``
    from the process's environment); ``ca_bundle``
    to the system trust store (a private CA is set with ``$REQUESTS_CA_BUNDLE``);
    ``disable_instance_discovery`` is for authorities Entra ID's discovery does not know
    (Azure Stack, a private one). ``verify_challenge_resource=False`` skips the SDK's check that
    the vault host is a subdomain of the challenge's resource: only for a loopback test vault,
    whose ``127.0.0.1`` cannot be one.
    """
    from azure.core.exceptions import AzureError, ClientAuthenticationError, HttpResponseError
    from azure.identity import CertificateCredential
    from azure.keyvault.secrets import SecretClient

    transport: dict[str, Any] = {
        "connection_timeout": CONNECT_TIMEOUT,
        "read_timeout": READ_TIMEOUT,
        "retry_total": RETRIES,
    }
    if ca_bundle:
        transport["connection_verify"] = ca_bundle
    try:
        credential = CertificateCredential(
            settings.tenant_id,
            settings.client_id,
            settings.certificate_path,
            **({"authority": authority} if authority else {}),
            disable_instance_discovery=disable_instance_discovery,
            **transport,
        )
    except (ValueError, OSError) as exc:
        raise VaultError("certificate", _short(exc)) from None
    try:
        with (
            credential,
            SecretClient(
                settings.url,
                credential,
                verify_challenge_resource=verify_challenge_resource,
                **transport,
            ) as client,
        ):
            secret = client.get_secret(lookup_key)
    except ClientAuthenticationError as exc:
        raise VaultError("authentication", _short(exc)) from None
    except HttpResponseError as exc:
        reason = f"HTTP {exc.status_code}: {exc.reason}"
        raise VaultError(f"secret {lookup_key!r}", reason) from None
    except AzureError as exc:
        raise VaultError("connection", _short(exc)) from None
    if secret.value is None:
        raise VaultError(f"secret {lookup_key!r}", "the secret has no value")
    log.info("GitHub credentials read from Azure Key Vault secret %r", lookup_key)
    return parse_app_config(secret.value)


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] or type(exc).__name__
