"""The kubelet's images: what a node holds, and how long a pod waits for its images.

Before it starts a pod's containers the kubelet calls ``EnsureImageExists`` for each of them,
init containers first (kubernetes/kubernetes ``pkg/kubelet/images/image_manager.go``):

* The pull policy is the container's ``imagePullPolicy``, else what the API server defaults
  it to (``pkg/apis/core/v1/defaults.go``, ``SetDefaults_Container``): ``Always`` for the
  ``latest`` tag or no tag, ``IfNotPresent`` otherwise (a digest too).
* ``IfNotPresent`` with the image on the node: no pull, no wait.
* ``Always`` with the image on the node: the kubelet still asks the runtime to pull; the
  runtime resolves the tag with the registry and finds every layer present, so the wait is
  the registry's manifest round trip (``latencies.image_resolve``).
* The image absent: a pull, ``latencies.image_pull`` or the image's own range in
  ``latencies.image_pulls`` (a pause image is a few hundred kilobytes, a CI image gigabytes).
* Pulls are serialized per node: ``serializeImagePulls`` defaults to true, and the
  ``serialImagePuller`` serves one request at a time in arrival order
  (``pkg/kubelet/images/puller.go``). Two pods that both found an image absent queue two
  requests; the second is served after the first has put the image on the node, so it only
  resolves.
* Init containers run one at a time, and each image is asked for only when its container is
  next to start (``pkg/kubelet/kuberuntime/kuberuntime_manager.go``, ``computePodActions``
  starts the next init container once the previous one exited): a pod's later images queue
  behind whatever other pods asked for meanwhile.

Not modelled: a pull cancelled because its pod was deleted (a queued pull here always
completes and leaves its image on the node), image garbage collection (the world's nodes
live hours, far from the disk thresholds), pull failures and back-off, and the scheduler's
ImageLocality score (docs/semantics.md).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from simulator.engine.store import Obj

ALWAYS = "Always"
IF_NOT_PRESENT = "IfNotPresent"
NEVER = "Never"


def default_pull_policy(image: str) -> str:
    """The API server's default ``imagePullPolicy`` for ``image``."""
    if "@" in image:
        return IF_NOT_PRESENT
    name = image.rsplit("/", 1)[-1]
    tag = name.split(":", 1)[1] if ":" in name else "latest"
    return ALWAYS if tag == "latest" else IF_NOT_PRESENT


def init_images(pod: Obj) -> list[tuple[str, str]]:
    """``(image, pull policy)`` of the init containers, in order."""
    return _images(pod.get("spec", {}).get("initContainers") or ())


def container_images(pod: Obj) -> list[tuple[str, str]]:
    """``(image, pull policy)`` of the containers, in order."""
    return _images(pod.get("spec", {}).get("containers") or ())


def _images(containers: Iterable[Obj]) -> list[tuple[str, str]]:
    out = []
    for c in containers:
        image = str(c.get("image") or "")
        if image:
            out.append((image, str(c.get("imagePullPolicy") or default_pull_policy(image))))
    return out


@dataclass(frozen=True, slots=True)
class PullTimes:
    """How long the registry takes: a full pull (per image, else the default) and a resolve."""

    pull: tuple[float, float]
    resolve: tuple[float, float]
    per_image: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def pull_range(self, image: str) -> tuple[float, float]:
        return self.per_image.get(image, self.pull)


#: Draws a delay for (what, image) from a range: the kubelet's seeded streams.
Draw = Callable[[str, str, tuple[float, float]], float]


def seeded_draw(streams: Callable[..., random.Random]) -> Draw:
    """Common random numbers: the n-th pull of an image waits the n-th draw of that image's
    stream in every strategy (:mod:`simulator.engine.streams`)."""

    def draw(what: str, image: str, span: tuple[float, float]) -> float:
        return streams(what, image).uniform(*span)

    return draw


@dataclass(slots=True)
class NodeImages:
    """One node's images and its serial puller."""

    #: image -> when it is (or, once its queued pull ends, will be) on the node.
    present_at: dict[str, float] = field(default_factory=dict)
    #: When the puller has served every request queued so far.
    free_at: float = 0.0

    def ensure(
        self, now: float, images: Iterable[tuple[str, str]], times: PullTimes, draw: Draw
    ) -> float:
        """Queue what the pod's images need; return when the last of them is ready."""
        t = now
        for image, policy in images:
            present = self.present_at.get(image)
            on_node = present is not None and present <= t
            if policy == NEVER or (on_node and policy == IF_NOT_PRESENT):
                continue
            served = max(t, self.free_at)
            if present is not None:  # on the node by the time the puller serves this one
                done = served + draw("image-resolve", image, times.resolve)
            else:
                done = served + draw("image-pull", image, times.pull_range(image))
                self.present_at[image] = done
            self.free_at = t = done
        return t - now
