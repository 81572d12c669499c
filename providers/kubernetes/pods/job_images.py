"""The images a workflow placeholder pulls onto its node before a job's pods arrive there
(``capacityAware.prePullAuto``, docs/design.md#pre-pulls).

A pair's workflow half often lands on a node that has just been launched for it; the job's
runner pod then lands beside it (the scheduler preempts only where nothing fits, and the new
node fits) and its workflow pod takes the half's room. Both would pull their images there,
one after the other, after GitHub assigned the job. The half pulls them first, while the job
is being assigned, in the order the job needs them:

1. the runner template's images where the runner may land beside the half (the same
   placement; not for a hot slot): the runner starts first, and the kubelet serves one pull at
   a time, so a job image pulled before it would hold the runner back;
2. ``prePullImages`` (declared by the user);
3. the job images this scale set's workflow pods used last (:class:`JobImages`), read from
   the container hook's ``job`` container, at most :data:`LEARNED`.

Guards, because a placeholder must never break on an image it was not built for:

* learned only from workflow pods with no pull secret the placeholder lacks (the hook adds a
  secret for a job's ``credentials``; the placeholder carries the runner template's);
* on a half confirmed only when Running (GPUs) the pulls hold its confirmation back by what
  the job's workflow pod would otherwise pull after its assignment; a failing pull holds it
  until the failure is seen (the refusal below), then the half is mended without the image;
* an image whose pull failed (``ErrImagePull``, ``ImagePullBackOff``, ...) or whose
  ``sh -c :`` exited non-zero in one of our placeholders is refused for
  :data:`REFUSAL_BACKOFF`, doubled on each refusal of the same image up to
  :data:`REFUSAL_BACKOFF_MAX`: a registry outage or a token that expired for a while does not
  turn the pre-pull off for good, and an image that always fails (no ``sh``) is tried once a
  day. A restart or a changed runner template forgets every refusal.

:func:`pre_pull_containers` turns the list into the half's init containers.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from reconciler.snapshot import ClusterSnapshot

log = logging.getLogger(__name__)

#: How many learned job images a workflow half pulls (the most recently seen first).
LEARNED = 2
#: The hook's name for the job container (actions/runner-container-hooks ``JOB_CONTAINER_NAME``).
JOB_CONTAINER = "job"
#: ``state.waiting.reason`` of a container whose image the kubelet could not pull or create.
FAILED_WAITING = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "CreateContainerError",
        "CreateContainerConfigError",
        "RunContainerError",
    }
)
#: Prefix of the pre-pull init containers' names (providers/kubernetes/pods/placeholders.py).
PRE_PULL_PREFIX = "pre-pull-"
#: How long an image is refused after its first failed pre-pull (seconds); each later
#: refusal of the same image doubles it, up to :data:`REFUSAL_BACKOFF_MAX`.
REFUSAL_BACKOFF = 3600.0
REFUSAL_BACKOFF_MAX = 24 * 3600.0


def job_container_image(spec: Mapping[str, Any]) -> str | None:
    """The image of the hook's ``job`` container of a workflow pod's spec, if any."""
    for container in spec.get("containers") or ():
        if container.get("name") == JOB_CONTAINER and container.get("image"):
            return str(container["image"])
    return None


def pull_secret_names(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The names in a pod spec's ``imagePullSecrets``."""
    return tuple(str(s.get("name", "")) for s in spec.get("imagePullSecrets") or ())


def failed_pre_pulls(pod: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """``(image, reason)`` of each pre-pull init container of ``pod`` that the kubelet could
    not pull or create, or that exited non-zero."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    images = {
        c.get("name"): str(c.get("image") or "")
        for c in spec.get("initContainers") or ()
        if str(c.get("name", "")).startswith(PRE_PULL_PREFIX)
    }
    out = []
    for cs in status.get("initContainerStatuses") or ():
        image = images.get(cs.get("name"))
        if not image:
            continue
        state = cs.get("state") or {}
        waiting = (state.get("waiting") or {}).get("reason")
        terminated = state.get("terminated") or {}
        if waiting in FAILED_WAITING:
            out.append((image, str(waiting)))
        elif terminated and terminated.get("exitCode", 0) != 0:
            out.append((image, f"exit code {terminated.get('exitCode')}"))
    return tuple(out)


class JobImages:
    """The job images one scale set's workflow pods used last, less the refused ones.

    Fed every step by :meth:`observe` with the snapshot (the provider's side: the snapshot
    holds only what the API says now, this remembers across jobs that have ended). Pods may
    be built on a writer thread meanwhile, so what they read (:attr:`learned`,
    :attr:`refused`) is replaced whole, never changed in place."""

    def __init__(self, pull_secrets: Iterable[str], *, limit: int = LEARNED) -> None:
        self.pull_secrets = frozenset(pull_secrets)
        self.limit = limit
        #: image -> when a workflow pod using it was last seen.
        self._seen: dict[str, float] = {}
        #: The most recently seen images first, at most ``limit``.
        self.learned: tuple[str, ...] = ()
        #: image -> why it is refused.
        self.refused: Mapping[str, str] = {}
        #: image -> (refused until, refusals so far).
        self._refusals: dict[str, tuple[float, int]] = {}

    def observe(self, snapshot: ClusterSnapshot) -> None:
        """In order: pull again the refused images whose backoff has passed; refuse the images
        of failed pre-pulls in the snapshot's placeholders; remember the job images of its
        workflow pods."""
        now = snapshot.taken_at
        self._forgive(now)
        halves = [h for pair in snapshot.placeholders.values() for h in pair.present()]
        for half in (*halves, *snapshot.hot_placeholders.values()):
            for failed, reason in half.failed_pre_pulls:
                self._refuse(failed, f"{reason} in placeholder {half.name}", now)
        for pod in snapshot.workflow_pods:
            image = pod.job_image
            if image is None or image in self.refused:
                continue
            if not self.pull_secrets.issuperset(pod.pull_secrets):
                continue
            if image not in self._seen:
                log.info("learned job image %s from workflow pod %s", image, pod.name)
            self._seen[image] = snapshot.taken_at
        ranked = sorted(self._seen.items(), key=lambda item: (-item[1], item[0]))
        self.learned = tuple(seen for seen, _ in ranked[: self.limit])

    def usable(self, images: Iterable[str]) -> tuple[str, ...]:
        """``images`` in order, without repeats and refused ones."""
        refused = self.refused
        return tuple(i for i in dict.fromkeys(images) if i not in refused)

    def _refuse(self, image: str, why: str, now: float) -> None:
        if image in self.refused:
            return
        _, before = self._refusals.get(image, (0.0, 0))
        backoff = min(REFUSAL_BACKOFF * 2**before, REFUSAL_BACKOFF_MAX)
        log.warning("placeholders stop pre-pulling image %s for %.0f s: %s", image, backoff, why)
        self._refusals[image] = (now + backoff, before + 1)
        self.refused = {**self.refused, image: why}
        self._seen.pop(image, None)

    def _forgive(self, now: float) -> None:
        """Lift the refusals whose backoff has passed (their count is kept, so the next
        refusal of the same image lasts twice as long)."""
        due = [i for i in self.refused if self._refusals[i][0] <= now]
        if not due:
            return
        for image in due:
            log.info("placeholders pre-pull image %s again (refused until now)", image)
        self.refused = {i: why for i, why in self.refused.items() if i not in due}


def pre_pull_containers(images: tuple[str, ...], main: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One init container per image, each running ``sh -c :`` (a job container has a shell:
    the container hook runs its steps through one; so has the runner image), so the kubelet
    pulls the image onto the node before the pause container starts. ``IfNotPresent``: an
    image already on the node costs no registry round trip in the node's one-at-a-time
    puller, where a real pod may wait behind it. Each asks for the main container's
    resources and limits: a pod's effective request is the larger of its largest init
    container and its containers, so the placeholder reserves exactly what it did without
    them."""
    return [
        {
            "name": f"{PRE_PULL_PREFIX}{i}",
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "command": ["sh", "-c", ":"],
            "resources": copy.deepcopy(main["resources"]),
            "securityContext": copy.deepcopy(main["securityContext"]),
        }
        for i, image in enumerate(images)
    ]
