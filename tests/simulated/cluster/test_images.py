"""The simulated kubelet's images: pull policy, the per-node cache and the serial puller."""

from __future__ import annotations

from typing import Any

import pytest

from simulator.cluster import Latencies
from simulator.cluster.images import (
    ALWAYS,
    IF_NOT_PRESENT,
    NEVER,
    NodeImages,
    PullTimes,
    container_images,
    default_pull_policy,
    init_images,
)
from tests.simulated.cluster.builders import pod, static_world

TIMES = PullTimes(pull=(20.0, 20.0), resolve=(0.5, 0.5), per_image={"pause:3.10": (1.0, 1.0)})


def midpoint(what: str, image: str, span: tuple[float, float]) -> float:
    return (span[0] + span[1]) / 2


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("busybox", ALWAYS),  # no tag is "latest"
        ("busybox:latest", ALWAYS),
        ("ghcr.io/acme/ci:latest", ALWAYS),
        ("busybox:1.36", IF_NOT_PRESENT),
        ("registry.local:5000/ci", ALWAYS),  # a registry port is not a tag
        ("registry.local:5000/ci:2", IF_NOT_PRESENT),
        ("ghcr.io/acme/ci@sha256:" + "0" * 64, IF_NOT_PRESENT),
    ],
)
def test_the_pull_policy_defaults_like_the_api_server(image: str, policy: str) -> None:
    """pkg/apis/core/v1/defaults.go SetDefaults_Container: Always for latest or no tag."""
    assert default_pull_policy(image) == policy


def test_images_are_read_per_container_list_in_order_and_a_set_policy_wins() -> None:
    obj = {
        "spec": {
            "initContainers": [{"image": "init:1"}],
            "containers": [{"image": "main:1", "imagePullPolicy": ALWAYS}, {"name": "no-image"}],
        }
    }
    assert init_images(obj) == [("init:1", IF_NOT_PRESENT)]
    assert container_images(obj) == [("main:1", ALWAYS)]


@pytest.mark.parametrize(
    ("held", "policy", "wait"),
    [
        (False, IF_NOT_PRESENT, 20.0),  # absent: a full pull
        (False, ALWAYS, 20.0),
        (True, IF_NOT_PRESENT, 0.0),  # present: the image manager skips the pull
        (True, ALWAYS, 0.5),  # present: the runtime only resolves the tag
        (False, NEVER, 0.0),  # ErrImageNeverPull is not modelled: Never never waits
    ],
)
def test_a_pod_waits_for_what_its_image_policy_needs(held: bool, policy: str, wait: float) -> None:
    node = NodeImages(present_at={"ci": 0.0} if held else {})
    assert node.ensure(100.0, [("ci", policy)], TIMES, midpoint) == wait


def test_pulls_on_one_node_are_served_one_at_a_time() -> None:
    """serializeImagePulls (default true): a pod whose image is absent waits behind the pull
    another pod queued first, then for its own."""
    node = NodeImages()
    assert node.ensure(0.0, [("runner", IF_NOT_PRESENT)], TIMES, midpoint) == 20.0
    assert node.ensure(5.0, [("ci", IF_NOT_PRESENT)], TIMES, midpoint) == 35.0
    assert node.ensure(50.0, [("pause:3.10", IF_NOT_PRESENT)], TIMES, midpoint) == 1.0


def test_two_pods_that_find_an_image_absent_pull_it_once() -> None:
    """Both requests are queued; the second is served after the first put the image on the
    node, so the runtime only resolves it."""
    node = NodeImages()
    first = node.ensure(0.0, [("ci", IF_NOT_PRESENT)], TIMES, midpoint)
    second = node.ensure(1.0, [("ci", IF_NOT_PRESENT)], TIMES, midpoint)
    assert (first, second) == (20.0, 19.5)  # served at 20 s, resolved by 20.5 s
    assert node.ensure(30.0, [("ci", IF_NOT_PRESENT)], TIMES, midpoint) == 0.0


def test_an_image_already_on_the_node_starts_the_next_pod_sooner() -> None:
    """kubernetes/kubernetes pkg/kubelet/images/image_manager.go: the first pod on a node pays
    the pull, a later pod with the same IfNotPresent image only the start latency. This is
    what lets a placeholder that ran an image pre-pull it for the real pod."""
    w = static_world(nodes=1, latencies={"pod_start": (1.0, 1.0), "image_pull": (20.0, 20.0)})
    image = {"image": "ghcr.io/acme/ci:2"}
    first = pod("first", cpu="100m")
    first["spec"]["containers"][0].update(image)
    w.create(first)
    w.run(20.9)
    assert w.phase("first") == "Pending"
    w.run(0.2)
    assert w.phase("first") == "Running"
    second = pod("second", cpu="100m")
    second["spec"]["containers"][0].update(image)
    w.create(second)
    w.run(1.1)
    waited = bound_to_running(w)
    assert waited["first"] == pytest.approx(21.0)
    assert waited["second"] == pytest.approx(1.0)


def bound_to_running(w: Any) -> dict[str, float]:
    """Seconds from binding to Running, per pod that got there."""
    started = {e["pod"]: e["t"] for e in w.events("pod_running")}
    return {
        e["pod"]: started[e["pod"]] - e["t"] for e in w.events("pod_bound") if e["pod"] in started
    }


def test_an_init_containers_image_is_asked_for_only_when_it_is_next_to_start() -> None:
    """kuberuntime_manager.go computePodActions starts one init container at a time, so a
    pod's second image is requested after its first init container ran (pull, then the 1 s
    PLEG relist that sees it exit): a pod bound meanwhile is served before it. Were every
    image queued at binding, ``late`` would wait behind all three of ``warm``'s (76 s, not 36 s)."""
    w = static_world(nodes=1, latencies={"pod_start": (1.0, 1.0), "image_pull": (20.0, 20.0)})
    warm = pod("warm", cpu="100m")
    warm["spec"]["initContainers"] = [
        {"name": "pre-pull-0", "image": "runner:1", "resources": {}},
        {"name": "pre-pull-1", "image": "ci:1", "resources": {}},
    ]
    warm["spec"]["containers"][0]["image"] = "pause:1"
    w.create(warm)
    w.run(5.0)
    late = pod("late", cpu="100m")
    late["spec"]["containers"][0]["image"] = "other:1"
    w.create(late)
    w.run(80.0)
    waited = bound_to_running(w)
    # late: queued at 5 s behind runner:1 (done at 20 s), its own pull 20 -> 40, start 41.
    assert waited["late"] == pytest.approx(36.0)
    # warm: runner:1 0 -> 20, ran by 21; ci:1 asked at 21, served after other:1 (40 -> 60),
    # ran by 61; pause:1 61 -> 81, start 82.
    assert waited["warm"] == pytest.approx(82.0)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"image_pull": (30.0, 10.0)}, r"latency range \(30.0, 10.0\)"),
        ({"image_resolve": (-1.0, 1.0)}, r"latency range \(-1.0, 1.0\)"),
        ({"image_pulls": {"ci:1": (2.0, 1.0)}}, r"image_pulls\[ci:1\] \(2.0, 1.0\)"),
    ],
)
def test_a_pull_range_must_be_ordered_and_not_negative(given: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Latencies(**given)
