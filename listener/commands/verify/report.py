"""The verdict of ``verify``: one row per check, as a table or one JSON object.

Exit codes: 0 when no row failed (SKIP rows say why they did not run), 1 when any row
failed, 2 on bad usage (argparse, or a scale set that cannot be named at all).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from enum import StrEnum


class Status(StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    SKIP = "SKIP"


@dataclass(frozen=True, slots=True)
class Row:
    """One check: what it is, how it went, what was seen, how long it took, and (for a
    failure) what to change."""

    check: str
    status: Status
    seen: str
    seconds: float = 0.0
    fix: str = ""


def passed(check: str, seen: str, seconds: float = 0.0) -> Row:
    return Row(check, Status.PASS, seen, seconds)


def failed(check: str, seen: str, fix: str, seconds: float = 0.0) -> Row:
    return Row(check, Status.FAIL, seen, seconds, fix)


def skipped(check: str, why: str, seconds: float = 0.0) -> Row:
    return Row(check, Status.SKIP, why, seconds)


#: Width of the check column when rows are printed as they complete (the longest name).
CHECK_WIDTH = 18


@dataclass(slots=True)
class Report:
    scale_set: str
    namespace: str
    rows: list[Row] = field(default_factory=list)
    seconds: float = 0.0
    #: Called with each row as it is added (``verify`` prints it at once).
    on_row: Callable[[Row], None] | None = None

    def add(self, *rows: Row) -> None:
        self.rows.extend(rows)
        if self.on_row is not None:
            for row in rows:
                self.on_row(row)

    @property
    def failed(self) -> bool:
        return any(row.status is Status.FAIL for row in self.rows)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    def as_json(self) -> str:
        return json.dumps(
            {
                "scaleSet": self.scale_set,
                "namespace": self.namespace,
                "result": "FAIL" if self.failed else "PASS",
                "seconds": round(self.seconds, 2),
                "checks": [{**asdict(row), "seconds": round(row.seconds, 2)} for row in self.rows],
            },
            indent=2,
        )

    def header(self) -> str:
        return f"verify {self.namespace}/{self.scale_set}\n\n"

    def summary(self) -> str:
        counts = {s: sum(1 for r in self.rows if r.status is s) for s in Status}
        text = ", ".join(f"{n} {s.value.lower()}" for s, n in counts.items())
        verdict = "FAIL" if self.failed else "PASS"
        return f"\n{verdict}: {text} in {self.seconds:.1f}s\n"

    def as_text(self) -> str:
        width = max((len(row.check) for row in self.rows), default=5)
        rows = "".join(row_text(row, width) for row in self.rows)
        return self.header() + rows + self.summary()


def row_text(row: Row, width: int = CHECK_WIDTH) -> str:
    text = f"{row.status:<4}  {row.check:<{width}}  {row.seconds:6.1f}s  {row.seen}\n"
    if row.fix:
        text += f"{'':<4}  {'':<{width}}           fix: {row.fix}\n"
    return text
