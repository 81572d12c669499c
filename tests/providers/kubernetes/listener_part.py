"""A listener process's capacity-aware part over the Kubernetes face, as ListenerApp builds it
in phase D (listener/process/capacity_side.py), for the tests that need the real wiring
without a session; and a recording stand-in for what the part sets on ARC's scaler."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from listener.arc.config import parse_listener_config
from listener.process.app import ListenerApp
from listener.process.assembly import CapacityAwarePart
from listener.process.environment import ProcessEnv
from reconciler.settings import parse_capacity_aware
from tests.providers.kubernetes import objects as o


def started_part(
    api: client.ApiClient, capacity_block: dict[str, Any]
) -> tuple[ListenerApp, CapacityAwarePart]:
    """A ListenerApp for the face's scale set and its started CapacityAwarePart (the caller
    stops it); ``capacity_block`` is the ``capacityAware`` block."""
    config = parse_listener_config(
        {
            "configure_url": "https://github.com/acme",
            "github_token": "ghp_" + "t" * 36,
            "ephemeral_runner_set_namespace": o.NS,
            "ephemeral_runner_set_name": o.ERS,
            "runner_scale_set_id": 1,
            "max_runners": 10,
        }
    )
    capacity = parse_capacity_aware(capacity_block, where="test")
    app = ListenerApp(config, capacity, ProcessEnv.parse({}))
    part = app.side.new_part(api).start()
    return app, part


@dataclass
class RecordedControls:
    """The ``ScalerControls`` port (scaleset/ports.py) of ARC's scaler, recording
    each call in order as ``(method, value)``."""

    calls: list[tuple[str, int | bool]] = field(default_factory=list)

    def set_max_runners(self, max_runners: int) -> None:
        self.calls.append(("set_max_runners", max_runners))

    def set_hot_runners(self, hot_runners: int) -> None:
        self.calls.append(("set_hot_runners", hot_runners))

    def set_switched_off(self, switched_off: bool) -> None:
        self.calls.append(("set_switched_off", switched_off))
