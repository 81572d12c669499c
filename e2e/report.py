"""``report.json`` and ``report.md`` of one e2e run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from e2e.observe import INVARIANTS

_COLUMNS = ("jobs", "completed", *INVARIANTS, "polls", "nodeclaims_launched")


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "# The listener under the real control plane",
        "",
        f"Wall time {report['wall_s']:.0f} s. Command: `make e2e` (`python -m e2e`).",
        "",
        "## Components",
        "",
        "| component | reports itself as | read from | built from | linked |",
        "|---|---|---|---|---|",
    ]
    for row in report["components"]:
        reported = str(row["reported"]).replace("\n", " ").replace("|", "/")
        lines.append(
            f"| {row['component']} | {reported} | {row['reported_by']} | "
            f"`{row['built_from']}` | `{row['linked_module_version']}` |"
        )
    lines += [
        "",
        "## Scenarios",
        "",
        "| scenario | " + " | ".join(_COLUMNS) + " | wall s | verdict |",
        "|---|" + "---|" * (len(_COLUMNS) + 2),
    ]
    for result in report["scenarios"]:
        checks = result.get("checks") or {}
        cells = [str(checks.get(c, "-")) for c in _COLUMNS]
        verdict = (
            "ok" if not result.get("violations") else "FAILED: " + "; ".join(result["violations"])
        )
        lines.append(
            f"| {result['scenario']} | "
            + " | ".join(cells)
            + f" | {result['wall_s']:.0f} | {verdict} |"
        )
    lines += ["", "## What each scenario measured", ""]
    for result in report["scenarios"]:
        lines += [f"### {result['scenario']}", "", result.get("what", ""), ""]
        overrides = result.get("capacity_aware_overrides") or {}
        lines.append(
            "capacityAware: the shipped install's ConfigMap"
            + (f", with {json.dumps(overrides)}" if overrides else ", unchanged")
            + "."
        )
        lines.append("")
        for key, value in (result.get("figures") or {}).items():
            lines.append(f"- {key}: {json.dumps(value) if not isinstance(value, str) else value}")
        if result.get("error"):
            lines.append(f"- error: {result['error']}")
        lines.append("")
    return "\n".join(lines) + "\n"


def write_report(report: dict[str, Any], out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    as_json, as_md = out / "report.json", out / "report.md"
    as_json.write_text(json.dumps(report, indent=2, default=str) + "\n")
    as_md.write_text(markdown(report))
    return as_json, as_md
