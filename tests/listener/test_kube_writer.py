"""The scaler's Kubernetes calls sent like client-go's: QPS 50 / burst 100, 429 and 5xx
retried (Retry-After honoured) within bounds, a broken connection retried, the run ended only
once those bounds are spent. Storms go through the fault proxy in front of the Kubernetes
face, with the real kubernetes client."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client as k8s

from listener.arc.scaler import Scaler, ScalerError
from providers.actions.models import JobStarted
from providers.kubernetes.lease.fence import LeaseFence, LeaseFenced
from providers.kubernetes.write.arc_writer import KubernetesScalerWriter, RetryPolicy, TokenBucket
from providers.kubernetes.write.lane import StopToken, WriteStopped
from simulator.engine.store import ObjectStore
from simulator.faces.fault_proxy import K8sFaultProxy
from simulator.faces.k8s import K8sFace
from simulator.faults import Fault, FaultKind, FaultPlan
from tests.providers.kubernetes import objects as o

RUNNERS = [f"arc-runners-runner-{i:05d}" for i in range(16)]


@dataclass
class FakeTime:
    """A clock (wall and monotonic the same) that moves only when something sleeps."""

    at: float = 0.0

    def now(self) -> float:
        return self.at

    def monotonic(self) -> float:
        return self.at

    def sleep(self, seconds: float) -> None:
        self.at += seconds


class TestRateLimit:
    def test_a_burst_of_100_goes_at_once_then_50_a_second(self) -> None:
        """ARC 0.15's QPS 50 / burst 100 (PR #4558), not client-go's default 5 / 10."""
        clock = FakeTime()
        bucket = TokenBucket(clock=clock, sleep=clock.sleep)
        for _ in range(100):
            bucket.take()
        assert clock.at == 0.0
        for _ in range(50):
            bucket.take()
        assert clock.at == pytest.approx(1.0)

    def test_the_writer_runs_at_the_scale_sets_listener_config_limit(self) -> None:
        """``spec.listenerConfig.scaler`` qps 2 / burst 1: one request at once, then 2 a
        second (not 50 / 100)."""
        from kubernetes import client as k8s

        clock = FakeTime()
        writer = KubernetesScalerWriter(
            k8s.ApiClient(k8s.Configuration(host="http://127.0.0.1:9")),
            qps=2,
            burst=1,
            clock=clock,
            sleep=clock.sleep,
        )
        for _ in range(3):
            writer.limiter.take()
        assert clock.at == pytest.approx(1.0)

    def test_nonsense_limits_are_refused(self) -> None:
        with pytest.raises(ValueError, match="qps > 0 and burst >= 1"):
            TokenBucket(qps=0, burst=10)


class TestRetryPolicy:
    @pytest.mark.parametrize(
        ("attempt", "retry_after", "wait"),
        [
            (0, 2.0, 2.0),  # Retry-After honoured
            (5, 0.5, 0.5),  # ... whatever the attempt
            (0, 3600.0, 30.0),  # ... but capped
            (0, None, 0.2),  # no Retry-After: exponential back-off
            (3, None, 1.6),
            (9, None, 10.0),  # ... capped
        ],
    )
    def test_wait(self, attempt: int, retry_after: float | None, wait: float) -> None:
        assert RetryPolicy().wait(attempt, retry_after) == pytest.approx(wait)


# --- storms through the fault proxy --------------------------------------------------------


@pytest.fixture
def store() -> ObjectStore:
    s = ObjectStore(time.time, history=2000)
    s.create(o.ers())
    for name in RUNNERS:
        s.create(o.ephemeral_runner(name, phase="Pending"))
    return s


@pytest.fixture
def face(store: ObjectStore) -> Iterator[K8sFace]:
    with K8sFace(store) as f:
        yield f


@pytest.fixture
def proxy(face: K8sFace) -> Iterator[K8sFaultProxy]:
    with K8sFaultProxy(face.url, seed=7) as p:
        yield p


def writer(proxy: K8sFaultProxy, policy: RetryPolicy | None = None) -> KubernetesScalerWriter:
    api = k8s.ApiClient(k8s.Configuration(host=proxy.url))
    # Real sleeps, but short back-offs: the storm is real, the test stays quick.
    return KubernetesScalerWriter(
        api, policy=policy or RetryPolicy(backoff_base=0.005, backoff_cap=0.02)
    )


def job_started(i: int, name: str) -> JobStarted:
    return JobStarted.model_validate(
        {
            "messageType": "JobStarted",
            "runnerName": name,
            "runnerRequestId": 1000 + i,
            "jobId": f"job-{i}",
            "ownerName": "acme",
            "repositoryName": "web",
        }
    )


def storm(kind: FaultKind, end: float | None = None, **params: float) -> Fault:
    return Fault.model_validate({"kind": kind.value, "start": 0, "end": end, "params": params})


class TestStorms:
    @pytest.mark.parametrize(
        "fault",
        [
            # The API server throttles everything for 1.5 s: Retry-After carries us through.
            storm(FaultKind.K8S_429, end=1.5, retry_after=0.25),
            # A third of every call throttled, all run long.
            storm(FaultKind.K8S_429, ratio=0.3, retry_after=0.01),
            storm(FaultKind.K8S_5XX, ratio=0.3, status=503),
            storm(FaultKind.K8S_5XX, ratio=0.3, status=500),
        ],
        ids=["429-all-for-1.5s", "429-30pct", "503-30pct", "500-30pct"],
    )
    def test_a_storm_on_the_scalers_writes_loses_nothing_and_ends_nothing(
        self, fault: Fault, proxy: K8sFaultProxy, face: K8sFace, store: ObjectStore
    ) -> None:
        """Prevents the README's old known gap: one throttled PATCH ended the listener run.
        (With 10 retries, as client-go, a call fails only after 11 refusals in a row.)"""
        w = writer(proxy)
        scaler = Scaler(w, namespace=o.NS, name=o.ERS, min_runners=0, max_runners=50)
        proxy.follow(FaultPlan(faults=[fault]))
        for i, name in enumerate(RUNNERS):
            scaler.handle_job_started(job_started(i, name))
            if i % 4 == 3:
                scaler.handle_desired_runner_count(i + 1)
        for name in RUNNERS:  # every JobStarted landed: phase and job recorded
            status = store.get("EphemeralRunner", o.NS, name)["status"]
            assert status["phase"] == "Running", name
            assert status["jobId"] == f"job-{RUNNERS.index(name)}"
        assert store.get("EphemeralRunnerSet", o.NS, o.ERS)["spec"]["replicas"] == 16
        injected = proxy.injected[fault.kind]
        assert injected > 0 and sum(w.retries.values()) == injected
        # Nothing written twice: refused calls never reached the face, so it saw one read
        # and one status patch per job, and one patch per desired count.
        calls = face.calls_by_verb()
        assert (calls.get("get"), calls.get("patch")) == (16, 20)
        assert scaler.conflicts == 0

    def test_past_its_bounds_a_write_ends_the_run_saying_why(
        self, proxy: K8sFaultProxy, store: ObjectStore
    ) -> None:
        """What client-go gives up on, we give up on: the run ends with the cause."""
        w = writer(proxy, RetryPolicy(max_retries=3, backoff_base=0.001))
        scaler = Scaler(w, namespace=o.NS, name=o.ERS, min_runners=0, max_runners=50)
        proxy.inject(storm(FaultKind.K8S_429, ratio=1.0, retry_after=0.001))
        with pytest.raises(ScalerError, match=r"HTTP 429 .*gave up after 4 attempts"):
            scaler.handle_desired_runner_count(3)
        assert proxy.injected[FaultKind.K8S_429] == 4
        assert store.get("EphemeralRunnerSet", o.NS, o.ERS)["spec"]["replicas"] == 0  # unwritten

    def test_a_retry_after_longer_than_the_deadline_is_not_waited(
        self, proxy: K8sFaultProxy
    ) -> None:
        w = writer(proxy, RetryPolicy(deadline=1.0, retry_after_cap=30.0))
        proxy.inject(storm(FaultKind.K8S_429, ratio=1.0, retry_after=5))
        started = time.monotonic()
        with pytest.raises(ScalerError, match="gave up after 1 attempts"):
            w.patch_ephemeral_runner_set(o.NS, o.ERS, b'{"spec":{"patchID":1,"replicas":2}}')
        assert time.monotonic() - started < 1.0

    def test_a_conflict_is_not_retried_blindly(self, proxy: K8sFaultProxy) -> None:
        """A 409 is an answer, not a fault: it goes back to the caller, who re-reads."""
        from listener.arc.scaler import WriteConflict

        w = writer(proxy)
        with pytest.raises(WriteConflict):
            w.patch_ephemeral_runner_status(
                o.NS, RUNNERS[0], b'{"metadata":{"resourceVersion":"1"},"status":{"jobId":"x"}}'
            )
        assert w.retries == {}


def test_a_listener_run_through_a_429_storm_loses_no_job_and_does_not_end(
    proxy: K8sFaultProxy, store: ObjectStore
) -> None:
    """The whole listener (Actions face -> loop -> scaler -> real client -> fault proxy ->
    Kubernetes face) while every Kubernetes call is throttled for 1.5 s: each JobStarted
    still reaches its runner and the run is still going when we stop it."""
    import asyncio

    from listener.arc.config import parse_listener_config
    from simulator.faces.actions import ActionsFace, ScriptedJobFeed
    from tests.listener.arc_wiring import listener_from_config, serve
    from tests.listener.test_loop import PAT, SCALE_SET, run

    feed = ScriptedJobFeed()
    w = writer(proxy)
    with ActionsFace(feed, pat=PAT, poll_window=1.0) as actions:
        config = parse_listener_config(
            {
                "configure_url": actions.configure_url(),
                "github_token": PAT,
                "ephemeral_runner_set_namespace": o.NS,
                "ephemeral_runner_set_name": o.ERS,
                "max_runners": len(RUNNERS),
                "min_runners": 0,
                "runner_scale_set_id": SCALE_SET,
            }
        )
        session, loop = listener_from_config(config, w, debounce=0)

        def all_marked() -> bool:
            return all(
                store.get("EphemeralRunner", o.NS, n)["status"].get("phase") == "Running"
                for n in RUNNERS
            )

        def wait(predicate: Any, seconds: float) -> bool:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:  # bounded: 20 ms steps, at most `seconds`
                if predicate():
                    return True
                time.sleep(0.02)
            return False

        async def story() -> None:
            task = asyncio.ensure_future(serve(session, loop))
            jobs = [feed.add_job(SCALE_SET) for _ in RUNNERS]
            assert await asyncio.to_thread(
                wait, lambda: len(feed.jobs_in("acquired")) == len(jobs), 10
            )
            proxy.follow(FaultPlan(faults=[storm(FaultKind.K8S_429, end=1.5, retry_after=0.25)]))
            for job, name in zip(jobs, RUNNERS, strict=True):
                feed.start(job, name)
            assert await asyncio.to_thread(wait, all_marked, 15)
            assert not task.done()  # the storm did not end the run
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await session.client.aclose()

        run(story(), timeout=40)
    for job, name in zip(sorted(feed.jobs_in("started")), RUNNERS, strict=True):
        assert store.get("EphemeralRunner", o.NS, name)["status"]["jobRequestId"] == job
    assert proxy.injected[FaultKind.K8S_429] > 0
    assert w.retries.get(429, 0) == proxy.injected[FaultKind.K8S_429]


# --- writes that never hold the process (issue 34) -----------------------------------------


class StubLease:
    def __init__(self, renewable: float | None, exclusive: float | None) -> None:
        self.renewable, self.exclusive = renewable, exclusive

    def renewable_for(self) -> float | None:
        return self.renewable

    def exclusive_for(self) -> float | None:
        return self.exclusive


class TestLeaseFence:
    @pytest.mark.parametrize(
        ("renewable", "exclusive", "timeout"),
        [
            (None, None, None),  # never held: nothing goes
            (-0.001, 4.999, None),  # just past the renew deadline: nothing goes
            (0.001, 5.001, 5.001),  # just before it: the rest of the exclusive window
            (8.0, 13.0, 10.0),  # freshly renewed: the writer's own timeout
            (0.3, 0.499, None),  # an attempt shorter than MIN_ATTEMPT is not worth sending
            (0.3, 0.5, 0.5),
        ],
    )
    def test_a_write_goes_only_while_the_lease_can_be_renewed(
        self, renewable: float | None, exclusive: float | None, timeout: float | None
    ) -> None:
        fence = LeaseFence(StubLease(renewable, exclusive))
        if timeout is None:
            with pytest.raises(LeaseFenced, match="not sent"):
                fence.timeout_for(10.0, "PATCH x")
        else:
            assert fence.timeout_for(10.0, "PATCH x") == pytest.approx(timeout)


def test_a_fenced_writer_sends_nothing_once_the_lease_is_lost(
    proxy: K8sFaultProxy, store: ObjectStore
) -> None:
    """Prevents issue 34's stale write from a process that no longer holds the Lease."""
    w = writer(proxy)
    w.fence = LeaseFence(StubLease(-1.0, 4.0))
    with pytest.raises(LeaseFenced):
        w.patch_ephemeral_runner_set(o.NS, o.ERS, b'{"spec":{"patchID":1,"replicas":3}}')
    assert proxy.writes == []
    assert store.get("EphemeralRunnerSet", o.NS, o.ERS)["spec"]["replicas"] != 3


def test_a_stop_ends_a_write_waiting_out_retry_after_120(proxy: K8sFaultProxy) -> None:
    """Prevents issue 34's 49 s exit: the write waited out its back-off whatever the process
    did. The 429's Retry-After (capped at 30 s) is waited on the stop token."""
    stop = StopToken()
    w = KubernetesScalerWriter(k8s.ApiClient(k8s.Configuration(host=proxy.url)), stop=stop)
    proxy.inject(storm(FaultKind.K8S_429, retry_after=120))
    threading.Timer(0.3, stop.set).start()
    began = time.monotonic()
    with pytest.raises(WriteStopped):
        w.patch_ephemeral_runner_set(o.NS, o.ERS, b'{"spec":{"patchID":1,"replicas":3}}')
    assert time.monotonic() - began < 5.0  # well under the 30 s wait it was in
    assert proxy.injected["k8s_429"] == 1
