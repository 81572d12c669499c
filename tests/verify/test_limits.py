"""LimitRanges and ResourceQuotas that would change or refuse verify's pods (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from listener.commands.verify.limits import limit_range_problems, quota_problems


def pod(
    name: str, requests: dict[str, str], limits: dict[str, str] | None = None
) -> dict[str, Any]:
    resources = {"requests": requests, "limits": requests if limits is None else limits}
    return {"metadata": {"name": name}, "spec": {"containers": [{"resources": resources}]}}


def limit_range(*items: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "lr"}, "spec": {"limits": list(items)}}


PLACEHOLDER = pod("ph", {"cpu": "250m", "memory": "512Mi"})


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ({"type": "Container", "max": {"cpu": "1"}}, []),
        (
            {"type": "Container", "max": {"cpu": "100m"}},
            ["request cpu 250m > max", "limit cpu 250m > max"],
        ),
        (
            {"type": "Container", "min": {"memory": "1Gi"}},
            ["request memory 512Mi < min", "limit memory 512Mi < min"],
        ),
        (
            {"type": "Container", "defaultRequest": {"ephemeral-storage": "1Gi"}},
            ["defaults add ephemeral-storage"],
        ),
        ({"type": "Container", "default": {"cpu": "1"}}, []),  # cpu limit is set already
        (
            {"type": "Pod", "max": {"cpu": "200m"}},
            ["request cpu 250m > max", "limit cpu 250m > max"],
        ),
        ({"type": "PersistentVolumeClaim", "max": {"storage": "1Gi"}}, []),
    ],
)
def test_a_limit_range_that_changes_or_refuses_a_pod_is_named(
    item: dict[str, Any], expected: list[str]
) -> None:
    """Only what LimitRanger would really do to this pod is reported (prevents both a missed
    refusal and a false alarm on defaults the pod overrides)."""
    problems = limit_range_problems([limit_range(item)], [PLACEHOLDER])
    assert len(problems) == len(expected)
    for problem, words in zip(problems, expected, strict=True):
        assert problem.startswith("LimitRange lr on pod ph: ")
        assert words in problem


def quota(hard: dict[str, str], used: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "q"}, "status": {"hard": hard, "used": used}}


PAIR = [PLACEHOLDER, pod("ph-w", {"cpu": "1", "memory": "2Gi"})]


@pytest.mark.parametrize(
    ("hard", "used", "short"),
    [
        ({"requests.cpu": "2"}, {"requests.cpu": "500m"}, []),
        (
            {"requests.cpu": "2"},
            {"requests.cpu": "1"},
            ["requests.cpu has 1 left, a pair needs 1250m"],
        ),
        ({"cpu": "1"}, {}, ["cpu has 1 left, a pair needs 1250m"]),
        ({"pods": "10"}, {"pods": "9"}, ["pods has 1 left, a pair needs 2"]),
        ({"limits.memory": "8Gi"}, {"limits.memory": "1Gi"}, []),
        ({"services": "1"}, {"services": "1"}, []),  # not about pods
    ],
)
def test_a_quota_without_room_for_one_pair_is_named(
    hard: dict[str, str], used: dict[str, str], short: list[str]
) -> None:
    """A pair is refused by the ResourceQuota admission when hard - used < what both pods
    ask (prevents pairs that can never be created counted as a healthy install)."""
    problems = quota_problems([quota(hard, used)], PAIR)
    assert problems == [f"ResourceQuota q: {s}" for s in short]
