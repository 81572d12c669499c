"""configure_url parsing and API URLs (docs/protocol.md#config-url)."""

from __future__ import annotations

import pytest

from providers.actions.config_url import ConfigUrlError, Scope, parse_config_url


@pytest.mark.parametrize(
    ("url", "scope", "enterprise", "organization", "repository"),
    [
        ("https://github.com/acme", Scope.ORGANIZATION, "", "acme", ""),
        ("https://github.com/acme/web", Scope.REPOSITORY, "", "acme", "web"),
        ("https://github.com/enterprises/big", Scope.ENTERPRISE, "big", "", ""),
        ("https://github.com/Enterprises/big", Scope.ENTERPRISE, "big", "", ""),
        ("  https://github.com/acme/// ", Scope.ORGANIZATION, "", "acme", ""),
    ],
)
def test_scopes(
    url: str, scope: Scope, enterprise: str, organization: str, repository: str
) -> None:
    config = parse_config_url(url, env={})
    assert (config.scope, config.enterprise, config.organization, config.repository) == (
        scope,
        enterprise,
        organization,
        repository,
    )


@pytest.mark.parametrize(
    "url",
    ["https://github.com", "https://github.com/a/b/c", "github.com/acme", "https:///acme", ""],
)
def test_invalid_urls_say_what_is_allowed(url: str) -> None:
    with pytest.raises(ConfigUrlError, match=r"enterprise, org, or repository|http"):
        parse_config_url(url, env={})


@pytest.mark.parametrize(
    ("url", "hosted", "api"),
    [
        ("https://github.com/acme", True, "https://api.github.com"),
        ("https://www.github.com/acme", True, "https://api.github.com"),
        ("https://GitHub.com/acme", True, "https://api.GitHub.com"),
        ("http://github.localhost/acme", True, "http://api.github.localhost"),
        ("https://acme.ghe.com/acme", True, "https://api.acme.ghe.com"),
        ("https://ghes.example.com/acme", False, "https://ghes.example.com/api/v3"),
        ("http://127.0.0.1:8080/acme", False, "http://127.0.0.1:8080/api/v3"),
    ],
)
def test_hosted_vs_ghes_api_base(url: str, hosted: bool, api: str) -> None:
    config = parse_config_url(url, env={})
    assert config.is_hosted is hosted
    assert config.api_base == api


def test_force_ghes_env_var_counts_when_present_even_empty() -> None:
    config = parse_config_url("https://github.com/acme", env={"GITHUB_ACTIONS_FORCE_GHES": ""})
    assert not config.is_hosted
    assert config.api_base == "https://github.com/api/v3"


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("https://github.com/acme", "/orgs/acme/actions/runners/registration-token"),
        ("https://github.com/acme/web", "/repos/acme/web/actions/runners/registration-token"),
        (
            "https://github.com/enterprises/big",
            "/enterprises/big/actions/runners/registration-token",
        ),
    ],
)
def test_registration_token_paths(url: str, path: str) -> None:
    config = parse_config_url(url, env={})
    assert config.registration_token_url == "https://api.github.com" + path
    assert config.runner_registration_url == "https://api.github.com/actions/runner-registration"


def test_installation_token_url_and_trimmed_url() -> None:
    config = parse_config_url("https://ghes.example.com/acme/", env={})
    assert config.configure_url == "https://ghes.example.com/acme"
    assert config.installation_token_url(7) == (
        "https://ghes.example.com/api/v3/app/installations/7/access_tokens"
    )


def test_credentials_in_the_configure_url_are_refused_without_echoing_them() -> None:
    """Issue 10 (failure 7): userinfo used to be stripped silently; a PAT in a URL leaks
    through logs and proxies, so it is refused and the message does not repeat it."""
    for url in ("https://user:secret@ghes.example.com/acme", "https://secret@github.com/acme"):
        with pytest.raises(ConfigUrlError, match="must not contain credentials") as raised:
            parse_config_url(url, env={})
        assert "secret" not in str(raised.value)
