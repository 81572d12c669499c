"""When the container hook looks at the workflow pod (pure).

actions/runner-container-hooks, ``packages/k8s/src/k8s/index.ts``: ``prepare_job`` creates the
pod and calls ``waitForPodPhases(pod, {Running}, {Pending}, getPrepareJobTimeoutSeconds())``.
That reads the pod's phase at once, then sleeps through a ``BackOffManager``: 1 s, doubling,
capped at 20 s (1, 2, 4, 8, 16, 20, 20, ...), reading the phase after each sleep. After a sleep
that takes the summed sleep time past the timeout (``ACTIONS_RUNNER_PREPARE_JOB_TIMEOUT_SECONDS``,
default 600 s) it throws instead of reading: the job fails ("pod failed to come online").
A phase other than Running or Pending (or a pod that is gone) fails the job at that read.

So the job sees its pod Running only at the next read, and with the default 600 s the last
read is at 591 s and the failure at 611 s after the pod was created.
"""

from __future__ import annotations

from dataclasses import dataclass

INITIAL_BACKOFF = 1.0
BACKOFF_FACTOR = 2.0
MAX_BACKOFF = 20.0


@dataclass(frozen=True, slots=True)
class PollSchedule:
    """Offsets (seconds after the pod was created) of every phase read, and of the failure."""

    reads: tuple[float, ...]
    fails_at: float


def poll_schedule(timeout: float) -> PollSchedule:
    """The BackOffManager schedule for one ``waitForPodPhases`` call with ``timeout`` s."""
    if timeout <= 0:
        raise ValueError(f"prepare-job timeout must be > 0 s, got {timeout}")
    reads = [0.0]
    total, backoff = 0.0, INITIAL_BACKOFF
    while True:
        total += backoff
        if total > timeout:
            return PollSchedule(tuple(reads), total)
        reads.append(total)
        backoff = min(backoff * BACKOFF_FACTOR, MAX_BACKOFF)
