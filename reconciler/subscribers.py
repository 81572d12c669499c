"""Subscribers: the only place where transition events turn into side effects.

- :class:`PlaceholderSubscriber` creates both pods of a pair when it is requested, deletes
  what is left of a pair when it times out or is deleted, and executes lease renewals,
  orphan deletions and hot slots' placeholder creates (commands), all through a
  :class:`~reconciler.ports.PlaceholderWriter`.
- :class:`LoggingSubscriber` writes the one log line per transition, a pair's or a hot
  slot's.
- :class:`RecordingSubscriber` keeps everything it was told, for tests and the simulator.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from reconciler.clock import Clock
from reconciler.config import ReconcilerConfig
from reconciler.ports import (
    Command,
    CreatePlaceholder,
    DeleteOrphan,
    PairSpec,
    PlaceholderWriter,
    PodRef,
    RenewLease,
    Subscriber,
)
from state_machine.events import AnyTransition, HotTransitionEvent, TransitionEvent
from state_machine.states import PairState
from state_machine.table import CREATES_PODS_FROM, HAS_PODS, RELEASED

log = logging.getLogger(__name__)


class PlaceholderSubscriber:
    def __init__(
        self,
        writer: PlaceholderWriter,
        *,
        namespace: str,
        clock: Clock,
        config: ReconcilerConfig,
    ) -> None:
        self.writer = writer
        self.namespace = namespace
        self.clock = clock
        self.config = config

    def notify(self, events: Sequence[AnyTransition], commands: Sequence[Command]) -> None:
        for event in events:
            if not isinstance(event, TransitionEvent):
                # A hot slot's placeholder is created and deleted by the commands its step
                # returns (they carry the pod's uid precondition); its events are news only.
                continue
            if event.target is PairState.REQUESTED and event.source in CREATES_PODS_FROM:
                # From QUEUED both pods are new; a mend (from PREEMPTED) asks for both again,
                # and writers skip the survivor they already see (AlreadyExists is success).
                self.writer.create_pair(self._spec(event))
            elif _releases_pods(event):
                # The writer skips pods that are already gone, so a pair whose pods vanished
                # on their own costs no API call here.
                # Partial: the pair record keeps pod names, not uids, so the writer
                # still resolves each uid (cache, its own creates, tombstones) for the delete
                # precondition; carrying the observed uids here is left to a later change.
                self.writer.delete_pods(
                    [
                        PodRef(self.namespace, event.runner_pod),
                        PodRef(self.namespace, event.workflow_pod),
                    ]
                )
        for command in commands:
            if isinstance(command, RenewLease):
                self.writer.renew_lease(command.pods, command.expires_at)
            elif isinstance(command, DeleteOrphan):
                self.writer.delete_pods([command.pod])
            elif isinstance(command, CreatePlaceholder):
                self.writer.create_pair(command.spec)

    def _spec(self, event: TransitionEvent) -> PairSpec:
        return PairSpec(
            pair_id=event.pair_id,
            scale_set=event.scale_set,
            runner_pod=event.runner_pod,
            workflow_pod=event.workflow_pod,
            expires_at=self.clock.now() + self.config.placeholder_ttl,
        )


def _releases_pods(event: TransitionEvent) -> bool:
    """TIMED_OUT and DELETED free whatever pods the pair still has (none if never requested)."""
    return event.target in RELEASED and event.source is not None and event.source in HAS_PODS


class LoggingSubscriber:
    """One line per transition, same shape every time (``log_line`` of a pair's or a hot
    slot's event)."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.logger = logger or logging.getLogger("reconciler.transitions")

    def notify(self, events: Sequence[AnyTransition], commands: Sequence[Command]) -> None:
        for event in events:
            # The fields ride along so JSON log pipelines can filter on pair/from/to/reason
            # without parsing msg (docs/configuration.md#logs).
            self.logger.info(
                "transition %s", event.log_line(), extra={"fields": event.log_fields()}
            )
        for command in commands:
            if isinstance(command, DeleteOrphan):
                self.logger.info(
                    "orphan pod=%s/%s reason=%r",
                    command.pod.namespace,
                    command.pod.name,
                    command.reason,
                )
            elif isinstance(command, CreatePlaceholder):
                self.logger.info(
                    "hot slot=%s placeholder=%s created reason=%r",
                    command.spec.pair_id,
                    command.spec.workflow_pod,
                    command.reason,
                )
            else:
                self.logger.debug("renew lease pair=%s pods=%d", command.pair_id, len(command.pods))


class RecordingSubscriber:
    def __init__(self) -> None:
        self.events: list[TransitionEvent] = []
        self.hot_events: list[HotTransitionEvent] = []
        self.commands: list[Command] = []

    def notify(self, events: Sequence[AnyTransition], commands: Sequence[Command]) -> None:
        for event in events:
            if isinstance(event, TransitionEvent):
                self.events.append(event)
            else:
                self.hot_events.append(event)
        self.commands.extend(commands)

    def transitions(self) -> list[tuple[str, PairState | None, PairState]]:
        return [(e.pair_id, e.source, e.target) for e in self.events]


def notify_subscribers(
    subscribers: Iterable[Subscriber],
    events: Sequence[AnyTransition],
    commands: Sequence[Command],
) -> int:
    """Hand one step's committed events and commands to every subscriber, in order; returns
    how many failed. A failing subscriber is logged and does not stop the others: its effect
    (or its absence) is observed in a later snapshot, never turned into a transition here."""
    if not events and not commands:
        return 0
    errors = 0
    for subscriber in subscribers:
        try:
            subscriber.notify(events, commands)
        except Exception:
            errors += 1
            log.exception(
                "subscriber %s failed; its effects are re-observed next step",
                type(subscriber).__name__,
            )
    return errors
