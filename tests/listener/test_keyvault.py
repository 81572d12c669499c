"""GitHub credentials from Azure Key Vault, as ARC's listener reads them, against a loopback
fake of Entra ID and the Key Vault REST API (TLS, certificate credential, 401 challenge)."""

from __future__ import annotations

import functools
import json
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from listener.arc.config import ConfigError, parse_listener_config, resolve_vault_credentials
from providers.actions.auth import AppAuth, PatAuth
from providers.azure.keyvault import (
    AppConfig,
    AzureKeyVaultSettings,
    VaultError,
    fetch_app_config,
    parse_app_config,
)
from tests.listener.keyvault_fake import KeyVaultFake, TlsFiles, make_tls_files
from tests.providers.demand.loopback import LoopbackServer

TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
CLIENT_ID = "0d9e1b7c-5a4f-4a53-9f59-8d7f4a1c2b3e"
PAT = "ghp_" + "k" * 36


@pytest.fixture
def tls(tmp_path: Path) -> TlsFiles:
    return make_tls_files(tmp_path)


@pytest.fixture
def fake(tls: TlsFiles) -> KeyVaultFake:
    return KeyVaultFake(
        TENANT,
        CLIENT_ID,
        tls.client_cert,
        secrets={"gh-pat": json.dumps({"github_token": PAT})},
    )


@pytest.fixture
def vault(fake: KeyVaultFake, tls: TlsFiles) -> Iterator[LoopbackServer]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls.server_cert, tls.server_key)
    with LoopbackServer(fake, tls=context) as server:
        fake.base_url = server.url
        yield server


def settings(vault: LoopbackServer, tls: TlsFiles, **changes: str) -> AzureKeyVaultSettings:
    values = {
        "tenant_id": TENANT,
        "client_id": CLIENT_ID,
        "url": vault.url,
        "certificate_path": str(tls.client_pem),
        **changes,
    }
    return AzureKeyVaultSettings(**values)


def fetcher(vault: LoopbackServer, tls: TlsFiles) -> Any:
    return functools.partial(
        fetch_app_config,
        authority=vault.url,
        ca_bundle=str(tls.ca),
        disable_instance_discovery=True,
        # The SDK wants the vault host to be a subdomain of the challenge's resource
        # (x.vault.azure.net); 127.0.0.1 cannot be one, so this one check is off here.
        verify_challenge_resource=False,
    )


def test_a_pat_is_read_with_the_certificate_credential(
    vault: LoopbackServer, tls: TlsFiles, fake: KeyVaultFake
) -> None:
    app = fetcher(vault, tls)(settings(vault, tls), "gh-pat")
    assert app.github_token.get_secret_value() == PAT
    assert len(fake.tokens_issued) == 1 and fake.refused_assertions == 0
    secret_calls = [r for r in vault.requests if r.path.startswith("/secrets/gh-pat")]
    assert "authorization" not in secret_calls[0].headers  # the SDK asks for the challenge
    assert secret_calls[-1].headers["authorization"] == f"Bearer {fake.tokens_issued[0]}"


def test_the_listener_config_gets_github_app_credentials_from_the_vault(
    vault: LoopbackServer, tls: TlsFiles, fake: KeyVaultFake
) -> None:
    fake.secrets["gh-app"] = json.dumps(
        {
            "github_app_id": "123456",
            "github_app_installation_id": 654321,
            "github_app_private_key": "-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA"
            " PRIVATE KEY-----",
        }
    )
    config = parse_listener_config(
        {
            "configure_url": "https://github.com/acme",
            "vault_type": "azure_key_vault",
            "vault_lookup_key": "gh-app",
            "azure_key_vault": {
                "tenant_id": TENANT,
                "client_id": CLIENT_ID,
                "url": vault.url,
                "certificate_path": str(tls.client_pem),
            },
            "ephemeral_runner_set_namespace": "arc-runners",
            "ephemeral_runner_set_name": "arc-runners-r6jw6",
            "max_runners": 5,
            "runner_scale_set_id": 7,
        }
    )
    with pytest.raises(ConfigError, match="not read yet"):
        config.credentials()
    resolved = resolve_vault_credentials(config, fetch=fetcher(vault, tls))
    credentials = resolved.credentials()
    assert isinstance(credentials, AppAuth)
    assert (credentials.app_id, credentials.installation_id) == ("123456", 654321)


def test_a_missing_secret_is_one_error_naming_it(vault: LoopbackServer, tls: TlsFiles) -> None:
    with pytest.raises(VaultError, match=r"secret 'nope': HTTP 404"):
        fetcher(vault, tls)(settings(vault, tls), "nope")


def test_a_certificate_the_tenant_does_not_know_is_an_authentication_error(
    vault: LoopbackServer, tls: TlsFiles, tmp_path: Path
) -> None:
    (tmp_path / "other").mkdir()
    other = make_tls_files(tmp_path / "other")
    with pytest.raises(VaultError, match=r"^azure key vault: authentication: "):
        fetcher(vault, tls)(settings(vault, tls, certificate_path=str(other.client_pem)), "gh-pat")


def test_an_unreachable_vault_is_a_connection_error(tls: TlsFiles) -> None:
    unreachable = AzureKeyVaultSettings(
        TENANT, CLIENT_ID, "https://127.0.0.1:9", str(tls.client_pem)
    )
    with pytest.raises(VaultError, match=r"authentication|connection"):
        fetch_app_config(
            unreachable,
            "gh-pat",
            authority="https://127.0.0.1:9",
            ca_bundle=str(tls.ca),
            disable_instance_discovery=True,
            verify_challenge_resource=False,
        )


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("not json", "not JSON"),
        ('["x"]', "not a JSON object"),
        ("{}", "no credentials"),
        (
            json.dumps(
                {
                    "github_token": PAT,
                    "github_app_id": "1",
                    "github_app_installation_id": 2,
                    "github_app_private_key": "k",
                }
            ),
            "both a PAT",
        ),
        (
            json.dumps(
                {
                    "github_app_id": "1",
                    "github_app_installation_id": "2",
                    "github_app_private_key": "k",
                }
            ),
            "must be an integer",
        ),
    ],
)
def test_a_bad_secret_value_is_refused_without_echoing_it(value: str, reason: str) -> None:
    with pytest.raises(VaultError, match=reason) as info:
        parse_app_config(value)
    assert PAT not in str(info.value)


def test_arcs_vault_rules_are_checked_when_the_config_is_read(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        parse_listener_config(
            {
                "configure_url": "https://github.com/acme",
                "vault_type": "azure_key_vault",
                "vault_lookup_key": "gh",
                "azure_key_vault": {"tenant_id": "t", "client_id": "", "url": "http://v"},
                "ephemeral_runner_set_namespace": "ns",
                "ephemeral_runner_set_name": "n",
                "runner_scale_set_id": 1,
            }
        )
    keys = [key for key, _ in info.value.problems]
    assert keys == [
        "azure_key_vault.client_id",
        "azure_key_vault.url",
        "azure_key_vault.certificate_path",
    ]


def test_a_pat_config_is_unchanged_by_vault_resolution() -> None:
    config = parse_listener_config(
        {
            "configure_url": "https://github.com/acme",
            "github_token": PAT,
            "ephemeral_runner_set_namespace": "ns",
            "ephemeral_runner_set_name": "n",
            "runner_scale_set_id": 1,
        }
    )
    assert resolve_vault_credentials(config) is config
    assert isinstance(config.credentials(), PatAuth)


@pytest.mark.parametrize(
    ("env", "passed"),
    [
        (
            {"AZURE_AUTHORITY_HOST": "https://login.microsoftonline.us"},
            "https://login.microsoftonline.us",
        ),
        ({}, None),  # unset: the SDK's public cloud
        ({"AZURE_AUTHORITY_HOST": ""}, None),
    ],
)
def test_the_authority_comes_from_the_environment_the_process_was_started_with(
    env: dict[str, str], passed: str | None, tmp_path: Path
) -> None:
    """docs/configuration.md: ``AZURE_AUTHORITY_HOST`` picks the Entra ID authority (sovereign
    clouds); it is read from the environment handed down, not looked up by the vault client."""
    seen: list[dict[str, Any]] = []
    (tmp_path / "cert.pem").write_text("not read: the fetch below is a fake")

    def fetch(settings: Any, key: str, **kwargs: Any) -> AppConfig:
        seen.append(kwargs)
        return AppConfig(github_token=SecretStr(PAT))

    config = parse_listener_config(
        {
            "configure_url": "https://github.com/acme",
            "vault_type": "azure_key_vault",
            "vault_lookup_key": "gh-app",
            "azure_key_vault": {
                "tenant_id": TENANT,
                "client_id": CLIENT_ID,
                "url": "https://example.vault.azure.net",
                "certificate_path": str(tmp_path / "cert.pem"),
            },
            "ephemeral_runner_set_namespace": "arc-runners",
            "ephemeral_runner_set_name": "arc-runners-r6jw6",
            "max_runners": 5,
            "runner_scale_set_id": 7,
        }
    )
    resolve_vault_credentials(config, env=env, fetch=fetch)
    assert seen == ([{"authority": passed}] if passed else [{}])
