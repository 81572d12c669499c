"""The scenarios run on the real control plane, each in a world of its own, each bounded.

A scenario is a :class:`Scenario`: the world it needs (:class:`~e2e.world.WorldSpec`) and a
``play`` function that drives jobs and returns the figures only it measures. Every scenario
ends the same way (:func:`e2e.runner.run_scenario`): the listener is sent SIGTERM, and the
checker judges the invariants from the API server and the face.

Settings that differ from the shipped install's ``capacityAware`` ConfigMap are listed in each
scenario's ``capacity_aware`` and printed in the report beside its figures.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from e2e.platform import RUNNER_NAMESPACE, NodePoolSpec, nodeclass
from e2e.processes import Process
from e2e.scale_set import SCALE_SET
from e2e.world import REPO, World, WorldSpec

Figures = dict[str, Any]


@dataclass(frozen=True)
class Scenario:
    name: str
    what: str
    spec: WorldSpec
    #: Drives jobs; every wait in it is bounded, so a play ends even when the world stalls
    #: (the invariants then say what was left undone).
    play: Callable[[World], Figures]


def _since(world: World, mark: float) -> float:
    return round(time.time() - mark, 2)


def _time_to_confirmed(world: World, count: int, timeout: float = 120) -> float | None:
    mark = time.time()
    ok = world.wait(lambda: world.confirmed() >= count, timeout, f"{count} pair(s) confirmed")
    return _since(world, mark) if ok else None


def _preemptions(world: World) -> Figures:
    events = world.events("Preempted")
    victims = [e["object"] for e in events]
    return {
        "preempted_placeholders": sum(1 for v in victims if "-placeholder-" in v or "ph-" in v),
        "preempted_pods": victims,
    }


def _ers_name(world: World) -> str:
    found = world.custom.list_namespaced_custom_object(
        "actions.github.com", "v1alpha1", RUNNER_NAMESPACE, "ephemeralrunnersets"
    )["items"]
    return str(found[0]["metadata"]["name"]) if found else ""


# --- the scenarios --------------------------------------------------------------------------


def ladder(world: World) -> Figures:
    """Two pairs confirmed, then two jobs through the priority ladder and kube-scheduler's
    DefaultPreemption, with the opt-in placeholder PodDisruptionBudget
    (config/placeholder-pdb.yaml) in force: each workflow pod preempts a workflow
    placeholder; a runner pod preempts a runner placeholder only where no free room is left
    beside it (the report counts the victims by half)."""
    pdb = yaml.safe_load((REPO / "config" / "placeholder-pdb.yaml").read_text())
    ers = _ers_name(world)
    pdb["metadata"]["name"] = f"{SCALE_SET}-placeholders"
    pdb["spec"]["selector"]["matchLabels"]["arc-capacity.dev/scale-set"] = ers
    world.plane.kubectl("apply", "-f", "-", stdin=json.dumps(pdb))
    ready = _time_to_confirmed(world, 2)
    world.submit(2)
    world.wait(world.jobs_done, 180, "every job completed")
    return {"time_to_2_confirmed_s": ready, **_preemptions(world), "pdb": pdb["metadata"]["name"]}


def burst(world: World) -> Figures:
    """Two pairs confirmed, then eight jobs at once: Karpenter launches nodes for the pairs the
    listener asks for, and jobs are taken only as pairs confirm."""
    ready = _time_to_confirmed(world, 2)
    mark = time.time()
    world.submit(8)
    world.wait(world.jobs_done, 300, "every job completed")
    return {
        "time_to_2_confirmed_s": ready,
        "burst_makespan_s": _since(world, mark),
        **_contract(world),
    }


def nodepool_limit(world: World) -> Figures:
    """A NodePool capped at 8 CPUs (two 4-CPU nodes: one pair each) and six jobs: never more
    taken than the capped pool holds, every job still runs as others finish."""
    _time_to_confirmed(world, 1)
    mark = time.time()
    world.submit(6)
    world.wait(world.jobs_done, 360, "every job completed")
    peak = max((s.nodes for s in world.sampler.samples), default=0)
    return {"makespan_s": _since(world, mark), "peak_nodes_incl_system": peak}


def no_capacity(world: World) -> Figures:
    """The cloud gives no capacity for a minute: the NodePool's KWOKNodeClass is missing, so
    Karpenter ignores the NodePool ("not ready") and launches nothing. Three jobs queue; none
    may be taken while nothing is confirmed. Then the class appears and all three run.

    Why not InsufficientCapacity: Karpenter's kwok provider forces every offering available
    (``setDefaultOptions``) and answers ``Create`` with an InsufficientCapacityError only when
    the KWOKNodeClass is gone (cloudprovider.go), but v1.14.1 gates provisioning on the
    NodePool's NodeClassReady condition first, so that path is unreachable without patching
    the provider: the launch never starts instead of failing."""
    world.wait(lambda: bool(world.listeners), 60, "listener started")
    world.submit(3)
    outage_end = time.time() + 60
    world.wait(lambda: time.time() >= outage_end, 70, "the outage minute is over")
    taken = sum(1 for r in world.jobs if world.feed.job(r).state != "queued")
    claims_during = len(world.sampler.nodeclaims_seen)
    world.note("capacity back (KWOKNodeClass created)")
    mark = time.time()
    world.plane.kubectl("apply", "-f", "-", stdin=json.dumps(nodeclass(world.spec.pool)))
    world.wait(world.jobs_done, 240, "every job completed")
    log = world.supervisor.get("karpenter").log.read_text(errors="replace")
    return {
        "jobs_taken_during_outage": taken,
        "nodeclaims_during_outage": claims_during,
        "karpenter_ignoring_nodepool_lines": log.count("ignoring nodepool, not ready"),
        "all_done_after_capacity_back_s": _since(world, mark),
    }


def drain(world: World) -> Figures:
    """maxRunners to 0 on the AutoscalingRunnerSet mid-run (what the docs tell an operator to
    do): the listener reads it from the watch, advertises 0, releases its pairs, and the two
    running jobs finish; the two queued behind them are not taken."""
    _time_to_confirmed(world, 2)
    world.submit(2)
    world.wait(lambda: len(world.feed.jobs_in("started")) >= 2, 120, "two jobs started")
    mark = time.time()
    world.plane.kubectl(
        "patch", "autoscalingrunnerset", SCALE_SET, "-n", RUNNER_NAMESPACE,
        "--type=merge", "-p", '{"spec":{"maxRunners":0}}',
    )  # fmt: skip
    world.note("maxRunners set to 0")
    late = world.submit(2)
    world.wait(lambda: not world.placeholders(), 90, "every placeholder released")
    released = _since(world, mark)
    first = world.jobs[:2]
    world.wait(
        lambda: all(world.feed.job(r).state == "completed" for r in first), 180, "running jobs done"
    )
    polls_after = [p for p in _polls_since(world, mark + 5)]
    # The queued jobs are not expected to run: the scale set is drained. The checker counts
    # them as stuck unless they are dropped from the judged set, which the report says.
    world.jobs = [r for r in world.jobs if r not in late]
    return {
        "placeholders_released_s": released,
        "late_jobs_taken": sum(1 for r in late if world.feed.job(r).state != "queued"),
        "max_advertised_after_drain": max((p for p in polls_after), default=0),
        "late_jobs_not_judged": len(late),
    }


def _polls_since(world: World, since: float) -> list[int]:
    from e2e.observe import polls

    return [p.capacity for p in polls(world.face) if p.at >= since]


def handover(world: World) -> Figures:
    """Two listener processes for one scale set: a standby started beside the one ARC's pod
    runs waits on the Lease. Then the listener pod is deleted (a node drain, an operator): its
    process gets SIGTERM, deletes its placeholders and releases the Lease; a successor takes it
    (the standby, or the process of the pod ARC recreates, whichever asks first) and serves,
    and the other keeps waiting."""
    world.wait(lambda: bool(world.listeners), 60, "listener started")
    first = world.listeners[0]
    _time_to_confirmed(world, 2)
    world.start_listener("listener-standby")
    world.wait(lambda: _said(world, "listener-standby", "waiting"), 60, "standby waits")
    pod = world.mirror_pod_name()
    mark = time.time()
    world.plane.kubectl("delete", "pod", "-n", "arc-systems", pod, "--wait=false")
    world.wait(lambda: not first.alive(), 90, "first listener exited")
    exit_s = _since(world, mark)
    world.wait(lambda: _successor(world, first) is not None, 60, "a successor took the Lease")
    lease_s = _since(world, mark)
    back = world.wait(lambda: world.confirmed() >= 2, 180, "2 pairs confirmed again")
    takeover = _since(world, mark) if back else None
    world.submit(3)
    world.wait(world.jobs_done, 240, "every job completed")
    holders = [
        p.name for p in world.listeners if p is not first and _said(world, p.name, "acquired by")
    ]
    return {
        "first_exit_code": first.popen.returncode,
        "first_exit_after_pod_delete_s": exit_s,
        "lease_taken_by": holders,
        "lease_taken_s_after_pod_delete": lease_s,
        "confirmed_2_again_s_after_pod_delete": takeover,
        "processes_started": [p.name for p in world.listeners],
    }


def _said(world: World, process: str, text: str) -> bool:
    return text in world.supervisor.log_of(process).read_text(errors="replace")


def _successor(world: World, first: Process) -> str | None:
    return next(
        (p.name for p in world.listeners if p is not first and _said(world, p.name, "acquired by")),
        None,
    )


def _contract(world: World) -> Figures:
    """ARC 0.14's contract as the real CRDs hold it: the job fields the listener's JobStarted
    patch wrote on EphemeralRunners while their jobs ran (seen by the runner double), and the
    listener's ``patchID`` on the EphemeralRunnerSet."""
    ers = world.custom.list_namespaced_custom_object(
        "actions.github.com", "v1alpha1", RUNNER_NAMESPACE, "ephemeralrunnersets"
    )["items"]
    double = world.runner_double
    return {
        "runners_with_job_fields": len(double.runners_with_job_id),
        "job_fields_seen": sorted(double.job_fields_seen),
        "ers_patch_id": (ers[0]["spec"].get("patchID") if ers else None),
    }


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("ladder", ladder.__doc__ or "", WorldSpec(), ladder),
    Scenario("burst", burst.__doc__ or "", WorldSpec(), burst),
    Scenario(
        "nodepool-limit",
        nodepool_limit.__doc__ or "",
        WorldSpec(pool=NodePoolSpec(cpu_limit="8")),
        nodepool_limit,
    ),
    Scenario(
        "no-capacity",
        no_capacity.__doc__ or "",
        WorldSpec(pool=NodePoolSpec(nodeclass=False)),
        no_capacity,
    ),
    Scenario("drain", drain.__doc__ or "", WorldSpec(), drain),
    Scenario("handover", handover.__doc__ or "", WorldSpec(), handover),
)


def scenario(name: str) -> Scenario:
    for candidate in SCENARIOS:
        if candidate.name == name:
            return candidate
    raise KeyError(name)
