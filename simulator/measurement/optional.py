"""matplotlib is optional (the ``sim`` extra): without it the commands still run and write
every table and JSON file, and say once, before any work starts, that they skip the plots."""

from __future__ import annotations

import importlib
from typing import IO

EXTRA = "pip install 'arc-capacity-listener[sim]'"


def plotting_available() -> bool:
    try:
        importlib.import_module("matplotlib")
    except ImportError:
        return False
    return True


def plots_or_note(wanted: bool, command: str, stream: IO[str], what: str = "PNG plots") -> bool:
    """Whether to draw: ``wanted`` and matplotlib present; else one line on ``stream`` when
    the plots were wanted."""
    if not wanted:
        return False
    if plotting_available():
        return True
    stream.write(f"{command}: matplotlib is not installed, so no {what} ({EXTRA} adds them)\n")
    stream.flush()
    return False
