"""The job images workflow placeholders pre-pull (providers/kubernetes/pods/job_images.py): what is
read from pods, what is remembered, and what is refused after a failed pre-pull."""

from __future__ import annotations

from typing import Any

import pytest

from providers.kubernetes.pods.job_images import (
    REFUSAL_BACKOFF,
    REFUSAL_BACKOFF_MAX,
    JobImages,
    failed_pre_pulls,
    job_container_image,
    pull_secret_names,
)
from reconciler.snapshot import (
    ClusterSnapshot,
    PairPods,
    PlaceholderPod,
    PodPhase,
    WorkflowPod,
)
from state_machine.states import Role


def workflow(name: str, image: str | None, secrets: tuple[str, ...] = ()) -> WorkflowPod:
    return WorkflowPod(
        name=f"{name}-workflow",
        runner_pod=name,
        node_name="n1",
        phase=PodPhase.RUNNING,
        job_image=image,
        pull_secrets=secrets,
    )


def half(failed: tuple[tuple[str, str], ...]) -> PlaceholderPod:
    return PlaceholderPod(
        name="ph-1-w",
        namespace="arc-runners",
        uid="u1",
        pair_id="p1",
        role=Role.WORKFLOW,
        phase=PodPhase.FAILED,
        node_name="n1",
        failed_pre_pulls=failed,
    )


def snap(
    at: float, *pods: WorkflowPod, failed: tuple[tuple[str, str], ...] = ()
) -> ClusterSnapshot:
    placeholders = {"p1": PairPods(workflow=half(failed))} if failed else {}
    return ClusterSnapshot(
        taken_at=at, max_runners=10, workflow_pods=pods, placeholders=placeholders
    )


def test_the_hooks_job_container_names_the_image() -> None:
    """actions/runner-container-hooks names the job container ``job``; service containers are
    not pulled (their images may have no shell for ``sh -c :``)."""
    spec = {
        "containers": [
            {"name": "redis", "image": "redis:7"},
            {"name": "job", "image": "ghcr.io/acme/ci:1"},
        ],
        "imagePullSecrets": [{"name": "a"}, {"name": "b"}],
    }
    assert job_container_image(spec) == "ghcr.io/acme/ci:1"
    assert job_container_image({"containers": [{"name": "redis", "image": "redis:7"}]}) is None
    assert pull_secret_names(spec) == ("a", "b")
    assert pull_secret_names({}) == ()


def init_status(name: str, state: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "state": state}


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({"waiting": {"reason": "ErrImagePull"}}, [("img:1", "ErrImagePull")]),
        ({"waiting": {"reason": "ImagePullBackOff"}}, [("img:1", "ImagePullBackOff")]),
        ({"waiting": {"reason": "InvalidImageName"}}, [("img:1", "InvalidImageName")]),
        ({"waiting": {"reason": "CreateContainerError"}}, [("img:1", "CreateContainerError")]),
        # no shell in the image: the runtime cannot exec ``sh``
        ({"terminated": {"exitCode": 127}}, [("img:1", "exit code 127")]),
        # still pulling, or done: not a failure
        ({"waiting": {"reason": "PodInitializing"}}, []),
        ({"running": {}}, []),
        ({"terminated": {"exitCode": 0}}, []),
    ],
)
def test_a_pre_pull_that_could_not_pull_or_run_is_a_failure(
    state: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    pod = {
        "spec": {"initContainers": [{"name": "pre-pull-0", "image": "img:1"}]},
        "status": {"initContainerStatuses": [init_status("pre-pull-0", state)]},
    }
    assert list(failed_pre_pulls(pod)) == expected


def test_init_containers_that_are_not_pre_pulls_are_not_read() -> None:
    pod = {
        "spec": {"initContainers": [{"name": "setup", "image": "img:1"}]},
        "status": {
            "initContainerStatuses": [init_status("setup", {"waiting": {"reason": "ErrImagePull"}})]
        },
    }
    assert failed_pre_pulls(pod) == ()


def test_the_most_recently_seen_images_are_learned_up_to_the_limit() -> None:
    images = JobImages(())
    images.observe(snap(10.0, workflow("a", "ci:1")))
    images.observe(snap(20.0, workflow("b", "ci:2")))
    assert images.learned == ("ci:2", "ci:1")
    images.observe(snap(30.0, workflow("c", "ci:3"), workflow("d", "ci:1")))
    assert images.learned == ("ci:1", "ci:3")  # ties by name; ci:2 is the oldest
    images.observe(snap(40.0))  # the jobs ended: still remembered
    assert images.learned == ("ci:1", "ci:3")


def test_workflow_pods_with_a_secret_the_placeholder_lacks_teach_nothing() -> None:
    images = JobImages(("registry",))
    images.observe(snap(10.0, workflow("a", "private:1", ("job-creds",))))
    images.observe(snap(11.0, workflow("b", "shared:1", ("registry",))))
    images.observe(snap(12.0, workflow("c", None)))
    assert images.learned == ("shared:1",)


def test_an_image_whose_pre_pull_failed_is_refused_and_not_learned_while_refused() -> None:
    """A job image without ``sh``, or one the placeholder may not pull, would fail every
    workflow half built with it: refused once seen failing, it is dropped from what is
    learned and from declared and runner images alike (until its backoff passes, below)."""
    images = JobImages(())
    images.observe(snap(10.0, workflow("a", "ci:1")))
    assert images.learned == ("ci:1",)
    images.observe(snap(20.0, workflow("b", "ci:1"), failed=(("ci:1", "exit code 127"),)))
    assert images.learned == ()
    assert "exit code 127" in images.refused["ci:1"]
    images.observe(snap(30.0, workflow("c", "ci:1")))
    assert images.learned == ()
    assert images.usable(["runner:1", "ci:1", "runner:1", "tools:1"]) == ("runner:1", "tools:1")


FAILED = (("ci:1", "ImagePullBackOff"),)


@pytest.mark.parametrize(
    ("since_refusal", "refused"),
    [(REFUSAL_BACKOFF - 1, True), (REFUSAL_BACKOFF, False), (REFUSAL_BACKOFF + 1, False)],
)
def test_a_refused_image_is_pulled_again_once_its_backoff_has_passed(
    since_refusal: float, refused: bool
) -> None:
    """A registry outage or an expired token must not turn the pre-pull off until the
    listener restarts: one second before the backoff the image is still refused, from the
    backoff on it is learned and pulled again."""
    images = JobImages(())
    images.observe(snap(100.0, workflow("a", "ci:1"), failed=FAILED))
    images.observe(snap(100.0 + since_refusal, workflow("b", "ci:1")))
    assert ("ci:1" in images.refused) is refused
    assert images.learned == (() if refused else ("ci:1",))


def test_each_refusal_of_the_same_image_lasts_twice_as_long_up_to_a_day() -> None:
    """An image that always fails (no ``sh``) costs one failed placeholder per backoff, so
    the backoff grows: 1 h, 2 h, 4 h, ... and never more than a day."""
    images = JobImages(())
    at, lasted = 0.0, []
    for _ in range(7):
        images.observe(snap(at, failed=FAILED))
        refused_at = at
        while "ci:1" in images.refused:
            at += 1800.0
            images.observe(snap(at))
        lasted.append(at - refused_at)
    assert lasted == [3600.0, 7200.0, 14400.0, 28800.0, 57600.0, 86400.0, 86400.0]
    assert REFUSAL_BACKOFF_MAX == 86400.0
