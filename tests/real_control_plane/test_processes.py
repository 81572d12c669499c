"""The e2e harness's process handling (e2e/processes.py, e2e/build.py): one line naming what
failed, nothing left running, a second world refused."""

from __future__ import annotations

import shutil
import socket
import sys
from pathlib import Path

import pytest

from e2e import build as build_module
from e2e.components import Binary, Component
from e2e.processes import AlreadyRunning, ComponentError, Supervisor, exclusive, port_is_free


def test_a_second_world_is_refused_with_one_line_naming_the_holder(tmp_path: Path) -> None:
    lock = tmp_path / "e2e.lock"
    with exclusive(lock), pytest.raises(AlreadyRunning) as refused, exclusive(lock):
        pass
    assert "already running" in str(refused.value)
    assert str(lock) in str(refused.value)
    assert "\n" not in str(refused.value)


def test_stop_all_ends_children_and_frees_their_ports(tmp_path: Path) -> None:
    """A component that forks (a shell running a listener) is stopped with its whole group."""
    supervisor = Supervisor(tmp_path / "logs")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = (
        "import socket,time; s=socket.socket(); "
        f"s.bind(('127.0.0.1',{port})); s.listen(); time.sleep(60)"
    )
    process = supervisor.start(
        "forking", ["sh", "-c", f'{sys.executable} -c "{server}" & wait'], ports=(port,)
    )
    supervisor.wait_until(process, lambda: not port_is_free(port), timeout=20, what="listening")
    assert supervisor.stop_all() == []
    assert port_is_free(port)
    assert not process.alive()


def test_a_component_that_dies_before_ready_is_named_with_its_log(tmp_path: Path) -> None:
    supervisor = Supervisor(tmp_path / "logs")
    process = supervisor.start("broken", ["sh", "-c", "echo no such flag >&2; exit 3"])
    with pytest.raises(ComponentError) as failed:
        supervisor.wait_until(process, lambda: False, timeout=10, what="ready")
    message = str(failed.value)
    assert message.startswith("e2e: broken exited with 3 before ready")
    assert str(process.log) in message
    assert "no such flag" in process.log.read_text()
    supervisor.stop_all()


@pytest.mark.skipif(shutil.which("go") is None, reason="needs the Go toolchain")
def test_a_component_that_fails_to_build_is_named_with_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrapper = tmp_path / "upstream" / "nothing"
    wrapper.mkdir(parents=True)
    (wrapper / "go.mod").write_text("module arc-capacity.e2e/nothing\n\ngo 1.26.0\n")
    (wrapper / "go.sum").write_text("")
    broken = Component(
        name="nothing",
        module="example.invalid/nothing",
        version="v0.0.1",
        binaries=(Binary("nothing", "example.invalid/nothing/cmd/nothing"),),
    )
    monkeypatch.setattr(Component, "wrapper", property(lambda _c: wrapper))
    monkeypatch.setattr(build_module, "COMPONENTS", (broken,))
    monkeypatch.setenv("ARC_E2E_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GOFLAGS", "-mod=mod")
    monkeypatch.setenv("GOPROXY", "off")
    with pytest.raises(build_module.BuildError) as failed:
        build_module.build(say=lambda _line: None)
    message = str(failed.value)
    assert message.startswith("e2e build: nothing (example.invalid/nothing@v0.0.1) failed")
    assert str(tmp_path / "cache" / "logs" / "build-nothing.log") in message
    assert not (tmp_path / "cache" / "bin" / "nothing").exists()
