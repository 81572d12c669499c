"""The product's own judgement of a probe pair: nothing here re-states a rule.

A probe pair is a pair record in a :class:`~state_machine.store.PairStore` (the table validates
every move), observed through ``build_snapshot`` (providers/kubernetes/observe/translate.py, the
same translation ``run`` uses), moved by ``sync`` (passive transitions), timed out by decide's
``time_out`` with a :class:`~reconciler.settings.ReconcilerConfig`, and counted by
``compute_ledger``. So "READY", "PREEMPTED", "TIMED_OUT" and "counted" mean exactly what they
mean to the listener.
"""

from __future__ import annotations

from dataclasses import dataclass

from providers.kubernetes.observe.scale_set import ObjectSource, ScaleSetTarget
from providers.kubernetes.observe.translate import build_snapshot
from reconciler.capacity import compute_ledger
from reconciler.config import ReconcilerConfig
from reconciler.decide import time_out
from reconciler.decision import DecideInput, Decision
from reconciler.snapshot import ClusterSnapshot, Demand, PairPods
from reconciler.sync import sync
from state_machine.events import Kind
from state_machine.states import PairState
from state_machine.store import Move, NewPair, PairStore

#: The survivor window of a probe: longer than any verify run, so no survivor is retired
#: by the judge while an exercise still looks at it.
PROBE_SURVIVOR_WINDOW = 86_400.0


@dataclass(frozen=True, slots=True)
class Verdict:
    """One observation of the pair: its state and why, and whether the ledger counted it."""

    state: PairState
    reason: str
    #: Placeholders of this pair the capacity ledger counted in this observation.
    counted: int
    pods: PairPods
    snapshot: ClusterSnapshot


class PairJudge:
    """Follows one probe pair from REQUESTED on, as the reconciler would."""

    def __init__(
        self, target: ScaleSetTarget, pair_id: str, *, ready_timeout: float, now: float
    ) -> None:
        self.target = target
        self.pair_id = pair_id
        self.config = ReconcilerConfig(
            scale_set=target.ers_name,
            proactive_capacity=0,
            placeholder_ready_timeout=ready_timeout,
            survivor_window=PROBE_SURVIVOR_WINDOW,
        )
        self.store = PairStore(target.ers_name)
        self.store.commit(
            [
                NewPair(pair_id, "verify probe"),
                Move(pair_id, PairState.REQUESTED, Kind.ACTIVE, "probe pods created"),
            ],
            now,
        )

    @property
    def state(self) -> PairState:
        record = self.store.view().get(self.pair_id)
        return record.state if record is not None else PairState.DELETED

    def observe(self, source: ObjectSource, now: float) -> Verdict:
        snapshot = build_snapshot(source, self.target, now=now, demand=Demand(0))
        self.store.commit(sync(self.store.view().values(), snapshot), now)
        view = self.store.view()
        decision = Decision(states={pid: r.state for pid, r in view.items()})
        time_out(DecideInput(view, snapshot, self.config, now, "verify", False), decision)
        self.store.commit(decision.changes, now)
        others = set(snapshot.placeholders) - {self.pair_id}
        ready = 1 if self.state is PairState.READY else 0
        ledger = compute_ledger(snapshot, ready, releasing=others)
        record = self.store.view().get(self.pair_id)
        return Verdict(
            state=self.state,
            reason=record.reason if record is not None else "deleted",
            counted=ledger.runner_placeholders + ledger.workflow_placeholders,
            pods=snapshot.placeholders.get(self.pair_id, PairPods()),
            snapshot=snapshot,
        )
