"""Fixtures of the verify tests: live simulated worlds with the scale set installed the way
the quickstart leaves it (ladder, hook template, listener ServiceAccount and its RBAC), and a
helper that runs ``verify`` against one with ``--json`` and returns its rows.

Worlds carry no jobs, no ICE window and no node loss: verify's probes are the only workload.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from listener.commands import rbac
from listener.commands.verify.cli import main
from listener.commands.verify.probe import WaitClock
from listener.commands.verify.shapes import LABEL_VERIFY
from simulator.engine.store import KINDS
from simulator.faces.live_spec import LiveSpec
from simulator.faces.live_world import LiveWorld

SCALE_SET, NAMESPACE, CONTROLLER = "e2e-runners", "arc-runners", "arc-systems"
#: Kinds verify's probes make the world add by itself (a node for the probe pair).
CAUSED = {"Node", "NodeClaim", "Event"}


def quiet_spec(**overrides: Any) -> LiveSpec:
    return LiveSpec(
        ice_start=3600,
        ice_end=3601,
        burst_count=0,
        lose_nodes_at_ice_start=False,
        **overrides,
    )


def install_listener_rbac(world: LiveWorld) -> None:
    """What ARC (the ServiceAccount) and ``arc-capacity-listener rbac --apply`` leave."""
    with k8s.ApiClient(k8s.Configuration(host=world.k8s.url)) as api:
        core = k8s.CoreV1Api(api)
        core.create_namespaced_service_account(
            CONTROLLER,
            {
                "metadata": {
                    "name": f"{SCALE_SET}-754b578d-listener",
                    "labels": {
                        "actions.github.com/scale-set-name": SCALE_SET,
                        "actions.github.com/scale-set-namespace": NAMESPACE,
                    },
                }
            },
        )
        account = rbac.find_listener_service_account(core, SCALE_SET, NAMESPACE)
        rbac.apply(api, rbac.bindings(account, SCALE_SET, [NAMESPACE]))


def started_world(spec: LiveSpec) -> LiveWorld:
    world = LiveWorld(spec).start()
    install_listener_rbac(world)
    return world


@pytest.fixture(scope="module")
def world() -> Iterator[LiveWorld]:
    """One installed, healthy world shared by a module's tests (each restores what it bends)."""
    running = started_world(quiet_spec())
    try:
        yield running
    finally:
        running.close()


@dataclass(frozen=True)
class Outcome:
    code: int
    rows: dict[str, dict[str, Any]]
    doc: dict[str, Any]

    def status(self, check: str) -> str:
        return str(self.rows[check]["status"])

    def failing(self) -> list[str]:
        return [name for name, row in self.rows.items() if row["status"] == "FAIL"]


def run_verify(
    world: LiveWorld,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *args: str,
    capacity: dict[str, Any] | None = None,
    clock: WaitClock | None = None,
) -> Outcome:
    """``verify --json`` against ``world``, its capacityAware block as ``run`` gets it."""
    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_text(json.dumps(world.kubeconfig()))
    block = world.capacity_aware(**(capacity or {}))
    env = {"KUBECONFIG": str(kubeconfig), "CAPACITY_AWARE_JSON": json.dumps(block)}
    argv: Sequence[str] = ["--scale-set", SCALE_SET, "--namespace", NAMESPACE, "--json", *args]
    capsys.readouterr()
    code = main(argv, env=env, clock=clock)
    doc = json.loads(capsys.readouterr().out)
    return Outcome(code, {row["check"]: row for row in doc["checks"]}, doc)


def objects(world: LiveWorld) -> set[tuple[str, str, str]]:
    """(kind, namespace, name) of every stored object the probes cannot cause by design."""
    with world.store.lock:
        return {
            (kind, o["metadata"].get("namespace", ""), o["metadata"]["name"])
            for kind in KINDS
            if kind not in CAUSED
            for o in world.store.list(kind)
        }


def labelled_by_verify(world: LiveWorld) -> list[str]:
    with world.store.lock:
        return [
            f"{kind}/{o['metadata']['name']}"
            for kind in KINDS
            for o in world.store.list(kind)
            if LABEL_VERIFY in (o["metadata"].get("labels") or {})
        ]
