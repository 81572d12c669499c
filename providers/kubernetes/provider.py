"""One object that wires the Kubernetes provider for one scale set (for the listener app).

    provider = KubernetesProvider(api_client, settings, target, instance="abcde",
                                  on_event=observed)  # observed(Verdict): relevance.py
    provider.start()
    if not provider.wait_synced(60): ...          # no decision before the first full list
    findings = provider.startup_checks()          # refuse to start on errors
    snapshot = provider.snapshot(now=clock.now(), demand=demand)   # per reconcile, no API call
    subscriber = PlaceholderSubscriber(provider.writer, namespace=target.placeholder_namespace,
                                       clock=clock, config=config)
    ...
    provider.stop()

Reading a snapshot never builds the writer: both follow the same placeholder builder, and
the writer is created on first use of :attr:`KubernetesProvider.writer`.

The workflow half is placed like the hook template's pod spec (nodeSelector, tolerations,
node affinity, schedulerName), read from the ConfigMap the runner template mounts at
``ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE`` (:mod:`providers.kubernetes.pods.hook_template`), since
that is where the hook places workflow pods. When it cannot be read (no such variable, not a
ConfigMap volume, the ConfigMap missing or not YAML, no RBAC to list ConfigMaps) the half is
placed like the runner pod, as before that could be read, and a warning says why once per
change. An edit of that ConfigMap rebuilds the builder like a template change does.

The placeholder builder follows the EphemeralRunnerSet's runner template
(``spec.ephemeralRunnerSpec``) and identity. ARC itself never edits that template in place:
a Helm upgrade that changes it makes the AutoscalingRunnerSet controller create a new
EphemeralRunnerSet and a new listener (upstream ``autoscalingrunnerset_controller``, the
``actions.github.com/runner-spec-hash`` annotation). A hand edit does change it in place, and
the next placeholders are then sized like the new runners. The builder is not rebuilt on every
resourceVersion: the scaler patches ``spec.replicas`` and ARC updates the status all the time,
and a rebuild also resets the fit estimate's memo and refresh throttle. The fit estimate is
computed only when Karpenter NodePools are present.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes import client

from providers.kubernetes.checks import Finding, run_startup_checks
from providers.kubernetes.observe.scale_set import ScaleSetTarget
from providers.kubernetes.observe.translate import build_snapshot
from providers.kubernetes.placement.inputs import PlacementBounds
from providers.kubernetes.pods.hook_template import (
    HookSource,
    HookTemplateError,
    locate,
    parse,
    placement_text,
)
from providers.kubernetes.pods.placeholders import (
    PlaceholderPodBuilder,
    PlaceholderSpecError,
    runner_pod_template,
)
from providers.kubernetes.watch.cache import KubeCache
from providers.kubernetes.watch.targets import WatchTarget, default_targets
from providers.kubernetes.write.writer import KubernetesPlaceholderWriter
from reconciler.settings import CapacityAwareSettings
from reconciler.snapshot import ClusterSnapshot, Demand

log = logging.getLogger(__name__)


class ProviderNotReady(RuntimeError):
    """The cache has not synced, or the EphemeralRunnerSet is not (yet) visible."""


def template_key(ers: Mapping[str, Any], hook: str = "") -> str:
    """What the placeholder builder is built from: the ERS's identity and runner template, and
    the hook template's version (``hook``)."""
    meta = ers.get("metadata") or {}
    spec = (ers.get("spec") or {}).get("ephemeralRunnerSpec")
    return json.dumps([meta.get("uid"), meta.get("name"), spec, hook], sort_keys=True, default=str)


def hook_version(source: HookSource, configmap: Mapping[str, Any] | None) -> str:
    """Changes when the hook template's ConfigMap (or where it is mounted from) does."""
    version = ((configmap or {}).get("metadata") or {}).get("resourceVersion")
    return f"{source.configmap}/{source.key}@{version}"


class KubernetesProvider:
    def __init__(
        self,
        api_client: client.ApiClient,
        settings: CapacityAwareSettings,
        target: ScaleSetTarget,
        *,
        instance: str,
        on_change: Callable[[str], None] | None = None,
        targets: list[WatchTarget] | None = None,
        writer_concurrency: int = 4,
        **cache_options: Any,
    ) -> None:
        self.settings = settings
        self.target = target
        self.instance = instance
        self.cache = KubeCache(
            api_client, targets or default_targets(target), on_change=on_change, **cache_options
        )
        self._api_client = api_client
        self._writer_concurrency = writer_concurrency
        self._writer: KubernetesPlaceholderWriter | None = None
        #: The builder of the template last seen (``_template``), shared with the writer.
        self._current: PlaceholderPodBuilder | None = None
        self._placement: PlacementBounds | None = None
        self._template: str | None = None
        #: The last snapshot's ``switched_off`` (one log line per change).
        self._switched_off: str | None = None

    def start(self) -> KubernetesProvider:
        self.cache.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the cache's watches (waiting up to ``timeout`` for each) and the writer."""
        self.cache.stop(timeout)
        if self._writer is not None:
            self._writer.close()

    def wait_synced(self, timeout: float) -> bool:
        return self.cache.wait_synced(timeout)

    def ers(self) -> Mapping[str, Any]:
        ers = self.cache.get(
            "EphemeralRunnerSet", self.target.runner_namespace, self.target.ers_name
        )
        if ers is None:
            raise ProviderNotReady(
                f"EphemeralRunnerSet {self.target.runner_namespace}/{self.target.ers_name} is "
                "not in the cache (not synced yet, missing, or no RBAC to watch it)"
            )
        return ers

    def _hook(
        self, ers: Mapping[str, Any]
    ) -> tuple[HookSource | HookTemplateError, Mapping[str, Any] | None]:
        """Where the hook template is mounted from (or why nowhere readable), and its
        ConfigMap as the cache holds it (None: not there)."""
        try:
            source = locate(runner_pod_template(ers))
        except HookTemplateError as exc:
            return exc, None
        return source, self.cache.get("ConfigMap", self.target.runner_namespace, source.configmap)

    def _workflow_pod_spec(
        self, source: HookSource | HookTemplateError, configmap: Mapping[str, Any] | None
    ) -> Mapping[str, Any] | None:
        """The hook template's pod spec, or None (placed like the runner) with a warning."""
        if isinstance(source, HookTemplateError):
            problem = str(source)
        elif configmap is None and self._no_configmaps():
            problem = (
                f"{source.where}: the listener may not list ConfigMaps in namespace "
                f"{self.target.runner_namespace}; grant it with `arc-capacity-listener rbac`"
            )
        else:
            try:
                hook = parse(source, configmap)
            except HookTemplateError as exc:
                problem = str(exc)
            else:
                log.info(
                    "EphemeralRunnerSet %s: workflow placeholders are placed like the hook "
                    "template's workflow pods (%s): %s",
                    self.target.ers_name,
                    hook.where,
                    placement_text(hook.spec),
                )
                return hook.spec
        log.warning(
            "EphemeralRunnerSet %s: cannot read the hook template (%s); workflow placeholders "
            "are placed like the runner pod, which is right only where the hook template "
            "places workflow pods the same way",
            self.target.ers_name,
            problem,
        )
        return None

    def _no_configmaps(self) -> bool:
        """The ConfigMap watch answered 403/404 (no RBAC): the cache holds none."""
        return any(key.startswith("ConfigMap/") for key in self.cache.absent())

    def _builder(self) -> PlaceholderPodBuilder:
        """The placeholder builder of the current EphemeralRunnerSet template and hook
        template (rebuilt only when either changes; an existing writer gets the new one)."""
        ers = self.ers()
        source, configmap = self._hook(ers)
        hook = hook_version(source, configmap) if isinstance(source, HookSource) else str(source)
        version = template_key(ers, hook)
        builder = self._current
        if builder is not None and version == self._template:
            return builder
        same_ns = self.target.placeholder_namespace == self.target.runner_namespace
        workflow_spec = self._workflow_pod_spec(source, configmap)
        try:
            builder = PlaceholderPodBuilder(
                self.settings,
                ers,
                instance=self.instance,
                namespace=self.target.placeholder_namespace,
                owner=ers if same_ns else None,
                workflow_pod_spec=workflow_spec,
            )
        except PlaceholderSpecError as exc:
            if builder is None:
                raise
            # A template changed to one we cannot size: keep sizing placeholders like the
            # last good one (the runners already running match it) and say so once.
            log.warning(
                "EphemeralRunnerSet %s: its new runner template cannot size placeholders: "
                "%s; keeping the previous sizes",
                self.target.ers_name,
                exc,
            )
            self._template = version
            return builder
        self._current, self._template = builder, version
        if self._writer is not None:
            self._writer.builder = builder
        return builder

    @property
    def writer(self) -> KubernetesPlaceholderWriter:
        """The PlaceholderWriter (needs the EphemeralRunnerSet in the cache); created on first
        use, then kept: a changed template swaps its builder (see :meth:`_builder`)."""
        builder = self._builder()
        if self._writer is None:
            self._writer = KubernetesPlaceholderWriter(
                self._api_client, builder, cache=self.cache, max_workers=self._writer_concurrency
            )
        return self._writer

    def startup_checks(self) -> list[Finding]:
        try:
            pair = self._builder()
        except (ProviderNotReady, PlaceholderSpecError):
            pair = None  # the runner-template check names why
        return run_startup_checks(self.cache, self.target, self.settings.priority_classes, pair)

    def snapshot(self, *, now: float, demand: Demand) -> ClusterSnapshot:
        """A snapshot from the cache (no API call). Raises ProviderNotReady before sync."""
        if not self.cache.has_synced:
            raise ProviderNotReady(f"cache not synced yet: {', '.join(self.cache.unsynced())}")
        builder: PlaceholderPodBuilder | None = None
        try:
            builder = self._builder()
            placement = self._placement
            if placement is None or placement.builder is not builder:  # template changed
                placement = self._placement = PlacementBounds(self.cache, self.target, builder)
            fit, launches = placement(now)
        except (ProviderNotReady, PlaceholderSpecError) as exc:
            # No ramp bounds without a usable template; the snapshot itself is still valid
            # (and the start-up checks report the template problem).
            log.debug("no fit estimate: %s", exc)
            fit, launches = None, None
        snapshot = build_snapshot(
            self.cache,
            self.target,
            now=now,
            demand=demand,
            fit=fit,
            launches=launches,
            hot=self.settings.hot_runners != 0,
            placed_by_hook_template=self._placement_fact(),
        )
        if builder is not None:
            builder.observe(snapshot)
        self._note_switched_off(snapshot.switched_off)
        return snapshot

    def drop_snapshot(self, *, now: float, demand: Demand) -> ClusterSnapshot:
        """What the drop check reads: no fit estimate (cheap); from the cache, no API call."""
        if not self.cache.has_synced:
            raise ProviderNotReady(f"cache not synced yet: {', '.join(self.cache.unsynced())}")
        snapshot = build_snapshot(
            self.cache,
            self.target,
            now=now,
            demand=demand,
            hot=self.settings.hot_runners != 0,
            placed_by_hook_template=self._placement_fact(),
        )
        self._note_switched_off(snapshot.switched_off)
        return snapshot

    def _placement_fact(self) -> bool | None:
        """Whether the current builder places workflow halves by the hook template (None: no
        builder yet), for the snapshot to carry."""
        return self._current.placed_by_hook_template if self._current is not None else None

    def _note_switched_off(self, reason: str | None) -> None:
        if reason == self._switched_off:
            return
        if reason is not None:
            log.warning(
                "scale set %s switched off by ARC (%s): advertising 0 and releasing every "
                "placeholder until ARC stops this listener or the runner spec is fixed",
                self.target.ers_name,
                reason,
            )
        else:
            log.info(
                "scale set %s is on again (%s no longer holds): capacity-aware sizing resumes",
                self.target.ers_name,
                self._switched_off,
            )
        self._switched_off = reason
