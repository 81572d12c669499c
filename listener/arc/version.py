"""Which ARC release the listener talks to, and what that changes in its writes.

Only one write differs between the releases we support (docs/arc-versions.md has the whole
matrix): on JobStarted, ARC 0.15 (PR #4646) reads the EphemeralRunner and its status merge
patch also sets ``phase: Running`` under the resourceVersion it read; 0.13 and 0.14 send the
job fields only, and their controller derives the phase from the runner pod (so a phase we
wrote would be overwritten from the pod on its next reconcile).

How the listener knows, first answer wins:

1. ``ARC_VERSION`` in the environment (``0.13``, ``0.14`` or ``0.15``): the operator says so.
2. The runner's ``app.kubernetes.io/version`` label, read by the GET that 0.15's flow starts
   with (ARC copies the AutoscalingRunnerSet's labels, chart version included, onto the
   EphemeralRunnerSet and from there onto every EphemeralRunner). An older release, once
   seen, is kept: no more reads (ARC recreates the listener when it is upgraded).
3. A 403 on that GET: the listener Role is patch-only, as the 0.13/0.14 controller makes it,
   so the 0.14 patch is sent from then on.
4. Otherwise 0.15, the current release.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

LABEL_VERSION = "app.kubernetes.io/version"
ENV_VERSION = "ARC_VERSION"
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+].*)?$")


class ArcVersion(StrEnum):
    V0_13 = "0.13"
    V0_14 = "0.14"
    V0_15 = "0.15"

    @property
    def listener_sets_running(self) -> bool:
        """0.15 moved the EphemeralRunner ``Running`` phase from the controller to us."""
        return self is ArcVersion.V0_15


class ArcVersionError(ValueError):
    """An ARC version that is not one of those we support, and where it came from."""


def parse_arc_version(text: str, where: str) -> ArcVersion:
    """``0.14.2`` -> 0.14; later releases than 0.15 behave as 0.15; earlier than 0.13 refused."""
    match = _VERSION.match(text.strip())
    if match is None:
        raise ArcVersionError(
            f"{where}: {text!r} is not an ARC version; use one of 0.13, 0.14, 0.15"
        )
    major, minor = int(match.group(1)), int(match.group(2))
    if (major, minor) >= (0, 15):
        return ArcVersion.V0_15
    if (major, minor) < (0, 13):
        raise ArcVersionError(
            f"{where}: ARC {text} is older than 0.13, which this listener does not support; "
            "use 0.13, 0.14 or 0.15"
        )
    return ArcVersion(f"0.{minor}")


def version_from_env(env: Mapping[str, str]) -> ArcVersion | None:
    value = env.get(ENV_VERSION, "").strip()
    return parse_arc_version(value, f"environment variable {ENV_VERSION}") if value else None


def version_of_runner(runner: Mapping[str, Any]) -> ArcVersion | None:
    """The chart version on an EphemeralRunner's labels, or None (absent or unreadable)."""
    labels = (runner.get("metadata") or {}).get("labels") or {}
    value = labels.get(LABEL_VERSION)
    if not isinstance(value, str):
        return None
    try:
        return parse_arc_version(value, f"label {LABEL_VERSION}")
    except ArcVersionError:
        return None


__all__ = [
    "ENV_VERSION",
    "LABEL_VERSION",
    "ArcVersion",
    "ArcVersionError",
    "parse_arc_version",
    "version_from_env",
    "version_of_runner",
]
