"""The image, built from the real Dockerfile and run the way ARC runs it (issue 22, Deliver 3).

One build per session (:func:`built`): a Debian bookworm base made with debootstrap, the
repository's Dockerfile built on it with buildah, containers run with podman read-only, as the
image's own user, with no writable tmpfs. Skipped, with the reason, where buildah, podman,
runc or debootstrap cannot be had (``.ci/run`` installs them) or the Debian mirror is
unreachable; a failing build is a failure, not a skip.

What the tests guarantee, in the order a user meets it: the image holds what ``run``,
``status``, ``rbac``, ``values`` and ``verify`` need and nothing of the simulator, the tuner,
the tests or pip; every subcommand it offers answers (those it leaves out say so and exit 2); and
``/ghalistener``, ARC's entry point, runs a listener against the live simulated world that
starts jobs and deletes its placeholders at shutdown.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simulator.faces.live_spec import LiveSpec
from simulator.faces.live_world import LiveWorld
from simulator.workload.service_records import JobState
from tests.e2e.conftest import free_port
from tools import image_build as ib

#: Minutes of build: outside make test's suite, run by make image-test (and .ci/run).
pytestmark = pytest.mark.image

LISTENER_PACKAGES = {"listener", "reconciler", "state_machine", "providers"}
#: pytest-timeout counts fixture set-up: the first test pays for debootstrap and the build
#: (about 2 min idle, 4 min on a busy 2-core machine).
BUILD_BUDGET = 900
#: Not in the image: the offline tools, the tests, pip, and the kubernetes client's asyncio
#: half with aiohttp (the listener uses the synchronous client; the Dockerfile removes them).
LEFT_OUT = (
    "simulator",
    "tuning",
    "tests",
    "bench",
    "tools",
    "matplotlib",
    "pip",
    "setuptools",
    "kubernetes.aio",
    "aiohttp",
    "yarl",
)


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ib.Engine, ib.Built]]:
    """The image, built once per session on a locally made base (its rootfs cached between
    sessions, see ``tools/image_build.py``); the session's store is removed after."""
    reason = ib.unavailable()
    if reason is not None:
        pytest.skip(f"image not built: {reason}")
    workdir = tmp_path_factory.mktemp("image")
    engine = ib.Engine(workdir / "engine")
    try:
        tarball, from_cache = ib.rootfs_tar(workdir, ib.cache_dir())
    except ib.ImageToolsUnavailable as exc:
        pytest.skip(f"image not built: {exc}")
    base = ib.build_base(engine, tarball)
    image = ib.build_image(engine, base)
    print(
        f"image {image.tag}: {image.size_bytes / 1e6:.0f} MB, built in {image.seconds:.0f} s "
        f"(base rootfs {'cached' if from_cache else 'made by debootstrap'}: {tarball})"
    )
    yield engine, image
    ib.remove_in_background(workdir)


def run(args: list[str], timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


@pytest.mark.slow
@pytest.mark.timeout(BUILD_BUDGET)
def test_the_image_holds_what_run_needs_and_nothing_of_the_simulator(
    built: tuple[ib.Engine, ib.Built],
) -> None:
    """Prevents shipping the simulator, the tuner or pip (size, attack surface) and an image
    that runs as root or lacks a package ``run`` imports."""
    engine, image = built
    config = ib.image_config(engine, image.tag)
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["arc-capacity-listener", "run"]
    contents = ib.inspect_contents(engine, image.tag)
    assert (contents.uid, contents.gid) == (65532, 65532)
    importable = contents.importable
    assert all(importable[name] for name in LISTENER_PACKAGES), importable
    assert not [name for name in LEFT_OUT if importable[name]], importable
    top_level = set(contents.top_level)
    assert top_level >= LISTENER_PACKAGES
    assert not top_level & {"simulator", "tuning", "tests", "bench", "tools"}, top_level
    assert "arc_capacity_listener-0.1.0" in contents.dists


@pytest.fixture(scope="module")
def toolbox(built: tuple[ib.Engine, ib.Built]) -> Iterator[tuple[ib.Engine, str]]:
    """One read-only container of the image kept alive (``sleep``) to ``exec`` commands in:
    creating a container copies the image on vfs (~10 s), an exec is quick."""
    engine, image = built
    name = f"acl-toolbox-{int(time.time())}"
    started = run(
        engine.podman(
            "run", "-d", "--name", name, *ib.RUN_FLAGS, "--network", "none",
            "--entrypoint", "sleep", image.tag, "600",
        )
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    yield engine, name
    # kill, not rm: removing a vfs container deletes its copy of the image (~30 s); the
    # session's whole store is deleted in the background after the last test.
    run(engine.podman("kill", name))


def exec_in(toolbox: tuple[ib.Engine, str], *args: str) -> subprocess.CompletedProcess[str]:
    engine, name = toolbox
    return run(engine.podman("exec", name, *args), timeout=60)


SUBCOMMANDS = [
    # (argv, exit code, text the output must contain)
    (["--help"], 0, "capacity-aware listener for ARC"),
    (["rbac", "--help"], 0, "--scale-set"),
    (["values", "--help"], 0, "--current"),
    (["verify", "--help"], 0, "--scale-set"),
    (["status", "--url", "http://127.0.0.1:9"], 1, "127.0.0.1:9"),
    (["simulate", "--help"], 2, "this installation does not include"),
    (["demo"], 2, "this installation does not include"),
    (["tune", "--help"], 2, "this installation does not include"),
]


@pytest.mark.slow
@pytest.mark.timeout(BUILD_BUDGET)
@pytest.mark.parametrize(("argv", "code", "says"), SUBCOMMANDS, ids=lambda v: str(v))
def test_every_subcommand_the_image_offers_answers(
    toolbox: tuple[ib.Engine, str], argv: list[str], code: int, says: str
) -> None:
    """Prevents a subcommand that tracebacks in the image (a module left out of the wheel)
    and a left-out one that fails with an ImportError instead of saying why."""
    result = exec_in(toolbox, "arc-capacity-listener", *argv)
    output = result.stdout + result.stderr
    assert result.returncode == code, output
    assert says.lower() in output.lower(), output
    assert "Traceback" not in output


@pytest.mark.slow
@pytest.mark.timeout(BUILD_BUDGET)
def test_values_writes_an_overlay_in_the_read_only_image(toolbox: tuple[ib.Engine, str]) -> None:
    """Prevents a ``values`` that needs files of the source tree (config/) or a writable root."""
    current = "containerMode: {type: kubernetes-novolume}\n"
    engine, name = toolbox
    result = subprocess.run(
        engine.podman(
            "exec", "-i", name, "arc-capacity-listener", "values", "--current", "/dev/stdin",
            "--image", "registry.example.com/acl:1", "--scale-set", "arc-runners",
        ),
        input=current, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "registry.example.com/acl:1" in result.stdout
    assert "arc-runners-capacity-aware" in result.stdout


def write_world_files(world: LiveWorld, directory: Path, port: int) -> None:
    """The kubeconfig and listener config ARC's controller would mount, readable by 65532."""
    directory.mkdir(mode=0o755)
    (directory / "kubeconfig.yaml").write_text(json.dumps(world.kubeconfig()))
    config = world.listener_config(f"127.0.0.1:{port}")
    (directory / "listener-config.json").write_text(json.dumps(config))
    for path in directory.iterdir():
        path.chmod(0o644)


def container_env(world: LiveWorld) -> list[str]:
    env = world.listener_env(Path("/config/kubeconfig.yaml"), Path("/config/listener-config.json"))
    env["CAPACITY_AWARE_JSON"] = json.dumps(world.capacity_aware(proactiveCapacity=2))
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return [flag for key, value in env.items() for flag in ("--env", f"{key}={value}")]


@pytest.mark.slow
@pytest.mark.timeout(BUILD_BUDGET + 240)
def test_ghalistener_runs_a_listener_that_starts_jobs_and_cleans_up(
    built: tuple[ib.Engine, ib.Built], tmp_path: Path
) -> None:
    """Prevents an image whose entry point ARC uses cannot run the listener read-only: the
    jobs of a short burst start and succeed, ``status`` reads the running listener, and on
    SIGTERM it exits 0 with its session and every placeholder deleted."""
    engine, image = built
    spec = LiveSpec(
        ice_start=900.0,
        ice_end=901.0,
        lose_nodes_at_ice_start=False,
        burst_at=20.0,
        burst_count=3,
        burst_over=1.0,
        job_duration=2.0,
    )
    port = free_port()
    name = f"acl-listener-{port}"
    with LiveWorld(spec) as world:
        write_world_files(world, tmp_path / "config", port)
        args = engine.podman(
            "run", "--rm", "--name", name, *ib.RUN_FLAGS, "--network", "host",
            "-v", f"{tmp_path / 'config'}:/config:ro", *container_env(world),
            "--entrypoint", "/ghalistener", image.tag,
        )  # fmt: skip
        log = (tmp_path / "listener.log").open("w")
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        try:
            report = exercise_listener(world, proc, engine, name, port)
        finally:
            if proc.poll() is None:
                run(engine.podman("rm", "--force", "--time", "0", name))
                proc.wait(30)
            log.close()
            print((tmp_path / "listener.log").read_text()[-6000:])
            print("world:", world.status_line())
    assert report["finished"], report
    assert report["states"] == [JobState.SUCCEEDED] * spec.burst_count, report
    assert report["status_code"] == 0, report
    assert f"scale set {spec.scale_set}" in report["status_output"], report
    assert report["placeholders_while_running"], report
    assert report["exit_code"] == 0, report
    assert report["session_after"] is None, report
    assert report["placeholders_after"] == [], report


def exercise_listener(
    world: LiveWorld, proc: subprocess.Popen[bytes], engine: ib.Engine, name: str, port: int
) -> dict[str, Any]:
    """Wait for the burst, read ``status`` from inside the container, send SIGTERM; every
    wait bounded. Returns what was observed, for the test to judge."""
    spec = world.spec
    finished = world.wait_until(
        lambda w: w.all_jobs_finished() or proc.poll() is not None,
        timeout=spec.burst_at + 90.0,
    )
    report: dict[str, Any] = {
        "finished": world.all_jobs_finished(),
        "states": [job.state for job in world.jobs()],
        "running": proc.poll() is None and finished,
        "placeholders_while_running": world.placeholder_pods(),
    }
    status = run(
        engine.podman(
            "exec", name, "arc-capacity-listener", "status", "--url", f"http://127.0.0.1:{port}"
        ),
        timeout=60,
    )
    report["status_code"] = status.returncode
    report["status_output"] = status.stdout + status.stderr
    run(engine.podman("kill", "--signal", "TERM", name), timeout=30)
    try:
        report["exit_code"] = proc.wait(60)
    except subprocess.TimeoutExpired:
        report["exit_code"] = None
    report["session_after"] = world.actions.session_of(world.scale_set.id)
    report["placeholders_after"] = world.placeholder_pods()
    return report
