"""Image figures: build time, size and contents of the image the Dockerfile makes.

Builds the repository's Dockerfile with buildah on a Debian bookworm base made with
debootstrap (tools/image_build.py: the same path as tests/ship/test_image.py, no daemon, no
registry), then prints:

- the base's debootstrap time and the build time of the Dockerfile (wall time of one
  ``buildah bud``, dependencies downloaded from PyPI, no layer cache);
- the sizes of the base and of the image (``podman image inspect``: uncompressed);
- what the image holds: the top-level packages of its venv, the size of /opt/venv, and the
  largest of them.

    .venv/bin/python bench/image.py            # as root; about 2 min on 2 cores

Figures, not assertions: the tests assert what the image holds, not how big it is.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools import image_build as ib


def main() -> int:
    reason = ib.unavailable()
    if reason is not None:
        print(f"cannot build the image here: {reason}", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="image-bench-"))
    try:
        engine = ib.Engine(workdir / "engine")
        started = time.monotonic()
        tarball = ib.make_rootfs_tar(workdir)  # never the cache: its time is a figure here
        rootfs_s = time.monotonic() - started
        base = ib.build_base(engine, tarball)
        base_size = ib.image_size(engine, base)
        built = ib.build_image(engine, base)
        contents = ib.inspect_contents(engine, built.tag)
    finally:
        ib.remove_in_background(workdir)
    print(f"base (debootstrap bookworm minbase + python3, python3-venv): {rootfs_s:.0f} s")
    print(f"base image: {base_size / 1e6:.0f} MB; python {contents.python}")
    print(f"Dockerfile build (buildah bud, vfs, chroot, no cache): {built.seconds:.0f} s")
    print(f"image: {built.size_bytes / 1e6:.0f} MB (uncompressed)")
    print(f"/opt/venv: {contents.venv_bytes / 1e6:.0f} MB")
    print(f"top-level packages: {' '.join(contents.top_level)}")
    print(f"distributions: {len(contents.dists)}")
    print("largest:")
    for name, size in sorted(contents.sizes.items(), key=lambda kv: -kv[1])[:10]:
        print(f"  {name:<28} {size / 1e6:6.1f} MB")
    print(f"importable: {dict(contents.importable)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
