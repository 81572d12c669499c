"""Nominal allocatable of common EC2 instance types, for packing estimates only.

Karpenter picks, for each batch of pending pods, the cheapest instance type of the NodePool that
fits them. To let it pick a well-packed type, the listener requests pairs in groups that fill
one node of the best-fitting allowed type (:mod:`providers.kubernetes.placement.packing`); this
module says what such a node can hold. Sizes follow the EC2 naming scheme (``<family>.<size>``);
memory per vCPU follows the family letter (c: 2 GiB, m: 4 GiB, r: 8 GiB); GPU families are listed by
size. Allocatable = capacity minus the VM memory overhead (7.5 %, Karpenter's default) minus the EKS
kube-reserved formula and the 100 MiB eviction threshold. An unknown name returns None: the
caller then does not pack (one pair per group), which is safe, merely less dense.

This is an estimate for *how many pairs to request at once*. Capacity is still only ever what
the scheduler confirmed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal

MiB = 1024 * 1024
GiB = 1024 * MiB
VM_MEMORY_OVERHEAD = 0.075

_SIZES = {
    "medium": 1,
    "large": 2,
    "xlarge": 4,
    **{f"{n}xlarge": 4 * n for n in (2, 3, 4, 6, 8, 9, 12, 16, 18, 24, 32, 48)},
}
#: GiB of memory per vCPU by the family's first letter.
_MEMORY_PER_VCPU = {"c": 2, "m": 4, "r": 8, "t": 4}
#: GPU families: size -> (vCPU, memory GiB, GPUs).
#: GPU families by size: (vCPU, memory GiB, GPUs); g5 and g6 share their shapes.
_GPU_SHAPES = {
    "xlarge": (4, 16, 1),
    "2xlarge": (8, 32, 1),
    "4xlarge": (16, 64, 1),
    "8xlarge": (32, 128, 1),
    "12xlarge": (48, 192, 4),
    "16xlarge": (64, 256, 1),
    "24xlarge": (96, 384, 4),
    "48xlarge": (192, 768, 8),
}
_GPU = {"g5": _GPU_SHAPES, "g6": _GPU_SHAPES}
_NAME = re.compile(r"^(?P<family>[a-z]+\d+[a-z-]*)\.(?P<size>[a-z0-9]+)$")


@dataclass(frozen=True, slots=True)
class InstanceShape:
    name: str
    vcpu: int
    memory_gib: int
    gpu: int

    @property
    def max_pods(self) -> int:
        """EKS VPC-CNI pod limit, roughly: small shapes 58, 4xlarge and up 234."""
        return 58 if self.vcpu < 16 else 234

    def allocatable(self) -> dict[str, Decimal]:
        cores = self.vcpu
        reserved_millicpu = (
            60 * min(cores, 1)
            + 10 * min(max(cores - 1, 0), 1)
            + 5 * min(max(cores - 2, 0), 2)
            + math.ceil(2.5 * max(cores - 4, 0))
        )
        memory = math.floor(self.memory_gib * GiB * (1 - VM_MEMORY_OVERHEAD) / MiB) * MiB
        reserved_memory = (11 * self.max_pods + 255 + 100) * MiB
        out = {
            "cpu": Decimal(cores * 1000 - reserved_millicpu) / 1000,
            "memory": Decimal(memory - reserved_memory),
            "pods": Decimal(self.max_pods),
        }
        if self.gpu:
            out["nvidia.com/gpu"] = Decimal(self.gpu)
        return out


def shape(name: str) -> InstanceShape | None:
    """The nominal shape of an EC2 instance type name, or None when not known."""
    match = _NAME.match(name)
    if match is None:
        return None
    family, size = match["family"], match["size"]
    if family in _GPU:
        entry = _GPU[family].get(size)
        return InstanceShape(name, *entry) if entry else None
    vcpu = _SIZES.get(size)
    per_vcpu = _MEMORY_PER_VCPU.get(family[0])
    if vcpu is None or per_vcpu is None:
        return None
    return InstanceShape(name, vcpu, vcpu * per_vcpu, 0)
