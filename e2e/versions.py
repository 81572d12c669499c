"""What each component says it is, read from the binary or the running process, beside the
module@version it was built from."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from e2e.build import binary
from e2e.components import COMPONENTS, Component


def _run(*argv: str) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"<{err}>"
    return (done.stdout + done.stderr).strip()


def build_info(path: Path) -> dict[str, str]:
    """``go version -m``: the Go version and the module versions linked into the binary."""
    text = _run("go", "version", "-m", str(path))
    info: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] in ("mod", "dep"):
            info[parts[1]] = parts[2]
        elif parts and parts[0].endswith(":") and len(parts) >= 2:
            info["go"] = parts[1]
    return info


def _self_reported(name: str, process_logs: dict[str, Path]) -> str:
    if name in ("kube-controller-manager", "kube-scheduler"):
        return _run(str(binary(name)), "--version")
    if name == "kubectl":
        client = json.loads(_run(str(binary(name)), "version", "--client", "-o", "json"))
        return str(client["clientVersion"]["gitVersion"])
    if name == "etcd":
        return _run(str(binary(name)), "--version").splitlines()[0]
    if name == "kwok":
        return _run(str(binary(name)), "--version").splitlines()[0]
    if name == "arc-controller" and "arc-controller" in process_logs:
        match = re.search(
            r'"starting manager"[^\n]*?"version":"([^"]+)"', _read(process_logs["arc-controller"])
        )
        return (
            f"starting manager version {match.group(1)}"
            if match
            else "<no version line in its log>"
        )
    if name == "karpenter-kwok":
        # Karpenter logs no version; its binary's embedded build info names the module.
        info = build_info(binary(name))
        return f"sigs.k8s.io/karpenter {info.get('sigs.k8s.io/karpenter', '?')} (go version -m)"
    return ""


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def component_versions(
    api_version: dict[str, Any], process_logs: dict[str, Path]
) -> list[dict[str, Any]]:
    rows = []
    for component in (c for c in COMPONENTS if c.world):
        for b in component.binaries:
            info = build_info(binary(b.name))
            reported = (
                str(api_version.get("gitVersion"))
                if b.name == "kube-apiserver"
                else _self_reported(b.name, process_logs)
            )
            rows.append(
                {
                    "component": b.name,
                    "reported": reported,
                    "reported_by": "GET /version"
                    if b.name == "kube-apiserver"
                    else "the binary or its log",
                    "built_from": component.pin,
                    "linked_module_version": _linked(component, info),
                    "go": info.get("go", ""),
                }
            )
    return rows


def _linked(component: Component, info: dict[str, str]) -> str:
    if component.from_git:
        return f"{component.module} (git export of {component.version})"
    return f"{component.module}@{info.get(component.module, '?')}"
