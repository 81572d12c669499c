"""Lower the advertised capacity at once when the cluster loses a slot between steps.

A full reconcile step waits for the watch debounce; a placeholder preempted, evicted or deleted
in the meantime stays advertised for that long, and GitHub may assign a job into a slot that
no longer exists. The ledger is cheap and needs no decisions, so a drop is published as soon as
it is seen (docs/design.md#capacity-cut: drops must reach the wire fast):

1. ``poke()`` notes that something that may lower capacity happened (a placeholder stopped
   counting; in production any pod change of the scale set).
2. The owner calls ``check()`` soon after (coalescing pokes): it builds a snapshot, computes
   the ledger and publishes it only if it is *lower* than what was last published. Rises are
   left to the full step, which is the only path that may grow what GitHub is told.
"""

from __future__ import annotations

from collections.abc import Callable

from reconciler.capacity import compute_ledger
from reconciler.reconciler import Reconciler
from reconciler.snapshot import ClusterSnapshot
from state_machine.states import PairState


class DropGuard:
    def __init__(
        self, reconciler: Reconciler, snapshot: Callable[[], ClusterSnapshot | None]
    ) -> None:
        self.reconciler = reconciler
        self.snapshot = snapshot
        self.pending = False
        self.drops = 0

    def poke(self) -> bool:
        """Note a possible drop; True when a check must be scheduled (none pending yet)."""
        if self.pending:
            return False
        self.pending = True
        return True

    def check(self) -> int | None:
        """Publish the ledger if it fell; returns the published value, or None."""
        self.pending = False
        snapshot = self.snapshot()
        if snapshot is None:
            return None
        ready = self.reconciler.store.count([PairState.READY])
        capacity = compute_ledger(snapshot, ready).capacity
        if self.reconciler.publish_drop(capacity):
            self.drops += 1
            return capacity
        return None
