"""What one verify run creates, and how all of it goes away.

Every object carries the label ``arc-capacity.dev/verify=<run id>``; every pod is also owned
(ownerReference) by the run's probe ConfigMap, in the pod's namespace, so deleting the
ConfigMap lets the garbage collector remove them. :meth:`Probe.cleanup` does not rely on that:
it deletes every labelled pod itself, then the ConfigMap, on every exit path.
:func:`sweep_leftovers` removes what an interrupted earlier run left: every labelled object
except those of a run still in progress (its owner ConfigMap's ``verify-until`` annotation,
the end of its ``--timeout`` plus a minute, has not passed), so two runs do not delete each
other's probes.

Waiting: :class:`WaitClock` is the one injectable clock and its sleep;
:meth:`Probe.wait_for` polls a bounded number of times and never past its deadline.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from listener.commands.verify.cluster import REQUEST_TIMEOUT, ApiSource, body, items
from listener.commands.verify.shapes import LABEL_VERIFY, probe_name, verify_labels
from providers.kubernetes.pods import labels as L
from reconciler.clock import SYSTEM_CLOCK, Clock

Obj = dict[str, Any]
T = TypeVar("T")
ANNOTATION_UNTIL = f"{L.PREFIX}/verify-until"
#: Seconds between two looks at the cluster while waiting.
POLL = 0.5


@dataclass(frozen=True, slots=True)
class WaitClock:
    """The one clock (:class:`reconciler.clock.Clock`) and the sleep that waits on it: a test
    injects both, so waiting moves its fake time."""

    clock: Clock = SYSTEM_CLOCK
    sleep: Callable[[float], None] = time.sleep

    def now(self) -> float:
        return self.clock.now()

    def monotonic(self) -> float:
        return self.clock.monotonic()


class Probe:
    def __init__(self, api: k8s.ApiClient, namespace: str, run_id: str, clock: WaitClock) -> None:
        self.api = api
        self.core = k8s.CoreV1Api(api)
        self.namespace = namespace
        self.run_id = run_id
        self.clock = clock
        self.owner: Obj | None = None
        self.source = ApiSource(api, {"Pod": f"{LABEL_VERIFY}={run_id}"})

    @property
    def name(self) -> str:
        return probe_name(self.run_id)

    def create_owner(self, until: float) -> Obj:
        """The probe ConfigMap: the owner of every probe pod; ``until`` (epoch seconds) is
        when this run is over at the latest (for other runs' leftover sweeps)."""
        configmap: Any = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": {**verify_labels(self.run_id, "owner"), L.LABEL_MANAGED_BY: "verify"},
                "annotations": {ANNOTATION_UNTIL: f"{until:.0f}"},
            },
            "data": {"purpose": "owner of arc-capacity-listener verify's probe pods"},
        }
        created = body(
            self.core.create_namespaced_config_map(
                self.namespace,
                configmap,
                _preload_content=False,
                _request_timeout=REQUEST_TIMEOUT,
            )
        )
        meta = created["metadata"]
        self.owner = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"]},
        }
        return self.owner

    def create(self, pod: Obj) -> None:
        sent: Any = pod  # a plain dict body, sent as is
        body(
            self.core.create_namespaced_pod(
                self.namespace, sent, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
            )
        )

    def pods(self) -> list[Obj]:
        return list(self.source.list("Pod", self.namespace))

    def pod(self, name: str) -> Obj | None:
        return next((p for p in self.pods() if p["metadata"]["name"] == name), None)

    def nodes(self) -> list[Obj]:
        return list(self.source.list("Node"))

    def node_pods(self, node: str) -> list[Obj]:
        return items(
            self.core.list_pod_for_all_namespaces(
                field_selector=f"spec.nodeName={node}",
                _preload_content=False,
                _request_timeout=REQUEST_TIMEOUT,
            )
        )

    def delete_pods(self, names: Iterable[str]) -> None:
        for name in names:
            with contextlib.suppress(ApiException):  # NotFound: already gone
                self.core.delete_namespaced_pod(
                    name, self.namespace, grace_period_seconds=0, _request_timeout=REQUEST_TIMEOUT
                )

    def delete_owner(self) -> None:
        """Background propagation: the garbage collector removes the dependents."""
        self.core.delete_namespaced_config_map(
            self.name,
            self.namespace,
            propagation_policy="Background",
            _request_timeout=REQUEST_TIMEOUT,
        )

    def wait_for(self, check: Callable[[], T | None], deadline: float) -> T | None:
        """``check()`` until it returns a value or ``deadline`` (monotonic) passes."""
        limit = int(max(0.0, deadline - self.clock.monotonic()) / POLL) + 2
        for _ in range(limit):
            found = check()
            if found is not None:
                return found
            left = deadline - self.clock.monotonic()
            if left <= 0:
                return None
            self.clock.sleep(min(POLL, left))
        return None

    def cleanup(self) -> list[str]:
        """Delete everything of this run; returns what still exists afterwards (names)."""
        return remove_labelled(self.core, [self.namespace], f"{LABEL_VERIFY}={self.run_id}")


@dataclass(frozen=True, slots=True)
class Sweep:
    removed: int
    #: Runs still in progress (run id -> until), whose objects were left alone.
    running: dict[str, float]


def sweep_leftovers(api: k8s.ApiClient, namespaces: Iterable[str], now: float) -> Sweep:
    """Remove the pods and ConfigMaps of earlier verify runs that are over (see module doc)."""
    core = k8s.CoreV1Api(api)
    namespaces = list(namespaces)
    found = _labelled(core, namespaces, LABEL_VERIFY)
    running = {}
    for obj in found:
        if obj.get("kind") != "ConfigMap":
            continue
        until = _until(obj)
        if until is not None and until > now:
            running[obj["metadata"]["labels"][LABEL_VERIFY]] = until
    removed = 0
    for run_id in sorted({o["metadata"]["labels"][LABEL_VERIFY] for o in found} - set(running)):
        selector = f"{LABEL_VERIFY}={run_id}"
        removed += sum(1 for o in found if o["metadata"]["labels"][LABEL_VERIFY] == run_id)
        remove_labelled(core, namespaces, selector)
    return Sweep(removed, running)


def _until(configmap: Obj) -> float | None:
    text = (configmap["metadata"].get("annotations") or {}).get(ANNOTATION_UNTIL)
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _labelled(core: k8s.CoreV1Api, namespaces: Iterable[str], selector: str) -> list[Obj]:
    kwargs: dict[str, Any] = {
        "label_selector": selector,
        "_preload_content": False,
        "_request_timeout": REQUEST_TIMEOUT,
    }
    out = []
    for ns in dict.fromkeys(namespaces):
        out += items(core.list_namespaced_pod(ns, **kwargs))
        out += [
            {**c, "kind": "ConfigMap"} for c in items(core.list_namespaced_config_map(ns, **kwargs))
        ]
    return out


def remove_labelled(core: k8s.CoreV1Api, namespaces: Iterable[str], selector: str) -> list[str]:
    """Delete every pod, then every ConfigMap, matching ``selector``; what remains after."""
    namespaces = list(namespaces)
    for obj in _labelled(core, namespaces, selector):
        meta = obj["metadata"]
        with contextlib.suppress(ApiException):  # NotFound: gone meanwhile
            if obj.get("kind") == "ConfigMap":
                core.delete_namespaced_config_map(
                    meta["name"], meta["namespace"], _request_timeout=REQUEST_TIMEOUT
                )
            else:
                core.delete_namespaced_pod(
                    meta["name"],
                    meta["namespace"],
                    grace_period_seconds=0,
                    _request_timeout=REQUEST_TIMEOUT,
                )
    return [o["metadata"]["name"] for o in _labelled(core, namespaces, selector)]
