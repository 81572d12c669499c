"""The small command-line rough edges of issue 46: each bad input is one clear line (what,
where, what is allowed), a reader that stops early is not an error, and `--help` says what a
command does."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import listener.process.app
from listener.commands import rbac
from listener.commands.verify import cli as verify_cli
from listener.observability.http import StatusBoard
from listener.process.environment import ProcessEnv
from listener.process.startup import KubeCredentialsError, kubernetes_api_client
from simulator import cli as simulator_cli
from simulator.scenarios.scenario import shipped
from state_machine.store import NewPair, PairStore
from tuning import cli as tuning_cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def debug_pairs() -> Iterator[str]:
    """A listener's /debug/pairs on loopback, with more pairs than a pipe buffer holds."""
    store = PairStore("arc-runners")
    store.commit([NewPair(f"p{i:05d}-1", "desired") for i in range(3000)], at=1.0)
    board = StatusBoard("arc-runners")
    board.publish(records=store.records(), ledger=None, at=2.0)
    body = json.dumps(board.payload()).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_status_piped_into_head_ends_without_a_broken_pipe_traceback(debug_pairs: str) -> None:
    """`status | head` printed a BrokenPipeError traceback (and exited 120) once head had
    read its lines and closed the pipe."""
    status = subprocess.Popen(
        [sys.executable, "-m", "listener", "status", "--url", debug_pairs],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert status.stdout is not None and status.stderr is not None
    first = status.stdout.readline()
    status.stdout.close()  # what head does after its lines
    err = status.stderr.read().decode()
    assert status.wait(60) == 0, err
    assert first and err == "", err


def test_a_missing_listener_config_path_is_one_line_naming_the_variable_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """It said `$LISTENER_CONFIG_PATH: LISTENER_CONFIG_PATH: is not set`."""
    assert listener.process.app.run_from_environment(ProcessEnv.parse({})) == 1
    err = capsys.readouterr().err
    assert err == (
        "arc-capacity-listener: $LISTENER_CONFIG_PATH: is not set "
        "(ARC mounts the config at /etc/gha-listener/config.json)\n"
    )


@pytest.mark.parametrize("command", ["rbac", "verify"])
def test_a_kubeconfig_that_does_not_exist_is_one_line_naming_the_path(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """It said `Invalid kube-config file. No configuration found.` (the client's
    ConfigException), naming neither the variable nor the file."""
    env = {"KUBECONFIG": "/nonexistent", "HOME": "/nonexistent"}
    argv = ["--scale-set", "arc-runners", "--namespace", "arc-runners"]
    if command == "rbac":
        assert rbac.main([*argv, "--apply"], env=env) == 1
    else:
        assert verify_cli.main(argv, env=env) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"arc-capacity-listener {command}: no Kubernetes credentials: " in err
    assert "KUBECONFIG=/nonexistent: no such file" in err
    assert "ConfigException" not in err and "{" not in err


def test_run_stops_on_a_kubeconfig_that_is_not_one_with_the_path_and_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run` logs a FatalError as one `fatal: ...` line: it names the file, not a client
    class."""
    not_yaml_map = tmp_path / "kubeconfig"
    not_yaml_map.write_text("just a string\n", encoding="utf-8")
    with pytest.raises(
        KubeCredentialsError, match=re.escape(f"KUBECONFIG={not_yaml_map}: not a kubeconfig")
    ):
        kubernetes_api_client({"KUBECONFIG": str(not_yaml_map)})
    monkeypatch.setenv("HOME", str(tmp_path))  # the client expands ~ from the process's HOME
    with pytest.raises(KubeCredentialsError, match=re.escape("default kubeconfig ~/.kube/config")):
        kubernetes_api_client({})


def test_a_misspelled_shipped_scenario_lists_the_shipped_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tune --scenario stormy` said `.../stormy.yaml: cannot read the scenario: No such file
    or directory`, a path the user never typed, and not what the names are."""
    argv = ["--history", "sample-day", "--scenario", "stormy", "--out", str(tmp_path)]
    assert tuning_cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "scenario 'stormy': no such shipped scenario (did you mean 'storm'?)" in err
    for path in shipped():
        assert path.stem in err


def test_demo_help_says_what_the_command_does(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        simulator_cli.main(["demo", "--help"], prog="arc-capacity-listener")
    assert done.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Run every shipped scenario" in out and "stock ARC" in out


def test_tune_help_names_the_shipped_sample_history(capsys: pytest.CaptureFixture[str]) -> None:
    """A first-time user has no job history; the help did not say one ships."""
    with pytest.raises(SystemExit) as done:
        tuning_cli.main(["--help"])
    assert done.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--history sample-day" in out
    assert "ice-failover" in out  # a shipped scenario name, listed for --scenario
