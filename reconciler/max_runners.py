"""ARC's ``maxRunners``, read one way everywhere: the ledger (``reconciler/capacity.py``), the
sizing (``reconciler/sizing.py``), the capacity gate (``listener/arc/gate.py``) and the scaler
(``listener/arc/scaler.py``) all clamp it with :func:`clamp_max_runners`.

``maxRunners`` is an int32 in ARC's CRD and its config (``MAX_INT32`` there means unbounded),
and 0 is a hard cap (a drain): a value read live from the AutoscalingRunnerSet is clamped to
``[floor, MAX_INT32]``. The floor is 0, except for the scaler, whose target never goes under
``minRunners`` (ARC refuses ``minRunners > maxRunners``; the scaler keeps its minimum when a
live change would cross it).
"""

from __future__ import annotations

#: Go's math.MaxInt32: ARC's int fields (minRunners, maxRunners, patchID) are 32-bit; as
#: maxRunners it means unbounded. The one name for it.
MAX_INT32 = 2_147_483_647


def clamp_max_runners(max_runners: int, floor: int = 0) -> int:
    """``max_runners`` within ``[floor, MAX_INT32]``: the value every part enforces."""
    return max(floor, min(max_runners, MAX_INT32))
