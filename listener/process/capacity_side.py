"""The capacity-aware side of the listener process (phase D) and its end: the permission
wait, the capacity-aware part, its demand pollers, and deleting this instance's placeholders
at shutdown.

:class:`CapacitySide` is handed the process's context (listener/process/context.py; the
process, listener/process/app.py, orders the phases) and the credentials; it owns the demand
(:func:`scaleset.demand.scale_set_demand`) and, once started, the part
(listener/process/assembly.py). A demand source's changed answer reaches the part's loop as
one ``DEMAND_CHANGED`` trigger.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kubernetes import client as k8s
from pydantic import SecretStr

from listener.arc.statistics_refresh import StatisticsRefresher
from listener.process.assembly import CapacityAwarePart
from listener.process.context import ProcessContext
from listener.process.startup import FatalError, Stopped, blind_at_zero, refuse_to_start
from listener.process.supervise import supervised
from providers.actions.auth import Credentials
from providers.actions.session import MessageSession
from providers.backoff import Backoff
from providers.demand.build import build_remote_sources
from providers.fleet.prometheus import PrometheusFleetReader
from providers.fleet.share import fleet_share_source
from providers.hud.client import HudClient, HudDemandSource, scale_set_labels
from providers.kubernetes.lease.fence import LeaseFence
from providers.kubernetes.permissions import (
    CannotCheck,
    missing_permissions,
    required_permissions,
)
from providers.kubernetes.pods.labels import LABEL_INSTANCE, LABEL_PAIR, LABEL_SCALE_SET
from providers.kubernetes.watch.cache import KubeCache
from reconciler.controller import DEMAND_CHANGED
from reconciler.ports import PodRef
from scaleset.demand import ScaleSetDemand, scale_set_demand
from scaleset.ports import ScalerControls

log = logging.getLogger("listener")

#: Per-request timeout of the placeholder deletes at exit (they run in parallel).
SHUTDOWN_REQUEST_TIMEOUT = 1.0
#: How often the HUD poller looks whether the message session (our labels) is open yet.
SESSION_WAIT_STEP = 0.5
#: Longest blocking wait between two looks at the stop signal (SIGTERM within 5 s).
STOP_CHECK = 0.5
#: Backoff of the start-up permission check (doubling from the first, ``ProcessEnv.
#: permission_retry``, to this).
PERMISSION_RETRY_MAX = 300.0


def owned_by(pod: Mapping[str, Any], *, scale_set: str, instance: str, adopted: set[str]) -> bool:
    """Is ``pod`` a placeholder of ``scale_set`` this instance created or adopted?"""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if labels.get(LABEL_SCALE_SET) != scale_set:
        return False
    return labels.get(LABEL_INSTANCE) == instance or labels.get(LABEL_PAIR) in adopted


class CapacitySide:
    """Phase D and the placeholder shutdown of one listener process (see module doc)."""

    def __init__(self, ctx: ProcessContext, credentials: Credentials) -> None:
        self.ctx = ctx
        self.config = ctx.config
        self.capacity = ctx.settings
        self.stop = ctx.stop
        self.metrics = ctx.metrics
        self.credentials = credentials
        #: The typed variables, parsed (and refused if bad) at the command line's entry.
        self.process_env = ctx.env
        #: The provider, runtime and loop, once phase D has started them.
        self.part: CapacityAwarePart | None = None
        self.permissions_pending = False
        self.hud: HudDemandSource | None = None
        # Demand sources (providers/demand): the statistics source is fed by the listener
        # loop; remote ones attach once the session (our labels) is open.
        # With fleetView on, decide sees this cluster's share of the fleet (docs/fleet.md).
        self.fleet = fleet_share_source(
            ctx.settings.fleet_view,
            ctx.config.runner_scale_set_name or ctx.config.ephemeral_runner_set_name,
            ctx.clock,
            self._demand_changed,
            ctx.metrics.record_fleet_view_error,
        )
        self.demand: ScaleSetDemand = scale_set_demand(
            ctx.settings, self._demand_changed, fleet=self.fleet
        )

    def new_part(self, api_client: k8s.ApiClient) -> CapacityAwarePart:
        """The provider, runtime and loop of this process's scale set, not started yet."""
        return CapacityAwarePart(api_client, self.ctx, self.demand)

    async def start(
        self,
        api_client: k8s.ApiClient,
        session: MessageSession,
        scaler: ScalerControls,
        *,
        fence: LeaseFence | None,
        refresher: StatisticsRefresher | None,
        check_lease: Callable[[], None],
    ) -> list[asyncio.Task[Any]]:
        """Phase D: permissions, the cache's first sync, the start-up checks, the runtime
        and its loop, the demand pollers. Returns the background tasks (none if stopped)."""
        part = self.new_part(api_client)
        if not await self.await_permissions(api_client, part.namespaces):
            return []  # stopped while waiting for permissions
        self.part = part.start()
        cache = part.provider.cache
        if not await self._wait_synced(cache, check_lease):
            raise FatalError(
                f"Kubernetes caches not synced after {self.process_env.sync_timeout:.0f}s: "
                f"{', '.join(cache.unsynced())}; every permission was granted, so the API "
                "server is slow or unreachable from this pod"
            )
        refuse_to_start(part.startup_checks())
        reconcile_loop = part.build(scaler)
        if part.writer is not None:
            part.writer.fence = fence
        log.info(
            "capacity-aware: instance %s, placeholders in %s",
            self.ctx.instance,
            part.target.placeholder_namespace,
        )
        tasks = [self._supervise("reconcile", lambda: reconcile_loop.run(self.stop))]
        combined = self.demand.combined
        log.info("demand sources: %s (combine: %s)", combined.name, combined.policy)
        if blind_at_zero(self.capacity):
            log.warning(
                "proactiveCapacity is 0, demand comes from the scale set's statistics only and "
                "demand.statisticsRefresh is 0: statistics arrive with job messages, and none "
                "come while 0 is advertised, so jobs queued from now on would wait forever; set "
                "demand.statisticsRefresh (default 2s), proactiveCapacity >= 1 or add a polled "
                "demand source (demand.sources: github, hud or http)"
            )
        if "statistics" in combined.order and refresher is not None:
            tasks.append(self._supervise("statistics", lambda: refresher.run(self.stop)))
        if self.capacity.hud.url and "hud" in combined.order:
            tasks.append(self._supervise("hud", lambda: self._poll_hud(session)))
        if {"github", "http"} & set(combined.order):
            tasks.append(self._supervise("demand", lambda: self._poll_remote_demand(session)))
        if self.fleet is not None:
            tasks.append(self._supervise("fleet", self._poll_fleet))
        return tasks

    async def _poll_fleet(self) -> None:
        """The fleet view every ``fleetView.pollInterval`` (providers/fleet)."""
        fleet, settings = self.fleet, self.capacity.fleet_view
        if fleet is None or settings.url is None:
            return
        token = self.ctx.env.variables.get(settings.token_env, "").strip()
        reader = PrometheusFleetReader(
            settings.url,
            fleet.fleet,
            timeout=settings.timeout,
            retries=settings.retries,
            token=SecretStr(token) if token else None,
            tenant=settings.tenant,
        )
        log.info(
            "fleet view: %s as cluster %s of fleet %s, every %gs (maxAge %gs)",
            reader.endpoint,
            fleet.cluster,
            fleet.fleet,
            settings.poll_interval,
            settings.max_age,
        )
        try:
            await fleet.run(reader.read, self.stop, settings.poll_interval)
        finally:
            await reader.aclose()

    def ready(self) -> bool:
        """The capacity side's part of readiness: started, with a fresh cache."""
        if self.part is None:
            return False
        cache = self.part.provider.cache
        return cache.has_synced and cache.stale_for() <= self.capacity.recalculate_interval

    async def await_permissions(self, api_client: k8s.ApiClient, namespaces: set[str]) -> bool:
        """Stay up, not ready, until every permission is granted (SelfSubjectAccessReview);
        log exactly what is missing, or that the API server cannot be reached; retry with
        backoff. A missing permission is fixed by ``arc-capacity-listener rbac``."""
        needed = required_permissions(sorted(namespaces))
        backoff = Backoff(self.process_env.permission_retry, PERMISSION_RETRY_MAX)
        retries = 0
        self.permissions_pending = True
        while not self.stop.is_set():
            delay = backoff.delay(retries)
            try:
                missing = await asyncio.to_thread(missing_permissions, api_client, needed)
            except CannotCheck as exc:
                log.warning("permission check: %s; retrying in %.0fs", exc, delay)
            else:
                if not missing:
                    self.permissions_pending = False
                    return True
                for permission in missing:
                    log.warning("missing permission: %s", permission)
                log.warning(
                    "not ready: %d permission(s) missing; grant them with `arc-capacity-listener "
                    "rbac --scale-set %s --namespace %s --apply`; retrying in %.0fs",
                    len(missing),
                    self.config.runner_scale_set_name or "<scale set>",
                    self.config.ephemeral_runner_set_namespace,
                    delay,
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), timeout=delay)
            retries += 1
        return False

    def _supervise(self, name: str, factory: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
        return asyncio.create_task(
            supervised(name, factory, self.stop, on_failure=self.metrics.record_background_failure),
            name=name,
        )

    async def _wait_synced(self, cache: KubeCache, check_lease: Callable[[], None]) -> bool:
        """The first list of every required kind, in short waits so SIGTERM is honoured."""
        deadline = self.ctx.clock.monotonic() + self.process_env.sync_timeout
        while not cache.has_synced:
            check_lease()
            if self.stop.is_set():
                raise Stopped("waiting for the first Kubernetes cache sync")
            remaining = deadline - self.ctx.clock.monotonic()
            if remaining <= 0:
                return False
            await asyncio.to_thread(cache.wait_synced, min(STOP_CHECK, remaining))
        return True

    async def _labels(self, session: MessageSession) -> tuple[str, ...]:
        """The scale set's labels, once the session is open (its name while it is not)."""
        while not session.is_open and not self.stop.is_set():
            await asyncio.sleep(SESSION_WAIT_STEP)
        labels = scale_set_labels(session.session.runner_scale_set) if session.is_open else ()
        return labels or (self.config.runner_scale_set_name,)

    async def _poll_hud(self, session: MessageSession) -> None:
        """Queued jobs for our labels every ``hud.pollInterval`` (``HudDemandSource`` logs an
        outage once and falls back). Labels come from the scale set, once the session is open."""
        hud = self.capacity.hud
        client = HudClient.from_settings(hud, env=self.ctx.env.variables)
        if client is None:  # not started without hud.url
            return
        try:
            self.hud = HudDemandSource(
                client,
                await self._labels(session),
                observer=self.metrics,
                on_change=self._demand_changed,
            )
            self.demand.combined.attach(self.hud)
            await self.hud.run(self.stop, hud.poll_interval)
        finally:
            await client.aclose()

    async def _poll_remote_demand(self, session: MessageSession) -> None:
        """The ``github`` / ``http`` demand sources, polled once the session (labels) is open."""
        labels = await self._labels(session)
        try:
            remote = build_remote_sources(
                self.demand.combined.order,
                self.capacity.demand,
                labels=labels,
                github=self.config.github_config(self.ctx.env.variables),
                credentials=self.credentials,
                env=self.ctx.env.variables,
                on_change=self._demand_changed,
            )
        except ValueError as exc:  # e.g. an org-scoped URL without demand.github.repositories
            log.error("demand sources not started: %s; using the others or the floor", exc)
            return
        try:
            for source, _ in remote.polled:
                self.demand.combined.attach(source)
            await asyncio.gather(*(s.run(self.stop, every) for s, every in remote.polled))
        finally:
            await remote.aclose()

    def _demand_changed(self) -> None:
        """A demand source's answer changed: a leading trigger (reconciler/schedule.py)."""
        if self.part is not None:
            self.part.trigger(DEMAND_CHANGED)

    def queued_from(self, source: str) -> int | None:
        """One demand source's latest queued jobs (None while it fails): for the metrics."""
        return self.demand.combined.latest(source).queued_jobs

    # --- shutdown ------------------------------------------------------------------------

    def delete_placeholders(self, *, leader: bool) -> None:
        """Only what this instance owns: pods it created (instance label) and pairs and hot
        slots it adopted (``owned_pairs``). Never another listener's pods. ``leader``: this process
        still holds the scale set's Lease."""
        part = self.part
        if part is None or part.writer is None:
            return
        writer = part.writer
        if not leader:
            # Lost the Lease: a new owner may have adopted our pairs already; deleting them
            # now would take its capacity away. It sweeps whatever it does not want.
            log.warning("shutting down without the Lease: leaving placeholders to the owner")
            writer.close()
            return
        if part.provider.cache.stale_for() > 0:
            # The API does not answer: the deletes would only wait out their timeouts inside
            # the exit's 5 s. The placeholders expire by their TTL or the next owner's sweep.
            log.warning("shutting down with the API unreachable: leaving placeholders to expire")
            writer.close()
            return
        writer.request_timeout = SHUTDOWN_REQUEST_TIMEOUT
        namespace = part.target.placeholder_namespace
        adopted = part.owned_pairs()
        ours = [
            PodRef(namespace, pod["metadata"]["name"], pod["metadata"].get("uid"))
            for pod in part.provider.cache.list("Pod", namespace)
            if owned_by(
                pod,
                scale_set=self.config.ephemeral_runner_set_name,
                instance=self.ctx.instance,
                adopted=adopted,
            )
        ]
        # Bounded by the writer's per-request timeout; the pod's grace period is 60 s.
        log.info("shutting down: deleting %d placeholder pods", len(ours))
        started = self.ctx.clock.monotonic()
        writer.delete_pods(ours)
        writer.close()
        log.info("placeholders deleted in %.1fs", self.ctx.clock.monotonic() - started)

    def close(self, timeout: float) -> None:
        if self.part is not None:
            self.part.stop(timeout=timeout)
