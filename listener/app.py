"""The listener process: wiring, run, ordered shutdown.

``run_from_environment()`` is what ``arc-capacity-listener run`` does:

1. Read ARC's listener config (``$LISTENER_CONFIG_PATH``) and the ``capacityAware`` block
   (``$CAPACITY_AWARE_CONFIG`` / ``$CAPACITY_AWARE_JSON``). A bad value: one line on stderr,
   exit 1, nothing started.
2. Logging (level/format from the config, secrets redacted), metrics and the HTTP server
   (``/metrics``, ``/healthz``, ``/readyz``, ``/debug/pairs``).
3. The Actions client, the message session and the scaler (merge-patches of the
   EphemeralRunnerSet, exactly like ARC's).
4. With ``capacityAware.enabled`` (listener/capacity_aware.py): the watch-fed cache (waits
   until every required kind is listed), the start-up checks (errors stop the process with
   what to change), the reconciler with its subscribers, its loop and the demand pollers;
   the reconciler's capacity feeds the listener's ``X-ScaleSetMaxCapacity`` (latest wins; a
   drop cuts the long poll short). Disabled: the header is the configured ``max_runners``,
   as in stock ARC.
5. SIGTERM/SIGINT: stop advertising first (the session is deleted), then stop the reconciler
   and delete our placeholders, then stop the cache and the HTTP server. Exit 0.
   A fatal error (session refused, scaler patch failed...) logs one line and exits 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kubernetes import client as k8s

from listener.arc_config import (
    ConfigError,
    ListenerConfig,
    config_path_from_env,
    load_listener_config,
    resolve_vault_credentials,
)
from listener.capacity_aware import CapacityAwarePart, scale_set_target
from listener.capacity_config import load_capacity_aware
from listener.gate import CapacityGate
from listener.http import ListenerHttpServer, StatusBoard, resolve_http_settings
from listener.logging import LIBRARY_LEVEL_ENV, LoggingConfigError, configure_logging
from listener.loop import Listener, run_open_session
from listener.metrics import PrometheusMetrics, ScaleSetIdentity
from listener.scaler import KubernetesScalerWriter, Scaler
from listener.startup import (
    FatalError,
    Stopped,
    blind_at_zero,
    capacity_off_reason,
    kubernetes_api_client,
    new_instance_id,
    refuse_to_start,
)
from listener.statistics_refresh import StatisticsRefresher
from listener.supervise import supervised
from providers.actions.client import ActionsClient
from providers.actions.session import MessageSession, default_owner_name
from providers.demand.build import build_remote_sources
from providers.demand.combine import Combine, CombinedDemand
from providers.demand.statistics import StatisticsDemand
from providers.hud.client import HudClient, HudDemandSource, scale_set_labels, token_from_env
from providers.kubernetes.cache import KubeCache
from providers.kubernetes.labels import LABEL_INSTANCE, LABEL_PAIR, LABEL_SCALE_SET
from providers.kubernetes.lease import LeaseElector, LeaseTiming, lease_name
from providers.kubernetes.permissions import (
    CannotCheck,
    missing_permissions,
    required_permissions,
)
from reconciler.clock import SystemClock
from reconciler.ports import PodRef
from reconciler.settings import CapacityAwareSettings, SettingsError
from reconciler.snapshot import Demand

log = logging.getLogger("listener")

#: How long to wait for the first list of every required kind before giving up.
CACHE_SYNC_TIMEOUT = float(os.environ.get("CAPACITY_AWARE_SYNC_TIMEOUT", "120"))
#: Backoff of the start-up permission check (doubling from the first to the max).
PERMISSION_RETRY_FIRST = float(os.environ.get("CAPACITY_AWARE_PERMISSION_RETRY", "5"))
PERMISSION_RETRY_MAX = 300.0
#: How often the HUD poller looks whether the message session (our labels) is open yet.
SESSION_WAIT_STEP = 0.5
#: Longest blocking wait between two looks at the stop signal (SIGTERM within 5 s).
STOP_CHECK = 0.5
#: How long shutdown waits for the informer threads (daemons) to notice the stop.
CACHE_STOP_TIMEOUT = 1.0
#: Seconds a Lease holder is trusted without renewing (client-go's default 15).
LEASE_DURATION = int(os.environ.get("CAPACITY_AWARE_LEASE_DURATION", "15"))


def run_from_environment(env: Mapping[str, str] | None = None) -> int:
    env = dict(os.environ if env is None else env)
    try:
        path = config_path_from_env(env)
        config = resolve_vault_credentials(load_listener_config(path), file=path)
        capacity = load_capacity_aware(env)
        configure_logging(
            config.log_level or "info",
            config.log_format or "text",
            secrets=[config.github_token, config.github_app_private_key],
            library_level=env.get(LIBRARY_LEVEL_ENV),
        )
    except (ConfigError, SettingsError, LoggingConfigError) as exc:
        print(f"arc-capacity-listener: {exc}", file=sys.stderr)
        return 1
    app = ListenerApp(config, capacity, env)
    try:
        asyncio.run(app.run())
    except Stopped as exc:
        log.info("stopped while %s", exc)
        return 0
    except FatalError as exc:
        log.error("fatal: %s", exc)
        return 1
    except Exception as exc:  # the loop ended on an error, as ARC's does: exit 1, one line
        log.error("fatal: %s: %s", type(exc).__name__, exc)
        return 1
    return 0


def owned_by(pod: Mapping[str, Any], *, scale_set: str, instance: str, adopted: set[str]) -> bool:
    """Is ``pod`` a placeholder of ``scale_set`` this instance created or adopted?"""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if labels.get(LABEL_SCALE_SET) != scale_set:
        return False
    return labels.get(LABEL_INSTANCE) == instance or labels.get(LABEL_PAIR) in adopted


class ListenerApp:
    def __init__(
        self, config: ListenerConfig, capacity: CapacityAwareSettings, env: Mapping[str, str]
    ) -> None:
        self.config = config
        self.capacity = capacity
        self.env = env
        self.clock = SystemClock()
        self.instance = new_instance_id()
        self.stop = asyncio.Event()
        self.status = StatusBoard(config.ephemeral_runner_set_name)
        self.metrics = PrometheusMetrics(
            ScaleSetIdentity.from_config_url(
                config.configure_url,
                name=config.ephemeral_runner_set_name,
                namespace=config.ephemeral_runner_set_namespace,
            ),
            min_runners=config.min_runners,
            max_runners=config.max_runners,
            clock=self.clock,
            metrics_config=config.metrics,
        )
        self.gate = CapacityGate(
            config.max_runners,
            # Capacity-aware: nothing is advertised until the scheduler confirmed something.
            initial=0 if capacity.enabled else None,
            cut_on_drop=capacity.enabled and capacity.cut_poll_on_drop,
            cut_on_rise=capacity.enabled and capacity.cut_poll_on_rise,
            debounce=capacity.cut_poll_debounce,
            cut_when_full=capacity.enabled and capacity.cut_poll_when_full,
        )
        self.credentials = config.credentials()
        #: The provider, reconciler and loop, once capacity-aware mode has started (phase D).
        self.part: CapacityAwarePart | None = None
        self.permissions_pending = False
        self.hud: HudDemandSource | None = None
        self.http: ListenerHttpServer | None = None
        self.elector: LeaseElector | None = None
        #: Renews the Lease from the moment it is won (through every later phase).
        self.holding: asyncio.Task[None] | None = None
        self.session_open = False
        #: Reads statistics by session refresh while blind (listener/statistics_refresh.py).
        self.refresher: StatisticsRefresher | None = None
        # Demand sources (providers/demand): the statistics source is fed by the listener
        # loop; remote ones attach once the session (our labels) is open.
        self._wake: Callable[[], None] | None = None
        self.demand = CombinedDemand(
            capacity.demand.resolved_sources(capacity.hud.url), Combine(capacity.demand.combine)
        )
        self.statistics = StatisticsDemand(on_change=self._wake_reconciler)
        if "statistics" in self.demand.order:
            self.demand.attach(self.statistics)
        self.metrics.watch_readiness(self._ready)
        if capacity.enabled:
            self.metrics.watch_demand(
                lambda: self.demand.current.queued_jobs,
                {name: functools.partial(self._queued_from, name) for name in self.demand.order},
            )

    # --- run ---------------------------------------------------------------------------

    async def run(self) -> None:
        """The phases, in order; SIGTERM ends any of them within seconds (exit 0).

        A. HTTP (probes, metrics) and the clients; nothing written anywhere.
        B. Capacity-aware only: win the scale set's Lease (a second listener waits here,
           not ready, owning and touching nothing).
        C. Open the message session: proves the credentials before anything is written.
        D. Capacity-aware only: the cache (first sync), start-up checks, reconciler, HUD.
        E. Listen until SIGTERM or an error.
        From B on, the Lease is renewed alongside; losing it ends the process (exit 1).
        """
        self._install_signal_handlers()
        api_client = await asyncio.to_thread(kubernetes_api_client, self.env)
        self._start_http()
        client = ActionsClient(
            self.config.github_config(self.env),
            self.credentials,
            scale_set_id=self.config.runner_scale_set_id,
            root_ca=self.config.server_root_ca,
            on_error=self.metrics.record_actions_error,
        )
        session = MessageSession(client)
        scaler = Scaler(
            KubernetesScalerWriter(api_client),
            namespace=self.config.ephemeral_runner_set_namespace,
            name=self.config.ephemeral_runner_set_name,
            min_runners=self.config.min_runners,
            max_runners=self.config.max_runners,
        )
        self.refresher = StatisticsRefresher(
            session,
            self.gate,
            self.statistics.observe_statistics,
            interval=self.capacity.demand.statistics_refresh,
            metrics=self.metrics,
        )
        listener = Listener(session, scaler, self.gate, self.metrics, self.refresher.observe)
        self.metrics.record_advertised(self.gate.value)
        side_tasks: list[asyncio.Task[Any]] = []
        try:
            if self.capacity.enabled and not await self._elect(api_client):
                return  # stopped while waiting for the Lease
            if self.elector is not None:
                self.holding = asyncio.create_task(self.elector.hold(self.stop), name="lease")
                side_tasks.append(self.holding)
            if await self._unless_stopped(session.open(), "opening the message session"):
                return
            self.session_open = True
            if self.capacity.enabled:
                side_tasks = await self._start_capacity_aware(api_client, session, listener)
            else:
                log.info("capacity-aware mode is off: %s", capacity_off_reason(self.env))
            await self._listen(session, listener, side_tasks)
        finally:
            for task in side_tasks:
                task.cancel()
            await asyncio.gather(*side_tasks, return_exceptions=True)
            # Then release the capacity we reserved, and only then the Lease: a successor
            # must not adopt pods we are about to delete.
            await asyncio.to_thread(self._delete_placeholders)
            if self.elector is not None:
                await asyncio.to_thread(self.elector.release)
                self.metrics.record_owner(False)
            self.session_open = False
            await session.close()  # no-op when the listener already closed it
            await client.aclose()
            self._close()

    async def _listen(
        self,
        session: MessageSession,
        listener: Listener,
        side_tasks: list[asyncio.Task[Any]],
    ) -> None:
        """Phase E. The listener task, the stop signal and the Lease renewals race: the first
        to end decides (a lost Lease or a listener error is fatal, SIGTERM is a clean stop)."""
        listen = asyncio.create_task(run_open_session(session, listener), name="listener")
        stopped = asyncio.create_task(self.stop.wait(), name="stop")
        watched = {listen, stopped}
        if self.holding is not None:
            watched.add(self.holding)
        done, _ = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if listen in done:
            listen.result()  # re-raises the error that ended the listener
            raise FatalError("the listener loop ended without an error")
        # 1. Stop advertising: cancelling the listener deletes the session.
        log.info("shutting down: closing the message session first")
        listen.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await listen
        for task in done - {stopped}:
            task.result()  # a lost Lease: LeaseLostError ends the process (exit 1)

    async def _elect(self, api_client: k8s.ApiClient) -> bool:
        """Phase B: True once we hold the Lease; False if stopped while waiting."""
        namespace = scale_set_target(self.config, self.capacity).placeholder_namespace
        identity = f"{default_owner_name()}_{self.instance}"
        self.elector = LeaseElector(
            api_client,
            namespace=namespace,
            name=lease_name(self.config.ephemeral_runner_set_name),
            identity=identity,
            timing=LeaseTiming.for_duration(LEASE_DURATION),
        )
        if not await self.elector.acquire(self.stop):
            return False
        self.metrics.record_owner(True)
        return True

    async def _unless_stopped(self, work: Awaitable[Any], what: str) -> bool:
        """Run ``work`` unless SIGTERM comes first; True when stopped (``work`` cancelled)."""
        task = asyncio.ensure_future(work)
        stopped = asyncio.create_task(self.stop.wait())
        watched: set[asyncio.Future[Any]] = {task, stopped}
        if self.holding is not None:
            watched.add(self.holding)
        await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if task.done():
            task.result()
            return False
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        self._check_lease()  # a lost Lease ends the process (LeaseLostError)
        log.info("shutting down while %s", what)
        return True

    def _check_lease(self) -> None:
        """Re-raise LeaseLostError once the renewals gave up."""
        if self.holding is not None and self.holding.done() and not self.holding.cancelled():
            self.holding.result()

    def _install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.stop.set)

    def _start_http(self) -> None:
        """Metrics per ARC's rules; probes and /debug/pairs are served even without metrics."""
        settings = resolve_http_settings(self.config.metrics_addr, self.config.metrics_endpoint)
        self.http = ListenerHttpServer(
            settings.address,
            registry=self.metrics.registry,
            metrics_endpoint=settings.metrics_endpoint,
            ready=self._ready,
            debug=self.status.payload,
        ).start()
        log.info("HTTP on %s (metrics: %s)", settings.address, settings.metrics_endpoint or "off")

    def _ready(self) -> bool:
        """Ready = serving: permissions granted, session open, and (capacity-aware) owner
        with a fresh cache. A second listener waiting for the Lease, one still missing a
        permission, or one whose watches are down, is not."""
        if self.permissions_pending or not self.session_open:
            return False
        if not self.capacity.enabled:
            return True
        if self.elector is None or not self.elector.is_leader or self.part is None:
            return False
        cache = self.part.provider.cache
        return cache.has_synced and cache.stale_for() <= self.capacity.recalculate_interval

    async def _await_permissions(self, api_client: k8s.ApiClient, namespaces: set[str]) -> bool:
        """Stay up, not ready, until every permission is granted (SelfSubjectAccessReview);
        log exactly what is missing, or that the API server cannot be reached; retry with
        backoff. A missing permission is fixed by ``arc-capacity-listener rbac``."""
        needed = required_permissions(sorted(namespaces))
        delay = PERMISSION_RETRY_FIRST
        self.permissions_pending = True
        while not self.stop.is_set():
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
            delay = min(delay * 2, PERMISSION_RETRY_MAX)
        return False

    # --- capacity-aware ------------------------------------------------------------------

    async def _start_capacity_aware(
        self, api_client: k8s.ApiClient, session: MessageSession, listener: Listener
    ) -> list[asyncio.Task[Any]]:
        part = CapacityAwarePart(
            api_client,
            self.config,
            self.capacity,
            instance=self.instance,
            clock=self.clock,
            gate=self.gate,
            metrics=self.metrics,
            status=self.status,
            demand=self._demand,
        )
        if not await self._await_permissions(api_client, part.namespaces):
            return []  # stopped while waiting for permissions
        self.part = part.start()
        cache = part.provider.cache
        if not await self._wait_synced(cache):
            raise FatalError(
                f"Kubernetes caches not synced after {CACHE_SYNC_TIMEOUT:.0f}s: "
                f"{', '.join(cache.unsynced())}; every permission was granted, so the API "
                "server is slow or unreachable from this pod"
            )
        refuse_to_start(part.startup_checks())
        reconcile_loop = part.build(listener)
        log.info(
            "capacity-aware: instance %s, placeholders in %s",
            self.instance,
            part.target.placeholder_namespace,
        )
        self._wake = reconcile_loop.demand_changed
        tasks = [self._supervise("reconcile", lambda: reconcile_loop.run(self.stop))]
        log.info("demand sources: %s (combine: %s)", self.demand.name, self.demand.policy)
        if blind_at_zero(self.capacity):
            log.warning(
                "proactiveCapacity is 0, demand comes from the scale set's statistics only and "
                "demand.statisticsRefresh is 0: statistics arrive with job messages, and none "
                "come while 0 is advertised, so jobs queued from now on would wait forever; set "
                "demand.statisticsRefresh (default 2s), proactiveCapacity >= 1 or add a polled "
                "demand source (demand.sources: github, hud or http)"
            )
        refresher = self.refresher
        if "statistics" in self.demand.order and refresher is not None:
            tasks.append(self._supervise("statistics", lambda: refresher.run(self.stop)))
        if self.capacity.hud.url and "hud" in self.demand.order:
            tasks.append(self._supervise("hud", lambda: self._poll_hud(session)))
        if {"github", "http"} & set(self.demand.order):
            tasks.append(self._supervise("demand", lambda: self._poll_remote_demand(session)))
        return tasks

    def _supervise(self, name: str, factory: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
        return asyncio.create_task(
            supervised(name, factory, self.stop, on_failure=self.metrics.record_background_failure),
            name=name,
        )

    async def _wait_synced(self, cache: KubeCache) -> bool:
        """The first list of every required kind, in short waits so SIGTERM is honoured."""
        deadline = time.monotonic() + CACHE_SYNC_TIMEOUT
        while not cache.has_synced:
            self._check_lease()
            if self.stop.is_set():
                raise Stopped("waiting for the first Kubernetes cache sync")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            await asyncio.to_thread(cache.wait_synced, min(STOP_CHECK, remaining))
        return True

    async def _poll_hud(self, session: MessageSession) -> None:
        """Queued jobs for our labels every ``hud.pollInterval`` (``HudDemandSource`` logs an
        outage once and falls back). Labels come from the scale set, once the session is open."""
        hud = self.capacity.hud
        client = HudClient(
            hud.url or "", token=token_from_env(hud.token_env, self.env), timeout=hud.timeout
        )
        try:
            while not session.is_open and not self.stop.is_set():
                await asyncio.sleep(SESSION_WAIT_STEP)
            labels = scale_set_labels(session.session.runner_scale_set) if session.is_open else ()
            self.hud = HudDemandSource(
                client,
                labels or (self.config.runner_scale_set_name,),
                observer=self.metrics,
                on_change=self._wake_reconciler,
            )
            self.demand.attach(self.hud)
            await self.hud.run(self.stop, hud.poll_interval)
        finally:
            await client.aclose()

    async def _poll_remote_demand(self, session: MessageSession) -> None:
        """The ``github`` / ``http`` demand sources, polled once the session (labels) is open."""
        while not session.is_open and not self.stop.is_set():
            await asyncio.sleep(SESSION_WAIT_STEP)
        labels = scale_set_labels(session.session.runner_scale_set) if session.is_open else ()
        try:
            remote = build_remote_sources(
                self.demand.order,
                self.capacity.demand,
                labels=labels or (self.config.runner_scale_set_name,),
                github=self.config.github_config(self.env),
                credentials=self.credentials,
                env=self.env,
                on_change=self._wake_reconciler,
            )
        except ValueError as exc:  # e.g. an org-scoped URL without demand.github.repositories
            log.error("demand sources not started: %s; using the others or the floor", exc)
            return
        try:
            for source, _ in remote.polled:
                self.demand.attach(source)
            await asyncio.gather(*(s.run(self.stop, every) for s, every in remote.polled))
        finally:
            await remote.aclose()

    def _wake_reconciler(self) -> None:
        """A demand source's answer changed: a leading trigger (reconciler/schedule.py)."""
        if self._wake is not None:
            self._wake()

    def _queued_from(self, source: str) -> int | None:
        """One demand source's latest queued jobs (None while it fails): for the metrics."""
        return self.demand.latest(source).queued_jobs

    def _demand(self) -> Demand:
        """The configured sources combined (providers/demand); all failing -> the floor."""
        return self.demand.current

    # --- shutdown ------------------------------------------------------------------------

    def _delete_placeholders(self) -> None:
        """Only what this instance owns: pods it created (instance label) and pairs it
        adopted (in its pair store). Never another listener's pods."""
        part = self.part
        if part is None or part.writer is None:
            return
        writer = part.writer
        if self.elector is not None and not self.elector.is_leader:
            # Lost the Lease: a new owner may have adopted our pairs already; deleting them
            # now would take its capacity away. It sweeps whatever it does not want.
            log.warning("shutting down without the Lease: leaving placeholders to the owner")
            writer.close()
            return
        namespace = part.target.placeholder_namespace
        adopted = part.owned_pairs()
        ours = [
            PodRef(namespace, pod["metadata"]["name"], pod["metadata"].get("uid"))
            for pod in part.provider.cache.list("Pod", namespace)
            if owned_by(
                pod,
                scale_set=self.config.ephemeral_runner_set_name,
                instance=self.instance,
                adopted=adopted,
            )
        ]
        # Bounded by the writer's per-request timeout; the pod's grace period is 60 s.
        log.info("shutting down: deleting %d placeholder pods", len(ours))
        started = time.monotonic()
        writer.delete_pods(ours)
        writer.close()
        log.info("placeholders deleted in %.1fs", time.monotonic() - started)

    def _close(self) -> None:
        if self.part is not None:
            self.part.stop(timeout=CACHE_STOP_TIMEOUT)
        if self.http is not None:
            self.http.stop()
