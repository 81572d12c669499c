"""A loopback HTTP proxy in front of the simulated Kubernetes face that injects API faults.

Real clients (the ``kubernetes`` package behind :class:`providers.kubernetes.watch.cache.KubeCache`,
the placeholder writer, kubectl) are pointed at :attr:`K8sFaultProxy.url`; every request is
forwarded to the face unless an active fault answers it instead:

- ``k8s_5xx``: a ``Status`` body with ``params.status`` (default 503), for ``params.ratio``
  of the requests;
- ``k8s_429``: 429 ``TooManyRequests`` with ``Retry-After: params.retry_after`` (default 1);
- ``k8s_timeout``: the request is held ``params.hold`` seconds (default 30, or until the fault
  is cleared or the proxy stops), then the connection is closed without an answer;
- ``k8s_slow``: forwarded after ``params.delay`` seconds;
- ``k8s_watch_drop``: every proxied watch stream open when it starts is cut (no final chunk),
  and while it lasts new streams are cut after ``params.every`` seconds (default 1);
- ``k8s_410``: a watch resumed from a ``resourceVersion`` gets one ``ERROR`` event carrying a
  410 ``Expired`` Status (what the API server sends for a compacted version), then ends.

Faults are armed with :meth:`K8sFaultProxy.inject` / :meth:`clear`, or taken from a
:class:`~simulator.faults.FaultPlan` in real time with :meth:`follow` (offsets from
the moment ``follow`` is called). Ratios are drawn from a seeded ``random.Random``. Every
injected answer is counted in :attr:`K8sFaultProxy.injected` (by kind). The face itself is
never edited or slowed: the proxy only stands in front of it.
"""

from __future__ import annotations

import contextlib
import random
import socket
import threading
from collections import Counter
from urllib.parse import urlsplit

from reconciler.clock import SYSTEM_CLOCK, Clock
from simulator.faces.fault_proxy_handler import ProxyServer, handler_for
from simulator.faults import Fault, FaultKind, FaultPlan

#: Kinds this proxy applies (everything else in a plan is ignored here).
KINDS = frozenset(
    {
        FaultKind.K8S_5XX,
        FaultKind.K8S_429,
        FaultKind.K8S_TIMEOUT,
        FaultKind.K8S_SLOW,
        FaultKind.K8S_WATCH_DROP,
        FaultKind.K8S_GONE,
    }
)


class K8sFaultProxy:
    def __init__(self, upstream: str, *, seed: int = 0, clock: Clock = SYSTEM_CLOCK) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname or parts.port is None:
            raise ValueError(f"upstream must be http://host:port, got {upstream!r}")
        self.upstream_host = parts.hostname
        self.upstream_port = parts.port
        self._rng = random.Random(seed)
        self._clock = clock
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._plan: FaultPlan | None = None
        self._plan_start = 0.0
        self._stopping = threading.Event()
        self._cleared = threading.Condition(self._lock)
        self._streams: set[socket.socket] = set()
        self.injected: Counter[str] = Counter()
        self.forwarded = 0
        #: Every write that reached the face: (monotonic time it was forwarded, method, path).
        #: What a per-client audit log would show; reads and injected answers are not in it.
        self.writes: list[tuple[float, str, str]] = []
        self._server = ProxyServer(("127.0.0.1", 0), handler_for(self))
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> K8sFaultProxy:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name="k8s-fault-proxy",
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        with self._cleared:
            self._cleared.notify_all()
        self.drop_streams()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> K8sFaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- arming ---------------------------------------------------------------------------

    def inject(self, fault: Fault) -> None:
        if fault.kind not in KINDS:
            raise ValueError(f"{fault.kind} is not a Kubernetes API fault")
        with self._lock:
            self._faults.append(fault)
        if fault.kind is FaultKind.K8S_WATCH_DROP:
            self.drop_streams()

    def clear(self, kind: FaultKind | None = None) -> None:
        with self._cleared:
            self._faults = [f for f in self._faults if kind is not None and f.kind is not kind]
            self._plan = None if kind is None else self._plan
            self._cleared.notify_all()

    def follow(self, plan: FaultPlan) -> None:
        """Apply the plan's Kubernetes faults by real time elapsed from now."""
        with self._lock:
            self._plan = plan
            self._plan_start = self._clock.monotonic()

    def active(self) -> list[Fault]:
        with self._lock:
            faults = list(self._faults)
            plan, start = self._plan, self._plan_start
        if plan is not None:
            elapsed = self._clock.monotonic() - start
            faults += [
                f for f in plan.faults if f.kind in KINDS and not f.instant and f.active_at(elapsed)
            ]
            faults += [
                f for f in plan.faults if f.kind is FaultKind.K8S_GONE and elapsed >= f.start
            ]
        return faults

    def drop_streams(self) -> int:
        """Cut every proxied watch stream now (the client sees the connection end)."""
        with self._lock:
            streams = list(self._streams)
        for sock in streams:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        return len(streams)

    def open_streams(self) -> int:
        with self._lock:
            return len(self._streams)

    # --- decisions (handler threads) ------------------------------------------------------

    def _hit(self, fault: Fault) -> bool:
        with self._lock:
            return self._rng.random() < fault.params.ratio

    def _count(self, kind: FaultKind) -> None:
        with self._cleared:
            self.injected[kind.value] += 1
            self._cleared.notify_all()

    def wait_injected(self, count: int, timeout: float) -> bool:
        """Block until at least ``count`` answers were injected (any kind); False on timeout."""
        with self._cleared:
            return self._cleared.wait_for(
                lambda: sum(self.injected.values()) >= count, timeout=timeout
            )

    def _hold(self, seconds: float, fault: Fault) -> None:
        """Wait ``seconds``, or less if the fault is cleared or the proxy stops."""
        deadline = self._clock.monotonic() + seconds
        with self._cleared:
            while not self._stopping.is_set() and fault in self._faults_now():
                left = deadline - self._clock.monotonic()
                if left <= 0:
                    return
                self._cleared.wait(min(left, 0.1))

    def _faults_now(self) -> list[Fault]:
        # Called with the lock held (re-entrancy free): the explicit faults only, plus plan.
        faults = list(self._faults)
        if self._plan is not None:
            elapsed = self._clock.monotonic() - self._plan_start
            faults += [f for f in self._plan.faults if f.active_at(elapsed)]
        return faults

    def _register(self, sock: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._streams.add(sock)
            else:
                self._streams.discard(sock)


__all__ = ["KINDS", "K8sFaultProxy"]
