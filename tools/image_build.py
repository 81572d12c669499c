"""Build and run the project's image where no container daemon runs and no registry answers.

The suite (tests/ship/test_image.py) and the figures (bench/image.py) build the REAL Dockerfile
with buildah and run it with podman, both on vfs storage under one private directory (nothing
shared with other users of the machine). The base image cannot be pulled, so it is made
locally: ``debootstrap --variant=minbase bookworm`` with python3 and python3-venv, trimmed of
apt caches and docs, imported with a two-line Containerfile (``FROM scratch`` + ``ADD``), and
passed to the Dockerfile as ``--build-arg PYTHON_IMAGE``.

The host's CA bundle goes into that base with ``PIP_CERT`` pointing at it, so pip in the
build trusts what the host trusts (here PyPI is reached through a TLS-inspecting proxy); the
shipped Dockerfile needs nothing of the kind.

Flags measured on these machines: ``--isolation chroot`` for builds; ``--runtime runc
--cgroup-manager cgroupfs`` and explicit nofile/nproc ulimits for runs (crun fails on this
kernel's cgroup mode, and the default limits exceed what the runtime may set).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ("buildah", "podman", "runc", "debootstrap")
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
BASE_PACKAGES = ("python3", "python3-venv")
BASE_TAG = "localhost/arc-capacity-listener-base:bookworm"
IMAGE_TAG = "localhost/arc-capacity-listener:test"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
#: What a runtime image never reads; left out of the base so vfs copies less per container.
TRIM = (
    "var/cache/apt/archives",
    "var/lib/apt/lists",
    "usr/share/doc",
    "usr/share/man",
    "usr/share/locale",
    "usr/share/info",
)
#: ``podman run`` flags every container of the suite gets: ulimits the runtime can set, a
#: read-only root with no tmpfs added (as ``readOnlyRootFilesystem: true`` without volumes).
RUN_FLAGS = (
    "--ulimit",
    "nofile=1024:1024",
    "--ulimit",
    "nproc=1024:1024",
    "--read-only",
    "--read-only-tmpfs=false",
)
DEBOOTSTRAP_TIMEOUT = 600.0
#: Where the base's rootfs tarball is kept between runs (debootstrap takes 40 s on a quiet
#: machine, minutes on a busy one), and for how long before it is made again (security
#: updates). ``ARC_IMAGE_CACHE`` overrides the directory; an empty value turns caching off.
CACHE_ENV = "ARC_IMAGE_CACHE"
DEFAULT_CACHE = Path.home() / ".cache" / "arc-capacity-listener" / "image"
CACHE_MAX_AGE = 7 * 86_400.0
BUILD_TIMEOUT = 900.0

#: Run in the image by its own Python: what it holds, as JSON (tests and bench/image.py).
INSPECT_SCRIPT = """
import importlib.util, json, os, sys, sysconfig
site = sysconfig.get_paths()["purelib"]
def size(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
entries = sorted(os.listdir(site))
print(json.dumps({
    "uid": os.getuid(), "gid": os.getgid(), "python": sys.version.split()[0],
    "top_level": [e for e in entries
                  if not e.endswith((".dist-info", ".pth")) and e != "__pycache__"],
    "dists": [e[: -len(".dist-info")] for e in entries if e.endswith(".dist-info")],
    "importable": {m: importlib.util.find_spec(m) is not None
                   for m in ("listener", "reconciler", "state_machine", "providers",
                             "simulator", "tuning", "tests", "bench", "tools", "matplotlib",
                             "pip", "setuptools", "kubernetes.aio", "aiohttp", "yarl")},
    "venv_bytes": size(sys.prefix),
    "sizes": {e: size(os.path.join(site, e)) for e in entries},
}))
"""


class ImageToolsUnavailable(RuntimeError):
    """The image cannot be built here (a tool or the Debian mirror is missing): a skip reason."""


class ImageBuildError(RuntimeError):
    """A build step failed: the message carries the tail of its output."""


def unavailable() -> str | None:
    """Why the image cannot be built on this machine, or None when it can."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        return (
            f"{', '.join(missing)} not installed (.ci/run installs them as root: "
            f"apt-get install {' '.join(TOOLS)})"
        )
    if os.geteuid() != 0:
        return "debootstrap and vfs builds need root; not root here"
    return None


def _run(
    args: list[str], timeout: float, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def _tail(result: subprocess.CompletedProcess[str], chars: int = 3000) -> str:
    return (result.stdout + result.stderr)[-chars:]


@dataclass(frozen=True)
class Engine:
    """buildah and podman sharing one private vfs store under ``root``."""

    root: Path

    def storage(self) -> list[str]:
        return [
            "--root",
            str(self.root / "storage"),
            "--runroot",
            str(self.root / "run"),
            "--storage-driver",
            "vfs",
        ]

    def buildah(self, *args: str) -> list[str]:
        return ["buildah", *self.storage(), *args]

    def podman(self, *args: str) -> list[str]:
        return [
            "podman",
            *self.storage(),
            "--runtime",
            "runc",
            "--cgroup-manager",
            "cgroupfs",
            "--events-backend",
            "file",
            *args,
        ]

    def run_args(
        self,
        image: str,
        *args: str,
        entrypoint: str | None = None,
        flags: tuple[str, ...] = ("--network", "none"),
    ) -> list[str]:
        """``podman run --rm`` of ``image`` with :data:`RUN_FLAGS` and ``flags`` (default: no
        network at all)."""
        extra = ["--entrypoint", entrypoint] if entrypoint else []
        return self.podman("run", "--rm", *RUN_FLAGS, *flags, *extra, image, *args)


def make_rootfs_tar(workdir: Path) -> Path:
    """debootstrap a minimal bookworm with python3 into ``workdir``; returns the tarball."""
    rootfs = workdir / "rootfs"
    packages = ",".join(BASE_PACKAGES)
    result = _run(
        ["debootstrap", "--variant=minbase", f"--include={packages}", SUITE, str(rootfs), MIRROR],
        DEBOOTSTRAP_TIMEOUT,
    )
    if result.returncode != 0:
        raise ImageToolsUnavailable(
            f"debootstrap {SUITE} from {MIRROR} failed (exit {result.returncode}): "
            f"{_tail(result, 600)}"
        )
    for part in TRIM:
        target = rootfs / part
        if target.is_dir():
            shutil.rmtree(target)
            target.mkdir()
    if HOST_CA_BUNDLE.is_file():
        (rootfs / "etc/ssl/certs").mkdir(parents=True, exist_ok=True)
        shutil.copy(HOST_CA_BUNDLE, rootfs / "etc/ssl/certs/ca-certificates.crt")
    tarball = workdir / "rootfs.tar"
    packed = _run(["tar", "-C", str(rootfs), "-cf", str(tarball), "."], 300)
    if packed.returncode != 0:
        raise ImageBuildError(f"tar of the rootfs failed: {_tail(packed)}")
    shutil.rmtree(rootfs)
    return tarball


def cache_dir(environ: Mapping[str, str] = os.environ) -> Path | None:
    """The rootfs cache directory (:data:`CACHE_ENV`), or None when caching is off."""
    value = environ.get(CACHE_ENV)
    if value is None:
        return DEFAULT_CACHE
    return Path(value) if value else None


def rootfs_tar(workdir: Path, cache: Path | None, now: float | None = None) -> tuple[Path, bool]:
    """The base's rootfs tarball: the cached one if younger than :data:`CACHE_MAX_AGE`, else
    a new one (stored in ``cache`` atomically, so concurrent sessions never read half a
    file). Returns (path, whether it came from the cache)."""
    name = f"{SUITE}-minbase-{'-'.join(BASE_PACKAGES)}.tar"
    cached = cache / name if cache is not None else None
    now = time.time() if now is None else now
    if cached is not None and cached.is_file() and now - cached.stat().st_mtime < CACHE_MAX_AGE:
        return cached, True
    tarball = make_rootfs_tar(workdir)
    if cached is None:
        return tarball, False
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_name(f"{name}.{os.getpid()}.partial")
    shutil.move(tarball, partial)
    os.replace(partial, cached)
    return cached, False


def build_base(engine: Engine, tarball: Path, tag: str = BASE_TAG) -> str:
    """Import the rootfs tarball as a local image (no registry involved)."""
    lines = ["FROM scratch", f"ADD {tarball.name} /"]
    if HOST_CA_BUNDLE.is_file():
        lines.append("ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt")
    engine.root.mkdir(parents=True, exist_ok=True)
    containerfile = engine.root / "Containerfile.base"
    containerfile.write_text("\n".join(lines) + "\n")
    result = _run(
        engine.buildah(
            "bud", "--isolation", "chroot", "-t", tag, "-f", str(containerfile), str(tarball.parent)
        ),
        BUILD_TIMEOUT,
    )
    if result.returncode != 0:
        raise ImageBuildError(f"importing the base failed: {_tail(result)}")
    return tag


def remove_in_background(path: Path) -> None:
    """Delete ``path`` without waiting: a vfs store is gigabytes of small files (tens of
    seconds to delete on a busy machine), nothing the caller needs to wait for."""
    subprocess.Popen(
        ["rm", "-rf", "--one-file-system", str(path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


@dataclass(frozen=True)
class Built:
    """The project's image as built: its tag, how long the build took, its size in bytes."""

    tag: str
    seconds: float
    size_bytes: int


def build_image(engine: Engine, base: str, tag: str = IMAGE_TAG, context: Path = ROOT) -> Built:
    """``buildah bud`` of the repository's Dockerfile on ``base``; the build time is wall time
    of that one command (the base is already imported)."""
    started = time.monotonic()
    result = _run(
        engine.buildah(
            "bud",
            "--isolation",
            "chroot",
            "--pull-never",
            "--build-arg",
            f"PYTHON_IMAGE={base}",
            "-t",
            tag,
            "-f",
            str(context / "Dockerfile"),
            str(context),
        ),
        BUILD_TIMEOUT,
    )
    seconds = time.monotonic() - started
    if result.returncode != 0:
        raise ImageBuildError(f"buildah bud of the Dockerfile failed: {_tail(result)}")
    return Built(tag, seconds, image_size(engine, tag))


def image_size(engine: Engine, tag: str) -> int:
    result = _run(engine.podman("image", "inspect", "--format", "{{.Size}}", tag), 120)
    if result.returncode != 0:
        raise ImageBuildError(f"podman image inspect {tag} failed: {_tail(result)}")
    return int(result.stdout.strip())


def image_config(engine: Engine, tag: str) -> dict[str, object]:
    """The image's OCI config (User, Entrypoint, Env, ...)."""
    result = _run(engine.podman("image", "inspect", "--format", "{{json .Config}}", tag), 120)
    if result.returncode != 0:
        raise ImageBuildError(f"podman image inspect {tag} failed: {_tail(result)}")
    config = json.loads(result.stdout)
    if not isinstance(config, dict):
        raise ImageBuildError(f"podman image inspect {tag}: not a JSON object")
    return config


@dataclass(frozen=True)
class Contents:
    """What the image holds, as its own Python sees it (:data:`INSPECT_SCRIPT`)."""

    uid: int
    gid: int
    python: str
    top_level: tuple[str, ...]
    dists: tuple[str, ...]
    importable: Mapping[str, bool]
    venv_bytes: int
    sizes: Mapping[str, int]


def inspect_contents(engine: Engine, tag: str) -> Contents:
    """Run :data:`INSPECT_SCRIPT` in the image (read-only, no network): what it holds."""
    result = _run(
        engine.run_args(tag, "-c", INSPECT_SCRIPT, entrypoint="/opt/venv/bin/python"), 300
    )
    if result.returncode != 0:
        raise ImageBuildError(f"inspecting {tag} failed: {_tail(result)}")
    try:
        raw = json.loads(result.stdout.strip().splitlines()[-1])
        return Contents(
            uid=int(raw["uid"]),
            gid=int(raw["gid"]),
            python=str(raw["python"]),
            top_level=tuple(raw["top_level"]),
            dists=tuple(raw["dists"]),
            importable=dict(raw["importable"]),
            venv_bytes=int(raw["venv_bytes"]),
            sizes=dict(raw["sizes"]),
        )
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise ImageBuildError(f"the inspect script's output is unusable: {exc}") from exc
