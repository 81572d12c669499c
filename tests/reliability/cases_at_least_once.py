"""Fault cases of issue 34 item 4 (at-least-once job events), with the real clients on both
faces: the Actions face (``Listener`` + ``MessageSession`` + ``ActionsClient``) and the
Kubernetes face (ARC's ``Scaler`` over ``KubernetesScalerWriter`` and the kubernetes client).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s

from listener.arc.gate import CapacityGate
from listener.arc.message_loop import Listener
from listener.arc.scaler import Scaler
from listener.arc.version import ArcVersion
from providers.actions.models import JobStarted
from providers.actions.session import MessageSession
from providers.kubernetes.write.arc_writer import KubernetesScalerWriter
from simulator.engine.store import ObjectStore
from simulator.faces.actions import ActionsFace, ScriptedJobFeed
from simulator.faces.k8s import K8sFace
from tests.listener.arc_wiring import serve
from tests.providers.kubernetes import objects as o
from tests.reliability.cases import PAT, SCALE_SET_ID, WAIT, Outcome, Sleeps, _client

RUNNER = "arc-runners-runner-00001"


class Crash(Exception):
    """The process dies here (kill -9): nothing after this point of the message happens."""


class CrashBeforeThePatch:
    """ARC's scaler, except that the first JobStarted kills the process before its patch."""

    def __init__(self, scaler: Scaler) -> None:
        self.scaler = scaler
        self.crashed = False

    def handle_job_started(self, msg: JobStarted) -> None:
        if not self.crashed:
            self.crashed = True
            raise Crash("killed between receiving JobStarted and patching the runner")
        self.scaler.handle_job_started(msg)

    def handle_job_completed(self, msg: Any) -> None:
        self.scaler.handle_job_completed(msg)

    def handle_desired_runner_count(self, count: int) -> int:
        return self.scaler.handle_desired_runner_count(count)


async def _run_until(
    face: ActionsFace, scaler: Any, done: Callable[[], bool], sleeps: Sleeps
) -> str:
    """One listener process (new client, new session) until ``done`` or its run ends."""
    client = _client(face, sleeps)
    session = MessageSession(client, owner_name="listener-0", sleep=sleeps)
    listener = Listener(session, scaler, CapacityGate(5))
    task = asyncio.ensure_future(serve(session, listener))
    ending = "timed out"
    for _ in range(int(WAIT / 0.02)):  # bounded
        if task.done():
            break
        if done():
            ending = "done"
            break
        await asyncio.sleep(0.02)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    except Crash:
        ending = "crashed"
    await client.aclose()
    return ending


def _phase(store: ObjectStore) -> str:
    with store.lock:
        runner = store.get("EphemeralRunner", o.NS, RUNNER)
    return str((runner.get("status") or {}).get("phase"))


def actions_crash_before_job_started_patch() -> Outcome:
    store = ObjectStore(time.time, history=2000)
    store.create(o.ers())
    store.create(o.ephemeral_runner(RUNNER, phase="Pending"))
    feed = ScriptedJobFeed()
    with (
        K8sFace(store) as kube,
        k8s.ApiClient(k8s.Configuration(host=kube.url)) as api,
        ActionsFace(feed, pat=PAT, poll_window=0.3) as face,
    ):
        scaler = Scaler(
            KubernetesScalerWriter(api),
            namespace=o.NS,
            name=o.ERS,
            min_runners=0,
            max_runners=5,
            arc_version=ArcVersion.V0_15,
        )
        job = feed.add_job(SCALE_SET_ID)
        crashing = CrashBeforeThePatch(scaler)
        sleeps = Sleeps()

        async def story() -> tuple[str, str, int, str, str]:
            # The job is assigned and acquired, then started on RUNNER: the JobStarted message
            # reaches a process that dies before its patch.
            acquired = await _run_until(
                face, crashing, lambda: bool(feed.jobs_in("acquired")), sleeps
            )
            feed.start(job, RUNNER)
            first = await _run_until(face, crashing, lambda: False, sleeps)
            unacked_after_crash = len(face.unacked(SCALE_SET_ID))
            second = await _run_until(
                face,
                crashing,
                lambda: _phase(store) == "Running" and not face.unacked(SCALE_SET_ID),
                sleeps,
            )
            return acquired, first, unacked_after_crash, second, _phase(store)

        acquired, first, unacked_after_crash, second, phase = asyncio.run(
            asyncio.wait_for(story(), 4 * WAIT)
        )
        # A replay of the same JobStarted (what a redelivery does) changes nothing twice.
        with store.lock:
            before = dict(store.get("EphemeralRunner", o.NS, RUNNER)["status"])
        replayed = JobStarted.model_validate(
            {
                "messageType": "JobStarted",
                "runnerName": RUNNER,
                "runnerRequestId": job,
                "jobId": feed.job(job).job_id,
                "ownerName": "acme",
                "repositoryName": "web",
            }
        )
        scaler.handle_job_started(replayed)
        with store.lock:
            after = dict(store.get("EphemeralRunner", o.NS, RUNNER)["status"])
    same = {k: v for k, v in after.items() if k in before} == before
    held = (
        acquired == "done"
        and first == "crashed"
        and unacked_after_crash == 1
        and second == "done"
        and phase == "Running"
        and after.get("phase") == "Running"
        and same
    )
    observed = (
        f"first process {first} before the patch, leaving {unacked_after_crash} message "
        f"unacked; the next process: {second}, runner {phase}; a replayed JobStarted "
        f"{'changed nothing' if same else 'CHANGED the status'}"
    )
    return Outcome(
        "actions_crash (between JobStarted and its patch, ARC 0.15)",
        "Actions face + k8s face -> Listener + Scaler + KubernetesScalerWriter",
        "the message is acked only after its patch: the crashed process leaves it unacked, "
        "the next process gets it again and the runner reaches Running; a replay changes "
        "nothing (issue 34 item 4)",
        observed,
        held,
    )


AT_LEAST_ONCE_CASES: dict[str, Callable[[], Outcome]] = {
    "actions_crash_before_patch": actions_crash_before_job_started_patch,
}
