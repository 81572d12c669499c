"""kubelet: admission of pinned pods, images, start latency, endings, deadlines and removal.

* A pod bound by the scheduler first waits for its images (:mod:`simulator.cluster.images`:
  pulls of images the node lacks, one at a time per node, and the registry round trip of an
  ``Always`` policy), then starts after a latency drawn from ``latencies.pod_start`` (one
  seeded stream per pod category and image, so a placeholder's start never shifts a
  runner's: :mod:`simulator.engine.streams`): phase Running, ``startTime`` (= binding time,
  when the kubelet acknowledged it), ``Ready``/``ContainersReady``/``Initialized``
  conditions, running container statuses.
* A pod *created* with ``spec.nodeName`` skips the scheduler; the kubelet admits it only if it
  fits (requests vs allocatable minus the pods already admitted there, terminating ones
  included; nominations do not count), matches the node's labels and tolerates its NoExecute
  taints. Otherwise it fails at once like the real kubelet: phase Failed, reason ``OutOfcpu``
  / ``OutOfmemory`` / ``OutOfnvidia.com/gpu`` / ``OutOfpods`` / ``NodeAffinity`` / ``Taint``
  and a "Pod was rejected: ..." message. It never preempts. A pod pinned to a node that does
  not exist is deleted by pod GC (reason ``node_lost``).
* ``finish_pod``: the containers ended by themselves -> Succeeded (or Failed, container reason
  ``Error``); resources are released at once.
* ``activeDeadlineSeconds`` counts from the kubelet's start time (binding), as on a real node:
  phase Failed, reason ``DeadlineExceeded``.
* Graceful deletion: a bound pod that gets ``deletionTimestamp`` is removed after
  ``min(terminationGracePeriodSeconds, deletionGracePeriodSeconds)``; it keeps holding its
  resources until then. (The store removes grace-0 and already-ended pods by itself.)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from simulator.cluster.conditions import iso_cached as iso
from simulator.cluster.conditions import set_condition
from simulator.cluster.emit import Emitter
from simulator.cluster.errors import PodStateError
from simulator.cluster.images import (
    NodeImages,
    PullTimes,
    container_images,
    init_images,
    seeded_draw,
)
from simulator.cluster.infos import NodeInfo, Observer, PodInfo
from simulator.cluster.state import ClusterState
from simulator.engine.loop import EventLoop
from simulator.engine.store import Obj, StoreError
from simulator.engine.streams import Streams

#: An init container that only pulls its image (``sh -c :``) ends at once; the kubelet sees
#: the exit at its next PLEG relist (every second) and only then starts the next container.
INIT_CONTAINER_RUN = 1.0


class Kubelet(Observer):
    def __init__(
        self,
        loop: EventLoop,
        state: ClusterState,
        emit: Emitter,
        *,
        start_latency: tuple[float, float],
        pull_times: PullTimes,
        streams: Streams,
    ) -> None:
        self.loop = loop
        self.state = state
        self.store = state.store
        self.emit = emit
        self.start_latency = start_latency
        self.streams = streams
        self.pull_times = pull_times
        self._draw_pull = seeded_draw(streams)
        self._images: dict[str, NodeImages] = {}  # node uid -> its images
        self.rejections = 0
        state.admit_pinned = self.admit

    # --- admission of pinned pods ----------------------------------------------------

    def admit(self, pod: PodInfo, node: NodeInfo | None) -> str | None:
        """None to admit, else the rejection reason (the message is kept on the pod)."""
        if node is None:
            return "NodeNotFound"
        if not pod.placement.matches(node.labels, node.name):
            pod.rejected_message = (
                "Pod was rejected: Predicate NodeAffinity failed: node(s) "
                "didn't match Pod's node affinity/selector"
            )
            return "NodeAffinity"
        for taint in node.taints:
            if taint[2] == "NoExecute" and pod.placement.untolerated((taint,)) is not None:
                pod.rejected_message = (
                    "Pod was rejected: Predicate TaintToleration failed: "
                    "node(s) had untolerated taint"
                )
                return "Taint"
        req, alloc = pod.requests, node.allocatable
        checks = (
            ("pods", req.pods, node.npods, alloc.pods),
            ("cpu", req.cpu, node.req_cpu, alloc.cpu),
            ("memory", req.memory, node.req_mem, alloc.memory),
            ("nvidia.com/gpu", req.gpu, node.req_gpu, alloc.gpu),
        )
        for name, want, used, capacity in checks:
            if want and want > capacity - used:
                pod.rejected_message = (
                    f"Pod was rejected: Node didn't have enough resource: {name}, requested: "
                    f"{want}, used: {used}, capacity: {capacity}"
                )
                return f"OutOf{name}"
        return None

    def pod_rejected(self, pod: PodInfo, node: NodeInfo | None) -> None:
        self.rejections += 1
        if node is None:
            pod.deletion_reason = "node_lost"
            pod.timers.append(self.loop.call_soon(self._gc, pod))
        else:
            pod.timers.append(self.loop.call_soon(self._reject, pod))

    def _reject(self, pod: PodInfo) -> None:
        reason = pod.rejected or ""
        message = pod.rejected_message

        def change(obj: Obj) -> None:
            status = obj.setdefault("status", {})
            status.update(phase="Failed", reason=reason, message=message)

        self._write(pod, change)

    def _gc(self, pod: PodInfo) -> None:
        with contextlib.suppress(StoreError):
            self.store.delete("Pod", pod.namespace, pod.name, uid=pod.uid, grace_period_seconds=0)

    # --- running ----------------------------------------------------------------------

    def pod_bound(self, pod: PodInfo, node: NodeInfo) -> None:
        images = self._images.setdefault(node.obj["metadata"]["uid"], NodeImages())
        self._next_init(pod, images, init_images(pod.obj), 0)
        if pod.active_deadline is not None:
            pod.timers.append(self.loop.call_later(pod.active_deadline, self._deadline, pod))

    def _next_init(
        self, pod: PodInfo, images: NodeImages, inits: list[tuple[str, str]], index: int
    ) -> None:
        """Init containers one at a time, each image asked for only when the one before has
        run, then the containers' images and the start latency."""
        if not pod.counted or pod.terminating or pod.phase != "Pending":
            return
        now = self.loop.now()
        if index < len(inits):
            wait = images.ensure(now, inits[index : index + 1], self.pull_times, self._draw_pull)
            pod.timers.append(
                self.loop.call_later(
                    wait + INIT_CONTAINER_RUN, self._next_init, pod, images, inits, index + 1
                )
            )
            return
        lo, hi = self.start_latency
        containers = pod.obj.get("spec", {}).get("containers") or [{}]
        stream = self.streams("pod-start", pod.category, str(containers[0].get("image", "")))
        wait = images.ensure(now, container_images(pod.obj), self.pull_times, self._draw_pull)
        pod.timers.append(self.loop.call_later(wait + stream.uniform(lo, hi), self._start, pod))

    def node_removed(self, node: NodeInfo, orphans: list[PodInfo]) -> None:
        self._images.pop(node.obj["metadata"]["uid"], None)

    def _start(self, pod: PodInfo) -> None:
        if not pod.counted or pod.terminating or pod.phase != "Pending":
            return
        now = self.loop.now()
        started = iso(pod.bound_at if pod.bound_at is not None else now)

        def change(obj: Obj) -> None:
            status = obj.setdefault("status", {})
            status["phase"] = "Running"
            status["startTime"] = started
            for ctype in ("Initialized", "ContainersReady", "Ready"):
                set_condition(obj, ctype, "True", "", "", now)
            status["containerStatuses"] = [
                {
                    "name": c.get("name", ""),
                    # image/imageID are required fields of V1ContainerStatus in the client.
                    "image": c.get("image", ""),
                    "imageID": "",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": iso(now)}},
                }
                for c in obj["spec"].get("containers") or ()
            ]

        self._write(pod, change)

    def _deadline(self, pod: PodInfo) -> None:
        if not pod.counted or pod.terminal:
            return
        self._end(
            pod,
            "Failed",
            "DeadlineExceeded",
            "Pod was active on the node longer than the specified deadline",
            "Error",
        )

    def finish_pod(self, namespace: str, name: str, succeeded: bool) -> bool:
        pod = self.state.pod(namespace, name)
        if pod is None or pod.terminal:
            return False
        if pod.phase != "Running":
            raise PodStateError(
                f"pod {namespace}/{name} cannot finish: its containers never started "
                f"(phase {pod.phase}, node {pod.node or 'none'})"
            )
        if succeeded:
            self._end(pod, "Succeeded", "", "", "Completed", exit_code=0)
        else:
            self._end(pod, "Failed", "", "", "Error", exit_code=1)
        return True

    def _end(
        self,
        pod: PodInfo,
        phase: str,
        reason: str,
        message: str,
        container_reason: str,
        exit_code: int = 1,
    ) -> None:
        now = self.loop.now()

        def change(obj: Obj) -> None:
            status = obj.setdefault("status", {})
            status["phase"] = phase
            if reason:
                status["reason"] = reason
                status["message"] = message
            for ctype in ("ContainersReady", "Ready"):
                set_condition(obj, ctype, "False", "PodCompleted", "", now)
            status["containerStatuses"] = [
                {
                    "name": c.get("name", ""),
                    "image": c.get("image", ""),
                    "imageID": "",
                    "ready": False,
                    "started": False,
                    "restartCount": 0,
                    "state": {
                        "terminated": {
                            "exitCode": exit_code,
                            "reason": container_reason,
                            "finishedAt": iso(now),
                        }
                    },
                }
                for c in obj["spec"].get("containers") or ()
            ]

        self._write(pod, change)

    # --- graceful deletion ------------------------------------------------------------

    def pod_terminating(self, pod: PodInfo) -> None:
        if not pod.counted:
            return
        grace = pod.grace
        requested = pod.obj["metadata"].get("deletionGracePeriodSeconds")
        if requested is not None:
            grace = min(grace, float(requested))
        pod.timers.append(self.loop.call_later(max(grace, 0.0), self._remove, pod))

    def _remove(self, pod: PodInfo) -> None:
        current = self.store.find("Pod", pod.namespace, pod.name)
        if current is not None and current["metadata"]["uid"] == pod.uid:
            self.store.remove("Pod", pod.namespace, pod.name)

    def _write(self, pod: PodInfo, change: Callable[[Obj], None]) -> None:
        with contextlib.suppress(StoreError):
            self.store.mutate("Pod", pod.namespace, pod.name, change, uid=pod.uid)
