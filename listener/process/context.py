"""What every part of one listener process shares, handed over as one value.

The process (listener/process/app.py) builds a :class:`ProcessContext` once, at start, and
hands it to the capacity side (listener/process/capacity_side.py) and the capacity-aware part
(listener/process/assembly.py) instead of relaying the same collaborators through each
constructor's parameter list.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from listener.arc.config import ListenerConfig
from listener.arc.gate import CapacityGate
from listener.observability.http import StatusBoard
from listener.observability.metrics import PrometheusMetrics
from listener.process.environment import ProcessEnv
from reconciler.clock import Clock
from reconciler.settings import CapacityAwareSettings


@dataclass(frozen=True, slots=True)
class ProcessContext:
    """One listener process's shared collaborators (built once by ``ListenerApp``)."""

    #: ARC's listener config (``$LISTENER_CONFIG_PATH``).
    config: ListenerConfig
    #: The ``capacityAware`` block.
    settings: CapacityAwareSettings
    #: The environment, read once where the process starts (its variables and the typed ones).
    env: ProcessEnv
    #: Wall time (pair timestamps, placeholder expiry, the status board).
    clock: Clock
    #: This process's instance id (the placeholders' instance label).
    instance: str
    #: Set on SIGTERM/SIGINT: every phase ends within seconds.
    stop: asyncio.Event
    #: ``X-ScaleSetMaxCapacity``: what the next long poll advertises.
    gate: CapacityGate
    metrics: PrometheusMetrics
    #: The pair table and ledger ``/debug/pairs`` serves.
    status: StatusBoard
