"""``python -m simulator.faces.standins --state DIR PROGRAM ARGS...`` (what ``DIR/bin/*``
run): dispatches to the stand-in; its errors are one line on stderr, exit 1."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from kubernetes.client.exceptions import ApiException

from simulator.faces.standins import helm, tools
from simulator.faces.standins.state import StandinError, read_state


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3 or args[0] != "--state":
        sys.stderr.write("usage: python -m simulator.faces.standins --state DIR PROGRAM ARGS\n")
        return 2
    program, rest = args[2], args[3:]
    try:
        state = read_state(Path(args[1]))
        if program == "helm":
            return helm.main(state, rest)
        if program == "docker":
            return tools.docker(state, rest)
        if program == "kubectl":
            return tools.kubectl(state, rest)
        raise StandinError(f"no stand-in for {program!r}")
    except StandinError as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    except ApiException as exc:
        sys.stderr.write(
            f"{program} (stand-in): the world's Kubernetes API said {exc.status}: {exc.reason}\n"
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
