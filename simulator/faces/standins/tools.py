"""The ``docker`` and ``kubectl`` stand-ins.

``docker build -t TAG DIR`` checks that ``DIR/Dockerfile`` exists and records the tag;
``docker push TAG`` checks the tag was built: nothing is built or pushed, the world runs the
listener from this checkout. ``kubectl port-forward`` checks that the pod exists (with the
real kubectl) and that the port is the one the world's listener listens on, forwards nothing
and returns at once (kubectl would keep running); any other ``kubectl`` command is the real
kubectl's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from typing import TextIO

from simulator.faces.standins.state import StandinError, StandinState

IMAGES_FILE = "docker-images.json"


def docker(state: StandinState, argv: Sequence[str], out: TextIO = sys.stdout) -> int:
    images_file = state.path / IMAGES_FILE
    images: list[str] = json.loads(images_file.read_text()) if images_file.exists() else []
    prefix = "docker (stand-in for the simulated world)"
    if len(argv) == 4 and argv[0] == "build" and argv[1] == "-t":
        tag, context = argv[2], argv[3]
        if not os.path.isfile(os.path.join(context, "Dockerfile")):
            raise StandinError(f"{prefix}: no Dockerfile in {context!r}")
        images_file.write_text(json.dumps(sorted({*images, tag})))
        out.write(
            f"{prefix}: nothing built; the simulated world runs the listener from this "
            f"checkout, not from an image. Tagged {tag}.\n"
        )
        return 0
    if len(argv) == 2 and argv[0] == "push":
        if argv[1] not in images:
            raise StandinError(f"An image does not exist locally with the tag: {argv[1]}")
        out.write(f"{prefix}: nothing pushed (the simulated world pulls no image)\n")
        return 0
    raise StandinError(
        f"{prefix} runs only `docker build -t TAG DIR` and `docker push TAG` (the "
        f"quickstart's); got `docker {' '.join(argv)}`"
    )


def kubectl(state: StandinState, argv: Sequence[str], out: TextIO = sys.stdout) -> int:
    if state.kubectl is None:
        raise StandinError("kubectl is not installed: the quickstart needs it (install kubectl)")
    if "port-forward" not in argv:
        os.execv(state.kubectl, [state.kubectl, *argv])
    return port_forward(state, argv, out)


def port_forward(state: StandinState, argv: Sequence[str], out: TextIO) -> int:
    args = [a for a in argv if a != "port-forward"]
    namespace = "default"
    if "-n" in args:
        at = args.index("-n")
        namespace = args[at + 1]
        del args[at : at + 2]
    if len(args) != 2:
        raise StandinError(
            "kubectl port-forward (stand-in): expected `kubectl port-forward -n NS POD PORT`; "
            f"got `kubectl {' '.join(argv)}`"
        )
    target, ports = args
    local, _, remote = ports.partition(":")
    remote = remote or local
    if not target:
        raise StandinError("error: TYPE/NAME or NAME is required for port-forward")
    found = subprocess.run(
        [state.kubectl or "kubectl", "get", target, "-n", namespace, "-o", "name"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if found.returncode != 0:
        sys.stderr.write(found.stderr)
        return found.returncode
    port = state.listener_port
    if (local, remote) != (str(port), str(port)):
        raise StandinError(
            f"kubectl port-forward (stand-in): the simulated world's listener listens on "
            f"{state.listener_addr}: forward {port} (start the world with --metrics-addr "
            f"127.0.0.1:{local} to use {local})"
        )
    out.write(
        f"Forwarding from 127.0.0.1:{port} -> {port}\n"
        f"kubectl port-forward (stand-in for the simulated world): the listener of "
        f"{found.stdout.strip()} already listens on {state.listener_addr}; nothing to "
        "forward, so this returns at once (kubectl would keep running)\n"
    )
    return 0
