"""When an informer reconnects, relists and backs off: client-go's reflector rules, as one pure
function over how the last list or watch ended (docs/semantics.md, rows "watch ...").

client-go ``tools/cache/reflector.go`` (``watch`` and ``watchHandler``; ``ListAndWatch`` run by
``wait.BackoffUntil`` with ``backoffManager`` 800 ms doubling to 30 s, reset after 2 min):

- a watch that ends without error (server timeout, stream closed) is re-opened at once from
  the last resourceVersion; Go's stream watcher also closes the result channel on a broken
  stream, so a cut stream is re-opened at once too;
- ``very short watch``: ended within 1 s having delivered nothing, an error: backed off;
- a watch request that fails (connection refused, 429, 5xx), or a list that fails, backs off
  before the next attempt; consecutive failures grow the wait;
- 410 Expired: relist (``Don't set LastSyncResourceVersionUnavailable``...).

Where this differs, and why: client-go waits one ``BackoffUntil`` step (0.8-1.6 s) before the
relist that follows a 410; we relist at once, because a 410 says the API answers and our
version is too old, not that anything failed; only a 410 that follows another 410 without a
watch that worked in between (a server that cannot serve the version it just listed) is
backed off. The wait itself is the informer's exponential back-off with jitter
(:func:`backoff_delay`), the one place to fold into a shared back-off module.
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass

from providers.backoff import Backoff

#: client-go ``watchHandler``: a watch shorter than this with no event is an error.
SHORT_WATCH = 1.0


class Ending(enum.Enum):
    """How the last list or watch ended."""

    #: The watch delivered events (or bookmarks) or ran at least SHORT_WATCH, then ended or broke.
    WORKED = "worked"
    #: The watch ended within SHORT_WATCH having delivered nothing.
    SHORT = "short"
    #: The watch answered 410 Expired: our resourceVersion is too old.
    EXPIRED = "expired"
    #: The watch request failed (no answer, 429, 5xx): resume from the same version.
    WATCH_FAILED = "watch_failed"
    #: The list failed, or an event could not be applied: start again from a list.
    LIST_FAILED = "list_failed"


@dataclass(frozen=True, slots=True)
class Next:
    #: Consecutive failures so far (0: the last attempt worked).
    failures: int
    #: Back off before the next attempt (by ``failures``)?
    wait: bool
    #: Start again from a full list (else resume the watch from the last version)?
    relist: bool
    #: The last ending was a 410 (a second 410 in a row is backed off).
    expired: bool = False


def after(ending: Ending, previous: Next) -> Next:
    """What to do after ``ending``, given what was decided after the previous one."""
    if ending is Ending.WORKED:
        return Next(failures=0, wait=False, relist=False)
    if ending is Ending.EXPIRED:
        if previous.expired:
            return Next(previous.failures + 1, wait=True, relist=True, expired=True)
        return Next(previous.failures, wait=False, relist=True, expired=True)
    relist = ending is Ending.LIST_FAILED
    return Next(previous.failures + 1, wait=True, relist=relist, expired=previous.expired)


START = Next(failures=0, wait=False, relist=True)


def backoff_delay(failures: int, base: float, cap: float, rng: random.Random) -> float:
    """The shared back-off (providers/backoff.py) after ``failures`` consecutive failures,
    with jitter in [0.5, 1] of it so informers cut together do not relist together."""
    step = Backoff(base, cap).delay(failures - 1)
    return float(step * (0.5 + 0.5 * rng.random()))


__all__ = ["SHORT_WATCH", "START", "Ending", "Next", "after", "backoff_delay"]
