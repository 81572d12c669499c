"""The settings of a live world (:class:`LiveSpec`, checked at construction), the cluster
they describe (:func:`cluster_spec`) and the fixed names and fake tokens the world serves
(simulator/faces/live_world.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from simulator.cluster import (
    ClusterSpec,
    IceWindow,
    Latencies,
    NodePoolSpec,
    Timings,
)
from simulator.cluster.spec import default_catalog
from simulator.workload.arc_spec import ArcTimings

POOL = "ci"
#: A PAT the Actions face accepts; fake on purpose (it only ever reaches 127.0.0.1).
FAKE_PAT = "ghp_liveWorldFakeToken0000000000000000"
#: The HUD face's ``x-hud-internal-bot`` token, and where the listener reads it from.
FAKE_HUD_TOKEN = "live-world-hud-token"
HUD_TOKEN_ENV = "HUD_INTERNAL_BOT_TOKEN"
WATCH_HISTORY = 50_000
#: Variables of the caller's environment that must not leak into a listener process run
#: against a live world: an in-cluster API address, another listener config, proxies (loopback
#: traffic must not go through them).
SCRUBBED_ENV = (
    "KUBERNETES_SERVICE_HOST",
    "KUBERNETES_SERVICE_PORT",
    "CAPACITY_AWARE_CONFIG",
    "CAPACITY_AWARE_JSON",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)


class LiveSpecError(ValueError):
    """A :class:`LiveSpec` value is unusable; the message names the field and what is allowed."""


@dataclass(frozen=True)
class LiveSpec:
    """What the live world contains. Times are seconds since the world started."""

    scale_set: str = "e2e-runners"
    namespace: str = "arc-runners"
    labels: tuple[str, ...] = ("e2e-runners",)
    max_runners: int = 6
    instance_type: str = "m5.xlarge"
    ice_start: float = 20.0
    ice_end: float = 32.0
    lose_nodes_at_ice_start: bool = True
    #: False: no capacity-loss window at all (``ice_start``/``ice_end`` and
    #: ``lose_nodes_at_ice_start`` are then unused): the quickstart's world, where a window
    #: would fail the ``verify`` it ends with.
    ice_window: bool = True
    burst_at: float = 24.0
    burst_count: int = 4
    burst_over: float = 2.0
    job_duration: float = 4.0
    runner_requests: Mapping[str, str] = field(
        default_factory=lambda: {"cpu": "250m", "memory": "512Mi"}
    )
    workflow_requests: Mapping[str, str] = field(
        default_factory=lambda: {"cpu": "1", "memory": "2Gi"}
    )
    #: The Actions face answers a long poll with 202 after this long (GitHub: ~50 s). Short,
    #: so the face records the advertised capacity often.
    poll_window: float = 2.0
    seed: int = 7
    pat: str = FAKE_PAT
    hud_token: str = FAKE_HUD_TOKEN
    #: False: the scheduler profile lacks DefaultPreemption (nothing is ever preempted).
    preemption: bool = True
    #: False: no node autoscaler (no NodePool, so no node is ever launched).
    autoscaler: bool = True
    #: The container-hook template (config/hook-template.yaml's shape) as a ConfigMap, mounted
    #: into the runner template by ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE, as the quickstart
    #: installs it; its ``$job`` requests are ``workflow_requests``.
    hook_template: bool = True

    def check(self) -> None:
        catalog = {it.name for it in default_catalog()}
        if self.instance_type not in catalog:
            raise LiveSpecError(
                f"instance_type: got {self.instance_type!r}; one of {', '.join(sorted(catalog))}"
            )
        if not 0 <= self.ice_start < self.ice_end:
            raise LiveSpecError(
                f"ice_start/ice_end: need 0 <= ice_start < ice_end (got {self.ice_start}, "
                f"{self.ice_end})"
            )
        if self.burst_count < 0 or self.burst_at < 0 or self.burst_over < 0:
            raise LiveSpecError("burst_count, burst_at and burst_over must be >= 0")
        if self.job_duration <= 0:
            raise LiveSpecError(f"job_duration: got {self.job_duration}; must be > 0")
        if not 1 <= self.max_runners <= 1000:
            raise LiveSpecError(f"max_runners: got {self.max_runners}; must be 1..1000")
        if not self.labels:
            raise LiveSpecError("labels: at least one runner label is needed")


def cluster_spec(spec: LiveSpec) -> ClusterSpec:
    """One pool, one instance type, one ICE window (or none); latencies scaled down to
    seconds."""
    instance = next(it for it in default_catalog() if it.name == spec.instance_type)
    return ClusterSpec(
        zones=("us-east-1a",),
        instance_types=(instance,),
        nodepools=(
            (
                NodePoolSpec(
                    name=POOL,
                    instance_types=(instance.name,),
                    limits={"cpu": 64},
                    consolidate_after=None,  # nodes stay: only the ICE window changes capacity
                ),
            )
            if spec.autoscaler
            else ()
        ),
        preemption=spec.preemption,
        ice_windows=(
            (IceWindow(instance_type=instance.name, start=spec.ice_start, end=spec.ice_end),)
            if spec.ice_window
            else ()
        ),
        latencies=Latencies(
            pod_start=(0.3, 0.8),
            image_pull=(1.0, 2.0),
            image_pulls={"registry.k8s.io/pause:3.10": (0.1, 0.2)},
            image_resolve=(0.1, 0.3),
            launch=(1.5, 2.5),
            registration=0.5,
            initialize=0.5,
            ice_failure=0.5,
            failed_claim_delete=0.5,
        ),
        # ice_ttl short: the window itself, not Karpenter's 3-minute cache, ends the shortage.
        timings=Timings(
            scheduler_retry=1.0,
            batch_idle=0.5,
            batch_max=2.0,
            ice_ttl=2.0,
            disruption_poll=10.0,
            consolidation_validation=5.0,
        ),
    )


ARC_TIMINGS = ArcTimings(
    controller_delay=0.2,
    runner_startup=(0.5, 1.0),
    hook_delay=(0.3, 0.6),
    prepare_job_timeout=120.0,
    runner_exit=0.3,
)
