"""Dependency audit with pip-audit, opt-in (``RUN_DEPENDENCY_AUDIT=1``).

It needs the network (PyPI's JSON API, which carries the vulnerability records pip-audit's
``pypi`` service reads), so it is not part of the loopback-only default run. It skips, saying
why, when pip-audit is not installed or when the vulnerability data cannot be reached; a
package pip-audit could not look up is never counted as "no known vulnerabilities" (pip-audit
itself prints "No known vulnerabilities found" in that case).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    os.environ.get("RUN_DEPENDENCY_AUDIT") != "1",
    reason="dependency audit needs the network: run with RUN_DEPENDENCY_AUDIT=1",
)


def test_no_installed_dependency_has_a_known_vulnerability() -> None:
    pip_audit = shutil.which("pip-audit", path=os.path.dirname(sys.executable))
    if pip_audit is None:
        pytest.skip("pip-audit is not installed (pip install pip-audit)")
    result = subprocess.run(
        [
            pip_audit,
            "--vulnerability-service",
            "pypi",
            "--format",
            "json",
            "--progress-spinner",
            "off",
            "--skip-editable",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if result.returncode not in (0, 1) or not result.stdout.strip():
        pytest.skip(f"pip-audit could not run: {result.stderr.strip()[-300:]}")
    report = json.loads(result.stdout)
    dependencies = report.get("dependencies", [])
    audited = [d for d in dependencies if "skip_reason" not in d]
    if not audited:
        reasons = {d.get("skip_reason", "")[:60] for d in dependencies}
        pytest.skip(f"vulnerability data unreachable, nothing audited: {sorted(reasons)[:2]}")
    vulnerable = {d["name"]: [v["id"] for v in d["vulns"]] for d in audited if d.get("vulns")}
    assert vulnerable == {}, f"known vulnerabilities: {vulnerable}"
