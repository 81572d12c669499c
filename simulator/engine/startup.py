"""The listener's start-up checks, run on a simulated world before it runs.

``python -m listener run`` refuses to start when :func:`providers.kubernetes.checks.
run_startup_checks` reports an error (wrong PriorityClass ladder, runner pods without the
runner class, a container mode whose workflow pods bypass kube-scheduler...). ``simulate``
and ``demo`` run the same checks on each scale set of the capacity-aware world, read from the
world's own objects (the ObjectStore is an ObjectSource like the listener's cache), and refuse
the scenario with the listener's own message; warnings are reported, marked as such.
"""

from __future__ import annotations

from dataclasses import dataclass

from providers.kubernetes.checks import Finding, Severity, run_startup_checks
from simulator.driver.capacity_aware import CapacityAware
from simulator.engine.world import World


class StartupRefused(ValueError):
    """A scale set the real listener would refuse to serve (its start-up checks failed)."""


@dataclass(frozen=True)
class ScaleSetFindings:
    scale_set: str
    findings: tuple[Finding, ...]

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity is Severity.ERROR)


def refusal_message(findings: tuple[Finding, ...]) -> str:
    """The text ``listener.process.startup.refuse_to_start`` raises (kept identical on purpose)."""
    return "start-up checks failed: " + " | ".join(f"{f.check}: {f.message}" for f in findings)


def check_world(world: World) -> list[ScaleSetFindings]:
    """Findings per scale set of a capacity-aware world (other strategies have none)."""
    strategy = world.strategy
    if not isinstance(strategy, CapacityAware):
        return []
    out = []
    for driver in strategy.drivers:
        store = world.clusters[world.scale_sets[driver.target.ers_name].cluster].store
        findings = run_startup_checks(
            store, driver.target, driver.settings.priority_classes, driver.builder
        )
        out.append(ScaleSetFindings(driver.target.ers_name, tuple(findings)))
    return out


def refuse_on_errors(world: World) -> list[str]:
    """Raise :class:`StartupRefused` like the listener would; return the warnings as text."""
    results = check_world(world)
    for result in results:
        if result.errors:
            raise StartupRefused(
                f"scenario {world.scenario.name}, scale set {result.scale_set}: the "
                f"capacity-aware listener would refuse to start: {refusal_message(result.errors)}"
            )
    return [
        f"scale set {r.scale_set}: start-up check warning {f.check}: {f.message}"
        for r in results
        for f in r.findings
        if f.severity is not Severity.ERROR
    ]
