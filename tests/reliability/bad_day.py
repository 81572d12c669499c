"""A real ``python -m listener run`` process whose Kubernetes API goes through a fault proxy
(issue 34's bad days). Shared by tests/reliability/test_bad_days.py and bench/bad_days.py.

Each process gets its own Kubernetes face over the live world's one object store and its own
:class:`~simulator.faces.fault_proxy.K8sFaultProxy` in front of it, so the proxy's
``writes`` list is that process's write audit log.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.faces.fault_proxy import K8sFaultProxy
from simulator.faces.k8s import K8sFace
from simulator.faces.live_spec import LiveSpec
from simulator.faces.live_world import LiveWorld
from simulator.faults import Fault, FaultKind
from tests.e2e.conftest import ListenerProcess

#: Short leases so a loss fits in a test: renew deadline 2.7 s, a successor waits 4 s.
LEASE_SECONDS = 4


def quiet_spec() -> LiveSpec:
    """No ICE window and no burst: the scale set idles with its warm pool."""
    return LiveSpec(ice_start=500.0, ice_end=501.0, lose_nodes_at_ice_start=False, burst_count=0)


def fault(kind: FaultKind, **params: Any) -> Fault:
    return Fault.model_validate({"kind": kind.value, "start": 0, "params": params})


@dataclass
class ProxiedListener:
    process: ListenerProcess
    face: K8sFace
    proxy: K8sFaultProxy

    def close(self) -> None:
        self.process.kill()
        self.proxy.stop()
        self.face.stop()

    def ready(self) -> bool:
        return self.process.get("/readyz")[0] == 200

    def terminate_timed(self, timeout: float = 30.0) -> tuple[int | None, float]:
        """SIGTERM; (exit code, seconds to exit)."""
        began = time.monotonic()
        code = self.process.terminate(timeout)
        return code, time.monotonic() - began

    def scaler_writes(self) -> list[tuple[float, str, str]]:
        return [w for w in self.proxy.writes if "/ephemeralrunner" in w[2]]


def start_proxied(
    world: LiveWorld,
    workdir: Path,
    *,
    capacity: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> ProxiedListener:
    face = K8sFace(world.store, bookmark_interval=1.0).start()
    proxy = K8sFaultProxy(face.url, seed=1).start()
    workdir.mkdir(parents=True, exist_ok=True)
    process = ListenerProcess(
        world, workdir, world.capacity_aware() if capacity is None else capacity
    )
    kubeconfig = world.kubeconfig()
    kubeconfig["clusters"][0]["cluster"]["server"] = proxy.url
    (workdir / "kubeconfig.yaml").write_text(json.dumps(kubeconfig))
    process.env["CAPACITY_AWARE_LEASE_DURATION"] = str(LEASE_SECONDS)
    process.env.update(env or {})
    process.start()
    return ProxiedListener(process, face, proxy)


def wait_for(predicate: Callable[[], bool], timeout: float, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def polls_between(world: LiveWorld, start: float, end: float) -> list[int]:
    """The ``X-ScaleSetMaxCapacity`` of every GetMessage the Actions face received in
    [start, end] (monotonic)."""
    return [
        r.capacity if r.capacity is not None else -1
        for r in world.actions.requests_to("get_message")
        if start <= r.received_at <= end
    ]
