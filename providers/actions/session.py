"""One message session of a scale set: create, refresh on 401, delete on exit.

Rules:
1. Create with ``ownerName`` = host name (the listener pod name; a random UUID if unknown).
2. 409 on create (another session holds the scale set: a second listener, or a stale session
   of a crashed pod) is retried with backoff for a bounded number of attempts, then fails with
   :class:`SessionConflictError`. scaleset v0.4.0 does not retry (the pod restarts instead);
   ARC <= 0.13 retried 10 x 30 s. We keep the bound and back off from 5 s to 30 s.
3. A 401 on get/delete message or acquire jobs means the queue token expired: refresh the
   session (PATCH, new token) and retry that call once; a second failure is returned.
4. :meth:`MessageSession.close` deletes the session; failures are logged, never raised, and
   the id is kept in :attr:`MessageSession.left_behind` so that the process can hand it on.
5. A session left behind by the previous owner (its id handed in as ``left_behind`` to
   :meth:`MessageSession.open`) is deleted when create meets 409, then create is tried again
   at once: the next process cleans up instead of waiting for the service to expire it. Only
   the Lease holder does this (listener/process/app.py), so the session deleted is never a live
   listener's: the one that wrote the id no longer holds the Lease.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from providers.actions.client import ActionsClient
from providers.actions.decode import DecodedMessage
from providers.actions.errors import (
    ActionsHttpError,
    QueueTokenExpiredError,
    ScaleSetGoneError,
    SessionConflictError,
)
from providers.actions.models import Session, Statistics
from providers.actions.retry import Sleep
from providers.backoff import Backoff

log = logging.getLogger(__name__)

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class ConflictPolicy:
    """How long to wait for a held session to go away (bounded: attempts x capped backoff)."""

    attempts: int = 10
    first_delay: float = 5.0
    max_delay: float = 30.0

    def delay(self, attempt: int) -> float:
        return Backoff(self.first_delay, self.max_delay).delay(attempt)


def default_owner_name() -> str:
    try:
        name = socket.gethostname()
    except OSError:
        name = ""
    return name or str(uuid.uuid4())


def is_session_conflict(error: ActionsHttpError) -> bool:
    return error.status == 409 or "SessionConflict" in error.type_name


class MessageSession:
    """The session plus the queue calls that need it (see the module docstring)."""

    def __init__(
        self,
        client: ActionsClient,
        *,
        owner_name: str | None = None,
        conflict: ConflictPolicy | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.client = client
        self.owner_name = owner_name or default_owner_name()
        self._conflict = conflict or ConflictPolicy()
        self._sleep = sleep
        self._session: Session | None = None
        self.refreshes = 0
        #: The id of a session this process could not delete at close (None: none).
        self.left_behind: str | None = None

    @property
    def session(self) -> Session:
        if self._session is None:
            raise RuntimeError("no session: call MessageSession.open() first")
        return self._session

    @property
    def is_open(self) -> bool:
        return self._session is not None

    async def open(self, left_behind: str | None = None) -> Session:
        """Create the session; ``left_behind``: a session id the previous owner could not
        delete, deleted here on the first 409 (rule 5)."""
        waited = 0.0
        policy = self._conflict
        for attempt in range(policy.attempts):
            try:
                self._session = await self.client.create_session(self.owner_name)
            except ActionsHttpError as exc:
                if exc.status == 404:
                    raise ScaleSetGoneError(self.client.scale_set_id, exc) from None
                if not is_session_conflict(exc):
                    raise
                if left_behind:
                    await self._delete_left_behind(left_behind)
                    left_behind = None
                    continue
                if attempt + 1 >= policy.attempts:
                    raise SessionConflictError(
                        self.client.scale_set_id, policy.attempts, waited, exc
                    ) from None
                delay = policy.delay(attempt)
                log.warning(
                    "create session: scale set %d already has an active session; "
                    "retrying in %.0f s (attempt %d/%d)",
                    self.client.scale_set_id,
                    delay,
                    attempt + 1,
                    policy.attempts,
                )
                await self._sleep(delay)
                waited += delay
                continue
            log.info(
                "message session %s created for scale set %d (owner %s)",
                self._session.session_id,
                self.client.scale_set_id,
                self.owner_name,
            )
            return self._session
        raise RuntimeError("unreachable: ConflictPolicy.attempts must be >= 1")

    async def _delete_left_behind(self, session_id: str) -> None:
        try:
            await self.client.delete_session(session_id)
            log.info("deleted message session %s, left behind by the previous listener", session_id)
        except ActionsHttpError as exc:
            # 404: it expired meanwhile; anything else: the bounded retry below takes over.
            log.info("could not delete the session left behind (%s): %s", session_id, exc)

    async def refresh(self) -> Session:
        self._session = await self.client.refresh_session(self.session.session_id)
        self.refreshes += 1
        log.info("message session %s refreshed (new queue token)", self._session.session_id)
        return self._session

    async def refresh_statistics(self) -> Statistics | None:
        """The same PATCH as :meth:`refresh`, made only to read the session's statistics
        (listener/arc/statistics_refresh.py); logged at debug, since it runs every few seconds
        while the listener is blind. A session closed meanwhile stays closed."""
        refreshed = await self.client.refresh_session(self.session.session_id)
        if self._session is None:
            return None
        self._session = refreshed
        self.refreshes += 1
        log.debug("message session %s refreshed for its statistics", refreshed.session_id)
        return refreshed.statistics

    async def get_message(self, last_message_id: int, max_capacity: int) -> DecodedMessage | None:
        return await self._with_refresh(
            lambda s: self.client.get_message(
                s.message_queue_url,
                s.message_queue_access_token,
                last_message_id=last_message_id,
                max_capacity=max_capacity,
            )
        )

    async def delete_message(self, message_id: int) -> None:
        await self._with_refresh(
            lambda s: self.client.delete_message(
                s.message_queue_url, s.message_queue_access_token, message_id
            )
        )

    async def acquire_jobs(self, request_ids: Sequence[int]) -> list[int]:
        return await self._with_refresh(
            lambda s: self.client.acquire_jobs(s.message_queue_access_token, request_ids)
        )

    async def close(self) -> None:
        """Delete the session (best effort: a failure is logged, the process exits anyway)."""
        session, self._session = self._session, None
        if session is None:
            return
        self.left_behind = session.session_id  # until the delete is confirmed
        try:
            await self.client.delete_session(session.session_id)
        except Exception as exc:
            log.error(
                "could not delete message session %s: %s; the next listener deletes it",
                session.session_id,
                exc,
            )
            return
        self.left_behind = None
        log.info("message session %s deleted", session.session_id)

    async def _with_refresh(self, call: Callable[[Session], Awaitable[_T]]) -> _T:
        try:
            return await call(self.session)
        except QueueTokenExpiredError:
            log.info("queue token expired (401); refreshing the session and retrying once")
        return await call(await self.refresh())


__all__ = ["ConflictPolicy", "MessageSession", "default_owner_name", "is_session_conflict"]
