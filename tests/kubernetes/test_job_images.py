"""The job images workflow placeholders pre-pull (providers/kubernetes/job_images.py): what is
read from pods, what is remembered, and what is refused after a failed pre-pull."""

from __future__ import annotations

from typing import Any

import pytest

from providers.kubernetes.job_images import (
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


def test_an_image_whose_pre_pull_failed_is_refused_and_never_learned_again() -> None:
    """A job image without ``sh``, or one the placeholder may not pull, would fail every
    workflow half built with it: refused once seen failing, it is dropped from what is
    learned and from declared and runner images alike."""
    images = JobImages(())
    images.observe(snap(10.0, workflow("a", "ci:1")))
    assert images.learned == ("ci:1",)
    images.observe(snap(20.0, workflow("b", "ci:1"), failed=(("ci:1", "exit code 127"),)))
    assert images.learned == ()
    assert "exit code 127" in images.refused["ci:1"]
    images.observe(snap(30.0, workflow("c", "ci:1")))
    assert images.learned == ()
    assert images.usable(["runner:1", "ci:1", "runner:1", "tools:1"]) == ("runner:1", "tools:1")
