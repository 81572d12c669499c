"""Fault cases: each injects one fault into a loopback face and runs the REAL client on it.

A case returns an :class:`Outcome`: the fault, where it was injected, what the component is
expected to do, what it was observed to do (deterministic text: counts the case controls,
never timings), and whether the expectation held. ``tests/reliability/test_fault_matrix.py``
runs every case and checks docs/reliability.md is the rendered table of their outcomes;
``python -m tools.fault_matrix`` regenerates it.

- Kubernetes API: :class:`~simulator.faces.fault_proxy.K8sFaultProxy` in front of the
  Kubernetes face; :class:`~providers.kubernetes.watch.cache.KubeCache` and
  :class:`~providers.kubernetes.write.writer.KubernetesPlaceholderWriter` with the real client.
- Actions service: the Actions face's knobs; the real ``Listener`` loop + ``MessageSession`` +
  ``ActionsClient``, restarted like ARC restarts the pod when a run ends with an error.
- HUD: the HUD face's knobs; the real ``HudClient`` + ``HudDemandSource``.

Every wait is bounded (``WAIT`` seconds) and every server listens on an ephemeral loopback port.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s
from pydantic import SecretStr

from listener.arc.gate import CapacityGate
from listener.arc.message_loop import Listener
from providers.actions.auth import PatAuth
from providers.actions.client import ActionsClient
from providers.actions.config_url import parse_config_url
from providers.actions.decode import DecodedMessage
from providers.actions.errors import ActionsError, SessionConflictError
from providers.actions.models import JobCompleted, JobStarted, Session
from providers.actions.redact import SecretRegistry
from providers.actions.retry import RetryPolicy
from providers.actions.session import ConflictPolicy, MessageSession
from providers.hud.client import HudClient, HudDemandSource
from providers.kubernetes.observe.scale_set import ScaleSetTarget
from providers.kubernetes.pods.placeholders import PlaceholderPodBuilder
from providers.kubernetes.watch.cache import KubeCache
from providers.kubernetes.watch.targets import default_targets
from providers.kubernetes.write.writer import KubernetesPlaceholderWriter
from reconciler.ports import PairSpec
from reconciler.settings import CapacityAwareSettings
from simulator.engine.store import ObjectStore
from simulator.faces.actions import ActionsFace, ScriptedJobFeed
from simulator.faces.actions import Fault as FaceAnswer
from simulator.faces.fault_proxy import K8sFaultProxy
from simulator.faces.hud import HudFace, queued_row
from simulator.faces.k8s import K8sFace
from simulator.faults import (
    Fault,
    FaultKind,
    apply_actions_fault,
    apply_hud_fault,
    clear_actions_fault,
)
from tests.listener.arc_wiring import serve
from tests.providers.kubernetes import objects as o

WAIT = 10.0


@dataclass(frozen=True)
class Outcome:
    fault: str
    where: str
    expected: str
    observed: str
    held: bool


def fault(kind: FaultKind, **params: Any) -> Fault:
    return Fault.model_validate({"kind": kind.value, "start": 0, "params": params})


# --- Kubernetes API -----------------------------------------------------------------------------

TARGET = ScaleSetTarget(
    ers_name=o.ERS, runner_namespace=o.NS, placeholder_namespace=o.NS, max_runners=10
)
#: The watches a cache of the default targets holds open on the rig: all but Karpenter's two
#: kinds, whose group the face leaves absent.
WATCHES = len(default_targets(TARGET)) - 2


def _seeded_store() -> ObjectStore:
    store = ObjectStore(time.time, history=5000)
    for obj in o.small_cluster():
        store.create(obj)
    return store


@dataclass
class KubeRig:
    store: ObjectStore
    face: K8sFace
    proxy: K8sFaultProxy
    api: k8s.ApiClient

    def cache(self, **kwargs: Any) -> KubeCache:
        options: dict[str, Any] = dict(
            watch_timeout=30, backoff_base=0.01, backoff_cap=0.05, absent_retry=30
        )
        options.update(kwargs)
        return KubeCache(self.api, default_targets(TARGET), **options)


@contextmanager
def kube_rig() -> Iterator[KubeRig]:
    store = _seeded_store()
    with (
        K8sFace(store, absent_groups={"karpenter.sh"}, bookmark_interval=0.05) as face,
        K8sFaultProxy(face.url, seed=1) as proxy,
    ):
        config = k8s.Configuration(host=proxy.url)
        config.connection_pool_maxsize = 32
        with k8s.ApiClient(config) as api:
            yield KubeRig(store, face, proxy, api)


def _names(cache: KubeCache) -> set[str]:
    return {obj["metadata"]["name"] for obj in cache.list("Pod")}


def _refused_at_start(kind: FaultKind, expected: str, **params: Any) -> Outcome:
    """The API refuses (or holds) every request while the cache starts, then recovers."""
    with kube_rig() as rig:
        rig.proxy.inject(fault(kind, **params))
        cache = rig.cache(request_timeout=0.5, connect_timeout=0.5)
        with cache:
            # Every informer (8 lists + 2 optional) has been refused at least once...
            refused = rig.proxy.wait_injected(2 * len(default_targets(TARGET)), WAIT)
            synced_early = cache.has_synced  # ...and none of that counts as a sync
            rig.proxy.clear()
            synced = cache.wait_synced(WAIT)
            rig.store.create(o.placeholder("abcde-9", "runner"))
            seen = cache.wait_until(lambda c: "arc-runners-ph-abcde-9-r" in _names(c), WAIT)
    held = not synced_early and refused and synced and seen
    observed = (
        f"{'synced' if synced_early else 'no sync'} while refused (every informer refused "
        f"{'repeatedly' if refused else 'NOT AT ALL'}); "
        f"{'synced' if synced else 'NOT synced'} once it cleared; "
        f"later watch events {'applied' if seen else 'MISSING'}"
    )
    return Outcome(kind.value, "k8s proxy -> KubeCache (start-up)", expected, observed, held)


def k8s_5xx() -> Outcome:
    return _refused_at_start(
        FaultKind.K8S_5XX,
        "no decision before the first full list: cache unsynced while 503; retries with "
        "bounded backoff and syncs once the API answers",
        status=503,
    )


def k8s_429() -> Outcome:
    return _refused_at_start(
        FaultKind.K8S_429,
        "same as 5xx: unsynced while throttled, bounded backoff, syncs after",
        retry_after=1,
    )


def k8s_timeout() -> Outcome:
    return _refused_at_start(
        FaultKind.K8S_TIMEOUT,
        "every call has a request timeout: a held request fails and is retried; syncs after",
        hold=30,
    )


def k8s_slow() -> Outcome:
    expected = "slow answers delay the sync but nothing is lost"
    with kube_rig() as rig:
        rig.proxy.inject(fault(FaultKind.K8S_SLOW, delay=0.05))
        with rig.cache() as cache:
            synced = cache.wait_synced(WAIT)
            rig.store.create(o.placeholder("abcde-8", "workflow"))
            seen = cache.wait_until(lambda c: "arc-runners-ph-abcde-8-w" in _names(c), WAIT)
            slowed = rig.proxy.injected["k8s_slow"] > 0
    observed = (
        f"{'synced' if synced else 'NOT synced'} through the delay "
        f"(requests slowed: {'yes' if slowed else 'no'}); "
        f"later change {'applied' if seen else 'MISSING'}"
    )
    return Outcome(
        "k8s_slow", "k8s proxy -> KubeCache", expected, observed, synced and seen and slowed
    )


def k8s_watch_drop() -> Outcome:
    expected = (
        "watches resume from their last resourceVersion: every change made while "
        "they were down arrives, no relist"
    )
    with kube_rig() as rig, rig.cache() as cache:
        cache.wait_synced(WAIT)
        rig.face.wait_watches(WATCHES, WAIT)
        lists = cache.stats["list"]
        with rig.store.lock:  # nothing reconnects until the changes are in
            rig.proxy.inject(fault(FaultKind.K8S_WATCH_DROP, every=0.2))
            rig.store.create(o.placeholder("abcde-2", "runner"))
            rig.store.delete("Pod", o.NS, "arc-runners-runner-a-workflow", grace_period_seconds=0)
        reconnected = cache.wait_until(lambda c: c.stats["reconnect"] >= 1, WAIT)
        rig.proxy.clear()
        caught_up = cache.wait_until(
            lambda c: (
                "arc-runners-ph-abcde-2-r" in _names(c)
                and "arc-runners-runner-a-workflow" not in _names(c)
            ),
            WAIT,
        )
        relisted = cache.stats["list"] != lists
    observed = (
        f"streams cut and {'reconnected' if reconnected else 'NOT reconnected'}; "
        f"both changes {'applied' if caught_up else 'MISSING'}; "
        f"{'relisted' if relisted else 'no relist'}"
    )
    return Outcome(
        "k8s_watch_drop",
        "k8s proxy -> KubeCache",
        expected,
        observed,
        reconnected and caught_up and not relisted,
    )


def k8s_gone() -> Outcome:
    expected = "a 410 on resume makes the cache relist; every change is recovered"
    with kube_rig() as rig, rig.cache() as cache:
        cache.wait_synced(WAIT)
        rig.face.wait_watches(WATCHES, WAIT)
        with rig.store.lock:
            rig.proxy.inject(fault(FaultKind.K8S_GONE))
            rig.proxy.drop_streams()
            rig.store.create(o.placeholder("abcde-3", "workflow"))
            rig.store.create(o.node("node-c"))
        relisted = cache.wait_until(lambda c: c.stats["relist_410"] >= 1, WAIT)
        rig.proxy.clear()
        caught_up = cache.wait_until(
            lambda c: (
                "arc-runners-ph-abcde-3-w" in _names(c)
                and c.get("Node", None, "node-c") is not None
            ),
            WAIT,
        )
    observed = (
        f"{'relisted after 410' if relisted else 'NO relist'}; "
        f"changes {'recovered' if caught_up else 'MISSING'}"
    )
    return Outcome("k8s_410", "k8s proxy -> KubeCache", expected, observed, relisted and caught_up)


def k8s_write_5xx() -> Outcome:
    expected = (
        "placeholder writes fail soft: counted and logged, never raised; the next "
        "step re-observes and retries"
    )
    with kube_rig() as rig:
        settings = CapacityAwareSettings(enabled=True)
        builder = PlaceholderPodBuilder(
            settings,
            rig.store.get("EphemeralRunnerSet", o.NS, o.ERS),
            instance="abcde",
            namespace=o.NS,
            owner=None,
        )
        writer = KubernetesPlaceholderWriter(rig.api, builder, cache=None, request_timeout=2)
        spec = PairSpec("abcde-1", o.ERS, *_pod_names("abcde-1"), expires_at=time.time() + 600)
        rig.proxy.inject(fault(FaultKind.K8S_5XX, status=500))
        raised = False
        try:
            writer.create_pair(spec)
        except Exception:
            raised = True
        failed = writer.outcomes["failed_create"]
        created_during = rig.store.find("Pod", o.NS, spec.runner_pod) is not None
        rig.proxy.clear()
        writer.create_pair(spec)
        created = writer.outcomes["created"]
        writer.close()
    observed = (
        f"{'raised' if raised else 'no exception'}; {failed} failed creates counted; "
        f"{'pod created anyway' if created_during else 'nothing created'} during the "
        f"fault; retry created {created} pods"
    )
    return Outcome(
        "k8s_5xx (writes)",
        "k8s proxy -> KubernetesPlaceholderWriter",
        expected,
        observed,
        not raised and failed == 2 and not created_during and created == 2,
    )


def _pod_names(pair_id: str) -> tuple[str, str]:
    from state_machine.record import pod_names

    return pod_names(o.ERS, pair_id)


# --- Actions service ----------------------------------------------------------------------------

PAT = "ghp_reliabilityPat0123456789abcdef"
SCALE_SET_ID = 42


class Sleeps:
    """Injected sleep: records the delays, returns at once (retries never wait for real)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


class NoScaler:
    def __init__(self) -> None:
        self.desired: list[int] = []

    def handle_job_started(self, msg: JobStarted) -> None:
        pass

    def handle_job_completed(self, msg: JobCompleted) -> None:
        pass

    def handle_desired_runner_count(self, count: int) -> int:
        self.desired.append(count)
        return count


@dataclass
class Ledger:
    """Message ids seen across every listener run: delivered (got) and handled (acked)."""

    delivered: list[int] = field(default_factory=list)
    handled: list[int] = field(default_factory=list)
    acquired: list[int] = field(default_factory=list)


class RecordingSource:
    """The message session as the loop sees it, recording deliveries and acks."""

    def __init__(self, session: MessageSession, ledger: Ledger) -> None:
        self._session = session
        self.ledger = ledger

    @property
    def session(self) -> Session:
        return self._session.session

    async def open(self) -> Session:
        return await self._session.open()

    async def close(self) -> None:
        await self._session.close()

    async def get_message(self, last: int, capacity: int) -> DecodedMessage | None:
        message = await self._session.get_message(last, capacity)
        if message is not None:
            self.ledger.delivered.append(message.message_id)
        return message

    async def delete_message(self, message_id: int) -> None:
        await self._session.delete_message(message_id)
        self.ledger.handled.append(message_id)

    async def acquire_jobs(self, request_ids: list[int]) -> list[int]:
        acquired = await self._session.acquire_jobs(request_ids)
        self.ledger.acquired.extend(acquired)
        return acquired


@dataclass
class ActionsRun:
    ledger: Ledger
    errors: list[str]
    #: Why each run ended, in order: ``quiet`` (the harness stopped it once the queue was
    #: quiet), ``returned`` (serve() ended on its own), ``timed out`` or the error's name.
    endings: list[str]
    sleeps: list[float]
    acked: list[int]
    unacked: list[int]
    jobs_assigned: int


def _client(face: ActionsFace, sleeps: Sleeps) -> ActionsClient:
    return ActionsClient(
        parse_config_url(face.configure_url(), env={}),
        PatAuth(SecretStr(PAT)),
        scale_set_id=SCALE_SET_ID,
        sleep=sleeps,
        retry=RetryPolicy(),
        registry=SecretRegistry(),
    )


async def _run_listener(
    face: ActionsFace,
    feed: ScriptedJobFeed,
    arm: Callable[[], None],
    *,
    jobs: int,
    max_runs: int = 3,
    conflict_attempts: int = 3,
    arm_when_open: bool = False,
) -> ActionsRun:
    """Run the listener until every job is acquired; a run that ends with an error is
    restarted (a new pod: new client, new session) at most ``max_runs`` times.

    ``arm_when_open``: the fault is armed (and the jobs queued) only once the first session
    is open, so it hits a running listener rather than its start-up."""
    ledger, errors, sleeps = Ledger(), [], Sleeps()
    armer: asyncio.Future[None] | None = None
    if arm_when_open:

        async def arm_later() -> None:
            for _ in range(int(WAIT / 0.01)):  # bounded
                if face.session_of(SCALE_SET_ID) is not None:
                    arm()
                    for _ in range(jobs):
                        feed.add_job(SCALE_SET_ID)
                    return
                await asyncio.sleep(0.01)

        armer = asyncio.ensure_future(arm_later())
    else:
        arm()
        for _ in range(jobs):
            feed.add_job(SCALE_SET_ID)
    endings: list[str] = []
    while len(endings) < max_runs and not _quiet(face, ledger, jobs):
        client = _client(face, sleeps)
        session = MessageSession(
            client,
            owner_name="listener-0",
            sleep=sleeps,
            conflict=ConflictPolicy(attempts=conflict_attempts),
        )
        source = RecordingSource(session, ledger)
        listener = Listener(source, NoScaler(), CapacityGate(jobs))
        task = asyncio.ensure_future(serve(source, listener))  # type: ignore[arg-type]
        ending = "timed out"
        for _ in range(int(WAIT / 0.02)):  # bounded
            if task.done():
                ending = "returned"
                break
            if _quiet(face, ledger, jobs):
                ending = "quiet"
                break
            await asyncio.sleep(0.02)
        if not task.done():
            task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        except ActionsError as exc:
            errors.append(type(exc).__name__)
            ending = type(exc).__name__
        endings.append(ending)
        await client.aclose()
    if armer is not None:
        armer.cancel()
    return ActionsRun(
        ledger,
        errors,
        endings,
        sleeps.delays,
        face.acked(),
        face.unacked(SCALE_SET_ID),
        len(feed.jobs_in("acquired")),
    )


def _quiet(face: ActionsFace, ledger: Ledger, jobs: int) -> bool:
    """Every job acquired and every message the face queued (JobAssigned follow-ups too)
    handled: stopping earlier would count a message in flight as lost."""
    return (
        len(set(ledger.acquired)) >= jobs
        and not face.unacked(SCALE_SET_ID)
        and set(ledger.delivered) <= set(ledger.handled)
    )


def _actions_case(
    kind: FaultKind,
    expected: str,
    check: Callable[[ActionsRun], bool],
    describe: Callable[[ActionsRun], str],
    *,
    jobs: int = 2,
    arm_when_open: bool = False,
    label: str | None = None,
    also: Callable[[ActionsFace], None] | None = None,
    **params: Any,
) -> Outcome:
    feed = ScriptedJobFeed()
    with ActionsFace(feed, pat=PAT, poll_window=0.3) as face:
        the_fault = fault(kind, **params)

        def arm() -> None:
            apply_actions_fault(face, the_fault)
            if also is not None:
                also(face)

        result = asyncio.run(
            asyncio.wait_for(
                _run_listener(face, feed, arm, jobs=jobs, arm_when_open=arm_when_open), 3 * WAIT
            )
        )
        clear_actions_fault(face, the_fault)
    return Outcome(
        label or kind.value,
        "Actions face -> Listener + MessageSession + ActionsClient",
        expected,
        describe(result),
        check(result),
    )


def _once(run: ActionsRun) -> bool:
    """Every delivered message handled exactly once, every job acquired, nothing left."""
    handled = run.ledger.handled
    return (
        len(handled) == len(set(handled))
        and set(run.ledger.delivered) == set(handled)
        and not run.unacked
        and len(set(run.ledger.acquired)) == run.jobs_assigned
    )


def _unquiet(run: ActionsRun) -> list[str]:
    """How each run that did not end by the harness stopping it (queue quiet) ended."""
    return [ending for ending in run.endings if ending != "quiet"]


def _summary(run: ActionsRun) -> str:
    duplicates = len(run.ledger.handled) - len(set(run.ledger.handled))
    lost = len(set(run.ledger.delivered) - set(run.ledger.handled)) + len(run.unacked)
    # Not the number of runs: the harness stops a run as soon as the queue looks quiet, and a
    # follow-up message (JobAssigned) may still be in flight then; it is handled by the next
    # run, which is not a failure. Runs that ended with an error are what matters.
    return f"{run.jobs_assigned} jobs acquired; messages lost: {lost}, handled twice: {duplicates}"


def actions_5xx() -> Outcome:
    return _actions_case(
        FaultKind.ACTIONS_5XX,
        "retried with backoff (1 s, 2 s), then the message is delivered once",
        lambda r: _once(r) and r.sleeps[:2] == [1.0, 2.0] and not r.errors,
        lambda r: f"waited {r.sleeps[:2]} s; {_summary(r)}",
        status=503,
        times=2,
    )


def actions_429() -> Outcome:
    return _actions_case(
        FaultKind.ACTIONS_429,
        "waits Retry-After, then the message is delivered once",
        lambda r: _once(r) and r.sleeps[:1] == [7.0] and not r.errors,
        lambda r: f"waited {r.sleeps[:1]} s; {_summary(r)}",
        retry_after=7,
    )


def actions_401() -> Outcome:
    return _actions_case(
        FaultKind.ACTIONS_401,
        "queue token expired: the session is refreshed and the call retried once",
        lambda r: _once(r) and not r.errors,
        lambda r: f"run errors: {r.errors or 'none'}; {_summary(r)}",
        which="queue",
        arm_when_open=True,
        label="actions_401 (queue token)",
    )


def actions_401_admin() -> Outcome:
    return _actions_case(
        FaultKind.ACTIONS_401,
        "queue and admin tokens both expire mid-run: the session refresh gets 401 on the "
        "admin token, the client drops it, re-runs the token chain once and the run goes on: "
        "every message delivered once",
        lambda r: _once(r) and not r.errors,
        lambda r: f"run errors: {r.errors or 'none'}; {_summary(r)}",
        which="admin",
        arm_when_open=True,
        label="actions_401 (admin + queue)",
        also=lambda face: face.expire_queue_tokens(),
    )


def actions_409() -> Outcome:
    """A second listener for the same scale set: its session is refused."""
    feed = ScriptedJobFeed()
    expected = (
        "the second listener's create-session gets 409, retries a bounded number of "
        "times, then exits with SessionConflictError; it never polls"
    )
    with ActionsFace(feed, pat=PAT, poll_window=0.3) as face:
        apply_actions_fault(face, fault(FaultKind.ACTIONS_409))
        sleeps = Sleeps()
        client = _client(face, sleeps)
        session = MessageSession(
            client, owner_name="listener-1", sleep=sleeps, conflict=ConflictPolicy(attempts=4)
        )

        async def second() -> str:
            try:
                await session.open()
                return "opened"
            except SessionConflictError:
                return "SessionConflictError"
            finally:
                await client.aclose()

        result = asyncio.run(asyncio.wait_for(second(), WAIT))
        attempts = len(face.requests_to("create_session"))
        polls = len(face.requests_to("get_message"))
    observed = f"{result} after {attempts} attempts (waited {sleeps.delays} s); polls: {polls}"
    return Outcome(
        "actions_409",
        "Actions face -> MessageSession (second listener)",
        expected,
        observed,
        result == "SessionConflictError" and attempts == 4 and polls == 0,
    )


def actions_empty_200() -> Outcome:
    return _actions_case(
        FaultKind.ACTIONS_EMPTY_200,
        "an empty 200 is treated as 202 (no message); the next poll delivers",
        lambda r: _once(r) and not r.errors,
        lambda r: f"run errors: {r.errors or 'none'}; {_summary(r)}",
        times=2,
    )


def actions_malformed() -> Outcome:
    return _actions_case(
        FaultKind.ACTIONS_MALFORMED,
        "the run ends with MessageDecodeError (the pod restarts); the message was never acked, "
        "so the next run gets it: nothing lost, nothing handled twice",
        lambda r: _once(r) and r.errors == ["MessageDecodeError"],
        lambda r: f"run errors: {r.errors}; {_summary(r)}",
    )


def actions_reset() -> Outcome:
    return _actions_case(
        FaultKind.ACTIONS_RESET,
        "a reset mid long poll is a transport error: retried, then delivered once",
        lambda r: _once(r) and not r.errors and r.sleeps[:1] == [1.0],
        lambda r: f"waited {r.sleeps[:1]} s; {_summary(r)}",
    )


# --- HUD ------------------------------------------------------------------------------------------


def _hud_case(kind: FaultKind, expected: str, **params: Any) -> Outcome:
    with HudFace([queued_row("linux-cpu", 3)]) as face:
        hud = HudClient(face.url, token=SecretStr("hud-token"), timeout=0.2)
        source = HudDemandSource(hud, ["linux-cpu"])

        async def story() -> tuple[Any, Any, Any]:
            before = await source.poll()
            apply_hud_fault(face, fault(kind, **params))
            during = await source.poll()
            face.healthy()
            after = await source.poll()
            await hud.aclose()
            return before, during, after

        before, during, after = asyncio.run(asyncio.wait_for(story(), WAIT))
    held = (
        before.queued_jobs == 3
        and during.queued_jobs is None
        and bool(during.error)
        and after.queued_jobs == 3
    )
    kind_of_error = (during.error or "").split(":")[0]
    observed = (
        f"demand 3 -> {during.queued_jobs} ({kind_of_error or 'no error'}) -> "
        f"{after.queued_jobs}; the reconciler then uses its fallback floor"
    )
    suffix = ""
    if params:
        suffix = " (" + ", ".join(f"{k}={v}" for k, v in params.items()) + ")"
    return Outcome(
        kind.value + suffix, "HUD face -> HudClient + HudDemandSource", expected, observed, held
    )


HUD_EXPECTED = "Demand(None, error): falls back to proactiveCapacity + floor, never 0 or unlimited"


def hud_down() -> Outcome:
    return _hud_case(FaultKind.HUD_DOWN, HUD_EXPECTED, status=503)


def hud_slow() -> Outcome:
    return _hud_case(
        FaultKind.HUD_SLOW, "answer later than the timeout: " + HUD_EXPECTED, delay=1.0
    )


def hud_malformed_not_json() -> Outcome:
    return _hud_case(FaultKind.HUD_MALFORMED, HUD_EXPECTED, shape="not-json")


def hud_malformed_not_a_list() -> Outcome:
    return _hud_case(FaultKind.HUD_MALFORMED, HUD_EXPECTED, shape="not-a-list")


def hud_malformed_wrong_types() -> Outcome:
    return _hud_case(FaultKind.HUD_MALFORMED, HUD_EXPECTED, shape="wrong-types")


def hud_absurd_negative() -> Outcome:
    return _hud_case(FaultKind.HUD_ABSURD, HUD_EXPECTED, value=-5)


def hud_absurd_huge() -> Outcome:
    return _hud_case(FaultKind.HUD_ABSURD, HUD_EXPECTED, value=10**9)


def _poison(message_id: int, **fields: Any) -> bytes:
    message: dict[str, Any] = {
        "messageId": message_id,
        "messageType": "RunnerScaleSetJobMessages",
        "body": "[]",
        "statistics": {"totalAssignedJobs": 0},
    }
    message.update(fields)
    return json.dumps({k: v for k, v in message.items() if v is not ...}).encode()


#: Messages the listener cannot understand (issue 10, failure 2), by what is wrong with them.
#: Ids below the face's own, so the real messages still come after them.
POISON: dict[str, tuple[int, bytes]] = {
    "unknown outer messageType": (11, _poison(11, messageType="SomethingNew")),
    "statistics missing": (12, _poison(12, statistics=...)),
    "body nested 200 000 deep": (13, _poison(13, body="[" * 200_000 + "]" * 200_000)),
    "9 MiB body (over the 8 MiB cap)": (14, _poison(14, body=" " * (9 * 1024 * 1024))),
}


def actions_poison() -> Outcome:
    """Poison messages are logged with their id, counted, acked and skipped: one run, no
    error, and the real messages after them are handled exactly once."""
    feed = ScriptedJobFeed()
    with ActionsFace(feed, pat=PAT, poll_window=0.3) as face:

        def arm() -> None:
            for _, body in POISON.values():
                face.fail_next("get_message", FaceAnswer.http(200, body))

        result = asyncio.run(asyncio.wait_for(_run_listener(face, feed, arm, jobs=2), 3 * WAIT))
    poison_ids = {mid for mid, _ in POISON.values()}
    real_handled = [m for m in result.ledger.handled if m not in poison_ids]
    held = (
        not result.errors
        # Not "one run": the harness may stop a run while the face still queues a follow-up
        # (JobAssigned) that a second run handles. What poison must not do is end a run.
        and set(result.endings) == {"quiet"}
        and poison_ids <= set(result.acked)
        and len(real_handled) == len(set(real_handled))
        and set(result.ledger.delivered) <= set(real_handled)
        and len(set(result.ledger.acquired)) == result.jobs_assigned == 2
    )
    skipped = sorted(poison_ids & set(result.acked))
    return Outcome(
        "actions_poison (" + ", ".join(POISON) + ")",
        "Actions face -> Listener + MessageSession + ActionsClient",
        "each is logged with its id, counted, acked and skipped; the loop goes on and the "
        "jobs after it are acquired (issue 10: they used to end every run, unacked)",
        f"acked and skipped {skipped}; run errors: {result.errors or 'none'}; runs ended "
        f"other than by the harness once quiet: {_unquiet(result) or 'none'}; "
        f"{_summary(result)}",
        held,
    )


HTTP_CASES: dict[str, Callable[[], Outcome]] = {
    "k8s_5xx": k8s_5xx,
    "k8s_429": k8s_429,
    "k8s_timeout": k8s_timeout,
    "k8s_slow": k8s_slow,
    "k8s_watch_drop": k8s_watch_drop,
    "k8s_410": k8s_gone,
    "k8s_write_5xx": k8s_write_5xx,
    "actions_5xx": actions_5xx,
    "actions_429": actions_429,
    "actions_401_queue": actions_401,
    "actions_401_admin": actions_401_admin,
    "actions_409": actions_409,
    "actions_empty_200": actions_empty_200,
    "actions_malformed": actions_malformed,
    "actions_poison": actions_poison,
    "actions_reset": actions_reset,
    "hud_down": hud_down,
    "hud_slow": hud_slow,
    "hud_malformed_not_json": hud_malformed_not_json,
    "hud_malformed_not_a_list": hud_malformed_not_a_list,
    "hud_malformed_wrong_types": hud_malformed_wrong_types,
    "hud_absurd_negative": hud_absurd_negative,
    "hud_absurd_huge": hud_absurd_huge,
}
