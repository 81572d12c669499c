"""The independent checker: what the real API server and the Actions face say, sampled, and
the invariants judged from those samples alone (never from the listener's own account).

:class:`Tracker` keeps, at event resolution (a watch on pods and nodes), the slots the
placeholders back (:func:`confirmed_pairs`, from confirmed halves: :func:`half_confirmed`) and
the jobs the face counts as taken by a runner or started (busy); :class:`Sampler` counts pods,
nodes and NodeClaims every second. :func:`judge` then checks:

- every long poll's ``X-ScaleSetMaxCapacity`` <= confirmed slots + busy jobs, at the poll or
  within ``grace`` seconds before it (the listener acts on a snapshot a moment old; nothing
  after the poll may excuse it, since a job the header attracted would count);
- every job the listener acquired ran (its workflow pod reached Running) and completed;
- nothing of the listener's is left behind once it has stopped.
"""

from __future__ import annotations

import bisect
import json
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from providers.kubernetes.pods import labels as L
from reconciler.clock import SYSTEM_CLOCK, Clock
from simulator.faces.actions import ActionsFace, ScriptedJobFeed

PLACEHOLDER_SELECTOR = f"{L.LABEL_MANAGED_BY}={L.MANAGED_BY}"


@dataclass(frozen=True)
class Sample:
    at: float
    confirmed: int
    busy: int
    placeholders: int
    runner_pods: int
    workflow_pods: int
    nodes: int
    nodeclaims: int


def ready_nodes(nodes: Iterable[Mapping[str, Any]]) -> set[str]:
    return {
        n["metadata"]["name"]
        for n in nodes
        if any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (n.get("status") or {}).get("conditions") or ()
        )
    }


def half_confirmed(pod: Mapping[str, Any], ready: set[str]) -> bool:
    """The scheduler's confirmation of one placeholder, read off the API: bound to a Ready
    node and not on its way out; a half the listener marks to wait for its kubelet
    (``confirm-at`` other than ``binding``, e.g. GPUs) must also be Running
    (docs/design.md#capacity-ledger)."""
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    if meta.get("deletionTimestamp") or spec.get("nodeName") not in ready:
        return False
    phase = status.get("phase")
    if phase in ("Failed", "Succeeded"):
        return False
    at_binding = (meta.get("annotations") or {}).get(L.ANNOTATION_CONFIRM) == "binding"
    return at_binding or phase == "Running"


def confirmed_pairs(pods: Iterable[Mapping[str, Any]], ready: set[str]) -> int:
    """Slots the placeholders back: the fewer of confirmed runner halves and confirmed
    workflow halves (:func:`half_confirmed`), whichever pairs they came from. In
    ``kubernetes-novolume`` mode a job's runner pod and workflow pod are placed apart, so a
    surviving runner half of one pair and a workflow half of another back one job, as the
    listener's ledger counts them (docs/design.md#capacity-ledger)."""
    halves = {"runner": 0, "workflow": 0}
    for pod in pods:
        labels = pod["metadata"].get("labels") or {}
        role = labels.get(L.LABEL_ROLE)
        if labels.get(L.LABEL_PAIR) and role in halves and half_confirmed(pod, ready):
            halves[role] += 1
    return min(halves.values())


def busy_jobs(feed: ScriptedJobFeed) -> int:
    return len(feed.jobs_in("acquired")) + len(feed.jobs_in("started"))


@dataclass
class Sampler:
    """Counts, every second, from the tracker's watched pods and nodes (no list of its own)
    and from a list of NodeClaims (which nothing else watches)."""

    tracker: Tracker
    custom: client.CustomObjectsApi
    feed: ScriptedJobFeed
    clock: Clock = SYSTEM_CLOCK
    samples: list[Sample] = field(default_factory=list)
    nodeclaims_seen: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def sample(self) -> Sample:
        pods, nodes = self.tracker.objects()
        busy = busy_jobs(self.feed)
        now = self.clock.now()
        claims = self.custom.list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims")["items"]
        for claim in claims:
            self.nodeclaims_seen.setdefault(claim["metadata"]["name"], now)
        labels = [p["metadata"].get("labels") or {} for p in pods]
        placeholders = [p for p, lab in zip(pods, labels, strict=True) if lab.get(L.LABEL_PAIR)]
        taken = Sample(
            at=now,
            confirmed=confirmed_pairs(placeholders, ready_nodes(nodes)),
            busy=busy,
            placeholders=len(placeholders),
            runner_pods=sum(1 for lab in labels if lab.get(L.LABEL_EPHEMERAL_RUNNER) == "True"),
            workflow_pods=sum(1 for lab in labels if L.LABEL_WORKFLOW_RUNNER_POD in lab),
            nodes=len(nodes),
            nodeclaims=len(claims),
        )
        self.samples.append(taken)
        return taken

    def run(self, stop: threading.Event, period: float = 1.0) -> None:
        while not stop.is_set():
            try:
                self.sample()
            except Exception as err:  # a missed sample is reported, never fatal
                self.errors.append(f"{type(err).__name__}: {err}")
            stop.wait(period)


class Tracker:
    """The bound the header is judged against, at event resolution: a watch on the runner
    namespace's pods and on nodes keeps the API's current objects, and every change (or a
    change of the face's busy count, polled in-process every 0.1 s) appends a :class:`Bound`.
    Sampling on a timer instead missed confirmations that fell between a sample and a poll."""

    def __init__(self, api: client.ApiClient, feed: ScriptedJobFeed, namespace: str) -> None:
        self.core = client.CoreV1Api(api)
        self.feed = feed
        self.namespace = namespace
        self.pods: dict[str, dict[str, Any]] = {}
        self.nodes: dict[str, dict[str, Any]] = {}
        self.bounds: list[Bound] = []
        #: Per pod of the namespace: when the watch first saw it, saw it bound, and saw it go.
        self.pod_times: dict[str, dict[str, Any]] = {}
        self.errors: list[str] = []
        self._lock = threading.Lock()

    def objects(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The pods and nodes the watches hold now."""
        with self._lock:
            return list(self.pods.values()), list(self.nodes.values())

    def _record(self) -> None:
        with self._lock:
            placeholders = [
                p
                for p in self.pods.values()
                if (p["metadata"].get("labels") or {}).get(L.LABEL_PAIR)
            ]
            confirmed = confirmed_pairs(placeholders, ready_nodes(self.nodes.values()))
            busy = busy_jobs(self.feed)
            last = self.bounds[-1] if self.bounds else None
            if last is None or (last.confirmed, last.busy) != (confirmed, busy):
                self.bounds.append(Bound(time.time(), confirmed, busy))

    def _watch(self, stop: threading.Event, kind: str) -> None:
        store = self.pods if kind == "pods" else self.nodes
        while not stop.is_set():
            try:
                if kind == "pods":
                    listed = self.core.list_namespaced_pod(self.namespace, _preload_content=False)
                else:
                    listed = self.core.list_node(_preload_content=False)
                body = json.loads(listed.data)
                with self._lock:
                    store.clear()
                    store.update({o["metadata"]["name"]: o for o in body["items"]})
                self._record()
                version = body["metadata"]["resourceVersion"]
                call = self.core.list_namespaced_pod if kind == "pods" else self.core.list_node
                args = (self.namespace,) if kind == "pods" else ()
                stream = call(
                    *args,
                    watch=True,
                    resource_version=version,
                    timeout_seconds=60,
                    _preload_content=False,
                    _request_timeout=(5, 90),
                )
                for line in stream:
                    if stop.is_set():
                        break
                    event = json.loads(line)
                    obj = event["object"]
                    if event["type"] == "ERROR":
                        break
                    name = obj["metadata"]["name"]
                    with self._lock:
                        if event["type"] == "DELETED":
                            store.pop(name, None)
                        else:
                            store[name] = obj
                        if kind == "pods":
                            self._pod_time(name, obj, event["type"])
                    self._record()
                stream.release_conn()
            except Exception as err:  # re-list; a gap is reported, never fatal
                self.errors.append(f"{kind}: {type(err).__name__}: {err}")
                stop.wait(0.5)

    def _pod_time(self, name: str, obj: dict[str, Any], event: str) -> None:
        now = time.time()
        times = self.pod_times.setdefault(
            name, {"seen": now, "node": None, "bound": None, "gone": None}
        )
        node = (obj.get("spec") or {}).get("nodeName")
        if node and times["bound"] is None:
            times["bound"], times["node"] = now, node
        if event == "DELETED" or (obj["metadata"].get("deletionTimestamp") and not times["gone"]):
            times["gone"] = now

    def _busy(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self._record()
            stop.wait(0.1)

    def threads(self, stop: threading.Event) -> list[threading.Thread]:
        return [
            threading.Thread(target=self._watch, args=(stop, "pods"), daemon=True),
            threading.Thread(target=self._watch, args=(stop, "nodes"), daemon=True),
            threading.Thread(target=self._busy, args=(stop,), daemon=True),
        ]


@dataclass(frozen=True)
class Bound:
    """From ``at`` on: pairs the scheduler confirmed and jobs a runner took (the most the
    header may say)."""

    at: float
    confirmed: int
    busy: int


@dataclass(frozen=True)
class Poll:
    at: float
    capacity: int


#: The face stamps requests with the monotonic clock; samples use wall time.
_WALL_MINUS_MONOTONIC = time.time() - time.monotonic()


def polls(face: ActionsFace) -> list[Poll]:
    """Every GetMessage with the capacity its header carried, oldest first, in wall time."""
    found = []
    for request in face.requests_to("get_message"):
        header = request.headers.get("x-scalesetmaxcapacity")
        if header is not None and header.strip().lstrip("-").isdigit():
            found.append(Poll(request.received_at + _WALL_MINUS_MONOTONIC, int(header)))
    return sorted(found, key=lambda p: p.at)


def over_advertised(
    poll_list: list[Poll], samples: Sequence[Sample | Bound], *, grace: float = 2.0
) -> list[dict[str, Any]]:
    """Polls whose capacity exceeds every bound sampled in [poll - grace, poll]. A poll that
    advertises more than 0 before the first sample is counted too: nothing vouched for it."""
    times = [s.at for s in samples]
    over: list[dict[str, Any]] = []
    for poll in poll_list:
        # From the sample standing at the window's start to the last one at the poll.
        lo = max(0, bisect.bisect_right(times, poll.at - grace) - 1)
        hi = bisect.bisect_right(times, poll.at)
        window = samples[lo:hi]
        bound = max((s.confirmed + s.busy for s in window), default=0)
        if poll.capacity > bound:
            over.append({"at": poll.at, "advertised": poll.capacity, "bound": bound})
    return over


@dataclass(frozen=True)
class JobOutcome:
    request_id: int
    queued_at: float
    acquired: bool
    started_at: float | None
    completed_at: float | None


def job_outcomes(feed: ScriptedJobFeed, request_ids: Iterable[int]) -> list[JobOutcome]:
    outcomes = []
    for request_id in request_ids:
        job = feed.job(request_id)
        outcomes.append(
            JobOutcome(
                request_id=request_id,
                queued_at=job.queued_at,
                acquired=job.state in ("acquired", "started", "completed"),
                started_at=job.started_at,
                completed_at=job.finished_at if job.state == "completed" else None,
            )
        )
    return outcomes


def judge(
    outcomes: list[JobOutcome],
    poll_list: list[Poll],
    samples: Sequence[Sample | Bound],
    left_behind: list[str],
    *,
    workflow_ran: Mapping[int, bool],
) -> dict[str, Any]:
    """The scenario's invariant figures (all must be 0 but jobs and completed)."""
    over = over_advertised(poll_list, samples)
    return {
        "jobs": len(outcomes),
        "completed": sum(1 for o in outcomes if o.completed_at is not None),
        "failed": 0,
        "stuck": sum(1 for o in outcomes if o.completed_at is None),
        "claimed_unrunnable": sum(
            1 for o in outcomes if o.acquired and not workflow_ran.get(o.request_id, False)
        ),
        "polls": len(poll_list),
        "polls_over_confirmed": len(over),
        "over_advertised": over[:10],
        "placeholders_left_behind": len(left_behind),
        "left_behind": left_behind[:20],
    }


INVARIANTS = (
    "stuck",
    "failed",
    "claimed_unrunnable",
    "polls_over_confirmed",
    "placeholders_left_behind",
)


def violations(figures: Mapping[str, Any]) -> list[str]:
    return [f"{name}={figures[name]}" for name in INVARIANTS if figures.get(name)]
