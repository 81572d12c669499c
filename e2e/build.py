"""``python -m e2e.build``: build the pinned upstream binaries into a cache outside the repo.

Steps, per component of :data:`e2e.components.COMPONENTS`:
1. Work out the inputs: the wrapper's go.mod and go.sum (or, for ARC, the git commit), the
   ldflags and the Go version.
2. If the cache holds the binaries with a stamp of exactly those inputs, do nothing.
3. Otherwise ``go build`` (CGO off, trimmed paths, version ldflags) into a temporary folder,
   then move the binaries in and write the stamp, so an interrupted build never leaves a
   half-written binary that a later run would trust.

A failure prints one line naming the component and its build log, and exits 2.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from e2e.components import ARC_COMMIT, ARC_TAG, COMPONENTS, Binary, Component

#: Where a clone of ARC's repository may be found when ARC_SOURCE_GIT is not set: this
#: workplace's mirror (a bare-style git dir without a work tree).
_ARC_GIT_CANDIDATES = (Path("/work/.mirror/actions+actions-runner-controller/repo"),)


class BuildError(RuntimeError):
    """A component could not be built; the message names it and its log."""


def cache_root() -> Path:
    explicit = os.environ.get("ARC_E2E_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "arc-capacity-e2e"


def bin_dir() -> Path:
    return cache_root() / "bin"


def binary(name: str) -> Path:
    return bin_dir() / name


@dataclass(frozen=True)
class Built:
    """What one component's build did."""

    component: str
    pin: str
    cached: bool
    seconds: float


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _go_version() -> str:
    try:
        return subprocess.run(
            ["go", "env", "GOVERSION"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as err:
        raise BuildError(f"e2e build: no usable Go toolchain on PATH ({err})") from err


def arc_git_dir() -> Path:
    """The ARC clone to export the release from (ARC_SOURCE_GIT, else a known mirror)."""
    explicit = os.environ.get("ARC_SOURCE_GIT")
    candidates = [Path(explicit)] if explicit else list(_ARC_GIT_CANDIDATES)
    for candidate in candidates:
        probe = subprocess.run(
            [
                "git",
                "-C",
                str(candidate),
                "rev-parse",
                "--verify",
                "--quiet",
                f"{ARC_COMMIT}^{{commit}}",
            ],
            capture_output=True,
            text=True,
        )
        if probe.returncode == 0:
            return candidate
    where = explicit or ", ".join(str(c) for c in _ARC_GIT_CANDIDATES)
    raise BuildError(
        f"e2e build: arc: no git clone holding {ARC_TAG} ({ARC_COMMIT[:12]}) at {where}; "
        "the Go module proxy serves actions-runner-controller only up to v0.27.6, so set "
        "ARC_SOURCE_GIT to a clone of github.com/actions/actions-runner-controller"
    )


def _inputs(component: Component, go_version: str) -> dict[str, str]:
    inputs = {"pin": component.pin, "go": go_version, "ldflags": " ".join(component.ldflags)}
    if component.from_git:
        inputs["commit"] = ARC_COMMIT
    else:
        inputs["go.mod"] = _sha256(component.wrapper / "go.mod")
        inputs["go.sum"] = _sha256(component.wrapper / "go.sum")
    return inputs


def _stamp_path(component: Component) -> Path:
    return cache_root() / "stamps" / f"{component.name}.json"


def _is_current(component: Component, inputs: dict[str, str]) -> bool:
    stamp = _stamp_path(component)
    if not stamp.exists():
        return False
    try:
        recorded = json.loads(stamp.read_text())
    except json.JSONDecodeError:
        return False
    return recorded == inputs and all(binary(b.name).exists() for b in component.binaries)


def _source_dir(component: Component) -> Path:
    """The directory ``go build`` runs in: the wrapper module, or ARC's exported release."""
    if not component.from_git:
        return component.wrapper
    source = cache_root() / "src" / f"arc-{ARC_COMMIT[:12]}"
    if not (source / "go.mod").exists():
        git_dir = arc_git_dir()
        partial = source.with_name(source.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(git_dir), "archive", "--format=tar", ARC_COMMIT],
            capture_output=True,
            check=True,
        )
        subprocess.run(["tar", "-x", "-C", str(partial)], input=archive.stdout, check=True)
        partial.rename(source)
    return source


def _go_build(component: Component, log: Path) -> None:
    source = _source_dir(component)
    env = {**os.environ, "CGO_ENABLED": "0"}
    with tempfile.TemporaryDirectory(dir=cache_root()) as scratch:
        out = Path(scratch)
        for group in _build_groups(component):
            target = str(out) + os.sep if len(group) > 1 else str(out / group[0].name)
            command = [
                "go", "build", "-trimpath",
                "-ldflags", " ".join(("-s", "-w", *component.ldflags)),
                "-o", target,
                *[b.package for b in group],
            ]  # fmt: skip
            with log.open("a") as sink:
                sink.write(f"$ (cd {source}) {' '.join(command)}\n")
                sink.flush()
                done = subprocess.run(command, cwd=source, env=env, stdout=sink, stderr=sink)
            if done.returncode != 0:
                raise BuildError(
                    f"e2e build: {component.name} ({component.pin}) failed: go build exit "
                    f"{done.returncode}; log: {log}"
                )
        bin_dir().mkdir(parents=True, exist_ok=True)
        for b in component.binaries:
            os.replace(out / b.name, binary(b.name))


def _build_groups(component: Component) -> list[tuple[Binary, ...]]:
    """One ``go build`` for binaries whose file name is their package's last element (they
    share the compile), one each for the rest (named with ``-o FILE``)."""
    shared = tuple(b for b in component.binaries if b.package.rsplit("/", 1)[-1] == b.name)
    alone = [(b,) for b in component.binaries if b not in shared]
    return ([shared] if shared else []) + alone


def build(names: Sequence[str] | None = None, *, say: Callable[[str], None] = print) -> list[Built]:
    """Build (or find current) every named component; raises :class:`BuildError`."""
    go_version = _go_version()
    root = cache_root()
    (root / "logs").mkdir(parents=True, exist_ok=True)
    (root / "stamps").mkdir(parents=True, exist_ok=True)
    results = []
    for component in COMPONENTS:
        if names and component.name not in names:
            continue
        inputs = _inputs(component, go_version)
        started = time.monotonic()
        if _is_current(component, inputs):
            results.append(Built(component.name, component.pin, True, 0.0))
            say(f"e2e build: {component.name:<10} {component.pin}: cached")
            continue
        say(f"e2e build: {component.name:<10} {component.pin}: building...")
        log = root / "logs" / f"build-{component.name}.log"
        log.write_text("")
        _go_build(component, log)
        _stamp_path(component).write_text(json.dumps(inputs, indent=2, sort_keys=True))
        seconds = time.monotonic() - started
        results.append(Built(component.name, component.pin, False, seconds))
        say(f"e2e build: {component.name:<10} built in {seconds:.0f} s")
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m e2e.build",
        description="Build the pinned upstream control plane (kube-apiserver, "
        "kube-controller-manager, kube-scheduler, kubectl, etcd, kwok, Karpenter's kwok "
        "provider, ARC's controller) and helm (for the chart's tests) into the cache "
        "(ARC_E2E_CACHE, default ~/.cache/arc-capacity-e2e); a warm cache makes it a no-op.",
    )
    parser.add_argument("components", nargs="*", help="only these (default: all)")
    args = parser.parse_args(argv)
    unknown = set(args.components) - {c.name for c in COMPONENTS}
    if unknown:
        print(
            f"e2e build: unknown component(s) {sorted(unknown)}; one of "
            f"{[c.name for c in COMPONENTS]}",
            file=sys.stderr,
        )
        return 2
    started = time.monotonic()
    try:
        results = build(args.components)
    except BuildError as err:
        print(err, file=sys.stderr)
        return 2
    built = [r for r in results if not r.cached]
    print(
        f"e2e build: {len(results)} component(s), {len(built)} built, "
        f"{time.monotonic() - started:.0f} s; binaries in {bin_dir()}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
