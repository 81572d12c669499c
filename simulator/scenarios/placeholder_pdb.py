"""The opt-in placeholder PodDisruptionBudget (config/placeholder-pdb.yaml), as a user would
apply it for one scale set: the simulated world installs exactly that file when a scenario
sets ``strategies.capacity_aware_sim.placeholder_pdb: true``."""

from __future__ import annotations

import copy
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

#: Package data (a link to config/placeholder-pdb.yaml in a checkout, a copy in a wheel).
MANIFEST = Path(str(resources.files("simulator.scenarios") / "placeholder-pdb.yaml"))
#: The example scale set name the shipped file uses (a user replaces it).
PLACEHOLDER = "arc-runner-set"


@cache
def _manifest() -> dict[str, Any]:
    data = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def placeholder_pdb(namespace: str, scale_set: str) -> dict[str, Any]:
    """config/placeholder-pdb.yaml for ``scale_set`` (example name replaced) in ``namespace``."""
    obj = copy.deepcopy(_manifest())
    obj["metadata"]["name"] = obj["metadata"]["name"].replace(PLACEHOLDER, scale_set)
    obj["metadata"]["namespace"] = namespace
    labels = obj["spec"]["selector"]["matchLabels"]
    for key, value in labels.items():
        if value == PLACEHOLDER:
            labels[key] = scale_set
    return obj
