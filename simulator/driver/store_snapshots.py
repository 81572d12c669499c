"""The simulated store's view as a scale set's snapshot port (``SnapshotPort`` of
scaleset/ports.py): the listener provider's own translation
(providers/kubernetes/observe/translate.py), with the fit estimate of the current process's
placeholder builder (providers/kubernetes/placement/inputs.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from providers.kubernetes.observe.scale_set import ScaleSetTarget
from providers.kubernetes.observe.translate import SnapshotMemo, build_snapshot
from providers.kubernetes.placement.inputs import PlacementBounds
from providers.kubernetes.pods.placeholders import PlaceholderPodBuilder
from reconciler.snapshot import ClusterSnapshot, Demand, FitEstimate, LaunchFacts


class StoreSnapshots:
    """Full and cheap snapshots of one scale set, read from ``view()`` (the store's cache
    view, or a fault's stale copy of it) each time."""

    def __init__(
        self,
        view: Callable[[], Any],
        target: ScaleSetTarget,
        builder: Callable[[], PlaceholderPodBuilder],
        *,
        use_fit: bool,
        fit_refresh: float,
        hot: bool,
    ) -> None:
        self.view = view
        self.target = target
        self.builder = builder
        self.use_fit = use_fit
        self.fit_refresh = fit_refresh
        self.hot = hot
        self._placement: PlacementBounds | None = None
        #: Pod, node and runner parses reused across these snapshots (same facts).
        self._memo = SnapshotMemo()

    def full(self, now: float, demand: Demand) -> ClusterSnapshot:
        """What a step reads: the store's view with the fit estimate."""
        fit, launches = self._bounds(now)
        snapshot = self._build(now, demand, fit, launches)
        self.builder().observe(snapshot)
        return snapshot

    def cheap(self, now: float, demand: Demand) -> ClusterSnapshot:
        """What a drop check reads: no fit estimate."""
        return self._build(now, demand, None, None)

    def _bounds(self, now: float) -> tuple[FitEstimate | None, LaunchFacts | None]:
        if not self.use_fit:
            return None, None
        builder = self.builder()
        if self._placement is None or self._placement.builder is not builder:
            # A restarted process has a builder of its own (as the listener's provider).
            self._placement = PlacementBounds(
                self.view(), self.target, builder, refresh=self.fit_refresh
            )
        return self._placement(now)

    def _build(
        self, now: float, demand: Demand, fit: FitEstimate | None, launches: LaunchFacts | None
    ) -> ClusterSnapshot:
        return build_snapshot(
            self.view(),
            self.target,
            now=now,
            demand=demand,
            fit=fit,
            launches=launches,
            memo=self._memo,
            hot=self.hot,
            placed_by_hook_template=self.builder().placed_by_hook_template,
        )
