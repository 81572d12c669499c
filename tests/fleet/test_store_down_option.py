"""bench/fleet_duplication.py ``--store-down`` / ``--window`` (and its scenario and strategy
lists): bad input is one clear error naming the option and the allowed form, before anything
runs."""

from __future__ import annotations

import pytest

from bench.fleet_duplication import hours_window, main


@pytest.mark.parametrize(
    ("text", "hours"),
    [("12-13", (12.0, 13.0)), (" 9.5 - 10 ", (9.5, 10.0)), ("0-24", (0.0, 24.0))],
)
def test_a_window_is_start_end_in_hours(text: str, hours: tuple[float, float]) -> None:
    assert hours_window(text) == hours


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--store-down", "13-12"], "argument --store-down: expected START-END in hours"),
        (["--store-down", "12-12"], "START < END, e.g. 12-13 (got '12-12')"),
        (["--store-down", "12"], "argument --store-down: expected START-END"),
        (["--store-down", "-1-2"], "argument --store-down: expected"),
        (["--store-down", "noon-1pm"], "(got 'noon-1pm')"),
        (["--window", "a-b"], "argument --window: expected START-END in hours"),
        (["--window", "1-2", "--store-down", "1-2"], "not allowed with argument"),
        (
            ["--scenarios", "drain", "--store-down", "3-5"],
            "--store-down 3-5: scenario drain lasts 4 h; the window must end by then",
        ),
        (["--scenarios", "drain", "--window", "3-4.5"], "--window 3-4.5: scenario drain lasts"),
        # The scenario and strategy lists (bench.scenarios.chosen, shared with that bench).
        (
            ["--scenarios", "drain,storm"],
            "--scenarios: unknown multi-cluster scenario(s) storm; choose from",
        ),
        (["--strategies", "baseline,fast"], "--strategies: unknown strategy(s) fast; choose from"),
    ],
)
def test_a_bad_window_is_refused_naming_the_option(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
