"""Per-scale-set ``capacity_aware`` blocks, and which settings a scenario moves off the defaults.

In a real install every scale set has its own listener, so its own ``capacityAware`` block (at
least its own ``workflowResources``). A scenario says what its scale sets share in
``strategies.capacity_aware`` and what one scale set changes in that scale set's
``capacity_aware`` block. The merge rule, one level at a time:

- a key naming a nested settings block (``warmPool``, ``hud``, ``demand``,
  ``priorityClasses``, and the blocks inside ``demand``) merges key by key, so a scale set can
  change ``warmPool.maxPairs`` and keep the shared schedule;
- any other key replaces the shared value whole. ``workflowResources`` is one pod's requests:
  ``{cpu: "4"}`` over ``{cpu: "2", memory: 4Gi}`` means a 4-cpu pod with no memory request,
  not a 4-cpu pod that kept the shared memory.

Keys are the Helm camelCase names; snake_case is accepted too, as in the shared block. The
merged block is validated like the listener validates its own (``CapacityAwareSettings``), so a
rule across fields (``maxRequestsPerStep <= maxPairsInFlight``) holds per scale set.

:func:`non_default_keys` answers the other question a scenario must answer honestly: which of
its settings differ from what a user gets by default. The defaults come from the settings
model itself, so a changed default cannot leave a stale hand list behind.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from reconciler.settings import CapacityAwareSettings

#: What every user of the capacity-aware listener sets (it does nothing without them).
MUST_SET = ("enabled", "workflowResources", "proactiveCapacity")


def _field(model: type[BaseModel], key: str) -> str | None:
    """The field name a key spells (its name or its camelCase alias), or None if unknown."""
    if key in model.model_fields:
        return key
    for name, info in model.model_fields.items():
        if info.alias == key or to_camel(name) == key:
            return name
    return None


def _submodel(model: type[BaseModel], name: str) -> type[BaseModel] | None:
    annotation = model.model_fields[name].annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _canonical(model: type[BaseModel], block: Mapping[str, Any]) -> dict[str, Any]:
    """The block with camelCase keys at every settings level; unknown keys kept as written
    so validation reports them with the user's spelling."""
    out: dict[str, Any] = {}
    for key, value in block.items():
        name = _field(model, key)
        if name is None:
            out[key] = value
            continue
        sub = _submodel(model, name)
        if sub is not None and isinstance(value, Mapping):
            value = _canonical(sub, value)
        out[to_camel(name)] = value
    return out


def _merge(model: type[BaseModel], base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        name = _field(model, key)
        sub = None if name is None else _submodel(model, name)
        if sub is not None and isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(sub, out[key], value)
        else:
            out[key] = value
    return out


def merged_block(shared: CapacityAwareSettings, block: Mapping[str, Any]) -> dict[str, Any]:
    """The raw merged mapping (camelCase keys): what the scale set's listener would be given.

    Only the keys the shared block set are carried over, so the merged block still says which
    settings were chosen and which are defaults (``model_fields_set`` survives the merge).
    """
    base = shared.model_dump(by_alias=True, exclude_unset=True)
    return _merge(CapacityAwareSettings, base, _canonical(CapacityAwareSettings, block))


def merge_settings(
    shared: CapacityAwareSettings, block: Mapping[str, Any] | None
) -> CapacityAwareSettings:
    """``block`` merged over ``shared`` and validated; raises pydantic's ``ValidationError``
    (callers format it with the block's path)."""
    if not block:
        return shared
    return CapacityAwareSettings.model_validate(merged_block(shared, block))


def non_default_keys(settings: CapacityAwareSettings) -> list[str]:
    """camelCase names of the top-level settings whose value differs from the default."""
    defaults = CapacityAwareSettings().model_dump()
    values = settings.model_dump()
    return [to_camel(name) for name in values if values[name] != defaults[name]]


def unexplained_settings(
    description: str, blocks: Mapping[str, CapacityAwareSettings]
) -> list[str]:
    """``"<scale set>: <key>"`` for every setting a block moves off the listener's default that
    a user need not set (:data:`MUST_SET`) and the description does not name.

    A scenario measures what ships: a figure taken with a tuned setting must say so where
    the figure is read, or the reader believes the defaults earned it.
    """
    return [
        f"{name}: {key}"
        for name, settings in blocks.items()
        for key in non_default_keys(settings)
        if key not in MUST_SET and key not in description
    ]
