"""``python -m simulator.faces.live``: serve a real-time simulated world
(:class:`~simulator.faces.live_world.LiveWorld`, settings in
:class:`~simulator.faces.live_spec.LiveSpec`) for an EXTERNAL listener process (the end-to-end
test, demos). It starts a world, writes a kubeconfig, a listener config and a
``capacityAware`` file and stand-ins for helm, docker and ``kubectl port-forward``
(:mod:`simulator.faces.standins`), prints how to set up a shell against it, and prints a
status line until Ctrl-C or SIGTERM (see docs/e2e.md). ``--quickstart`` is the world
docs/quickstart.md is followed against; ``--detach`` / ``--stop`` run it in the background.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from simulator.faces.live_spec import HUD_TOKEN_ENV, LiveSpec, LiveSpecError
from simulator.faces.live_world import LiveWorld
from simulator.faces.standins.controller import stop_listener
from simulator.faces.standins.install import install, real_kubectl
from simulator.faces.standins.state import StandinState

#: Where ARC's controller and the listener pods live (the quickstart's names).
CONTROLLER_NAMESPACE = "arc-systems"


def write_files(world: LiveWorld, directory: Path, metrics_addr: str) -> dict[str, Path]:
    """kubeconfig.yaml (JSON is valid YAML), listener-config.json, capacity-aware.json."""
    directory.mkdir(parents=True, exist_ok=True)
    files = {
        "kubeconfig": directory / "kubeconfig.yaml",
        "listener": directory / "listener-config.json",
        "capacity": directory / "capacity-aware.json",
    }
    files["kubeconfig"].write_text(json.dumps(world.kubeconfig(), indent=2))
    files["listener"].write_text(json.dumps(world.listener_config(metrics_addr), indent=2))
    files["capacity"].write_text(json.dumps({"capacityAware": world.capacity_aware()}, indent=2))
    return files


QUICKSTART_SCALE_SET = "arc-runners"
WORLD_PID = "world.pid"
WORLD_LOG = "world.log"
SETUP_FILE = "setup.txt"
#: Seconds ``--detach`` waits for the world to be up, and ``--stop`` for it to be gone.
DETACH_TIMEOUT = 60.0
STOP_TIMEOUT = 90.0


def stock_values(world: LiveWorld) -> dict[str, Any]:
    """The scale set's values before the quickstart: a stock ``kubernetes-novolume`` scale set
    (what ``helm get values`` answers first)."""
    spec = world.spec
    return {
        "githubConfigUrl": world.actions.configure_url("acme"),
        "githubConfigSecret": f"{spec.scale_set}-github",
        "runnerScaleSetName": spec.scale_set,
        "minRunners": 0,
        "maxRunners": spec.max_runners,
        "containerMode": {"type": "kubernetes-novolume"},
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "runner",
                        "image": "ghcr.io/actions/actions-runner:latest",
                        "command": ["/home/runner/run.sh"],
                        "resources": {"requests": dict(spec.runner_requests)},
                    }
                ]
            }
        },
    }


def write_standins(
    world: LiveWorld, directory: Path, files: dict[str, Path], metrics_addr: str
) -> Path:
    """``<dir>/bin`` with the helm, docker and kubectl stand-ins (simulator/faces/standins)."""
    directory = directory.resolve()
    bin_dir = directory / "bin"
    state = StandinState(
        directory=str(directory),
        python=sys.executable,
        root=str(Path(__file__).resolve().parents[2]),
        kubeconfig=str(files["kubeconfig"].resolve()),
        listener_config=str(files["listener"].resolve()),
        listener_addr=metrics_addr,
        scale_set=world.spec.scale_set,
        namespace=world.spec.namespace,
        controller_namespace=CONTROLLER_NAMESPACE,
        listener_env={HUD_TOKEN_ENV: world.spec.hud_token},
        kubectl=real_kubectl(bin_dir),
        stock_values=stock_values(world),
    )
    return install(state)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m simulator.faces.live",
        description="Serve a real-time simulated world (Kubernetes API, Actions service, HUD) "
        "on 127.0.0.1 for the real listener and kubectl; Ctrl-C stops it.",
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="where to write the kubeconfig, configs and stand-ins (default: a temp dir)",
    )
    parser.add_argument(
        "--quickstart",
        action="store_true",
        help="the world docs/quickstart.md is followed against: scale set arc-runners, no "
        "capacity-loss window and no job burst unless --ice-start / --burst-at ask for them; "
        "the listener is started by the helm stand-in, not by hand",
    )
    parser.add_argument(
        "--detach",
        action="store_true",
        help="run the world in the background (log in DIR/world.log), print the setup lines "
        "once it is up and return; needs --dir",
    )
    parser.add_argument(
        "--stop",
        action="store_true",
        help="stop the world running in --dir (and the listener its helm stand-in started)",
    )
    parser.add_argument(
        "--metrics-addr",
        default="127.0.0.1:8080",
        help="metrics_addr written into the listener config",
    )
    parser.add_argument(
        "--ice-start",
        type=float,
        default=None,
        help="seconds after start when the ICE window (and node loss) begins (default 90; "
        "none with --quickstart)",
    )
    parser.add_argument("--ice-duration", type=float, default=30.0)
    parser.add_argument(
        "--keep-nodes",
        action="store_true",
        help="do not lose the pool's nodes when the ICE window begins",
    )
    parser.add_argument(
        "--burst-at",
        type=float,
        default=None,
        help="seconds after start when the burst of jobs arrives (default 95; none with "
        "--quickstart)",
    )
    parser.add_argument("--jobs", type=int, default=6, help="jobs in the burst")
    parser.add_argument("--job-duration", type=float, default=10.0)
    parser.add_argument("--max-runners", type=int, default=6)
    parser.add_argument(
        "--scale-set",
        default=None,
        help=f"the scale set's name and label (default {LiveSpec.scale_set}; "
        f"{QUICKSTART_SCALE_SET} with --quickstart)",
    )
    parser.add_argument("--status-every", type=float, default=5.0)
    parser.add_argument(
        "--event-log",
        type=Path,
        default=None,
        help="write the world's JSON-lines event log here on exit",
    )
    return parser


def spec_from_args(args: argparse.Namespace) -> LiveSpec:
    quick = args.quickstart
    scale_set = args.scale_set or (QUICKSTART_SCALE_SET if quick else LiveSpec.scale_set)
    ice_start = args.ice_start if args.ice_start is not None else 90.0
    burst = args.burst_at is not None or not quick
    return LiveSpec(
        scale_set=scale_set,
        labels=(scale_set,),
        ice_start=ice_start,
        ice_end=ice_start + args.ice_duration,
        ice_window=args.ice_start is not None or not quick,
        lose_nodes_at_ice_start=not args.keep_nodes,
        burst_at=args.burst_at if args.burst_at is not None else 95.0,
        burst_count=args.jobs if burst else 0,
        job_duration=args.job_duration,
        max_runners=args.max_runners,
        burst_over=min(10.0, args.jobs * 1.0),
    )


def setup_text(world: LiveWorld, files: dict[str, Path], bin_dir: Path, quick: bool) -> str:
    spec = world.spec
    if spec.ice_window:
        lost = ", nodes lost at its start" if spec.lose_nodes_at_ice_start else ""
        ice = f"{spec.ice_start:.0f}s..{spec.ice_end:.0f}s after start ({spec.instance_type}{lost})"
    else:
        ice = "none (--ice-start N adds one)"
    burst = (
        f"{spec.burst_count} jobs of {spec.job_duration:.0f}s at {spec.burst_at:.0f}s"
        if spec.burst_count
        else "none (--burst-at N adds one)"
    )
    head = (
        f"Kubernetes API : {world.k8s.url}\n"
        f"Actions service: {world.actions.configure_url('acme')} (PAT in the config)\n"
        f"HUD            : {world.hud.url}\n"
        f"Capacity loss  : {ice}\n"
        f"Burst          : {burst}\n\n"
    )
    shell = (
        f"Set up your shell (stand-ins for helm, docker and kubectl port-forward in {bin_dir}):\n"
        f'  export PATH="{bin_dir}:$PATH"\n'
        f'  export KUBECONFIG="{files["kubeconfig"].resolve()}"\n'
    )
    if quick:
        return (
            head + shell + "Then follow docs/quickstart.md from the repository root; its "
            "`helm upgrade` (the stand-in) starts the listener as ARC's controller would.\n"
        )
    env_vars = world.listener_env(files["kubeconfig"], files["listener"])
    env = " ".join(f"{k}={v}" for k, v in env_vars.items())
    return (
        head + "Start the listener in another shell (from the repository root):\n"
        f"  {env} \\\n  CAPACITY_AWARE_CONFIG={files['capacity']} python -m listener run\n\n"
        f"kubectl: kubectl --kubeconfig {files['kubeconfig']} get pods,nodes\n"
        f"(or {shell[0].lower()}{shell[1:]})"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if (args.detach or args.stop) and args.dir is None:
        print("live: --detach and --stop need --dir", file=sys.stderr)
        return 2
    if args.stop:
        return stop_world(args.dir)
    if args.detach:
        return detach(args.dir, [a for a in (argv or sys.argv[1:]) if a != "--detach"])
    try:
        world = LiveWorld(spec_from_args(args))
    except LiveSpecError as exc:
        print(f"live: {exc}", file=sys.stderr)
        return 2
    directory = (args.dir or Path(tempfile.mkdtemp(prefix="live-world-"))).resolve()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with world:
        files = write_files(world, directory, args.metrics_addr)
        bin_dir = write_standins(world, directory, files, args.metrics_addr)
        text = setup_text(world, files, bin_dir, args.quickstart)
        (directory / SETUP_FILE).write_text(text)
        (directory / WORLD_PID).write_text(str(os.getpid()))
        print(text + "Ctrl-C stops the world.\n", flush=True)
        try:
            while not stop.wait(args.status_every):
                print(world.status_line(), flush=True)
                if world.driver.error is not None:
                    print(f"live: the world stopped: {world.driver.error!r}", file=sys.stderr)
                    return 1
        except KeyboardInterrupt:
            pass
        finally:
            print("\nstopping", flush=True)
            # Before the world: the listener deletes its placeholders through the API.
            stopped = stop_listener(directory)
            if stopped:
                print(f"stopped the listener the helm stand-in started ({stopped})", flush=True)
            (directory / WORLD_PID).unlink(missing_ok=True)
            if args.event_log is not None:
                with world.store.lock, args.event_log.open("w") as out:
                    world.log.write(out)
    return 0


def detach(directory: Path, argv: list[str]) -> int:
    """Start the world in its own session, wait until it wrote its files, print its setup."""
    directory = directory.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    running = _running_world(directory)
    if running:
        print(
            f"live: a world already runs in {directory} (process {running}); stop it first: "
            f"python -m simulator.faces.live --stop --dir {directory}",
            file=sys.stderr,
        )
        return 1
    for stale in (WORLD_PID, SETUP_FILE):
        (directory / stale).unlink(missing_ok=True)
    with (directory / WORLD_LOG).open("wb") as log:
        child = subprocess.Popen(
            [sys.executable, "-m", "simulator.faces.live", *argv],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + DETACH_TIMEOUT
    while time.monotonic() < deadline and child.poll() is None:
        if (directory / WORLD_PID).exists():
            print((directory / SETUP_FILE).read_text(), end="")
            print(
                f"The world runs in the background (process {child.pid}, log "
                f"{directory / WORLD_LOG}); stop it with: python -m simulator.faces.live "
                f"--stop --dir {directory}",
                flush=True,
            )
            return 0
        time.sleep(0.2)
    tail = (directory / WORLD_LOG).read_text(errors="replace").splitlines()[-20:]
    if child.poll() is None:
        child.terminate()
    print(
        f"live: the world did not come up within {DETACH_TIMEOUT:.0f} s; its log:\n"
        + "\n".join(tail),
        file=sys.stderr,
    )
    return 1


def _running_world(directory: Path) -> int:
    """The pid in ``directory``'s world.pid when that process is alive, else 0."""
    try:
        pid = int((directory / WORLD_PID).read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return 0
    return pid


def stop_world(directory: Path) -> int:
    pid_file = directory.resolve() / WORLD_PID
    try:
        pid = int(pid_file.read_text())
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        print(f"live: no world runs in {directory} ({pid_file} is missing)", file=sys.stderr)
        return 1
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline and pid_file.exists():
        time.sleep(0.2)
    if pid_file.exists():
        print(
            f"live: the world (process {pid}) did not stop within {STOP_TIMEOUT:.0f} s",
            file=sys.stderr,
        )
        return 1
    print(f"stopped the world in {directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
