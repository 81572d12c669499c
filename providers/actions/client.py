"""Async client for the scale-set calls the listener makes (docs/protocol.md#service-calls):
sessions, messages, acquire jobs. One method per call; no session state (that is
:mod:`providers.actions.session`).

Per call:
- Actions-service calls (sessions, acquirejobs) first ask :class:`AdminTokenSource` for the
  admin connection (which may refresh it), join their path onto the service URL (keeping its
  tenant prefix), add ``api-version=6.0-preview`` and send ``Bearer <admin token>``;
  acquirejobs then swaps in the queue token, as the Go client does.
- Message-queue calls use the queue URL as given and the queue token; they never refresh
  the admin token.
- Every call goes through :func:`send_with_retry` (429/5xx/transport errors), then its own
  status check. A 401 on a queue call raises :class:`QueueTokenExpiredError` so the session
  layer can refresh and retry once.

Transport: one ``httpx.AsyncClient`` with a 5 min per-attempt timeout, the system CA pool
plus an optional extra root CA (``server_root_ca``), and the standard proxy variables
(``HTTP(S)_PROXY``/``NO_PROXY``, either case, with Go's rules: ``providers.actions.proxy``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import SecretStr, ValidationError

from providers.actions import proxy
from providers.actions.auth import AdminToken, AdminTokenSource, Credentials
from providers.actions.config_url import GitHubConfig
from providers.actions.decode import (
    DecodedMessage,
    decode_json,
    decode_message,
    find_message_id,
    strip_bom,
)
from providers.actions.errors import (
    ActionsHttpError,
    MessageDecodeError,
    QueueTokenExpiredError,
    ResponseTooLargeError,
    describe_url,
)
from providers.actions.models import AcquireJobsResponse, CreateSessionRequest, ErrorBody, Session
from providers.actions.redact import REGISTRY, SecretRegistry
from providers.actions.retry import (
    FailureObserver,
    RetryPolicy,
    Sleep,
    failure_kind,
    send_with_retry,
)
from reconciler.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)

API_VERSION = "6.0-preview"
#: Per-attempt timeout of every call (the Go client's ``http.Client.Timeout``).
ATTEMPT_TIMEOUT = 300.0
#: Version of github.com/actions/scaleset whose wire behaviour this client follows.
SCALESET_VERSION = "v0.4.0"


@dataclass(frozen=True, slots=True)
class UserAgent:
    """The JSON ``User-Agent`` of docs/protocol.md#headers (key order matters: compared as text)."""

    scale_set_id: int
    system: str = "actions-runner-controller"
    version: str = "arc-capacity-listener-0.1.0"
    commit_sha: str = "unknown"
    subsystem: str = "ghalistener"
    build_version: str = SCALESET_VERSION
    build_commit_sha: str = SCALESET_VERSION
    kind: str = "scaleset"

    def header(self) -> str:
        return json.dumps(
            {
                "system": self.system,
                "version": self.version,
                "commit_sha": self.commit_sha,
                "scale_set_id": self.scale_set_id,
                "subsystem": self.subsystem,
                "build_version": self.build_version,
                "build_commit_sha": self.build_commit_sha,
                "kind": self.kind,
            },
            separators=(",", ":"),
            ensure_ascii=False,
        )


def make_http_client(
    *,
    env: Mapping[str, str],
    root_ca: str = "",
    timeout: float = ATTEMPT_TIMEOUT,
    trust_env: bool = True,
) -> httpx.AsyncClient:
    """The transport: system CAs (+ ``root_ca`` PEM), the proxy variables of ``env`` (the
    process's environment), Go-like redirects."""
    context = ssl.create_default_context()
    if root_ca.strip():
        try:
            context.load_verify_locations(cadata=root_ca)
        except (ssl.SSLError, ValueError) as exc:
            raise ValueError(f"server_root_ca is not a PEM certificate bundle ({exc})") from None
    client = httpx.AsyncClient(
        verify=context,
        # Go's proxy rules (NO_PROXY CIDRs included), see providers/actions/proxy.py.
        **proxy.client_options(env, trust_env=trust_env, verify=context),
        timeout=httpx.Timeout(timeout),
        follow_redirects=True,
        max_redirects=10,
    )
    # Go sends no Accept header unless a call sets one (only GetMessage does).
    del client.headers["Accept"]
    return client


def join_url(base: str, path: str) -> str:
    """Go's ``url.JoinPath``: keep the base path (tenant prefix), add ``path`` below it."""
    return base.rstrip("/") + "/" + path.lstrip("/")


class ActionsClient:
    """The calls of the listener. Construct once per process; close with :meth:`aclose`."""

    def __init__(
        self,
        config: GitHubConfig,
        credentials: Credentials,
        *,
        scale_set_id: int,
        user_agent: UserAgent | None = None,
        http: httpx.AsyncClient | None = None,
        root_ca: str = "",
        env: Mapping[str, str] | None = None,
        clock: Clock | None = None,
        sleep: Sleep = asyncio.sleep,
        retry: RetryPolicy | None = None,
        registry: SecretRegistry = REGISTRY,
        on_error: FailureObserver | None = None,
    ) -> None:
        if scale_set_id == 0:
            raise ValueError("scale_set_id must be non-zero (runner_scale_set_id in the config)")
        self.config = config
        self.scale_set_id = scale_set_id
        self.user_agent = (user_agent or UserAgent(scale_set_id=scale_set_id)).header()
        self._owns_http = http is None
        # ``env`` is the process's environment as read at its start (proxy variables); None
        # is an empty one: no proxy. Nothing here reads os.environ.
        self.http = http or make_http_client(env=env or {}, root_ca=root_ca)
        self._clock: Clock = clock or SYSTEM_CLOCK
        self._sleep = sleep
        self._policy = retry or RetryPolicy()
        self._registry = registry
        #: Hears :func:`failure_kind` of every failed attempt of a call (the metrics).
        self._on_error = on_error
        self.admin = AdminTokenSource(
            self.http,
            config,
            credentials,
            user_agent=self.user_agent,
            clock=self._clock,
            policy=self._policy,
            sleep=sleep,
            registry=registry,
            on_error=on_error,
        )

    async def aclose(self) -> None:
        if self._owns_http:
            await self.http.aclose()

    # --- sessions ------------------------------------------------------------------------

    async def create_session(self, owner_name: str) -> Session:
        body = CreateSessionRequest(owner_name=owner_name).to_wire()
        response = await self._service_call(
            "create session", "POST", self._sessions_path(), body=body
        )
        return self._session_from(response, "create session")

    async def refresh_session(self, session_id: str) -> Session:
        path = f"{self._sessions_path()}/{session_id}"
        response = await self._service_call("refresh session", "PATCH", path)
        return self._session_from(response, "refresh session")

    async def delete_session(self, session_id: str) -> None:
        path = f"{self._sessions_path()}/{session_id}"
        await self._service_call("delete session", "DELETE", path, expect=(204,))

    # --- message queue -------------------------------------------------------------------

    async def get_message(
        self,
        queue_url: str,
        queue_token: SecretStr,
        *,
        last_message_id: int,
        max_capacity: int,
    ) -> DecodedMessage | None:
        """Long-poll for one message; None for 202 and for an empty 200
        (docs/protocol.md#long-poll)."""
        url = httpx.URL(queue_url)
        if last_message_id > 0:
            url = url.copy_merge_params({"lastMessageId": str(last_message_id)})
        headers = {
            "Authorization": f"Bearer {queue_token.get_secret_value()}",
            "Accept": f"application/json; api-version={API_VERSION}",
            "User-Agent": self.user_agent,
            "X-ScaleSetMaxCapacity": str(max_capacity),
        }
        try:
            response = await self._send("get message", "GET", url, headers)
        except ResponseTooLargeError as exc:
            # A poison message the size of a DoS: ack it if its id can be read at all.
            raise MessageDecodeError(str(exc), message_id=find_message_id(exc.prefix)) from None
        if response.status_code == 202:
            return None
        if response.status_code == 401:
            raise self._http_error("get message", response, QueueTokenExpiredError)
        if response.status_code != 200:
            raise self._http_error("get message", response)
        if not strip_bom(response.content).strip():
            # Observed from the broker (ARC issue #4470); the Go listener crashes on it.
            log.warning("get message: HTTP 200 with an empty body; treating it as 202")
            return None
        return decode_message(response.content)

    async def delete_message(self, queue_url: str, queue_token: SecretStr, message_id: int) -> None:
        url = httpx.URL(queue_url)
        url = url.copy_with(path=url.path.rstrip("/") + f"/{message_id}")
        headers = {
            "Authorization": f"Bearer {queue_token.get_secret_value()}",
            "Content-Type": "application/json",
            "User-Agent": self.user_agent,
        }
        response = await self._send("delete message", "DELETE", url, headers)
        if response.status_code == 401:
            raise self._http_error("delete message", response, QueueTokenExpiredError)
        if response.status_code != 204:
            raise self._http_error("delete message", response)

    async def acquire_jobs(self, queue_token: SecretStr, request_ids: Sequence[int]) -> list[int]:
        path = f"_apis/runtime/runnerscalesets/{self.scale_set_id}/acquirejobs"
        response = await self._service_call(
            "acquire jobs",
            "POST",
            path,
            body=list(request_ids),
            token=queue_token,
            unauthorized=QueueTokenExpiredError,
        )
        data = decode_json(response.content, what="acquire jobs")
        try:
            return list(AcquireJobsResponse.model_validate(data).value)
        except ValidationError:
            raise MessageDecodeError("acquire jobs: answer is not {count, value: [int]}") from None

    # --- plumbing ------------------------------------------------------------------------

    def _sessions_path(self) -> str:
        return f"_apis/runtime/runnerscalesets/{self.scale_set_id}/sessions"

    def _session_from(self, response: httpx.Response, what: str) -> Session:
        data = decode_json(response.content, what=what)
        try:
            session = Session.model_validate(data)
        except ValidationError as exc:
            first = exc.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(p) for p in first["loc"])
            raise MessageDecodeError(f"{what}: session {where}: {first['msg']}") from None
        self._registry.add(session.message_queue_access_token)
        return session

    async def _service_call(
        self,
        what: str,
        method: str,
        path: str,
        *,
        body: Any = None,
        expect: tuple[int, ...] = (200,),
        token: SecretStr | None = None,
        unauthorized: type[ActionsHttpError] = ActionsHttpError,
    ) -> httpx.Response:
        response, used = await self._service_attempt(what, method, path, body, token)
        if response.status_code == 401 and token is None:
            # The admin token was refused before its exp: refresh the whole chain once.
            log.info("%s: admin token refused (401); refreshing it and retrying once", what)
            self.admin.invalidate(used)
            response, _ = await self._service_attempt(what, method, path, body, token)
        if response.status_code == 401:
            raise self._http_error(what, response, unauthorized)
        if response.status_code not in expect:
            raise self._http_error(what, response)
        return response

    async def _service_attempt(
        self, what: str, method: str, path: str, body: Any, token: SecretStr | None
    ) -> tuple[httpx.Response, AdminToken]:
        admin = await self.admin.get()
        url = httpx.URL(join_url(admin.service_url, path))
        if "api-version" not in url.params:
            url = url.copy_merge_params({"api-version": API_VERSION})
        bearer = (token or admin.token).get_secret_value()
        headers = {
            "Authorization": f"Bearer {bearer}",
            "Content-Type": "application/json",
            "User-Agent": self.user_agent,
        }
        content = (
            None
            if body is None
            else json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        )
        return await self._send(what, method, url, headers, content), admin

    async def _send(
        self,
        what: str,
        method: str,
        url: httpx.URL,
        headers: dict[str, str],
        content: bytes | None = None,
    ) -> httpx.Response:
        response = await send_with_retry(
            self.http,
            lambda: self.http.build_request(method, url, headers=headers, content=content),
            what=what,
            policy=self._policy,
            sleep=self._sleep,
            clock=self._clock,
            on_failure=self._on_error,
        )
        if response.status_code >= 400 and self._on_error is not None:
            self._on_error(failure_kind(response.status_code))
        return response

    def _http_error(
        self,
        what: str,
        response: httpx.Response,
        kind: type[ActionsHttpError] = ActionsHttpError,
    ) -> ActionsHttpError:
        type_name, message = _error_body(response)
        return kind(
            what,
            method=response.request.method,
            url=str(response.request.url),
            status=response.status_code,
            type_name=type_name,
            message=self._registry.redact(message),
            activity_id=response.headers.get("ActivityId", ""),
            request_id=response.headers.get("X-GitHub-Request-Id", ""),
        )


def _error_body(response: httpx.Response) -> tuple[str, str]:
    """``(typeName, message)`` of a JSON error body, or ``("", text excerpt)``."""
    raw = strip_bom(response.content)
    try:
        data = json.loads(raw.decode("utf-8")) if raw.strip() else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        data = None
    if isinstance(data, dict):
        try:
            error = ErrorBody.model_validate(data)
            return error.type_name, error.message[:300]
        except ValidationError:
            pass
    text = raw.decode("utf-8", "replace").strip()
    return "", text[:300]


__all__ = [
    "API_VERSION",
    "ATTEMPT_TIMEOUT",
    "SCALESET_VERSION",
    "ActionsClient",
    "UserAgent",
    "describe_url",
    "join_url",
    "make_http_client",
]
