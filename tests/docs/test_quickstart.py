"""docs/quickstart.md followed as written, from a fresh copy of the repository, against the
simulated world: every command of its ``sh`` blocks, in order, in one bash session, and
nothing else, ending in a passing ``arc-capacity-listener verify``.

The page's "Try it against the simulated world first" section starts the world
(``--quickstart --detach``) and puts its stand-ins for helm, docker and ``kubectl
port-forward`` first on PATH (simulator/faces/standins); everything after it is the page's
real-cluster path. The test adds no command: it only prints a marker before each one (to
tell their outputs apart), runs the shell with this venv's ``python`` and
``arc-capacity-listener`` first on PATH (the page's ``pip install .``) and without the caller's
Kubernetes, listener or proxy variables, and stops the world afterwards with the page's own
stop command. Where another program holds 127.0.0.1:8080 it applies the page's own fallback
(the world on another port, that port in step 7). A command the page gains that cannot run
here fails the test, naming it.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from simulator.faces.standins.controller import stop_listener

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "quickstart.md"
WORLD_SECTION = "## Try it against the simulated world first"
MARK = "### quickstart command: "
PORT_FALLBACK = (
    "If port 8080 is taken, add `--metrics-addr 127.0.0.1:PORT` and use PORT in place of "
    "8080 in step 7."
)
#: The whole page, world start to verify, bounded (about a minute on a quiet machine).
PAGE_TIMEOUT = 420
#: Variables of the caller that a newcomer's fresh shell would not have.
FOREIGN_ENV = (
    "KUBECONFIG",
    "KUBERNETES_",
    "CAPACITY_AWARE",
    "LISTENER_CONFIG_PATH",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)


def doc_commands(text: str) -> list[str]:
    """Every command of the page's ``sh`` blocks, continuation lines joined, in order."""
    return [command for _, command in sectioned_commands(text)]


def sectioned_commands(text: str) -> list[tuple[str, str]]:
    """``(heading of its section, command)`` for every command of the ``sh`` blocks."""
    commands = []
    for section in re.split(r"^(?=## )", text, flags=re.M):
        heading = section.splitlines()[0] if section.startswith("## ") else ""
        for block in re.findall(r"^```sh\n(.*?)^```", section, flags=re.M | re.S):
            joined = re.sub(r"\\\n\s*", " ", block)
            commands += [(heading, line.strip()) for line in joined.splitlines() if line.strip()]
    return commands


def on_port(text: str, port: int) -> list[str]:
    """The page's commands with its own fallback for a taken 8080 applied: the world started
    with ``--metrics-addr 127.0.0.1:PORT`` and PORT in step 7 (its words:
    :data:`PORT_FALLBACK`)."""
    assert PORT_FALLBACK in " ".join(text.split()), "the page no longer says how to move 8080"
    commands = []
    for heading, command in sectioned_commands(text):
        if command.startswith("python -m simulator.faces.live --quickstart "):
            command += f" --metrics-addr 127.0.0.1:{port}"
        elif heading.startswith("## 7."):
            command = command.replace("8080", str(port))
        commands.append(command)
    return commands


def stop_command(text: str) -> str:
    """The page's own way to stop the world (in the world section's prose)."""
    section = text.split(WORLD_SECTION, 1)[1].split("\n## ", 1)[0]
    (found,) = set(re.findall(r"`(python -m simulator\.faces\.live --stop [^`]+)`", section))
    return found


def script(commands: list[str]) -> str:
    """One bash session: stop at the first failing command; a marker before each."""
    lines = ["set -eo pipefail"]
    for command in commands:
        lines.append(f"printf '\\n%s\\n' {shlex.quote(MARK + command)}")
        lines.append(command)
    return "\n".join(lines) + "\n"


def outputs_by_command(output: str) -> dict[str, str]:
    parts = output.split("\n" + MARK)
    return dict(part.split("\n", 1) if "\n" in part else (part, "") for part in parts[1:])


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def fresh_copy(destination: Path) -> Path:
    """The files a clone of this working tree would have (tracked and new, not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source = ROOT / os.fsdecode(name)
        target = destination / os.fsdecode(name)
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the working tree
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)
    return destination


def newcomer_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN_ENV)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def tail(path: Path, lines: int = 40) -> str:
    if not path.exists():
        return f"({path.name}: not written)"
    return f"--- {path.name}, last lines ---\n" + "\n".join(
        path.read_text(errors="replace").splitlines()[-lines:]
    )


@pytest.fixture
def clone(tmp_path: Path) -> Iterator[Path]:
    """A fresh copy of the repository; afterwards the page's stop command, and a check that
    nothing the page started is left running."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed (the quickstart needs it)")
    repo = fresh_copy(tmp_path / "repo")
    yield repo
    world_dir = repo / "out" / "quickstart-world"
    if (world_dir / "world.pid").exists():
        subprocess.run(
            shlex.split(stop_command(DOC.read_text(encoding="utf-8"))),
            cwd=repo,
            env=newcomer_env(),
            timeout=120,
            check=False,
        )
    # Should the world have died first: the listener its helm stand-in started, not left behind.
    stop_listener(world_dir, grace=10)


def test_the_page_has_the_simulated_world_section_and_a_verify() -> None:
    """The scripted walk below depends on both: the world's setup comes first, verify last
    among the checks."""
    text = DOC.read_text(encoding="utf-8")
    commands = doc_commands(text)
    assert WORLD_SECTION in text
    assert commands[0].startswith("python -m simulator.faces.live --quickstart ")
    assert any(c.startswith("arc-capacity-listener verify ") for c in commands)
    assert stop_command(text).startswith("python -m simulator.faces.live --stop ")


def test_a_taken_port_moves_the_world_and_step_7_only() -> None:
    """The fallback touches the world's start and step 7, not step 8's controller values."""
    commands = on_port(DOC.read_text(encoding="utf-8"), 18080)
    assert commands[0].endswith(" --metrics-addr 127.0.0.1:18080")
    assert any("status --url http://127.0.0.1:18080" in c for c in commands)
    assert any("metrics.listenerAddr=:8080" in c for c in commands)


def test_the_script_stops_at_a_command_it_cannot_run(tmp_path: Path) -> None:
    """A command the page gains that cannot run here fails the walk, and the marker names it."""
    run = subprocess.run(
        ["bash", "-c", script(["true", "no-such-program --flag", "echo never"])],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.returncode != 0
    assert list(outputs_by_command(run.stdout)) == ["true", "no-such-program --flag"]


@pytest.mark.slow
@pytest.mark.timeout(PAGE_TIMEOUT + 150)
def test_the_quickstart_as_written_reaches_a_passing_verify_in_the_simulated_world(
    clone: Path,
) -> None:
    """Every command of the page, in order, in a fresh copy: the world's stand-ins play helm,
    docker and ``kubectl port-forward`` (named as such on the page), nothing is done by hand,
    and ``verify`` passes."""
    text = DOC.read_text(encoding="utf-8")
    # As written; where another program holds 8080, the page's own fallback.
    commands = doc_commands(text) if port_free(8080) else on_port(text, free_port())
    world_dir = clone / "out" / "quickstart-world"
    try:
        run = subprocess.run(
            ["bash", "-c", script(commands)],
            cwd=clone,
            env=newcomer_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=PAGE_TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(
            f"the page did not finish within {PAGE_TIMEOUT} s\n{exc.stdout}\n{exc.stderr}\n"
            f"{tail(world_dir / 'listener.log')}\n{tail(world_dir / 'world.log')}"
        ) from exc
    outputs = outputs_by_command(run.stdout)
    ran = list(outputs)
    assert run.returncode == 0, (
        f"the page's command failed (exit {run.returncode}): {ran[-1] if ran else '?'}\n"
        f"{run.stdout[-4000:]}\n{run.stderr[-4000:]}\n"
        f"{tail(world_dir / 'listener.log')}\n{tail(world_dir / 'world.log')}"
    )
    assert ran == commands, "the walk skipped a command of the page"
    verify = next(out for command, out in outputs.items() if " verify " in f" {command} ")
    assert re.search(r"^PASS: \d+ pass, 0 fail", verify, flags=re.M), verify
    assert not re.search(r"^FAIL ", verify, flags=re.M), verify
    # The listener the helm stand-in started read step 4's ConfigMap through its mount.
    applied = yaml.safe_load((clone / "config" / "capacity-aware-configmap.yaml").read_text())
    mounted = world_dir / "listener-pod" / "etc" / "capacity-aware" / "capacityAware.yaml"
    assert mounted.read_text() == applied["data"]["capacityAware.yaml"]
    listener_log = (world_dir / "listener.log").read_text(errors="replace")
    assert "capacity-aware: instance" in listener_log, tail(world_dir / "listener.log")
    status = next(out for command, out in outputs.items() if " status " in f" {command} ")
    assert "READY" in status, status
    assert (clone / "current-values.yaml").exists()
    assert (clone / "capacity-aware-overlay.yaml").exists()
