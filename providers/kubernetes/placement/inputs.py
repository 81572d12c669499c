"""The launch ramp's two placement inputs for one scale set, read from the watch cache, and
the instance types its workflow placeholders prefer.

:class:`PlacementBounds` joins the fit estimate (:mod:`providers.kubernetes.placement.fit`, how many
new pairs could schedule), the launch facts (:mod:`providers.kubernetes.placement.packing`, how fast
nodes are coming) and the preference (:mod:`providers.kubernetes.placement.capped_pools`, which
types hold workflow pods well under a binding NodePool limit). It lives apart from them because it
needs them all: in ``packing`` it had to import ``fit`` inside a function, since ``fit``
imports ``packing``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Protocol

from providers.kubernetes.observe.scale_set import (
    ObjectSource,
    ScaleSetTarget,
    find_object,
    live_limits,
)
from providers.kubernetes.observe.signals import list_if_known
from providers.kubernetes.placement.capped_pools import CappedFit, capped_fits, preferred_types
from providers.kubernetes.placement.fit import FitMemo, fit_estimate
from providers.kubernetes.placement.packing import claim_facts, launch_facts
from providers.kubernetes.pods.churn_guard import (
    DoNotDisruptSetting,
    protects,
    workflow_pods_per_node,
)
from providers.kubernetes.watch.memo import ObjectMemo
from reconciler.snapshot import FitEstimate, LaunchFacts

log = logging.getLogger(__name__)


class PairShape(Protocol):
    """What a pair asks of a node:
    :class:`~providers.kubernetes.pods.placeholders.PlaceholderPodBuilder` has it; the fit estimate
    needs nothing else of the builder."""

    @property
    def runner_requests(self) -> Mapping[str, Decimal]: ...

    @property
    def workflow_requests(self) -> Mapping[str, Decimal]: ...

    @property
    def runner_placement(self) -> Mapping[str, Any]: ...

    @property
    def workflow_placement(self) -> Mapping[str, Any]: ...

    @property
    def prefers_fitting_types(self) -> bool:
        """``preferFittingTypes``: whether :meth:`prefer` reaches the pods at all."""

    def prefer(self, types: tuple[str, ...]) -> None:
        """The instance types the workflow half of pairs built from now on prefers."""

    @property
    def do_not_disrupt(self) -> DoNotDisruptSetting:
        """``doNotDisrupt``: only ``auto`` needs :meth:`hold`."""

    def hold(self, per_node: int | None) -> None:
        """The most workflow pods a node holds, for ``doNotDisrupt: auto`` (None: unknown)."""


class PlacementBounds:
    """The fit estimate and launch facts of one scale set, as the reconciler's snapshot needs,
    and the instance types its workflow placeholders prefer.

    The fit estimate scans every pod, so it is recomputed at most every ``refresh`` seconds,
    and with it the preference, which it hands to the builder (:meth:`PairShape.prefer`):
    NodePools and the live ``maxRunners`` change rarely, and a pair created in between
    carries the previous answer. Launch facts read only NodeClaims and are fresh on every
    call (the rate needs them so).
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
        self._held = False
        #: The instance types last handed to the builder.
        self.preferred_types: tuple[str, ...] = ()
        #: The workflow pods per node last handed to the builder (``doNotDisrupt: auto``).
        self.workflow_pods_per_node: int | None = None

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
            self._prefer()
            self._hold()
        if self._fit is None:  # no NodePools: no Karpenter, no launch rate to honour
            return None, None
        pair_cpu = self.builder.runner_requests.get("cpu", Decimal(0)) + (
            self.builder.workflow_requests.get("cpu", Decimal(0))
        )
        claims = self.source.list("NodeClaim")
        facts = launch_facts(claims, now=now, pair_cpu=pair_cpu, facts=self._claims)
        self._claims.age()
        return self._fit, facts

    def _prefer(self) -> None:
        """Hand the builder the types its workflow halves prefer; log when they change.
        Nothing to compute, hand over or log with ``preferFittingTypes: false``."""
        if not self.builder.prefers_fitting_types:
            return
        ers = find_object(
            self.source, "EphemeralRunnerSet", self.target.runner_namespace, self.target.ers_name
        )
        max_runners, _ = live_limits(self.source, self.target, ers)
        fits = capped_fits(
            list_if_known(self.source, "NodePool"),
            self.builder.workflow_requests,
            self.builder.runner_requests,
            self.builder.workflow_placement.get("nodeSelector") or {},
            self.builder.runner_placement.get("nodeSelector") or {},
            max_runners,
        )
        types = preferred_types(fits)
        if types != self.preferred_types:
            _log_preference(self.target.ers_name, types, fits)
        self.preferred_types = types
        self.builder.prefer(types)

    def _hold(self) -> None:
        """Hand the builder how many workflow pods a node holds (``doNotDisrupt: auto``) and
        log when whether auto protects changes. Nothing to do for any other setting."""
        if self.builder.do_not_disrupt != "auto":
            return
        per_node = workflow_pods_per_node(
            list_if_known(self.source, "NodePool"),
            self.builder.workflow_requests,
            self.builder.workflow_placement.get("nodeSelector") or {},
        )
        if protects(per_node) != protects(self.workflow_pods_per_node) or not self._held:
            _log_hold(self.target.ers_name, per_node)
        self._held = True
        self.workflow_pods_per_node = per_node
        self.builder.hold(per_node)


def _log_hold(scale_set: str, per_node: int | None) -> None:
    if per_node is None:
        why = "no NodePool hosting them allows an instance type known to hold one"
    else:
        why = f"one node of the allowed instance types holds at most {per_node}"
    verdict = "carry" if protects(per_node) else "do not carry"
    log.info(
        "scale set %s: workflow placeholders %s karpenter.sh/do-not-disrupt "
        "(doNotDisrupt: auto): %s workflow pod(s)",
        scale_set,
        verdict,
        why,
    )


def _log_preference(scale_set: str, types: tuple[str, ...], fits: list[CappedFit]) -> None:
    if not types:
        log.info("scale set %s: workflow placeholders prefer no instance type", scale_set)
        return
    why = "; ".join(
        f"NodePool {f.pool} limits {f.limits_text} "
        f"hold fewer than maxRunners pairs and allow "
        f"{', '.join(p.instance_type for p in f.poor)}, "
        f"where one {f.poor[0].instance_type} holds {f.poor[0].pairs} workflow pod(s) using "
        f"{f.poor[0].share:.0%}, one {f.best.instance_type} {f.best.pairs} using {f.best.share:.0%}"
        for f in fits
        if f.poor
    )
    log.info(
        "scale set %s: workflow placeholders prefer instance types %s: %s",
        scale_set,
        ", ".join(types),
        why,
    )
