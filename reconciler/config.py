"""What the reconciler is configured with, as one frozen value.

A plain module on purpose: the pure core (``state_machine/``, decide, sync, the step) imports
this and never the pydantic settings at the edge (:mod:`reconciler.settings`, whose
:meth:`~reconciler.settings.CapacityAwareSettings.reconciler_config` builds it from the
validated ``capacityAware`` block). ``tests/reconciler/test_pure_core.py`` holds the core to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from reconciler.warm_pool import WarmPoolPolicy


@dataclass(frozen=True, slots=True)
class ReconcilerConfig:
    """Everything decide needs, in one frozen object (timeouts included)."""

    scale_set: str
    proactive_capacity: int = 1
    placeholder_ready_timeout: float = 300.0
    survivor_window: float = 120.0
    placeholder_ttl: float = 1800.0
    max_pairs_in_flight: int = 1_000
    max_requests_per_step: int = 200
    hud_fallback_queued_jobs: int = 0
    #: New nodes per minute our pending pairs may cause (see CapacityAwareSettings).
    node_launch_rate: float = 30.0
    launch_group_size: int | None = None
    #: Of the reserve, slots held hot (reconciler/hot_slots.py ``split_reserve``).
    hot_runners: int | Literal["auto"] = 0
    #: Adaptive / scheduled warm pool; None: ``proactive_capacity`` as is. The reconciler
    #: replaces ``proactive_capacity`` with its size at every step.
    warm_pool: WarmPoolPolicy | None = None

    @property
    def lease_renew_before(self) -> float:
        """Renew a lease once less than half of it is left."""
        return self.placeholder_ttl / 2
