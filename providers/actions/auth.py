"""Credentials and the admin-token chain of the Actions service (docs/protocol.md#authentication).

The chain, re-run in full on every refresh (nothing is cached):
1. App auth only: mint an RS256 JWT (``iat`` = now - 60 s, ``exp`` = iat + 9 min, ``iss`` =
   app id or client id) and exchange it for an installation token (``POST
   /app/installations/{id}/access_tokens``, must answer 201).
2. Exchange the PAT / installation token for a registration token (must answer 201).
3. ``POST /actions/runner-registration`` with ``RemoteAuth <registration token>``: any 2xx;
   the answer is the Actions service URL and the admin token (a JWT). 401/403 are retried here.
4. The admin token's expiry is its ``exp`` claim, read without verifying the signature.

:class:`AdminTokenSource` refreshes lazily: when no token is held, or when now + 60 s is past
``exp``. A failed refresh keeps the old token and fails the call that needed it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any

import httpx
import jwt
from pydantic import SecretStr, ValidationError

from providers.actions.config_url import GitHubConfig
from providers.actions.errors import AuthError, describe_url
from providers.actions.models import AdminConnection, RunnerRegistrationRequest, TokenResponse
from providers.actions.redact import REGISTRY, SecretRegistry
from providers.actions.retry import (
    FailureObserver,
    RetryPolicy,
    Sleep,
    failure_kind,
    send_with_retry,
)
from reconciler.clock import Clock

log = logging.getLogger(__name__)

#: Refresh this long before the admin token's ``exp``.
REFRESH_MARGIN = 60.0
JWT_BACKDATE = 60
JWT_LIFETIME = 9 * 60


@dataclass(frozen=True, slots=True)
class PatAuth:
    token: SecretStr

    def __repr__(self) -> str:
        return "PatAuth(token=SecretStr('**********'))"


@dataclass(frozen=True, slots=True)
class AppAuth:
    #: App id or client id (both work as the JWT ``iss``).
    app_id: str
    installation_id: int
    private_key: SecretStr

    def __repr__(self) -> str:
        return (
            f"AppAuth(app_id={self.app_id!r}, installation_id={self.installation_id}, "
            "private_key=SecretStr('**********'))"
        )


Credentials = PatAuth | AppAuth


@dataclass(frozen=True, slots=True)
class AdminToken:
    """The Actions service base URL and the admin token that authorizes calls to it."""

    service_url: str
    token: SecretStr
    expires_at: float


def mint_app_jwt(auth: AppAuth, *, now: float) -> str:
    """The GitHub App JWT of docs/protocol.md#authentication (only ``iat``, ``exp``, ``iss``)."""
    iat = int(now) - JWT_BACKDATE
    claims = {"iat": iat, "exp": iat + JWT_LIFETIME, "iss": auth.app_id}
    try:
        return jwt.encode(claims, auth.private_key.get_secret_value(), algorithm="RS256")
    except Exception:  # any key problem; the key text must not reach the message
        raise AuthError(
            "github app jwt",
            "github_app_private_key is not a usable RSA private key "
            "(expected a PEM, PKCS#1 'BEGIN RSA PRIVATE KEY' or PKCS#8 'BEGIN PRIVATE KEY')",
        ) from None


def token_expiry(token: str) -> float:
    """The ``exp`` claim of a JWT, read without verifying the signature."""
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        raise AuthError("admin token", "the admin token is not a JWT") from None
    exp = claims.get("exp")
    if isinstance(exp, bool) or not isinstance(exp, int | float):
        raise AuthError("admin token", "the admin token has no numeric 'exp' claim")
    return float(exp)


class AdminTokenSource:
    """Holds the admin connection and refreshes it before it expires (see module docstring)."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        config: GitHubConfig,
        credentials: Credentials,
        *,
        user_agent: str,
        clock: Clock,
        policy: RetryPolicy,
        sleep: Sleep = asyncio.sleep,
        registry: SecretRegistry = REGISTRY,
        on_error: FailureObserver | None = None,
    ) -> None:
        self._http = http
        #: Hears :func:`failure_kind` of every failed attempt (the metrics).
        self._on_error = on_error
        self._config = config
        self._credentials = credentials
        self._user_agent = user_agent
        self._clock = clock
        self._policy = policy
        self._sleep = sleep
        self._registry = registry
        self._current: AdminToken | None = None
        self._lock = asyncio.Lock()
        self.refreshes = 0
        if isinstance(credentials, PatAuth):
            registry.add(credentials.token)
        else:
            registry.add(credentials.private_key)

    @property
    def current(self) -> AdminToken | None:
        return self._current

    def invalidate(self, token: AdminToken) -> None:
        """The service rejected ``token`` before its ``exp`` (revoked, or our clock is behind the
        service's): drop it so the next :meth:`get` runs the whole chain again."""
        if self._current is token:
            self._current = None

    def needs_refresh(self) -> bool:
        held = self._current
        return held is None or self._clock.now() + REFRESH_MARGIN > held.expires_at

    async def get(self) -> AdminToken:
        """The admin connection, refreshed first when missing or about to expire."""
        if not self.needs_refresh() and self._current is not None:
            return self._current
        async with self._lock:
            if self.needs_refresh() or self._current is None:
                self._current = await self._refresh()
                self.refreshes += 1
            return self._current

    async def _refresh(self) -> AdminToken:
        if isinstance(self._credentials, AppAuth):
            bearer = await self._installation_token(self._credentials)
        else:
            bearer = self._credentials.token
        registration = await self._registration_token(bearer)
        connection = await self._runner_registration(registration)
        expires_at = token_expiry(connection.token.get_secret_value())
        log.info(
            "admin connection refreshed: service %s, token valid for %.0f s",
            describe_url(connection.url),
            expires_at - self._clock.now(),
        )
        return AdminToken(connection.url, connection.token, expires_at)

    async def _installation_token(self, auth: AppAuth) -> SecretStr:
        app_jwt = mint_app_jwt(auth, now=self._clock.now())
        self._registry.add(app_jwt)
        url = self._config.installation_token_url(auth.installation_id)
        headers = {
            "Authorization": f"Bearer {app_jwt}",
            "Content-Type": "application/vnd.github+json",
            "User-Agent": self._user_agent,
        }
        body = await self._post("github app installation token", url, headers, None, 201)
        return self._token_from(body, "github app installation token")

    async def _registration_token(self, bearer: SecretStr) -> SecretStr:
        headers = {
            "Authorization": f"Bearer {bearer.get_secret_value()}",
            "Content-Type": "application/vnd.github.v3+json",
            "User-Agent": self._user_agent,
        }
        url = self._config.registration_token_url
        body = await self._post("registration token", url, headers, None, 201)
        return self._token_from(body, "registration token")

    async def _runner_registration(self, registration: SecretStr) -> AdminConnection:
        request = RunnerRegistrationRequest(url=self._config.configure_url)
        payload = json.dumps(request.to_wire(), separators=(",", ":"), ensure_ascii=False)
        headers = {
            "Authorization": f"RemoteAuth {registration.get_secret_value()}",
            "Content-Type": "application/json",
            "User-Agent": self._user_agent,
        }
        body = await self._post(
            "runner-registration",
            self._config.runner_registration_url,
            headers,
            payload.encode(),
            None,
            policy=self._policy.also_retrying(401, 403),
        )
        try:
            connection = AdminConnection.model_validate(body)
        except ValidationError:
            raise AuthError("runner-registration", "answer is not {url, token} strings") from None
        self._registry.add(connection.token)
        if not connection.url or not connection.token.get_secret_value():
            raise AuthError("runner-registration", "answer lacks the service url or the token")
        return connection

    def _token_from(self, body: Any, step: str) -> SecretStr:
        try:
            token = TokenResponse.model_validate(body).token
        except ValidationError:
            raise AuthError(step, "answer has no 'token' string") from None
        if not token.get_secret_value():
            raise AuthError(step, "answer has an empty token")
        self._registry.add(token)
        return token

    async def _post(
        self,
        step: str,
        url: str,
        headers: dict[str, str],
        content: bytes | None,
        expect: int | None,
        *,
        policy: RetryPolicy | None = None,
    ) -> Any:
        response = await send_with_retry(
            self._http,
            lambda: self._http.build_request("POST", url, headers=headers, content=content),
            what=step,
            policy=policy or self._policy,
            sleep=self._sleep,
            clock=self._clock,
            on_failure=self._on_error,
        )
        ok = response.status_code == expect if expect is not None else response.is_success
        if not ok:
            if self._on_error is not None:
                self._on_error(failure_kind(response.status_code))
            raise AuthError(step, _github_message(response), status=response.status_code)
        try:
            return json.loads(response.content.lstrip(b"\xef\xbb\xbf") or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise AuthError(step, "answer is not JSON", status=response.status_code) from None


def _github_message(response: httpx.Response) -> str:
    """The ``message`` of a GitHub error body, or a short excerpt of the text."""
    try:
        data = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        data = None
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return str(data["message"])[:200]
    text = response.text.strip()
    return text[:200] if text else "(empty body)"


__all__ = [
    "JWT_BACKDATE",
    "JWT_LIFETIME",
    "REFRESH_MARGIN",
    "AdminToken",
    "AdminTokenSource",
    "AppAuth",
    "Credentials",
    "PatAuth",
    "mint_app_jwt",
    "token_expiry",
]
