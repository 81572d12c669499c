"""Label, annotation and priority-class names shared by everything that builds or reads
placeholder pods (the Kubernetes provider, the simulated world, the docs).

Real ARC names (runner/workflow pods) are quoted from PROTOCOL.md; ours use the
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

# The priority ladder (DESIGN §5): placeholders below the real pods they stand in for.
DEFAULT_PRIORITY_CLASSES = {
    "runnerPlaceholder": ("arc-placeholder-runner", -10),
    "runner": ("arc-runner", 0),
    "workflowPlaceholder": ("arc-placeholder-workflow", 10),
    "workflow": ("arc-workflow", 20),
}
