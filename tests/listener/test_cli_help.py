"""Every subcommand's ``--help`` names the command a user typed (issue 32: ``simulate --help``
printed ``usage: simulate simulate``)."""

from __future__ import annotations

import pytest

from listener.__main__ import main

COMMANDS = ["run", "status", "rbac", "values", "verify", "simulate", "demo", "tune"]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_names_the_subcommand(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: arc-capacity-listener {command} ")
