"""The listener's shutdown deletes its placeholders, through the real client on the face."""

from __future__ import annotations

from kubernetes import client

from reconciler.controller import Work
from reconciler.ports import PairSpec
from simulator.engine.store import NotFound, ObjectStore
from state_machine.record import pod_names
from tests.providers.kubernetes import objects as o
from tests.providers.kubernetes.listener_part import RecordedControls, started_part

PLACEHOLDERS = "arc-placeholders"  # not the ERS's namespace: no owner reference, no GC
WAIT = 10.0


def assert_all_deleted(store: ObjectStore, names: list[str], what: str) -> None:
    for name in names:
        try:
            store.get("Pod", PLACEHOLDERS, name)
        except NotFound:
            continue
        raise AssertionError(f"{what} {name} was left behind")


def test_placeholders_are_deleted_at_shutdown_after_the_ephemeral_runner_set_is_gone(
    api: client.ApiClient, store: ObjectStore
) -> None:
    """Regression: shutdown asked the provider for its writer, which re-reads the
    EphemeralRunnerSet; on an uninstall that is deleted first, so the call raised and our
    placeholders were left behind. The writer built at start is used instead."""
    app, part = started_part(api, {"enabled": True, "placeholderNamespace": PLACEHOLDERS})
    app.side.part = part
    try:
        cache = part.provider.cache
        assert cache.wait_synced(WAIT)
        part.build(RecordedControls())
        assert part.writer is not None
        names = pod_names(o.ERS, f"{app.instance}-1")
        part.writer.create_pair(PairSpec(f"{app.instance}-1", o.ERS, *names, o.T0 + 600))
        assert cache.wait_until(
            lambda c: all(c.get("Pod", PLACEHOLDERS, n) is not None for n in names), WAIT
        )

        store.delete("EphemeralRunnerSet", o.NS, o.ERS)
        assert cache.wait_until(lambda c: c.get("EphemeralRunnerSet", o.NS, o.ERS) is None, WAIT)
        app.side.delete_placeholders(leader=True)

        assert_all_deleted(store, names, "placeholder")
    finally:
        part.stop(timeout=1.0)


def test_shutdown_deletes_the_hot_placeholders_it_adopted(
    api: client.ApiClient, store: ObjectStore
) -> None:
    """Regression (issue 43): after a restart the new listener adopted the previous one's hot
    placeholders, but its shutdown asked only the pair store what it had adopted; the hot
    slots live beside it, so their placeholders (another instance's label) were not in the
    delete set and stayed behind."""
    app, part = started_part(
        api,
        {
            "enabled": True,
            "placeholderNamespace": PLACEHOLDERS,
            "proactiveCapacity": 2,
            "hotRunners": 2,
        },
    )
    app.side.part = part
    left = [o.placeholder(f"hot-old12-{i}", "workflow", instance="old12", namespace=PLACEHOLDERS)
            for i in (1, 2)]  # fmt: skip
    try:
        for pod in left:
            store.create(pod)
        cache = part.provider.cache
        assert cache.wait_synced(WAIT)
        names = [pod["metadata"]["name"] for pod in left]
        assert cache.wait_until(
            lambda c: all(c.get("Pod", PLACEHOLDERS, n) is not None for n in names), WAIT
        )
        part.build(RecordedControls())
        runtime = part.runtime
        assert runtime is not None
        now = app.ctx.clock.now()
        output = runtime.controller.step(now, runtime.snapshot(Work.STEP, now), stale_for=0.0)
        assert output.result is not None and output.result.hot is not None
        assert len(runtime.controller.reconciler.hot.slots) == 2  # both adopted

        app.side.delete_placeholders(leader=True)

        assert_all_deleted(store, names, "adopted hot placeholder")
    finally:
        part.stop(timeout=1.0)
