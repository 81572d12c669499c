"""Start, watch and stop the world's processes, and refuse a second world while one runs.

Each process gets its own log file and its own process group, so stopping it also stops
anything it forked. :class:`Supervisor` stops everything it started, in reverse order, on
success, failure and Ctrl-C (SIGTERM, then SIGKILL after a grace period), and its ports are
free again when :meth:`Supervisor.stop_all` returns.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO


class ComponentError(RuntimeError):
    """A component failed to start or died; the message names it and its log."""

    def __init__(self, name: str, log: Path, why: str) -> None:
        super().__init__(f"e2e: {name} {why}; log: {log}")
        self.name = name
        self.log = log


class AlreadyRunning(RuntimeError):
    """Another e2e world holds the lock."""


def free_port() -> int:
    """A loopback TCP port nobody listens on now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@contextlib.contextmanager
def exclusive(lock_path: Path) -> Iterator[None]:
    """Hold a machine-wide lock for one world; a second holder gets :class:`AlreadyRunning`."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise AlreadyRunning(
                f"e2e: a world is already running ({holder}); wait for it or stop it "
                f"(lock {lock_path})"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} since {time.strftime('%H:%M:%S')}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    sink: IO[bytes]
    ports: tuple[int, ...]

    def alive(self) -> bool:
        return self.popen.poll() is None


class Supervisor:
    """Owns every process of one world."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        log_dir.mkdir(parents=True, exist_ok=True)
        self._processes: list[Process] = []
        self._ports: list[int] = []

    def start(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        ports: Sequence[int] = (),
    ) -> Process:
        log = self.log_dir / f"{name}.log"
        sink = log.open("ab")
        sink.write(f"$ {' '.join(argv)}\n".encode())
        sink.flush()
        try:
            popen = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as err:
            sink.close()
            raise ComponentError(name, log, f"did not start ({err})") from err
        process = Process(name, popen, log, sink, tuple(ports))
        self._ports.extend(ports)
        self._processes.append(process)
        return process

    def log_of(self, name: str) -> Path:
        """A process's log file, also once it has been stopped."""
        return self.log_dir / f"{name}.log"

    def get(self, name: str) -> Process:
        for process in self._processes:
            if process.name == name:
                return process
        raise KeyError(name)

    def wait_until(
        self, process: Process, ready: Callable[[], bool], *, timeout: float, what: str
    ) -> None:
        """Poll ``ready`` until true; fail naming the process if it dies or time runs out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not process.alive():
                raise ComponentError(
                    process.name,
                    process.log,
                    f"exited with {process.popen.returncode} before {what}",
                )
            with contextlib.suppress(Exception):
                if ready():
                    return
            time.sleep(0.25)
        raise ComponentError(process.name, process.log, f"not {what} within {timeout:.0f} s")

    def check_alive(self, skip: Callable[[Process], bool] = lambda _p: False) -> None:
        """Raise for the first process that died, but those ``skip`` says someone else owns."""
        for process in list(self._processes):
            if not process.alive() and not skip(process):
                raise ComponentError(
                    process.name, process.log, f"exited with {process.popen.returncode}"
                )

    def stop(self, process: Process, grace: float = 10.0) -> int | None:
        """SIGTERM the process group, SIGKILL after ``grace``; returns the exit code."""
        if process.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.popen.pid, signal.SIGTERM)
            try:
                process.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.popen.pid, signal.SIGKILL)
                process.popen.wait(timeout=10)
        # Children of a process that already exited may still hold ports.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.popen.pid, signal.SIGKILL)
        process.sink.close()
        if process in self._processes:
            self._processes.remove(process)
        return process.popen.returncode

    def stop_all(self) -> list[int]:
        """Stop every process, newest first; returns the ports still bound ten seconds
        later (empty when the world released everything)."""
        for process in reversed(list(self._processes)):
            self.stop(process)
        deadline = time.monotonic() + 10
        busy = [p for p in self._ports if not port_is_free(p)]
        while busy and time.monotonic() < deadline:
            time.sleep(0.2)
            busy = [p for p in busy if not port_is_free(p)]
        return busy

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()
