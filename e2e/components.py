"""The upstream components of the real-control-plane world, each pinned to one version.

Every component but ARC's controller is built from a small Go module of ours under
``e2e/upstream/<name>/`` (a ``go.mod`` requiring the upstream module at its pinned version and
a ``tools.go`` naming the main packages); nothing upstream is copied into this repository.

ARC's gha-runner-scale-set controller is the exception: the Go module proxy reachable here
serves ``github.com/actions/actions-runner-controller`` only up to ``v0.27.6`` (the 2023 tag,
gha-runner-scale-set 0.6.1) and refuses every pseudo-version, so the 0.14.2 release cannot be
required as a module. It is built from a git checkout of ARC at the release's tag, read from
``ARC_SOURCE_GIT`` (a clone of github.com/actions/actions-runner-controller), exported into the
cache, never into this repository.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

UPSTREAM = Path(__file__).resolve().parent / "upstream"

KUBERNETES_VERSION = "v1.36.3"
ETCD_VERSION = "v3.6.14"
KWOK_VERSION = "v0.8.0"
KARPENTER_VERSION = "v1.14.1"
ARC_VERSION = "0.14.2"
ARC_TAG = f"gha-runner-scale-set-{ARC_VERSION}"
ARC_COMMIT = "9bb16ae49d0ce585d8e682aa7e2668a6e832d5d8"
ARC_MODULE = "github.com/actions/actions-runner-controller"
HELM_VERSION = "v3.22.0"
#: Kubernetes version Helm assumes without a cluster (`helm template`, `helm lint`): what its
#: own Makefile stamps, from the client-go it links (v0.37 -> 1.37).
HELM_KUBE_MAJOR, HELM_KUBE_MINOR = "1", "37"


def _kube_ldflags(version: str) -> tuple[str, ...]:
    """What kubernetes' hack/lib/version.sh stamps; without it the binaries report
    v0.0.0-master and clients that parse the server version choke."""
    major, minor = version.lstrip("v").split(".")[:2]
    flags = []
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {package}.gitVersion={version}",
            f"-X {package}.gitMajor={major}",
            f"-X {package}.gitMinor={minor}",
            f"-X {package}.gitTreeState=clean",
        ]
    return tuple(flags)


@dataclass(frozen=True)
class Binary:
    """One executable: the file name in the cache and the Go main package it is built from."""

    name: str
    package: str


@dataclass(frozen=True)
class Component:
    """A pinned upstream part: where its source comes from and what it builds."""

    name: str
    module: str
    version: str
    binaries: tuple[Binary, ...]
    ldflags: tuple[str, ...] = field(default=())
    #: Built from a git checkout (ARC) instead of a wrapper module in e2e/upstream/.
    from_git: bool = False
    #: Part of the real-control-plane world (`make e2e` builds and starts it); Helm is not: it
    #: is a test tool of the chart (tests/ship/test_chart.py), built here by the same means.
    world: bool = True

    @property
    def pin(self) -> str:
        return f"{self.module}@{self.version}"

    @property
    def wrapper(self) -> Path:
        return UPSTREAM / self.name


COMPONENTS: tuple[Component, ...] = (
    Component(
        name="kubernetes",
        module="k8s.io/kubernetes",
        version=KUBERNETES_VERSION,
        binaries=(
            Binary("kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver"),
            Binary("kube-controller-manager", "k8s.io/kubernetes/cmd/kube-controller-manager"),
            Binary("kube-scheduler", "k8s.io/kubernetes/cmd/kube-scheduler"),
            Binary("kubectl", "k8s.io/kubernetes/cmd/kubectl"),
        ),
        ldflags=_kube_ldflags(KUBERNETES_VERSION),
    ),
    Component(
        name="etcd",
        module="go.etcd.io/etcd/server/v3",
        version=ETCD_VERSION,
        binaries=(Binary("etcd", "go.etcd.io/etcd/server/v3"),),
    ),
    Component(
        name="kwok",
        module="sigs.k8s.io/kwok",
        version=KWOK_VERSION,
        binaries=(Binary("kwok", "sigs.k8s.io/kwok/cmd/kwok"),),
        ldflags=(f"-X sigs.k8s.io/kwok/pkg/consts.Version={KWOK_VERSION.lstrip('v')}",),
    ),
    Component(
        name="karpenter",
        module="sigs.k8s.io/karpenter",
        version=KARPENTER_VERSION,
        binaries=(Binary("karpenter-kwok", "sigs.k8s.io/karpenter/kwok"),),
        ldflags=(f"-X sigs.k8s.io/karpenter/pkg/operator.Version={KARPENTER_VERSION}",),
    ),
    Component(
        name="arc",
        module=ARC_MODULE,
        version=ARC_TAG,
        binaries=(Binary("arc-controller", ARC_MODULE),),
        ldflags=(
            # ARC's controller deletes an AutoscalingRunnerSet whose version label's
            # major.minor differs from this (apis/.../version.go IsVersionAllowed).
            f"-X {ARC_MODULE}/build.Version={ARC_VERSION}",
            f"-X {ARC_MODULE}/build.CommitSHA={ARC_COMMIT}",
        ),
        from_git=True,
    ),
    Component(
        name="helm",
        module="helm.sh/helm/v3",
        version=HELM_VERSION,
        binaries=(Binary("helm", "helm.sh/helm/v3/cmd/helm"),),
        ldflags=(
            # What helm's Makefile stamps: `helm version` and the chart capabilities.
            f"-X helm.sh/helm/v3/internal/version.version={HELM_VERSION}",
            "-X helm.sh/helm/v3/internal/version.gitTreeState=clean",
            f"-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor={HELM_KUBE_MAJOR}",
            f"-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor={HELM_KUBE_MINOR}",
            f"-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor={HELM_KUBE_MAJOR}",
            f"-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor={HELM_KUBE_MINOR}",
        ),
        world=False,
    ),
)
#: What `make e2e` builds and runs.
WORLD: tuple[str, ...] = tuple(c.name for c in COMPONENTS if c.world)


def component(name: str) -> Component:
    for candidate in COMPONENTS:
        if candidate.name == name:
            return candidate
    raise KeyError(f"no component {name!r}; one of {[c.name for c in COMPONENTS]}")
