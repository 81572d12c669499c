"""The last guarantee of a prompt exit: once the process has decided to stop (SIGTERM, a lost
Lease), it is gone within ``EXIT_DEADLINE`` seconds whatever the APIs do.

The ordered shutdown (session, placeholders, Lease; listener/process/app.py) normally ends well
within
it: the scaler's writes run on a daemon lane that stops at its next wait
(providers/kubernetes/write/lane.py), and every other call has a request timeout. But a placeholder
delete
against an API server that accepts the connection and never answers waits out its request
timeout in a pool thread that the interpreter joins at exit; ARC's listener pod has a 60 s
grace period, and a pod that overruns it is SIGKILLed with its logs cut. So a daemon timer,
armed at the decision, logs what was still running and ends the process with the code already
decided. What it skips is safe to skip: the Lease expires by itself, a session left behind is
deleted by the next process (docs/protocol.md#sessions), placeholders are reaped by their TTL.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import NoReturn

log = logging.getLogger(__name__)

#: Under the listener's 5 s exit budget (docs/design.md#ownership-and-shutdown), leaving room
#: for the interpreter's own exit.
EXIT_DEADLINE = 4.5


class ExitDeadline:
    """Arm once; a second ``arm`` keeps the first deadline (the earliest decision counts)."""

    def __init__(self, seconds: float = EXIT_DEADLINE) -> None:
        self.seconds = seconds
        self._timer: threading.Timer | None = None
        self._code = 0
        self._why = ""

    def arm(self, code: int, why: str) -> None:
        if self._timer is not None:
            return
        self._code, self._why = code, why
        self._timer = threading.Timer(self.seconds, self._expire)
        self._timer.name = "exit-deadline"
        self._timer.daemon = True
        self._timer.start()

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def _expire(self) -> None:
        try:
            busy = sorted(
                t.name for t in threading.enumerate() if t is not threading.current_thread()
            )
            log.error(
                "shutdown (%s) still running after %.1fs: exiting now with code %d (threads: %s)",
                self._why,
                self.seconds,
                self._code,
                ", ".join(busy),
            )
            for handler in logging.getLogger().handlers:
                handler.flush()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(self._code)


def end_process(code: int) -> NoReturn:
    """End ``run`` with ``code`` once the app has finished, without interpreter finalization:
    daemon threads may still be blocked in a socket (a write lane, an abandoned worker), and
    CPython aborts (SIGABRT) when one holds the stderr lock while the interpreter shuts down.
    Everything the app owns is already closed; logs are flushed first."""
    for handler in logging.getLogger().handlers:
        handler.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


__all__ = ["EXIT_DEADLINE", "ExitDeadline", "end_process"]


async def bounded(call: Callable[[], None], budget: float, what: str) -> None:
    """A blocking shutdown step, given ``budget`` seconds: past it, its worker (a daemon,
    listener/process/daemon_executor.py) is abandoned. Each request inside it has its own
    timeout, but the client's hidden retries multiply it."""
    try:
        await asyncio.wait_for(asyncio.to_thread(call), budget)
    except TimeoutError:
        logging.getLogger("listener").warning(
            "shutting down: %s not done within %.1fs; left", what, budget
        )
