"""tools/image_build.py without building anything: when the image test skips, and how the base's
rootfs cache decides between reuse and a new debootstrap."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools import image_build as ib

WEEK = ib.CACHE_MAX_AGE


@pytest.fixture
def fake_debootstrap(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """``make_rootfs_tar`` replaced by one that writes a small file and records the call."""
    made: list[Path] = []

    def make(workdir: Path) -> Path:
        tarball = workdir / "rootfs.tar"
        tarball.write_bytes(b"new rootfs")
        made.append(tarball)
        return tarball

    monkeypatch.setattr(ib, "make_rootfs_tar", make)
    return made


def cached_file(cache: Path, age: float) -> Path:
    cache.mkdir(parents=True)
    path = cache / f"{ib.SUITE}-minbase-{'-'.join(ib.BASE_PACKAGES)}.tar"
    path.write_bytes(b"old rootfs")
    stamp = 1_000_000_000.0 - age
    os.utime(path, (stamp, stamp))
    return path


def test_a_cached_rootfs_younger_than_a_week_is_reused(
    tmp_path: Path, fake_debootstrap: list[Path]
) -> None:
    """Prevents a debootstrap (minutes on a busy machine) in every test session."""
    path = cached_file(tmp_path / "cache", age=WEEK - 60)
    got, from_cache = ib.rootfs_tar(tmp_path, tmp_path / "cache", now=1_000_000_000.0)
    assert (got, from_cache) == (path, True)
    assert fake_debootstrap == []


def test_a_rootfs_older_than_a_week_is_made_again_and_replaces_the_cached_one(
    tmp_path: Path, fake_debootstrap: list[Path]
) -> None:
    """Prevents testing the image on a base that misses months of Debian security updates."""
    path = cached_file(tmp_path / "cache", age=WEEK + 60)
    got, from_cache = ib.rootfs_tar(tmp_path, tmp_path / "cache", now=1_000_000_000.0)
    assert (got, from_cache) == (path, False)
    assert path.read_bytes() == b"new rootfs" and len(fake_debootstrap) == 1
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [path.name], "no partial left"


def test_with_caching_off_the_rootfs_stays_in_the_session_directory(
    tmp_path: Path, fake_debootstrap: list[Path]
) -> None:
    got, from_cache = ib.rootfs_tar(tmp_path, None)
    assert (got, from_cache) == (tmp_path / "rootfs.tar", False)


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, ib.DEFAULT_CACHE),
        ({ib.CACHE_ENV: "/srv/cache"}, Path("/srv/cache")),
        ({ib.CACHE_ENV: ""}, None),
    ],
)
def test_the_cache_directory_comes_from_the_environment(
    environ: dict[str, str], expected: Path | None
) -> None:
    assert ib.cache_dir(environ) == expected


def test_a_missing_tool_is_a_skip_reason_naming_it_and_how_ci_gets_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Prevents a bare skip (or a crash) where the container tools are not installed."""
    monkeypatch.setattr(ib.shutil, "which", lambda tool: None if tool == "podman" else "/bin/x")
    reason = ib.unavailable()
    assert reason is not None
    assert reason.startswith("podman not installed") and ".ci/run" in reason
