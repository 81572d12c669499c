"""Build the two placeholder pods of a pair (docs/design.md#placeholder-pods) as API JSON dicts,
ready to POST.

Choices made here (and why):

- **Runner half** requests the *effective* requests of the runner pod template read from the
  EphemeralRunnerSet (``spec.ephemeralRunnerSpec.spec``), with kube-scheduler arithmetic
  (sidecars, init containers, pod overhead; see :mod:`providers.kubernetes.placement.resources`).
  The overhead is folded into the container requests, so the placeholder deliberately does
  **not** copy ``runtimeClassName`` (the RuntimeClass admission would add the overhead twice).
- **Workflow half** requests ``capacityAware.workflowResources``. Its placement
  (nodeSelector / tolerations / node affinity / schedulerName) is the hook template's, where
  the workflow pods get theirs: callers pass its pod spec as ``workflow_pod_spec``
  (:mod:`providers.kubernetes.pods.hook_template` reads it). Without it (None: it could not be
  read) the half mirrors the *runner* template, right wherever the two templates agree.
- Only *node* affinity is mirrored: pod (anti-)affinity and topology spread constraints of
  the runner refer to runner pods' labels and would make placeholders repel each other.
- ``requests == limits`` (Guaranteed QoS; extended resources such as GPUs need it anyway).
- Priority comes from ``priorityClassName`` only; ``preemptionPolicy: Never`` lives on the
  placeholder PriorityClasses (admission fills both fields in; setting them here would be
  rejected on mismatch).
- **Owner reference**: a namespaced owner must live in the dependent's namespace or the
  garbage collector deletes the dependent at once. The EphemeralRunnerSet is used as owner
  only when the placeholders live in its namespace (the default: placeholder namespace =
  runner namespace); otherwise no owner reference is set and the listener's orphan sweep
  (label ``instance`` + TTL annotation) is the only cleanup. The reference is not a
  controller reference (ARC's controllers must not adopt or manage our pods) and does not
  set ``blockOwnerDeletion`` (that would need RBAC on the ERS's finalizers).
- **Instance-type preference**: where a NodePool's limit binds before ``maxRunners`` pairs and
  it allows types that hold workflow pods poorly, the workflow half carries a preferred node
  affinity for the well-fitting ones (:mod:`providers.kubernetes.placement.capped_pools`), so
  Karpenter launches those for a lone pair while the limit has room for one.
- **Pre-pulls**: the workflow half pulls, in init containers, the images the job's pods will
  need on its node: the runner's, the declared ``prePullImages``, the job images learned from
  workflow pods (:mod:`providers.kubernetes.pods.job_images` says which, in which order, and the
  guards).
- Lifetime: ``activeDeadlineSeconds`` = ``placeholderLifetime`` jittered by a stable hash of
  the pair id within ``±lifetimeJitter``, so a warm pool does not expire all at once.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from providers.kubernetes.observe.admission import AT_BINDING, binding_confirms
from providers.kubernetes.placement.busy_nodes import busy_nodes, busy_terms
from providers.kubernetes.placement.capped_pools import preference_term
from providers.kubernetes.placement.resources import (
    QuantityError,
    Resources,
    effective_requests,
    format_quantity,
    resource_list,
)
from providers.kubernetes.pods import labels as L
from providers.kubernetes.pods.churn_guard import DoNotDisruptSetting, resolved_annotation
from providers.kubernetes.pods.job_images import JobImages, pre_pull_containers, pull_secret_names
from reconciler.ports import PairSpec
from reconciler.settings import CapacityAwareSettings
from reconciler.snapshot import ClusterSnapshot
from state_machine.states import Role

__all__ = [
    "PlaceholderPodBuilder",
    "PlaceholderSpecError",
    "effective_requests",
    "jittered_lifetime",
    "runner_pod_template",
]

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
CONTAINER_NAME = "placeholder"
PAUSE_UID = 65535


class PlaceholderSpecError(ValueError):
    """A placeholder pod cannot be built as asked (bad name, label, template or owner)."""


def runner_pod_template(ers: Mapping[str, Any]) -> Mapping[str, Any]:
    """The runner PodSpec inside an EphemeralRunnerSet (``spec.ephemeralRunnerSpec.spec``)."""
    name = (ers.get("metadata") or {}).get("name", "?")
    spec = ((ers.get("spec") or {}).get("ephemeralRunnerSpec") or {}).get("spec")
    if not isinstance(spec, Mapping) or not spec.get("containers"):
        raise PlaceholderSpecError(
            f"EphemeralRunnerSet {name}: spec.ephemeralRunnerSpec.spec.containers is missing; "
            "the runner pod template is needed to size the runner placeholder"
        )
    return spec


def jittered_lifetime(pair_id: str, lifetime: float, jitter: float) -> int:
    """``lifetime * (1 + jitter * u)``, u in [-1, 1] from a stable hash of the pair id."""
    digest = hashlib.sha256(pair_id.encode()).digest()
    u = int.from_bytes(digest[:8], "big") / float(2**64 - 1) * 2.0 - 1.0
    return max(1, round(lifetime * (1.0 + jitter * u)))


def _check_name(name: str, what: str) -> None:
    if len(name) > 63 or not _DNS1123_LABEL.match(name):
        raise PlaceholderSpecError(
            f"{what} {name!r} is not a valid pod name here: it must be at most 63 characters of "
            "lowercase letters, digits and '-', starting and ending with a letter or digit "
            f"(got {len(name)} characters)"
        )


def _check_label_value(key: str, value: str) -> None:
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        raise PlaceholderSpecError(
            f"label {key}={value!r} is not a valid label value: at most 63 characters of "
            "letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
        )


#: Karpenter's pod annotation that blocks voluntary disruption of the pod's node.
KARPENTER_DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


def _placement(spec: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if spec.get("nodeSelector"):
        out["nodeSelector"] = dict(spec["nodeSelector"])
    if spec.get("tolerations"):
        out["tolerations"] = copy.deepcopy(list(spec["tolerations"]))
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity")
    if node_affinity:
        out["affinity"] = {"nodeAffinity": copy.deepcopy(dict(node_affinity))}
    if spec.get("schedulerName"):
        out["schedulerName"] = spec["schedulerName"]
    return out


def _quantities(resources: Resources) -> dict[str, str]:
    return {name: format_quantity(value) for name, value in sorted(resources.items())}


class PlaceholderPodBuilder:
    """Builds the runner and workflow placeholder pods of a pair for one scale set."""

    def __init__(
        self,
        settings: CapacityAwareSettings,
        ers: Mapping[str, Any],
        *,
        instance: str,
        namespace: str,
        owner: Mapping[str, Any] | None,
        workflow_pod_spec: Mapping[str, Any] | None = None,
    ) -> None:
        self.settings = settings
        self.namespace = namespace
        self.instance = instance
        _check_name(namespace, "namespace")
        _check_label_value(L.LABEL_INSTANCE, instance)
        self.ers_name = (ers.get("metadata") or {}).get("name", "")
        template = runner_pod_template(ers)
        try:
            self.runner_requests: Resources = effective_requests(
                template, where=f"EphemeralRunnerSet {self.ers_name} spec.ephemeralRunnerSpec.spec"
            )
            self.workflow_requests: Resources = resource_list(
                settings.workflow_resources, where="capacityAware.workflowResources"
            )
        except QuantityError as exc:
            raise PlaceholderSpecError(str(exc)) from exc
        if not self.runner_requests:
            raise PlaceholderSpecError(
                f"EphemeralRunnerSet {self.ers_name}: the runner pod template requests no "
                "resources, so a runner placeholder would reserve nothing; set "
                "resources.requests on the runner container"
            )
        self.runner_placement = _placement(template)
        #: Workflow halves placed like the hook template's workflow pods (False: like the
        #: runner pod); snapshots carry it for the ``workflow_placement_from_hook_template``
        #: gauge.
        self.placed_by_hook_template = workflow_pod_spec is not None
        self.workflow_placement = (
            _placement(workflow_pod_spec)
            if workflow_pod_spec is not None
            else self.runner_placement
        )
        self.image_pull_secrets = copy.deepcopy(list(template.get("imagePullSecrets") or ()))
        #: The runner template's images, which workflow halves pull first (``prePullAuto``).
        self.runner_images = tuple(
            dict.fromkeys(
                str(c["image"]) for c in template.get("containers") or () if c.get("image")
            )
        )
        #: Job images learned from workflow pods, and refused ones (``prePullAuto``).
        self.job_images = JobImages(pull_secret_names(template))
        self.owner_reference = self._owner_reference(owner)
        #: Instance types the workflow half prefers (``capped_pools.preferred_types``), set by
        #: :class:`~providers.kubernetes.placement.inputs.PlacementBounds` from the NodePools.
        self.preferred_types: tuple[str, ...] = ()
        #: The most workflow pods one node of the hosting NodePools' types holds, for
        #: ``doNotDisrupt: auto`` (None: unknown, so auto protects), set by PlacementBounds.
        self.workflow_pods_per_node: int | None = None
        #: Nodes both halves prefer, the busiest first (:meth:`observe`).
        self.busy_nodes: tuple[tuple[str, int], ...] = ()

    def observe(self, snapshot: ClusterSnapshot) -> None:
        """Learn job images and refuse failed pre-pulls, and the nodes this scale set's jobs
        keep busy (:mod:`providers.kubernetes.placement.busy_nodes`), from a snapshot of it."""
        self.job_images.observe(snapshot)
        self.busy_nodes = busy_nodes(snapshot) if self.settings.prefer_busy_nodes else ()

    def pre_pulls(self, spec: PairSpec) -> tuple[str, ...]:
        """The images the workflow half of ``spec`` pulls, in order (docs/design.md#pre-pulls):
        the runner's where the runner may land beside it (the same placement; not for a hot
        slot, whose runner runs already), the declared ones, the learned ones."""
        declared = self.settings.pre_pull_images
        if not self.settings.pre_pull_auto:
            return self.job_images.usable(declared)
        beside = not spec.workflow_only and self.runner_placement == self.workflow_placement
        runner = self.runner_images if beside else ()
        return self.job_images.usable((*runner, *declared, *self.job_images.learned))

    @property
    def do_not_disrupt(self) -> DoNotDisruptSetting:
        return self.settings.do_not_disrupt

    def hold(self, per_node: int | None) -> None:
        """Pairs built from now on resolve ``doNotDisrupt: auto`` for nodes holding at most
        ``per_node`` workflow pods (None: unknown)."""
        self.workflow_pods_per_node = per_node

    @property
    def prefers_fitting_types(self) -> bool:
        return self.settings.prefer_fitting_types

    def prefer(self, types: tuple[str, ...]) -> None:
        """Pairs built from now on prefer ``types`` for their workflow half (``()``: none);
        ignored with ``preferFittingTypes: false``."""
        self.preferred_types = types if self.prefers_fitting_types else ()

    def _owner_reference(self, owner: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if owner is None:
            return None
        meta = owner.get("metadata") or {}
        owner_ns = meta.get("namespace")
        if owner_ns and owner_ns != self.namespace:
            # A cross-namespace owner is treated as absent by the garbage collector, which
            # would delete the placeholder at once (docs/design.md#placeholder-pods): no
            # reference at all instead.
            return None
        missing = [k for k in ("name", "uid") if not meta.get(k)] + [
            k for k in ("apiVersion", "kind") if not owner.get(k)
        ]
        if missing:
            raise PlaceholderSpecError(
                f"owner object lacks {', '.join(missing)}; pass the EphemeralRunnerSet as read "
                "from the API (or owner=None)"
            )
        return {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": meta["name"],
            "uid": meta["uid"],
        }

    def requests_for(self, role: Role) -> Mapping[str, Decimal]:
        return self.runner_requests if role is Role.RUNNER else self.workflow_requests

    def confirms_at_binding(self, role: Role) -> bool:
        """``confirmAtBinding`` is on and this half asks only for what kubelet admission
        checks as the scheduler did (providers/kubernetes/observe/admission.py)."""
        return self.settings.confirm_at_binding and binding_confirms(self.requests_for(role))

    def build_pods(self, spec: PairSpec) -> tuple[dict[str, Any], ...]:
        """The pods to create for ``spec``: both halves of a pair, or only the workflow
        placeholder of a hot slot (``spec.workflow_only``)."""
        runner, workflow = self._build(spec)
        return (workflow,) if runner is None else (runner, workflow)

    def build(self, spec: PairSpec) -> tuple[dict[str, Any], dict[str, Any]]:
        """(runner placeholder, workflow placeholder) as API JSON dicts."""
        runner, workflow = self._build(spec)
        if runner is None:
            raise PlaceholderSpecError(f"{spec.pair_id} is a hot slot: it has no runner half")
        return runner, workflow

    def _build(self, spec: PairSpec) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        if not spec.workflow_only:
            _check_name(spec.runner_pod, "runner placeholder name")
        _check_name(spec.workflow_pod, "workflow placeholder name")
        if not spec.workflow_only and spec.runner_pod == spec.workflow_pod:
            raise PlaceholderSpecError(
                f"both halves of pair {spec.pair_id} are named {spec.runner_pod!r}"
            )
        if spec.scale_set != self.ers_name:
            # The translator selects placeholders by this label: a mismatch would make the
            # pods invisible and the reconciler would create them again and again.
            raise PlaceholderSpecError(
                f"pair {spec.pair_id} is for scale set {spec.scale_set!r} but this builder serves "
                f"EphemeralRunnerSet {self.ers_name!r}"
            )
        _check_label_value(L.LABEL_PAIR, spec.pair_id)
        _check_label_value(L.LABEL_SCALE_SET, spec.scale_set)
        deadline = jittered_lifetime(
            spec.pair_id, self.settings.placeholder_lifetime, self.settings.lifetime_jitter
        )
        workflow = self._pod(spec, Role.WORKFLOW, spec.workflow_pod, deadline)
        if spec.workflow_only:
            return None, workflow
        return self._pod(spec, Role.RUNNER, spec.runner_pod, deadline), workflow

    def _pod(self, spec: PairSpec, role: Role, name: str, deadline: int) -> dict[str, Any]:
        classes = self.settings.priority_classes
        if role is Role.RUNNER:
            priority_class, placement = classes.runner_placeholder, self.runner_placement
        else:
            priority_class, placement = classes.workflow_placeholder, self.workflow_placement
        amounts = _quantities(dict(self.requests_for(role)))
        metadata: dict[str, Any] = {
            "name": name,
            "namespace": self.namespace,
            "labels": {
                L.LABEL_SCALE_SET: spec.scale_set,
                L.LABEL_PAIR: spec.pair_id,
                L.LABEL_ROLE: role.value,
                L.LABEL_INSTANCE: self.instance,
                L.LABEL_MANAGED_BY: L.MANAGED_BY,
                L.LABEL_COMPONENT: L.COMPONENT_PLACEHOLDER,
            },
            "annotations": {L.ANNOTATION_EXPIRES_AT: format_expiry(spec.expires_at)},
        }
        protect = resolved_annotation(self.settings.do_not_disrupt, self.workflow_pods_per_node)
        if role is Role.WORKFLOW and protect is not None:
            # Karpenter will not consolidate a node running a pod with this annotation, so
            # warm capacity is not evicted, relaunched and paid for twice. Scale-down still
            # frees the node: deleting the pair empties it and emptiness consolidation runs.
            metadata["annotations"][KARPENTER_DO_NOT_DISRUPT] = protect
        if self.confirms_at_binding(role):
            metadata["annotations"][L.ANNOTATION_CONFIRM] = AT_BINDING
        if self.owner_reference is not None:
            metadata["ownerReferences"] = [dict(self.owner_reference)]
        pod_spec: dict[str, Any] = {
            "containers": [
                {
                    "name": CONTAINER_NAME,
                    "image": self.settings.image,
                    "imagePullPolicy": "IfNotPresent",
                    "resources": {"requests": dict(amounts), "limits": dict(amounts)},
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "readOnlyRootFilesystem": True,
                        "capabilities": {"drop": ["ALL"]},
                    },
                }
            ],
            "priorityClassName": priority_class,
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "activeDeadlineSeconds": deadline,
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": PAUSE_UID,
                "runAsGroup": PAUSE_UID,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            **copy.deepcopy(placement),
        }
        if role is Role.WORKFLOW and self.preferred_types:
            _add_preference(pod_spec, preference_term(self.preferred_types))
        for term in busy_terms(() if spec.workflow_only else self.busy_nodes):
            _add_preference(pod_spec, term)
        pre_pulls = self.pre_pulls(spec) if role is Role.WORKFLOW else ()
        if pre_pulls:
            pod_spec["initContainers"] = pre_pull_containers(pre_pulls, pod_spec["containers"][0])
        if self.image_pull_secrets:
            pod_spec["imagePullSecrets"] = copy.deepcopy(self.image_pull_secrets)
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}


def _add_preference(pod_spec: dict[str, Any], term: dict[str, Any]) -> None:
    """Append ``term`` to the pod's preferred node affinity, after the template's own terms
    (Karpenter tries the heaviest first; on a tie, the template's)."""
    affinity = pod_spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    node_affinity.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(term)


def format_expiry(expires_at: float) -> str:
    """Epoch seconds as the annotation text (millisecond precision, no exponent)."""
    return f"{expires_at:.3f}"
