"""The listener process: wiring, run, ordered shutdown.

``run_from_environment()`` is what ``arc-capacity-listener run`` does:

1. Read ARC's listener config (``$LISTENER_CONFIG_PATH``) and the ``capacityAware`` block
   (``$CAPACITY_AWARE_CONFIG`` / ``$CAPACITY_AWARE_JSON``). A bad value: one line on stderr,
   exit 1, nothing started.
2. Logging (level/format from the config, secrets redacted), metrics and the HTTP server
   (``/metrics``, ``/healthz``, ``/readyz``, ``/debug/pairs``).
3. The Actions client, the message session and the scaler (merge-patches of the
   EphemeralRunnerSet, exactly like ARC's).
4. With ``capacityAware.enabled`` (listener/process/capacity_side.py): the watch-fed cache (waits
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
import signal
import sys
from collections.abc import Awaitable
from typing import Any

from kubernetes import client as k8s

from listener.arc.config import (
    ConfigError,
    ListenerConfig,
    config_path_from_env,
    load_listener_config,
    resolve_vault_credentials,
    scaler_rate_limit,
)
from listener.arc.gate import CapacityGate
from listener.arc.message_loop import Listener, close_session, run_open_session
from listener.arc.scaler import Scaler
from listener.arc.statistics_refresh import StatisticsRefresher
from listener.arc.version import ArcVersionError, version_from_env
from listener.observability.http import (
    HttpConfigError,
    ListenerHttpServer,
    StatusBoard,
    debug_pairs_enabled,
    resolve_http_settings,
)
from listener.observability.logging import LIBRARY_LEVEL_ENV, LoggingConfigError, configure_logging
from listener.observability.metrics import PrometheusMetrics, ScaleSetIdentity
from listener.process.assembly import scale_set_target
from listener.process.capacity_config import load_capacity_aware
from listener.process.capacity_side import CapacitySide
from listener.process.context import ProcessContext
from listener.process.daemon_executor import DaemonThreadPoolExecutor
from listener.process.environment import ProcessEnv
from listener.process.exit_deadline import ExitDeadline, bounded
from listener.process.startup import (
    FatalError,
    Stopped,
    capacity_off_reason,
    kubernetes_api_client,
    new_instance_id,
)
from providers.actions.client import ActionsClient
from providers.actions.session import MessageSession, default_owner_name
from providers.kubernetes.lease.election import LeaseElector, LeaseTiming, lease_name
from providers.kubernetes.lease.fence import LeaseFence
from providers.kubernetes.write.arc_writer import KubernetesScalerWriter
from providers.kubernetes.write.lane import WriteLane
from reconciler.clock import SystemClock
from reconciler.settings import CapacityAwareSettings
from reconciler.settings_types import SettingsError

log = logging.getLogger("listener")

#: How long shutdown waits for the informer threads (daemons) to notice the stop.
CACHE_STOP_TIMEOUT = 0.5
#: Shutdown budgets (with the 1 s stop grace and the 1 s session delete: under 4.5 s).
PLACEHOLDERS_BUDGET = 0.75
RELEASE_BUDGET = 0.75


def run_from_environment(process_env: ProcessEnv) -> int:
    """``process_env``: the environment the command line read and parsed once at entry
    (listener/process/environment.py)."""
    env = process_env.variables
    try:
        path = config_path_from_env(env)
        config = resolve_vault_credentials(load_listener_config(path), file=path, env=env)
        capacity = load_capacity_aware(env)
        version_from_env(env)  # a bad ARC_VERSION is refused here, before anything starts
        debug_pairs_enabled(env)  # and a bad CAPACITY_AWARE_DEBUG_PAIRS
        configure_logging(
            config.log_level or "info",
            config.log_format or "text",
            secrets=[config.github_token, config.github_app_private_key],
            library_level=env.get(LIBRARY_LEVEL_ENV),
        )
    except (
        ConfigError,
        SettingsError,
        LoggingConfigError,
        ArcVersionError,
        HttpConfigError,
    ) as exc:
        print(f"arc-capacity-listener: {exc}", file=sys.stderr)
        return 1
    app = ListenerApp(config, capacity, process_env)
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


class ListenerApp:
    def __init__(
        self, config: ListenerConfig, capacity: CapacityAwareSettings, env: ProcessEnv
    ) -> None:
        self.config = config
        self.capacity = capacity
        self.process_env = env
        self.env = env.variables
        clock = SystemClock()
        self.instance = new_instance_id()
        self.stop = asyncio.Event()
        #: The scaler's Kubernetes writes: a daemon lane that never holds the exit.
        self.lane = WriteLane()
        self.deadline = ExitDeadline()
        self.status = StatusBoard(config.ephemeral_runner_set_name)
        self.metrics = PrometheusMetrics(
            ScaleSetIdentity.from_config_url(
                config.configure_url,
                name=config.ephemeral_runner_set_name,
                namespace=config.ephemeral_runner_set_namespace,
            ),
            min_runners=config.min_runners,
            max_runners=config.max_runners,
            clock=clock,
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
        self.http: ListenerHttpServer | None = None
        self.elector: LeaseElector | None = None
        #: What every Kubernetes write asks before it goes (set once the Lease is won).
        self.fence: LeaseFence | None = None
        #: Renews the Lease from the moment it is won (through every later phase).
        self.holding: asyncio.Task[None] | None = None
        self.session_open = False
        #: Reads statistics by session refresh while blind (listener/arc/statistics_refresh.py).
        self.refresher: StatisticsRefresher | None = None
        #: Phase D (capacity-aware only) and the placeholder shutdown; it owns the demand.
        #: What every part of this process shares (listener/process/context.py).
        self.ctx = ProcessContext(
            config=config,
            settings=capacity,
            env=self.process_env,
            clock=clock,
            instance=self.instance,
            stop=self.stop,
            gate=self.gate,
            metrics=self.metrics,
            status=self.status,
        )
        self.side = CapacitySide(self.ctx, self.credentials)
        self.metrics.watch_readiness(self._ready)
        if capacity.enabled:
            demand, queued_from = self.side.demand, self.side.queued_from
            self.metrics.watch_demand(
                lambda: demand.current.queued_jobs,
                {name: functools.partial(queued_from, name) for name in demand.combined.order},
            )
            # The fleet key every cluster's rows are joined on (config/monitoring/
            # fleet-rules.yaml), published whether or not this listener reads the view.
            self.metrics.set_fleet(
                capacity.fleet_view.fleet_for(
                    config.runner_scale_set_name or config.ephemeral_runner_set_name
                )
            )
            if self.side.fleet is not None:
                self.metrics.watch_fleet_view(self.side.fleet)

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
        # Blocking calls in worker threads must not hold the exit
        # (listener/process/daemon_executor.py).
        asyncio.get_running_loop().set_default_executor(
            DaemonThreadPoolExecutor(thread_name_prefix="listener-io")
        )
        api_client = await asyncio.to_thread(kubernetes_api_client, self.env)
        self._start_http()
        client = ActionsClient(
            self.config.github_config(self.env),
            self.credentials,
            scale_set_id=self.config.runner_scale_set_id,
            root_ca=self.config.server_root_ca,
            on_error=self.metrics.record_actions_error,
            env=self.env,
        )
        session = MessageSession(client)
        qps, burst = scaler_rate_limit(self.config)
        self.scale_writer = KubernetesScalerWriter(
            api_client, qps=qps, burst=burst, stop=self.lane.stop_token
        )
        scaler = Scaler(
            self.scale_writer,
            namespace=self.config.ephemeral_runner_set_namespace,
            name=self.config.ephemeral_runner_set_name,
            min_runners=self.config.min_runners,
            max_runners=self.config.max_runners,
            arc_version=version_from_env(self.env),
        )
        self.refresher = StatisticsRefresher(
            session,
            self.gate,
            self.side.demand.statistics.observe_statistics,
            interval=self.capacity.demand.statistics_refresh,
            busy_interval=self.capacity.demand.statistics_refresh_busy,
            metrics=self.metrics,
        )
        listener = Listener(
            session, scaler, self.gate, self.metrics, self.refresher.observe, writes=self.lane
        )
        self.metrics.record_advertised(self.gate.value)
        side_tasks: list[asyncio.Task[Any]] = []
        try:
            if self.capacity.enabled and not await self._elect(api_client):
                return  # stopped while waiting for the Lease
            if self.elector is not None:
                self.holding = asyncio.create_task(self.elector.hold(self.stop), name="lease")
                side_tasks.append(self.holding)
            inherited = self.elector.inherited_session if self.elector is not None else None
            if await self._unless_stopped(session.open(inherited), "opening the message session"):
                return
            self.session_open = True
            if self.elector is not None:  # noted in the Lease with its next renewal
                self.elector.session_note = session.session.session_id
            if self.capacity.enabled:
                side_tasks = await self.side.start(
                    api_client,
                    session,
                    scaler,
                    fence=self.fence,
                    refresher=self.refresher,
                    check_lease=self._check_lease,
                )
            else:
                log.info("capacity-aware mode is off: %s", capacity_off_reason(self.env))
            await self._listen(session, listener, side_tasks)
        finally:
            self.lane.stop()  # a write still retrying ends at its next wait
            # The Lease is renewed until it is released: the placeholders are deleted as owner.
            background = [task for task in side_tasks if task is not self.holding]
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            # Stop advertising (a no-op when the listener already deleted the session), then
            # release the capacity we reserved, and only then the Lease: a successor must not
            # adopt pods we are about to delete. The Lease carries the session id if the
            # delete failed, for the successor to delete.
            self.session_open = False
            await close_session(session)
            leader = self.elector is None or self.elector.is_leader
            await bounded(
                functools.partial(self.side.delete_placeholders, leader=leader),
                PLACEHOLDERS_BUDGET,
                "placeholders",
            )
            if self.holding is not None:
                self.holding.cancel()
                await asyncio.gather(self.holding, return_exceptions=True)
            if self.elector is not None and self.elector.is_leader:
                # Not leader: the renewals failed, a release would only wait out timeouts.
                self.elector.session_note = session.left_behind or ""
                await bounded(self.elector.release, RELEASE_BUDGET, "the Lease release")
                self.metrics.record_owner(False)
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
        if self.holding in done:
            self.deadline.arm(1, "the Lease was lost")
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
            timing=LeaseTiming.for_duration(self.process_env.lease_duration),
        )
        if not await self.elector.acquire(self.stop):
            return False
        self.metrics.record_owner(True)
        # From now on no write goes out unless this process can still renew the Lease.
        self.scale_writer.fence = self.fence = LeaseFence(self.elector)
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
                loop.add_signal_handler(sig, self._on_signal, sig)

    def _on_signal(self, sig: signal.Signals) -> None:
        log.info("%s received: shutting down", sig.name)
        self.deadline.arm(0, sig.name)
        self.stop.set()

    def _start_http(self) -> None:
        """Metrics per ARC's rules; probes and /debug/pairs (unless turned off) are served even
        without metrics."""
        settings = resolve_http_settings(self.config.metrics_addr, self.config.metrics_endpoint)
        self.http = ListenerHttpServer(
            settings.address,
            registry=self.metrics.registry,
            metrics_endpoint=settings.metrics_endpoint,
            ready=self._ready,
            debug=self.status.payload if debug_pairs_enabled(self.env) else None,
        ).start()
        log.info("HTTP on %s (metrics: %s)", settings.address, settings.metrics_endpoint or "off")

    def _ready(self) -> bool:
        """Ready = serving: permissions granted, session open, and (capacity-aware) owner
        with a fresh cache. A second listener waiting for the Lease, one still missing a
        permission, or one whose watches are down, is not."""
        if self.side.permissions_pending or not self.session_open:
            return False
        if not self.capacity.enabled:
            return True
        if self.elector is None or not self.elector.is_leader:
            return False
        return self.side.ready()

    def _close(self) -> None:
        self.side.close(CACHE_STOP_TIMEOUT)
        if self.http is not None:
            self.http.stop()
