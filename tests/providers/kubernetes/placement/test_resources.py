"""kube-scheduler effective-request arithmetic and quantity formatting."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.kubernetes.placement.resources import (
    QuantityError,
    effective_requests,
    format_quantity,
    quantity,
)

GI = Decimal(2**30)


def c(name: str, cpu: str | None = None, memory: str | None = None, *, limits=None, **extra):
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    res = {"requests": requests}
    if limits:
        res["limits"] = limits
    return {"name": name, "image": "x", "resources": res, **extra}


def test_app_containers_are_summed():
    spec = {"containers": [c("a", "500m", "1Gi"), c("b", "250m", "512Mi")]}
    assert effective_requests(spec) == {"cpu": Decimal("0.75"), "memory": Decimal("1.5") * GI}


def test_a_big_regular_init_container_dominates_only_where_it_is_bigger():
    spec = {"containers": [c("a", "1", "1Gi")], "initContainers": [c("init", "2", "256Mi")]}
    assert effective_requests(spec) == {"cpu": Decimal(2), "memory": GI}


def test_sidecars_add_to_app_containers_and_to_later_init_steps():
    spec = {
        "initContainers": [
            c("sidecar", "500m", "1Gi", restartPolicy="Always"),
            c("setup", "3", "1Gi"),  # runs beside the sidecar: 3.5 cpu, 2Gi
        ],
        "containers": [c("runner", "1", "2Gi")],
        "overhead": {"cpu": "250m", "memory": "128Mi"},
    }
    # app: 1 + 0.5 = 1.5 cpu, 3Gi; init peak: 3.5 cpu, 2Gi; + overhead.
    assert effective_requests(spec) == {
        "cpu": Decimal("3.75"),
        "memory": 3 * GI + 128 * Decimal(2**20),
    }


def test_an_init_step_before_a_sidecar_does_not_include_it():
    spec = {
        "initContainers": [c("first", "2"), c("sidecar", "1", restartPolicy="Always")],
        "containers": [c("runner", "500m")],
    }
    assert effective_requests(spec) == {"cpu": Decimal(2)}  # max(1.5, 2, 1)


def test_limits_stand_in_for_missing_requests_and_extended_resources_count():
    spec = {
        "containers": [
            {
                "name": "gpu",
                "image": "x",
                "resources": {
                    "limits": {"nvidia.com/gpu": "1", "cpu": "2"},
                    "requests": {"cpu": "1"},
                },
            }
        ]
    }
    assert effective_requests(spec) == {"nvidia.com/gpu": Decimal(1), "cpu": Decimal(1)}


def test_pod_level_requests_override_the_container_sum():
    spec = {"containers": [c("a", "1", "1Gi")], "resources": {"requests": {"cpu": "3"}}}
    assert effective_requests(spec) == {"cpu": Decimal(3), "memory": GI}


def test_a_bad_quantity_names_where_it_was():
    spec = {"containers": [c("a", "lots")]}
    with pytest.raises(QuantityError, match=r"spec.containers\[0\].resources.requests.cpu: 'lots'"):
        effective_requests(spec)


@pytest.mark.parametrize(
    ("text", "formatted"),
    [
        ("2", "2"),
        ("500m", "500m"),
        ("1.5", "1500m"),
        ("4Gi", "4Gi"),
        ("1536Mi", "1536Mi"),
        ("1G", "1000000000"),
        ("100", "100"),
        ("0.0001", "1m"),
    ],
)
def test_quantities_round_trip_to_kubernetes_text(text, formatted):
    assert format_quantity(quantity(text)) == formatted
