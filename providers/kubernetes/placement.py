"""The launch ramp's two placement inputs for one scale set, read from the watch cache.

:class:`PlacementBounds` joins the fit estimate (:mod:`providers.kubernetes.fit`, how many new
pairs could schedule) and the launch facts (:mod:`providers.kubernetes.packing`, how fast
nodes are coming). It lives apart from both because it needs both: in ``packing`` it had to
import ``fit`` inside a function, since ``fit`` imports ``packing``.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Protocol

from providers.kubernetes.fit import FitMemo, fit_estimate
from providers.kubernetes.memo import ObjectMemo
from providers.kubernetes.packing import claim_facts, launch_facts
from providers.kubernetes.scale_set import ObjectSource, ScaleSetTarget
from reconciler.snapshot import FitEstimate, LaunchFacts


class PairShape(Protocol):
    """What a pair asks of a node: :class:`~providers.kubernetes.placeholders.PlaceholderPodBuilder`
    has it; the fit estimate needs nothing else of the builder."""

    @property
    def runner_requests(self) -> Mapping[str, Decimal]: ...

    @property
    def workflow_requests(self) -> Mapping[str, Decimal]: ...

    @property
    def runner_placement(self) -> Mapping[str, Any]: ...

    @property
    def workflow_placement(self) -> Mapping[str, Any]: ...


class PlacementBounds:
    """The fit estimate and launch facts of one scale set, as the reconciler's snapshot needs.

    The fit estimate scans every pod, so it is recomputed at most every ``refresh`` seconds;
    launch facts read only NodeClaims and are fresh on every call (the rate needs them so).
    """

    def __init__(
        self,
        source: ObjectSource,
        target: ScaleSetTarget,
        builder: PairShape,
        *,
        refresh: float = 10.0,
    ) -> None:
        self.source, self.target, self.builder, self.refresh = source, target, builder, refresh
        self._fit: FitEstimate | None = None
        self._fit_at = float("-inf")
        self._memo: FitMemo | None = None
        self._claims = ObjectMemo(claim_facts)

    def __call__(self, now: float) -> tuple[FitEstimate | None, LaunchFacts | None]:
        if now - self._fit_at >= self.refresh:
            self._fit_at = now
            if self._memo is None:
                self._memo = FitMemo()
            workflow = self.builder.workflow_placement
            self._fit = fit_estimate(
                self.source,
                self.target,
                self.builder.runner_requests,
                self.builder.workflow_requests,
                tolerations=workflow.get("tolerations") or (),
                runner_selector=self.builder.runner_placement.get("nodeSelector") or {},
                workflow_selector=workflow.get("nodeSelector") or {},
                memo=self._memo,
            )
        if self._fit is None:  # no NodePools: no Karpenter, no launch rate to honour
            return None, None
        pair_cpu = self.builder.runner_requests.get("cpu", Decimal(0)) + (
            self.builder.workflow_requests.get("cpu", Decimal(0))
        )
        claims = self.source.list("NodeClaim")
        facts = launch_facts(claims, now=now, pair_cpu=pair_cpu, facts=self._claims)
        self._claims.age()
        return self._fit, facts
