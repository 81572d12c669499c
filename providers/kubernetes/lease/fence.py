"""The Lease fence (``LeaseFence``): what every Kubernetes write asks before each attempt, so
a process that can no longer renew its Lease (providers/kubernetes/lease/election.py) sends nothing
a successor could see land."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class LeaseFenced(Exception):
    """A write not sent: this process can no longer renew its Lease (a successor may own the
    scale set by the time it would land)."""


#: An attempt shorter than this cannot complete a round trip worth making.
MIN_ATTEMPT = 0.5


def fenced_timeout(
    renewable: float | None, exclusive: float | None, wanted: float, what: str
) -> float:
    """The fence of every write (pure): a request may go while we can still renew the Lease,
    and its timeout must end before a successor could hold it (``exclusive``). With client-go's
    15 s / 10 s timing a write sent just before the renew deadline gets at most 5 s."""
    if renewable is None or exclusive is None or renewable <= 0:
        raise LeaseFenced(f"{what}: not sent, the Lease can no longer be renewed by this process")
    timeout = min(wanted, exclusive)
    if timeout < MIN_ATTEMPT:
        raise LeaseFenced(f"{what}: not sent, the Lease may pass on in {exclusive:.1f}s")
    return timeout


class LeaseClock(Protocol):
    def renewable_for(self) -> float | None: ...

    def exclusive_for(self) -> float | None: ...


@dataclass(frozen=True, slots=True)
class LeaseFence:
    """What every Kubernetes write asks before each attempt (see :func:`fenced_timeout`)."""

    lease: LeaseClock

    def timeout_for(self, wanted: float, what: str) -> float:
        """The request timeout to use (<= ``wanted``), or :class:`LeaseFenced`."""
        return fenced_timeout(self.lease.renewable_for(), self.lease.exclusive_for(), wanted, what)
