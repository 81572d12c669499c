"""Label, annotation and priority-class names shared by everything that builds or reads
placeholder pods (the Kubernetes provider, the simulated world, the docs).

Real ARC names (runner/workflow pods) are quoted from docs/protocol.md#crds; ours use the
``arc-capacity.dev`` prefix.
"""

from __future__ import annotations

PREFIX = "arc-capacity.dev"

# Placeholder pods (ours).
LABEL_SCALE_SET = f"{PREFIX}/scale-set"  # EphemeralRunnerSet name
LABEL_PAIR = f"{PREFIX}/pair"  # pair id
LABEL_ROLE = f"{PREFIX}/role"  # "runner" | "workflow"
LABEL_INSTANCE = f"{PREFIX}/instance"  # listener instance id that created the pod
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = "arc-capacity-listener"
LABEL_COMPONENT = "app.kubernetes.io/component"
COMPONENT_PLACEHOLDER = "placeholder"
ANNOTATION_EXPIRES_AT = f"{PREFIX}/expires-at"  # lease (TTL) expiry, epoch seconds
#: "binding": the half counts once bound to a Ready node
#: (providers/kubernetes/observe/admission.py).
ANNOTATION_CONFIRM = f"{PREFIX}/confirm-at"

# ARC objects (theirs).
ARC_GROUP = "actions.github.com"
ARC_VERSION = "v1alpha1"
LABEL_ARC_SCALE_SET_NAME = "actions.github.com/scale-set-name"
LABEL_ARC_SCALE_SET_NAMESPACE = "actions.github.com/scale-set-namespace"
LABEL_EPHEMERAL_RUNNER = "actions-ephemeral-runner"  # value "True" on runner pods
LABEL_WORKFLOW_RUNNER_POD = "runner-pod"  # on workflow and step pods

# Karpenter.
KARPENTER_GROUP = "karpenter.sh"
KARPENTER_VERSION = "v1"
TAINT_KARPENTER_DISRUPTED = "karpenter.sh/disrupted"
ANNOTATION_DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
LABEL_NODEPOOL = "karpenter.sh/nodepool"

# The priority ladder: placeholders below the real pods they stand in for.
# docs/design.md#priority-ladder: arc-runner was at 0 in the first design, measured in the
# simulator: with runner pods below workflow pods, a workflow pod that finds no free placeholder
# preempts *another running job's* runner pod (the lowest-priority pod on the node) and that job
# fails (all 12 failures of `drain`, all 6 of `burst`). Runner and workflow pods at the same value
# cannot preempt each other, so real pods only ever preempt placeholders; a runner pod still prefers
# the runner placeholder (-10) over the workflow one (10), because kube-scheduler picks the
# node whose highest victim priority is lowest.
DEFAULT_PRIORITY_CLASSES = {
    "runnerPlaceholder": ("arc-placeholder-runner", -10),
    "runner": ("arc-runner", 20),
    "workflowPlaceholder": ("arc-placeholder-workflow", 10),
    "workflow": ("arc-workflow", 20),
}
