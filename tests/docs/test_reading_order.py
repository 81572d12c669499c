"""docs/design.md takes a newcomer from a pod event to the ``X-ScaleSetMaxCapacity`` header in
at most 8 hops, through files that exist.

The reading order is a list under **From a pod event to the header** (N hops ...): a
``start:`` line, then ``hop 1:`` .. ``hop N:``, each naming one backticked file. A renamed
file, a hop added without renumbering, or a path grown past 8 hops fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "design.md"
MOST_HOPS = 8


def reading_order(text: str) -> tuple[int, list[tuple[str, str]]]:
    """The stated hop count and the (label, file) stops of the pod-event reading order."""
    head = re.search(r"\*\*From a pod event to the header\*\* \((\d+) hops", text)
    assert head is not None, "docs/design.md has no 'From a pod event to the header' order"
    stops: list[tuple[str, str]] = []
    for line in text[head.end() :].splitlines():
        if line.startswith("- "):
            found = re.match(r"- (start|hop \d+): `([^`]+)`", line)
            assert found is not None, f"a stop without a file: {line!r}"
            stops.append((found.group(1), found.group(2)))
        elif stops and not line.startswith("  "):  # past the list (wrapped text is indented)
            break
    return int(head.group(1)), stops


def test_the_reading_order_reaches_the_header_in_at_most_8_hops_through_files_that_exist() -> None:
    stated, stops = reading_order(DESIGN.read_text())
    labels = [label for label, _ in stops]
    assert labels == ["start", *(f"hop {n}" for n in range(1, len(stops)))]
    hops = len(stops) - 1
    assert hops == stated <= MOST_HOPS
    missing = [path for _, path in stops if not (ROOT / path).is_file()]
    assert missing == []
    # It ends where the header is sent.
    assert stops[-1][1] == "listener/arc/message_loop.py"
    assert "X-ScaleSetMaxCapacity" in (ROOT / stops[-1][1]).read_text()


def test_a_stop_naming_no_file_or_a_missing_hop_is_refused() -> None:
    """The parser itself: a skipped hop number or a stop without a file is caught."""
    text = "**From a pod event to the header** (2 hops):\n- start: `a.py`\n- hop 2: `b.py`\n"
    stated, stops = reading_order(text)
    assert stated == 2
    assert [label for label, _ in stops] != ["start", "hop 1"]
    bad = "**From a pod event to the header** (1 hops):\n- start: `a.py`\n- hop 1: no file\n"
    with pytest.raises(AssertionError, match="without a file"):
        reading_order(bad)
