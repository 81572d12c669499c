"""The README's `make demo` duration is a range that holds every measured run.

It said "about 5 minutes" where a fresh clone on a shared 2-core machine took 12 and more:
the claim is now a range, the same on the README and docs/benchmarks.md, and each wall time
recorded beside it (``took X min Y s of wall time``) falls inside it (rounded to the minute).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RANGE = re.compile(r"takes\s+\*\*(\d+)\s+to\s+(\d+)\s+minutes\*\*\s+from\s+a\s+fresh\s+clone")
MEASURED = re.compile(r"took\s+(\d+)\s+min\s+(\d+)\s+s\s+of\s+wall\s+time")


def section(text: str, heading: str) -> str:
    return text.split(heading, 1)[1].split("\n#", 1)[0]


def test_the_readme_gives_make_demo_a_range_that_holds_every_measured_run() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    bench = section(
        (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8"),
        "### `make demo` and `make test` from a fresh clone",
    )
    (claimed,) = RANGE.findall(" ".join(readme.split()))
    assert RANGE.findall(" ".join(bench.split())) == [claimed]
    low, high = map(int, claimed)
    measured = [int(m) + int(s) / 60 for m, s in MEASURED.findall(" ".join(bench.split()))]
    assert measured, "no measured `make demo` run beside the claim"
    for minutes in measured:
        assert low <= round(minutes) <= high, (minutes, claimed)
