"""``python -m simulator.faces.live``: serve a real-time simulated world
(:class:`~simulator.faces.live_world.LiveWorld`, settings in
:class:`~simulator.faces.live_spec.LiveSpec`) for an EXTERNAL listener process (the end-to-end
test, demos). It starts a world, writes a kubeconfig, a listener config and a
``capacityAware`` file, prints how to start the listener and kubectl against it, and prints a
status line until Ctrl-C (see docs/e2e.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from simulator.faces.live_spec import LiveSpec, LiveSpecError
from simulator.faces.live_world import LiveWorld


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m simulator.faces.live",
        description="Serve a real-time simulated world (Kubernetes API, Actions service, HUD) "
        "on 127.0.0.1 for the real listener and kubectl; Ctrl-C stops it.",
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="where to write the kubeconfig and configs (default: a temp dir)",
    )
    parser.add_argument(
        "--metrics-addr",
        default="127.0.0.1:8080",
        help="metrics_addr written into the listener config",
    )
    parser.add_argument(
        "--ice-start",
        type=float,
        default=90.0,
        help="seconds after start when the ICE window (and node loss) begins",
    )
    parser.add_argument("--ice-duration", type=float, default=30.0)
    parser.add_argument(
        "--keep-nodes",
        action="store_true",
        help="do not lose the pool's nodes when the ICE window begins",
    )
    parser.add_argument("--burst-at", type=float, default=95.0)
    parser.add_argument("--jobs", type=int, default=6, help="jobs in the burst")
    parser.add_argument("--job-duration", type=float, default=10.0)
    parser.add_argument("--max-runners", type=int, default=6)
    parser.add_argument(
        "--scale-set",
        default=LiveSpec.scale_set,
        help="the scale set's name and label (arc-runners to follow docs/quickstart.md)",
    )
    parser.add_argument("--status-every", type=float, default=5.0)
    parser.add_argument(
        "--event-log",
        type=Path,
        default=None,
        help="write the world's JSON-lines event log here on exit",
    )
    args = parser.parse_args(argv)
    spec = LiveSpec(
        scale_set=args.scale_set,
        labels=(args.scale_set,),
        ice_start=args.ice_start,
        ice_end=args.ice_start + args.ice_duration,
        lose_nodes_at_ice_start=not args.keep_nodes,
        burst_at=args.burst_at,
        burst_count=args.jobs,
        job_duration=args.job_duration,
        max_runners=args.max_runners,
        burst_over=min(10.0, args.jobs * 1.0),
    )
    try:
        world = LiveWorld(spec)
    except LiveSpecError as exc:
        print(f"live: {exc}", file=sys.stderr)
        return 2
    directory = args.dir or Path(tempfile.mkdtemp(prefix="live-world-"))
    with world:
        files = write_files(world, directory, args.metrics_addr)
        env_vars = world.listener_env(files["kubeconfig"], files["listener"])
        env = " ".join(f"{k}={v}" for k, v in env_vars.items())
        lost = ", nodes lost at its start" if spec.lose_nodes_at_ice_start else ""
        print(
            f"Kubernetes API : {world.k8s.url}\n"
            f"Actions service: {world.actions.configure_url('acme')} (PAT in the config)\n"
            f"HUD            : {world.hud.url}\n"
            f"ICE window     : {spec.ice_start:.0f}s..{spec.ice_end:.0f}s after start "
            f"({spec.instance_type}{lost})\n"
            f"Burst          : {spec.burst_count} jobs of {spec.job_duration:.0f}s at "
            f"{spec.burst_at:.0f}s\n\n"
            "Start the listener in another shell (from the repository root):\n"
            f"  {env} \\\n  CAPACITY_AWARE_CONFIG={files['capacity']} python -m listener run\n\n"
            f"kubectl: kubectl --kubeconfig {files['kubeconfig']} get pods,nodes\n"
            "Ctrl-C stops the world.\n",
            flush=True,
        )
        stop = threading.Event()
        try:
            while not stop.wait(args.status_every):
                print(world.status_line(), flush=True)
                if world.driver.error is not None:
                    print(f"live: the world stopped: {world.driver.error!r}", file=sys.stderr)
                    return 1
        except KeyboardInterrupt:
            print("\nstopping", flush=True)
        finally:
            if args.event_log is not None:
                with world.store.lock, args.event_log.open("w") as out:
                    world.log.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
