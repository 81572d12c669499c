"""The capacityAware block: camelCase keys, durations, and one clear error per bad value."""

from __future__ import annotations

import pytest

from reconciler.settings import parse_capacity_aware
from reconciler.settings_types import SettingsError


def test_defaults_are_safe_and_disabled() -> None:
    settings = parse_capacity_aware(None, where="values.yaml")
    assert settings.enabled is False
    assert settings.proactive_capacity >= 0
    assert settings.placeholder_ttl > settings.recalculate_interval


def test_helm_camel_case_keys_and_duration_strings() -> None:
    settings = parse_capacity_aware(
        {
            "enabled": True,
            "proactiveCapacity": 4,
            "recalculateInterval": "45s",
            "placeholderReadyTimeout": "10m",
            "workflowResources": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
            "priorityClasses": {"workflow": "my-workflow"},
            "hud": {"url": "https://hud.example/api", "timeout": "2s"},
        },
        where="values.yaml",
    )
    assert settings.recalculate_interval == 45.0
    assert settings.placeholder_ready_timeout == 600.0
    assert settings.priority_classes.workflow == "my-workflow"
    assert settings.priority_classes.runner == "arc-runner"
    config = settings.reconciler_config("arc-runners")
    assert (config.proactive_capacity, config.placeholder_ready_timeout) == (4, 600.0)


def test_snake_case_is_accepted_too() -> None:
    assert parse_capacity_aware({"proactive_capacity": 2}, where="x").proactive_capacity == 2


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (
            {"proactiveCapacity": -1},
            "proactiveCapacity: got -1; proactiveCapacity is a number of pairs from 0",
        ),
        ({"recalculateInterval": "soon"}, "recalculateInterval: got 'soon'; a duration is"),
        ({"proactivCapacity": 2}, "capacityAware.proactivCapacity: unknown key"),
        ({"maxPairsInFlight": 2, "maxRequestsPerStep": 5}, "maxRequestsPerStep must be <="),
        ({"placeholderTtl": 30, "recalculateInterval": 60}, "placeholderTtl"),
        ({"workflowResources": {}}, "workflowResources needs at least one resource"),
        ({"enabled": "maybe"}, "capacityAware.enabled: got 'maybe'"),
        # Quantities are checked here, not first by the API server after the Lease (issue 32).
        ({"workflowResources": {"cpu": "two"}}, "workflowResources.cpu: got 'two'; a Kubernetes"),
        ({"workflowResources": {"memory": "4GB"}}, "did you mean '4Gi' (or '4G')?"),
        ({"workflowResources": {"cpu": "-1"}}, "workflowResources.cpu: got '-1'; a resource"),
        ({"workflowResources": {"cpu": True}}, "workflowResources.cpu: got True; a Kubernetes"),
        ({"workflowResources": {"cpu": "1.5.2"}}, "workflowResources.cpu: got '1.5.2'"),
        ({"workflowResources": {"mem": "4Gi"}}, "workflowResources.mem: got 'mem'; not a resource"),
        ({"workflowResources": {"cpus": "2"}}, "did you mean 'cpu'?"),
        ({"workflowResources": {"gpu": "1"}}, "extended resource with its domain (nvidia.com/gpu)"),
        ({"survivorWindow": "2 minutes"}, "survivorWindow: got '2 minutes'; a duration is"),
        ({"hud": {"timeout": "5sec"}}, "hud.timeout: got '5sec'; a duration is"),
        ({"hotRunners": -1}, "hotRunners: got -1; hotRunners is a number of hot slots from 0"),
        ({"hotRunners": "lots"}, "hotRunners: got 'lots'; hotRunners is a number of hot slots"),
        ({"hotRunners": True}, "hotRunners: got True; hotRunners is a number of hot slots"),
        (
            {"hotRunners": 3, "proactiveCapacity": 2},
            "hotRunners is the part of the reserve held as hot slots, so it must be <= "
            "proactiveCapacity (got hotRunners 3 > proactiveCapacity 2)",
        ),
    ],
)
def test_bad_values_name_the_field_the_value_and_what_is_allowed(
    values: dict[str, object], expected: str
) -> None:
    with pytest.raises(SettingsError) as err:
        parse_capacity_aware(values, where="/etc/capacity-aware/config.yaml")
    message = str(err.value)
    assert message.startswith("/etc/capacity-aware/config.yaml: capacityAware")
    assert "\n" not in message  # one problem, one line
    assert expected in message


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        ({"cpu": "500m", "memory": "1Gi"}, {"cpu": "500m", "memory": "1Gi"}),
        ({"cpu": 2, "memory": "4G"}, {"cpu": "2", "memory": "4G"}),  # numbers are written out
        ({"cpu": "1.5", "ephemeral-storage": "10Gi"}, {"cpu": "1.5", "ephemeral-storage": "10Gi"}),
        (
            {"nvidia.com/gpu": "1", "hugepages-2Mi": "1Gi"},
            {"nvidia.com/gpu": "1", "hugepages-2Mi": "1Gi"},
        ),
        ({"memory": "1e9", "cpu": "0"}, {"memory": "1e9", "cpu": "0"}),
    ],
)
def test_workflow_resources_accept_every_kubernetes_quantity_form(
    resources: dict[str, object], expected: dict[str, str]
) -> None:
    settings = parse_capacity_aware({"workflowResources": resources}, where="x")
    assert settings.workflow_resources == expected


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({}, 0),  # default: no hot slots, warm pairs only
        ({"proactiveCapacity": 6, "hotRunners": 6}, 6),
        ({"proactiveCapacity": 6, "hotRunners": 2}, 2),
        ({"proactiveCapacity": 6, "hotRunners": "AUTO"}, "auto"),
        # under auto (or a schedule) the reserve is only known per step: split_reserve caps N
        ({"proactiveCapacity": "auto", "hotRunners": 12}, 12),
        ({"proactiveCapacity": 1, "hotRunners": 4,
          "warmPool": {"schedule": [{"start": "07:00", "end": "19:00", "pairs": 6}]}}, 4),
    ],
)  # fmt: skip
def test_hot_runners_reach_the_reconciler(values: dict[str, object], expected: object) -> None:
    config = parse_capacity_aware(values, where="x").reconciler_config("s")
    assert config.hot_runners == expected
