"""Scenario files: the simulated world described in YAML, validated at the edge with pydantic.

A scenario names its clusters (each a :class:`~simulator.cluster.ClusterSpec`:
instance types, NodePools, static nodes, ICE windows, latencies), its runner scale sets
(cluster, labels, min/max runners, container mode, runner and workflow pod requests and
placement, scheduled ``maxRunners`` changes such as a drain), its job arrivals (Poisson
streams with a rate schedule, bursts, CSV traces), HUD outages, ARC and listener timings, and
the strategy settings (warm pool size for ``overprovision``, the ``capacityAware`` block for
``capacity-aware``).

Keys are snake_case (the ``capacity_aware`` block also takes the Helm camelCase names);
durations take seconds or ``"30s"``, ``"5m"``, ``"1h"``. Unknown keys are errors. A bad file
raises :class:`ScenarioError` with one line per problem:
``<file>: <field path>: <reason> (got <value>)``, e.g.
``ice.yaml: clusters[0].spec.nodepools[1].limits: limits: unknown resource 'gpu' ...``.

Skeleton (see config/scenarios/ for complete files)::

    name: ice-failover            # also the output directory name
    seed: 7                        # default seed (``simulate --seed`` overrides)
    duration: 24h
    stuck_after: 1h                # assigned and not started this long = stuck
    clusters:                      # spec = simulator.cluster.ClusterSpec
      - {name: east, spec: {nodepools: [...], static_nodes: [...], ice_windows: [...]}}
    scale_sets:
      - name: gpu-east
        cluster: east
        labels: [linux-gpu]
        min_runners: 0
        max_runners: 80
        container_mode: kubernetes-novolume     # or kubernetes (classic, pinned)
        runner:   {requests: {cpu: 500m, memory: 1Gi}, node_selector: {pool: runners}}
        workflow: {requests: {cpu: "3", nvidia.com/gpu: "1"}, node_selector: {...},
                   tolerations: [...]}
        warm_slots: 4                           # overprovision pool size (optional)
        changes: [{at: 90m, max_runners: 0}]    # e.g. a drain
        capacity_aware: {workflowResources: {cpu: "3", nvidia.com/gpu: "1"}}  # merged over
                                                # strategies.capacity_aware (overrides.py)
    jobs:
      - labels: [linux-gpu]
        duration: {median: 8m, sigma: 0.6, min: 1m, max: 1h}
        per_hour: 100                # or schedule: [{at: 7h, per_hour: 330}, ...]
        bursts: [{at: 1h, count: 150, over: 3m}]
        trace: jobs.csv              # queue_time,labels,duration (relative path)
    hud: {outages: [{start: 2h, end: 150m}]}
    arc: {version: "0.15", prepare_job_timeout: 10m, hook_delay: [2, 5], runner_startup: [3, 6]}
    actions: {broker: capacity}  # or idle-runners: each idle runner is room (the older world)
    listener: {long_poll: 50s}
    strategies:
      overprovision: {slots: 4}
      capacity_aware: {enabled: true, proactiveCapacity: 4, ...}  # the Helm block
      capacity_aware_sim: {fit_estimate: true, fit_refresh: 60s}
"""

from __future__ import annotations

import difflib
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationError

from reconciler.settings import CapacityAwareSettings
from reconciler.settings_types import Seconds
from simulator.scenarios.blocks import (
    ActionsModel,
    ArcModel,
    ClusterModel,
    HudModel,
    JobStream,
    ListenerModel,
    ScaleSetModel,
    Strategies,
    StrictModel,
)
from simulator.scenarios.overrides import merge_settings

#: The shipped scenarios: package data (``shipped`` links to config/scenarios/ in a checkout
#: and is a copy of it in a wheel), so a ``pip install`` finds them too.
SCENARIO_DIR = Path(str(resources.files("simulator.scenarios") / "shipped"))


class ScenarioError(ValueError):
    """A scenario file is unreadable or invalid; the message names file, field and reason."""


class Scenario(StrictModel):
    name: str
    description: str = ""
    seed: int = 1
    duration: Seconds = Field(gt=0, le=14 * 86_400)
    #: A job assigned to a scale set and not started by a runner within this long is stuck.
    stuck_after: Seconds = Field(default=3600.0, gt=0)
    #: Time-series sampling period for the plots.
    sample_interval: Seconds = Field(default=60.0, gt=0)
    clusters: list[ClusterModel] = Field(min_length=1)
    scale_sets: list[ScaleSetModel] = Field(min_length=1)
    jobs: list[JobStream] = Field(min_length=1)
    hud: HudModel = Field(default_factory=HudModel)
    arc: ArcModel = Field(default_factory=ArcModel)
    actions: ActionsModel = Field(default_factory=ActionsModel)
    listener: ListenerModel = Field(default_factory=ListenerModel)
    strategies: Strategies = Field(default_factory=Strategies)

    def warm_slots(self, scale_set: str) -> int:
        for ss in self.scale_sets:
            if ss.name == scale_set and ss.warm_slots is not None:
                return ss.warm_slots
        return self.strategies.overprovision.slots

    def capacity_aware_for(self, scale_set: str) -> CapacityAwareSettings:
        """The ``capacityAware`` block this scale set's listener runs with: its own
        ``capacity_aware`` keys merged over ``strategies.capacity_aware``. Blocks are validated
        when the scenario is loaded (:func:`parse_scenario`), so this only fails for a name
        that is not a scale set of the scenario."""
        for ss in self.scale_sets:
            if ss.name == scale_set:
                return merge_settings(self.strategies.capacity_aware, ss.capacity_aware)
        known = ", ".join(ss.name for ss in self.scale_sets)
        raise ScenarioError(f"scenario {self.name}: no scale set {scale_set!r}; known: {known}")

    def with_capacity_aware(self, block: dict[str, Any], *, where: str) -> Scenario:
        """This scenario with ``block`` merged over ``strategies.capacity_aware`` (a variant a
        bench measures); ``where`` names the block's origin in the error of a bad key."""
        path: tuple[int | str, ...] = ("strategies", "capacity_aware")
        try:
            shared = merge_settings(self.strategies.capacity_aware, block)
            for i, ss in enumerate(self.scale_sets):
                path = ("scale_sets", i, "capacity_aware")
                merge_settings(shared, ss.capacity_aware)
        except ValidationError as exc:
            raise ScenarioError(format_errors(exc, where, prefix=path)) from None
        strategies = self.strategies.model_copy(update={"capacity_aware": shared})
        return self.model_copy(update={"strategies": strategies})


# --- loading -------------------------------------------------------------------------------


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "<top level>"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def format_errors(exc: ValidationError, where: str, prefix: tuple[int | str, ...] = ()) -> str:
    """One line per problem: ``<where>: <field path>: <reason> (got <value>)``; ``prefix`` is
    the path of the validated part inside the file."""
    lines = []
    for err in exc.errors(include_url=False):
        own = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        loc = prefix + own
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing":
            message = "required field is missing"
        elif err["type"] == "extra_forbidden":
            home = (
                "reconciler/settings.py, camelCase"
                if "capacity_aware" in loc
                else "simulator/scenarios/scenario.py"
            )
            message = f"unknown field (check the spelling; fields: {home})"
        elif own:  # a whole-model error would echo the whole document
            message += f" (got {_shown(err.get('input'))})"
        lines.append(f"{where}: {_path(loc)}: {message}")
    return "\n".join(lines)


def cross_references(scenario: Scenario) -> list[tuple[str, str]]:
    """(field path, reason) for references between sections that do not resolve."""
    problems: list[tuple[str, str]] = []
    clusters: list[str] = []
    for i, cluster in enumerate(scenario.clusters):
        if cluster.name in clusters:
            problems.append((f"clusters[{i}].name", f"duplicate cluster name {cluster.name!r}"))
        clusters.append(cluster.name)
    names: list[str] = []
    for i, ss in enumerate(scenario.scale_sets):
        if ss.name in names:
            problems.append((f"scale_sets[{i}].name", f"duplicate scale set name {ss.name!r}"))
        names.append(ss.name)
        if ss.cluster not in clusters:
            problems.append(
                (
                    f"scale_sets[{i}].cluster",
                    f"unknown cluster {ss.cluster!r}; known: {', '.join(clusters)}",
                )
            )
    for i, stream in enumerate(scenario.jobs):
        if not any(set(stream.labels) <= set(ss.labels) for ss in scenario.scale_sets):
            problems.append(
                (
                    f"jobs[{i}].labels",
                    f"no scale set serves labels {stream.labels}: every job would wait forever",
                )
            )
    return problems


def parse_scenario(data: Any, *, where: str, base_dir: Path | None = None) -> Scenario:
    if not isinstance(data, dict):
        raise ScenarioError(
            f"{where}: the document must be a mapping of fields (got {type(data).__name__})"
        )
    try:
        scenario = Scenario.model_validate(data, context={"base_dir": base_dir})
    except ValidationError as exc:
        raise ScenarioError(format_errors(exc, where)) from None
    problems = cross_references(scenario)
    if problems:
        raise ScenarioError("\n".join(f"{where}: {path}: {reason}" for path, reason in problems))
    _check_scale_set_blocks(scenario, where)
    return scenario


def _check_scale_set_blocks(scenario: Scenario, where: str) -> None:
    """Every scale set's merged ``capacity_aware`` block must be one the listener accepts."""
    lines = []
    for i, ss in enumerate(scenario.scale_sets):
        try:
            merge_settings(scenario.strategies.capacity_aware, ss.capacity_aware)
        except ValidationError as exc:
            lines.append(format_errors(exc, where, prefix=("scale_sets", i, "capacity_aware")))
    if lines:
        raise ScenarioError("\n".join(lines))


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file; a bare name is looked up in config/scenarios/."""
    file = resolve(path)
    if file.parent == SCENARIO_DIR and str(path) == file.stem and not file.exists():
        raise ScenarioError(unknown_name(str(path)))
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{file}: cannot read the scenario: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(
            f"{file}: byte {exc.start}: not UTF-8 text; save the scenario as UTF-8 YAML"
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ScenarioError(f"{file}: {at}not valid YAML: {problem}") from None
    return parse_scenario(data, where=str(file), base_dir=file.parent)


def resolve(path: str | Path) -> Path:
    candidate = Path(path)
    if candidate.exists() or candidate.suffix in (".yaml", ".yml") or "/" in str(path):
        return candidate
    return SCENARIO_DIR / f"{path}.yaml"


def unknown_name(name: str) -> str:
    """The one line for a bare scenario name that is not shipped: the shipped names, and the
    closest one."""
    names = [p.stem for p in shipped()]
    close = difflib.get_close_matches(name, names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (
        f"scenario {name!r}: no such shipped scenario{hint}; the shipped ones are "
        f"{', '.join(names)}; or give the path of a scenario file"
    )


def shipped() -> list[Path]:
    """The scenario files shipped in config/scenarios/, by name.

    Side files named ``<scenario>.<something>.yaml`` (e.g. ``chaos.faults.yaml``, read by the
    fault injector) are not scenarios and are left out.
    """
    return sorted(p for p in SCENARIO_DIR.glob("*.yaml") if "." not in p.stem)
