"""Small scenarios and worlds so the workload tests read like stories."""

from __future__ import annotations

import copy
import json
from typing import Any

from simulator.engine.eventlog import EventLog
from simulator.engine.loop import EventLoop
from simulator.engine.world import World
from simulator.scenarios.scenario import Scenario, parse_scenario

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def cluster_spec(
    *, ice: list[dict[str, Any]] | None = None, cpu_limit: int = 256, static_runner_nodes: int = 0
) -> dict[str, Any]:
    static = [
        {
            "name": "system",
            "count": 1,
            "instance_type": "m5.xlarge",
            "labels": {"node-role": "system"},
            "taints": [{"key": "CriticalAddonsOnly", "value": "true"}],
        }
    ]
    if static_runner_nodes:
        static.append(
            {
                "name": "fixed",
                "count": static_runner_nodes,
                "instance_type": "m5.xlarge",
                "labels": {"pool": "runners"},
            }
        )
    return {
        "static_nodes": static,
        "nodepools": [
            {
                "name": "runners",
                "instance_types": ["m5.xlarge", "m5.2xlarge"],
                "labels": {"pool": "runners"},
                "limits": {"cpu": cpu_limit},
                "consolidate_after": 300,
            },
            {
                "name": "gpu",
                "instance_types": ["g5.xlarge"],
                "labels": {"pool": "gpu"},
                "taints": [{"key": "nvidia.com/gpu", "value": "true"}],
                "limits": {"cpu": 512, "nvidia.com/gpu": 64},
                "consolidate_after": 300,
            },
        ],
        "ice_windows": ice or [],
    }


def scale_set(name: str, cluster: str, *, gpu: bool = True, **extra: Any) -> dict[str, Any]:
    workflow: dict[str, Any] = (
        {
            "requests": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"},
            "node_selector": {"pool": "gpu"},
            "tolerations": [GPU_TOLERATION],
        }
        if gpu
        else {"requests": {"cpu": "2", "memory": "4Gi"}, "node_selector": {"pool": "runners"}}
    )
    return {
        "name": name,
        "cluster": cluster,
        "labels": ["linux-gpu" if gpu else "linux"],
        "max_runners": 20,
        "runner": {
            "requests": {"cpu": "500m", "memory": "1Gi"},
            "node_selector": {"pool": "runners"},
        },
        "workflow": workflow,
        **extra,
    }


def scenario(**overrides: Any) -> dict[str, Any]:
    """One cluster, one GPU scale set, 30 jobs/h for 1 h: override any top-level field."""
    data: dict[str, Any] = {
        "name": "test",
        "seed": 1,
        "duration": "1h",
        "stuck_after": "20m",
        "clusters": [{"name": "east", "spec": cluster_spec()}],
        "scale_sets": [scale_set("gpu-east", "east")],
        "jobs": [
            {"labels": ["linux-gpu"], "per_hour": 30, "duration": {"median": "5m", "sigma": 0.3}}
        ],
        "strategies": {
            "capacity_aware": {
                "enabled": True,
                "proactiveCapacity": 2,
                "watchDebounce": "1s",
                "survivorWindow": "3m",
                "cutPollOnRise": True,
                "workflowResources": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"},
            }
        },
    }
    data.update(copy.deepcopy(overrides))
    return data


def ice_failover(hours: float = 3.0) -> dict[str, Any]:
    """A compact ice-failover: two clusters, east loses g5.xlarge from 1 h to 2 h while the
    rate steps up at 1 h (so both fleets must grow during the window)."""
    ice = [{"instance_type": "g5.xlarge", "start": 3600, "end": 7200}]
    return scenario(
        name="ice-mini",
        duration=hours * 3600,
        stuck_after="30m",
        clusters=[
            {"name": "east", "spec": cluster_spec(ice=ice)},
            {"name": "west", "spec": cluster_spec()},
        ],
        scale_sets=[
            scale_set("gpu-east", "east", max_runners=40),
            scale_set("gpu-west", "west", max_runners=40),
        ],
        jobs=[
            {
                "labels": ["linux-gpu"],
                "duration": {"median": "6m", "sigma": 0.4},
                "schedule": [
                    {"at": 0, "per_hour": 30},
                    {"at": "1h", "per_hour": 150},
                    {"at": "2h", "per_hour": 40},
                ],
            }
        ],
    )


def load(data: dict[str, Any]) -> Scenario:
    return parse_scenario(data, where="test.yaml")


def run(data: dict[str, Any], strategy: str, *, seed: int | None = None) -> World:
    world = World(load(data), strategy, seed=seed)
    world.run()
    return world


def events(world: World, *types: str) -> list[dict[str, Any]]:
    parsed = (json.loads(line) for line in world.log.lines())
    return [e for e in parsed if not types or e["type"] in types]


def bare_log() -> tuple[EventLoop, EventLog]:
    loop = EventLoop()
    return loop, EventLog("test", loop, loop.start)
