"""Kubernetes quantities as integers, and the resource vector the cluster does arithmetic on.

CPU is kept in millicores, memory in bytes, GPUs (``nvidia.com/gpu``) and pods as counts, so
every fit check is integer arithmetic (no Decimal in the hot path). Parsing goes through the
kubernetes client's own ``parse_quantity`` and is cached per string.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

from kubernetes.utils import parse_quantity

GPU = "nvidia.com/gpu"
#: Resource names the cluster accounts for; anything else in requests is ignored.
RESOURCES = ("cpu", "memory", GPU, "pods")


class QuantityError(ValueError):
    """A quantity string that Kubernetes would not accept."""


@lru_cache(maxsize=4096)
def _parse(text: str) -> Decimal:
    try:
        parsed: Decimal = parse_quantity(text)
        return parsed
    except ValueError as exc:
        raise QuantityError(f"invalid quantity {text!r}: {exc}") from None


def cpu_millis(value: str | int | float) -> int:
    """``"500m"`` -> 500, ``"2"`` / ``2`` -> 2000 (rounded up, like the API server)."""
    return math.ceil(_parse(str(value)) * 1000)


def to_int(value: str | int | float) -> int:
    """Memory in bytes, or a count (``"16Gi"`` -> 17179869184, ``"1"`` -> 1); rounded up."""
    return math.ceil(_parse(str(value)))


def format_cpu(millis: int) -> str:
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def format_memory(nbytes: int) -> str:
    if nbytes == 0:
        return "0"
    for suffix, unit in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if nbytes % unit == 0:
            return f"{nbytes // unit}{suffix}"
    return str(nbytes)


@dataclass(frozen=True, slots=True)
class Resources:
    """A resource vector: cpu (millicores), memory (bytes), gpu and pods (counts)."""

    cpu: int = 0
    memory: int = 0
    gpu: int = 0
    pods: int = 0

    def __add__(self, other: Resources) -> Resources:
        return Resources(
            self.cpu + other.cpu,
            self.memory + other.memory,
            self.gpu + other.gpu,
            self.pods + other.pods,
        )

    def __sub__(self, other: Resources) -> Resources:
        return Resources(
            self.cpu - other.cpu,
            self.memory - other.memory,
            self.gpu - other.gpu,
            self.pods - other.pods,
        )

    def fits_in(self, free: Resources) -> bool:
        return (
            self.cpu <= free.cpu
            and self.memory <= free.memory
            and self.gpu <= free.gpu
            and self.pods <= free.pods
        )

    def to_api(self) -> dict[str, str]:
        """Quantity strings as in ``status.allocatable`` (gpu only when non-zero)."""
        out = {"cpu": format_cpu(self.cpu), "memory": format_memory(self.memory)}
        if self.gpu:
            out[GPU] = str(self.gpu)
        out["pods"] = str(self.pods)
        return out

    @staticmethod
    def from_api(values: dict[str, str | int | float] | None) -> Resources:
        """Parse a ``{cpu, memory, nvidia.com/gpu, pods}`` map (missing entries are 0)."""
        if not values:
            return Resources()
        return Resources(
            cpu_millis(values["cpu"]) if "cpu" in values else 0,
            to_int(values["memory"]) if "memory" in values else 0,
            to_int(values[GPU]) if GPU in values else 0,
            to_int(values["pods"]) if "pods" in values else 0,
        )


ZERO = Resources()


def fits(req: Resources, free: Resources) -> bool:
    """kube-scheduler's fit: a zero request is not checked; the pod always needs a slot."""
    return (
        (req.cpu == 0 or req.cpu <= free.cpu)
        and (req.memory == 0 or req.memory <= free.memory)
        and (req.gpu == 0 or req.gpu <= free.gpu)
        and req.pods <= free.pods
    )
