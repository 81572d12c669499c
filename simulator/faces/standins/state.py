"""What the stand-ins know about their world: ``<dir>/standins.json``, written once by the
world (:func:`write_state`) and read by every stand-in run (:func:`read_state`)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

STATE_FILE = "standins.json"


class StandinError(Exception):
    """A stand-in cannot do what it was asked; the message says what and what to do."""


@dataclass(frozen=True)
class StandinState:
    directory: str
    python: str
    #: The checkout the world runs from (its ``simulator`` and ``listener`` packages).
    root: str
    kubeconfig: str
    listener_config: str
    #: ``host:port`` the listener serves on (its config's ``metrics_addr``).
    listener_addr: str
    scale_set: str
    namespace: str
    controller_namespace: str
    #: Variables the listener needs besides its pod template's (the HUD token).
    listener_env: dict[str, str]
    #: The real kubectl (None when not installed): every subcommand but port-forward.
    kubectl: str | None
    #: The scale set's values before the quickstart (what ``helm get values`` first answers).
    stock_values: dict[str, object]

    @property
    def path(self) -> Path:
        return Path(self.directory)

    @property
    def listener_port(self) -> int:
        return int(self.listener_addr.rsplit(":", 1)[1])


def write_state(state: StandinState) -> Path:
    path = state.path / STATE_FILE
    path.write_text(json.dumps(asdict(state), indent=2))
    return path


def read_state(directory: Path) -> StandinState:
    path = directory / STATE_FILE
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise StandinError(
            f"{path}: cannot read the stand-ins' state ({exc}); is the simulated world "
            "running (python -m simulator.faces.live --quickstart)?"
        ) from exc
    return StandinState(**raw)
