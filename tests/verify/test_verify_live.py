"""``verify`` against one healthy live world, then the same world bent one defect at a time.

The world is the quickstart's end state (ladder, hook template, listener RBAC); every defect
is applied through the world's store and undone after its test, so one world serves all.
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from listener.commands.verify.probe import WaitClock
from providers.kubernetes.pods import labels as L
from simulator.faces.live_world import LiveWorld
from tests.verify.conftest import NAMESPACE, SCALE_SET, labelled_by_verify, objects, run_verify

EXERCISED = (
    "pair-ready",
    "node-autoscaler",
    "runner-preempts",
    "workflow-preempts",
    "ready-timeout",
    "garbage-collection",
)


def test_every_check_passes_and_nothing_of_verify_remains(
    world: LiveWorld, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole ladder works on a correctly installed cluster, and verify leaves no pod,
    ConfigMap, PriorityClass or other object behind (prevents a check that pollutes the
    cluster it checks, or a false FAIL on a good install)."""
    before = objects(world)
    outcome = run_verify(world, tmp_path, capsys, "--probe-timeout", "5s")
    assert outcome.failing() == [], outcome.doc
    assert outcome.code == 0
    assert set(EXERCISED) <= set(outcome.rows)
    assert outcome.status("node-autoscaler") == "PASS"  # the world starts without nodes
    assert "READY in" in outcome.rows["pair-ready"]["seen"]
    assert "counted 0 times" in outcome.rows["ready-timeout"]["seen"]
    assert objects(world) == before
    assert labelled_by_verify(world) == []


def test_an_interrupted_run_deletes_what_it_created(
    world: LiveWorld, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C while probe pods exist: they are deleted, the run says it was interrupted and
    exits 1 (prevents probe pods holding capacity after an aborted run)."""
    seen_pods: list[int] = []

    def interrupting_sleep(seconds: float) -> None:
        with world.store.lock:
            seen_pods.append(len(labelled_by_verify(world)))
        if len(seen_pods) >= 3:
            raise KeyboardInterrupt

    outcome = run_verify(
        world, tmp_path, capsys, clock=WaitClock(sleep=interrupting_sleep), capacity=None
    )
    assert max(seen_pods) > 0  # it was interrupted while its objects existed
    assert outcome.code == 1
    assert outcome.status("interrupted") == "FAIL"
    assert outcome.status("cleanup") == "PASS"
    assert labelled_by_verify(world) == []


def test_leftovers_of_an_interrupted_earlier_run_are_removed_at_start(
    world: LiveWorld, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pod and a ConfigMap of an earlier run (killed -9, say) are found by label and
    deleted (prevents probes piling up across runs)."""
    label = {"arc-capacity.dev/verify": "old01"}
    with world.store.lock:
        world.store.create(
            {
                "kind": "ConfigMap",
                "metadata": {"name": "verify-old01", "namespace": NAMESPACE, "labels": label},
            }
        )
        world.store.create(
            {
                "kind": "Pod",
                "metadata": {
                    "name": "verify-old01-ph-p1-r",
                    "namespace": NAMESPACE,
                    "labels": label,
                },
                "spec": {"containers": [{"name": "c", "image": "pause"}]},
                "status": {"phase": "Pending"},
            }
        )
    outcome = run_verify(world, tmp_path, capsys, "--no-exercise")
    assert outcome.rows["leftovers"]["seen"] == "removed 2 object(s) of an earlier run"
    assert labelled_by_verify(world) == []
    assert outcome.code == 0
    assert {outcome.status(c) for c in EXERCISED} == {"SKIP"}


def test_a_run_still_in_progress_is_left_alone(
    world: LiveWorld, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another verify whose --timeout has not passed keeps its probes (prevents two people's
    runs deleting each other's pods mid-exercise); once it is over, they are swept."""
    label = {"arc-capacity.dev/verify": "live1"}
    until = {"arc-capacity.dev/verify-until": f"{time.time() + 600:.0f}"}
    with world.store.lock:
        world.store.create(
            {
                "kind": "ConfigMap",
                "metadata": {
                    "name": "verify-live1",
                    "namespace": NAMESPACE,
                    "labels": label,
                    "annotations": until,
                },
            }
        )
    outcome = run_verify(world, tmp_path, capsys, "--no-exercise")
    assert outcome.rows["leftovers"]["seen"] == (
        "removed 0 object(s) of an earlier run; left run live1 alone (in progress)"
    )
    assert labelled_by_verify(world) == ["ConfigMap/verify-live1"]
    with world.store.lock:
        world.store.mutate(
            "ConfigMap",
            NAMESPACE,
            "verify-live1",
            lambda cm: cm["metadata"]["annotations"].update({"arc-capacity.dev/verify-until": "1"}),
        )
    run_verify(world, tmp_path, capsys, "--no-exercise")
    assert labelled_by_verify(world) == []


def test_every_wait_ends_within_the_timeout_and_the_run_still_cleans_up(
    world: LiveWorld, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--timeout bounds the whole run even when a probe alone would wait longer (prevents a
    verify that hangs a CI job, or one that leaves probes behind when time runs out)."""
    outcome = run_verify(world, tmp_path, capsys, "--timeout", "4s", "--probe-timeout", "60s")
    assert outcome.doc["seconds"] < 4 + 4  # the last waits end at the deadline, plus cleanup
    assert outcome.status("cleanup") == "PASS"
    assert labelled_by_verify(world) == []


# --- one defect at a time ---------------------------------------------------------------


@contextlib.contextmanager
def mutated(
    world: LiveWorld,
    kind: str,
    namespace: str | None,
    name: str,
    change: Callable[[dict[str, Any]], None],
) -> Iterator[None]:
    with world.store.lock:
        original = copy.deepcopy(world.store.get(kind, namespace, name))
        world.store.mutate(kind, namespace, name, change)
    try:
        yield
    finally:
        with world.store.lock:
            world.store.mutate(kind, namespace, name, lambda obj: _restore(obj, original))


def _restore(obj: dict[str, Any], original: dict[str, Any]) -> None:
    keep = obj["metadata"]["resourceVersion"]
    obj.clear()
    obj.update(copy.deepcopy(original))
    obj["metadata"]["resourceVersion"] = keep


def _runner_spec(ers: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = ers["spec"]["ephemeralRunnerSpec"]["spec"]
    return spec


@contextlib.contextmanager
def placeholder_class_above_runners(world: LiveWorld) -> Iterator[None]:
    """arc-placeholder-runner at 30: above the runner pods it stands in for."""
    name = L.DEFAULT_PRIORITY_CLASSES["runnerPlaceholder"][0]

    def value(pc: dict[str, Any]) -> None:
        pc["value"] = 30

    with mutated(world, "PriorityClass", None, name, value):
        yield


@contextlib.contextmanager
def runner_template_without_class(world: LiveWorld) -> Iterator[None]:
    with mutated(
        world,
        "EphemeralRunnerSet",
        NAMESPACE,
        SCALE_SET,
        lambda ers: _runner_spec(ers).pop("priorityClassName"),
    ):
        yield


@contextlib.contextmanager
def classic_kubernetes_mode(world: LiveWorld) -> Iterator[None]:
    def classic(ers: dict[str, Any]) -> None:
        for env in _runner_spec(ers)["containers"][0]["env"]:
            if env["name"] == "ACTIONS_RUNNER_CONTAINER_HOOKS":
                env["value"] = "/home/runner/k8s/index.js"

    with mutated(world, "EphemeralRunnerSet", NAMESPACE, SCALE_SET, classic):
        yield


@contextlib.contextmanager
def role_without_pod_delete(world: LiveWorld) -> Iterator[None]:
    def drop(role: dict[str, Any]) -> None:
        for rule in role["rules"]:
            if "pods" in rule["resources"]:
                rule["verbs"] = [v for v in rule["verbs"] if v != "delete"]

    with mutated(world, "Role", NAMESPACE, "arc-capacity-listener", drop):
        yield


@contextlib.contextmanager
def unchanged(world: LiveWorld) -> Iterator[None]:
    yield


@contextlib.contextmanager
def created(world: LiveWorld, obj: dict[str, Any]) -> Iterator[None]:
    with world.store.lock:
        world.store.create(obj)
    try:
        yield
    finally:
        with world.store.lock:
            world.store.delete(obj["kind"], NAMESPACE, obj["metadata"]["name"])


def small_container_limit(world: LiveWorld) -> contextlib.AbstractContextManager[None]:
    """A LimitRange whose container max is below the runner placeholder's 250m."""
    return created(
        world,
        {
            "kind": "LimitRange",
            "metadata": {"name": "tiny", "namespace": NAMESPACE},
            "spec": {"limits": [{"type": "Container", "max": {"cpu": "100m"}}]},
        },
    )


def exhausted_quota(world: LiveWorld) -> contextlib.AbstractContextManager[None]:
    """A ResourceQuota with room for one more pod: a pair needs two."""
    return created(
        world,
        {
            "kind": "ResourceQuota",
            "metadata": {"name": "pods", "namespace": NAMESPACE},
            "spec": {"hard": {"pods": "10"}},
            "status": {"hard": {"pods": "10"}, "used": {"pods": "9"}},
        },
    )


DEFECTS = [
    # (defect, capacityAware overrides, the row that must fail, words its message must hold)
    pytest.param(
        placeholder_class_above_runners,
        {},
        "priority-classes",
        "must be lower than",
        id="placeholder-class-wrong-value",
    ),
    pytest.param(
        runner_template_without_class,
        {},
        "runner-template",
        "priorityClassName",
        id="runner-template-without-arc-runner",
    ),
    pytest.param(
        classic_kubernetes_mode,
        {},
        "container-mode",
        "kubernetes-novolume",
        id="classic-kubernetes-mode",
    ),
    pytest.param(
        role_without_pod_delete, {}, "permissions", "delete core/pods", id="missing-rbac-verb"
    ),
    pytest.param(
        unchanged,
        {"workflowResources": {"cpu": "500m", "memory": "1Gi"}},
        "workflow-resources",
        "cpu 1 > 500m",
        id="workflow-resources-too-small",
    ),
    pytest.param(
        small_container_limit,
        {},
        "limit-ranges",
        "request cpu 250m > max",
        id="limit-range-refuses-placeholders",
    ),
    pytest.param(
        exhausted_quota,
        {},
        "resource-quotas",
        "pods has 1 left, a pair needs 2",
        id="quota-without-room-for-a-pair",
    ),
]


@pytest.mark.parametrize(("defect", "capacity", "row", "words"), DEFECTS)
def test_a_read_defect_fails_its_row_with_what_to_change(
    world: LiveWorld,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    defect: Callable[[LiveWorld], contextlib.AbstractContextManager[None]],
    capacity: dict[str, Any],
    row: str,
    words: str,
) -> None:
    """Each configuration defect fails exactly its own row, says what it saw and how to fix
    it, and exits 1 (prevents a silent pass, or a failure that points at the wrong thing)."""
    with defect(world):
        outcome = run_verify(world, tmp_path, capsys, "--no-exercise", capacity=capacity)
    assert outcome.code == 1
    assert outcome.failing() == [row], outcome.doc
    failing = outcome.rows[row]
    assert words in failing["seen"] + failing["fix"]
    assert failing["fix"]


def test_each_row_is_printed_as_it_completes(
    world: LiveWorld, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reading rows are on screen while the probe pair is still being waited for, and
    the verdict comes last (prevents a run that printed nothing until it ended, issue 32)."""
    import json as json_module

    from listener.commands.verify.cli import main

    printed_before_first_wait: list[str] = []

    def sleep(seconds: float) -> None:
        if not printed_before_first_wait:
            printed_before_first_wait.append(capsys.readouterr().out)
        time.sleep(seconds)

    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_text(json_module.dumps(world.kubeconfig()))
    env = {
        "KUBECONFIG": str(kubeconfig),
        "CAPACITY_AWARE_JSON": json_module.dumps(world.capacity_aware()),
    }
    capsys.readouterr()
    code = main(
        ["--scale-set", SCALE_SET, "--namespace", NAMESPACE, "--probe-timeout", "5s"],
        env=env,
        clock=WaitClock(sleep=sleep),
    )
    rest = capsys.readouterr().out
    assert code == 0, printed_before_first_wait[0] + rest
    (early,) = printed_before_first_wait
    assert early.startswith(f"verify {NAMESPACE}/{SCALE_SET}\n")
    assert "PASS  settings" in early and "PASS  dry-run" in early
    # The first wait comes while a probe is still being exercised (the pair may already be
    # READY: placeholders count once bound), so later rows and the verdict are still to come.
    assert "PASS: " not in early and "FAIL: " not in early
    later_rows = [line for line in rest.splitlines() if line.startswith(("PASS  ", "SKIP  "))]
    assert later_rows, rest
    assert "pair-ready" in early + rest
    assert rest.rstrip().splitlines()[-1].startswith("PASS: ")
