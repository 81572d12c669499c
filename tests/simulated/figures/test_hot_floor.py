"""The hot-slot floor (simulator/measurement/hot_floor.py): the fastest a job on a hot slot can
start when the listener takes no time, from the hook's delay, the kubelet's start and the
hook's phase reads (actions/runner-container-hooks ``waitForPodPhases``: 0, 1, 3, 7, 15 ... s)."""

from __future__ import annotations

import random

import pytest

from simulator.measurement.hot_floor import (
    Uniform,
    UniformSum,
    hot_floor_cdf,
    hot_floor_quantile,
    read_weights,
)
from simulator.workload.hook import poll_schedule

READS = poll_schedule(600.0).reads


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        # a pod Running at 2.9 s is seen at the read at 3 s; at 3.1 s only at 7 s
        (Uniform(2.9, 2.9), [(3.0, 1.0)]),
        (Uniform(3.1, 3.1), [(7.0, 1.0)]),
        (Uniform(3.0, 3.0), [(3.0, 1.0)]),  # a read at the very instant sees Running
        (Uniform(2.0, 5.0), [(3.0, 1 / 3), (7.0, 2 / 3)]),  # the world's default draw
        (Uniform(0.0, 1.0), [(1.0, 1.0)]),
    ],
)
def test_the_job_sees_its_pod_at_the_first_read_at_or_after_it_runs(
    start: Uniform, expected: list[tuple[float, float]]
) -> None:
    got = read_weights(start, READS)
    assert [at for at, _ in got] == [at for at, _ in expected]
    assert [w for _, w in got] == pytest.approx([w for _, w in expected])


@pytest.mark.parametrize(
    ("hook", "start", "q", "expected"),
    [
        (Uniform(3.5, 3.5), Uniform(2.5, 2.5), 0.5, 6.5),  # fixed: 3.5 s + the read at 3 s
        (Uniform(3.5, 3.5), Uniform(3.5, 3.5), 0.5, 10.5),  # just missed it: the read at 7 s
        # the world's defaults (hook 2-5 s, pod start 2-5 s): 1/3 of jobs read at 3 s (all
        # done by 8 s), so the median sits among the 2/3 read at 7 s: 9 + 3 * (1/6) / (2/3)
        (Uniform(2.0, 5.0), Uniform(2.0, 5.0), 0.5, 9.75),
        (Uniform(2.0, 5.0), Uniform(2.0, 5.0), 1 / 3, 8.0),
    ],
)
def test_the_floor_quantile_is_exact(
    hook: Uniform, start: Uniform, q: float, expected: float
) -> None:
    assert hot_floor_quantile(q, hook, start) == pytest.approx(expected, abs=2e-3)


def test_the_floor_agrees_with_drawing_the_steps() -> None:
    """The exact distribution is what the world's draws give (a seeded sample, 1 % bands)."""
    rng = random.Random(7)
    hook, start = Uniform(2.0, 5.0), Uniform(2.0, 5.0)
    waits = []
    for _ in range(20_000):
        k = rng.uniform(start.low, start.high)
        waits.append(rng.uniform(hook.low, hook.high) + min(at for at in READS if at >= k))
    for x in (6.0, 8.0, 9.0, 9.75, 11.0):
        sampled = sum(w <= x for w in waits) / len(waits)
        assert sampled == pytest.approx(hot_floor_cdf(x, hook, start, READS), abs=0.01)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: Uniform(5.0, 2.0), "0 <= low <= high"),
        (lambda: Uniform(-1.0, 2.0), "0 <= low <= high"),
        (lambda: hot_floor_quantile(1.0, Uniform(1, 2), Uniform(1, 2)), "quantile must be"),
        (lambda: hot_floor_quantile(0.0, Uniform(1, 2), Uniform(1, 2)), "quantile must be"),
        # a pod that starts after the last read of a 10 s timeout (reads 0, 1, 3, 7) never runs
        (
            lambda: hot_floor_quantile(0.5, Uniform(1, 2), Uniform(8, 9), timeout=10.0),
            "after the hook's last read",
        ),
    ],
)
def test_bad_ranges_get_one_clear_error(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]


@pytest.mark.parametrize(
    ("x", "expected"),
    [(0.0, 0.0), (0.5, 0.125), (1.0, 0.5), (1.5, 0.875), (2.0, 1.0), (3.0, 1.0)],
)
def test_the_sum_of_two_uniform_delays_has_the_triangular_cdf(x: float, expected: float) -> None:
    assert UniformSum(Uniform(0.0, 1.0), Uniform(0.0, 1.0)).cdf(x) == pytest.approx(expected)


def test_a_fixed_part_of_a_sum_shifts_the_other() -> None:
    total = UniformSum(Uniform(0.5, 0.5), Uniform(1.0, 3.0))
    assert [total.cdf(x) for x in (1.5, 2.5, 3.5)] == pytest.approx([0.0, 0.5, 1.0])
    assert hot_floor_quantile(
        0.5, Uniform(3.5, 3.5), UniformSum(Uniform(0.5, 0.5), Uniform(2, 2))
    ) == (pytest.approx(6.5, abs=2e-3))


def test_the_floor_with_a_registry_round_trip_agrees_with_drawing_the_steps() -> None:
    """The world's defaults with the job image on the node: hook 2-5 s, then the ``Always``
    policy's round trip (0.3-1 s) and the start (1-3 s) before the hook's read."""
    rng = random.Random(11)
    hook, start = Uniform(2.0, 5.0), UniformSum(Uniform(0.3, 1.0), Uniform(1.0, 3.0))
    waits = []
    for _ in range(20_000):
        k = rng.uniform(0.3, 1.0) + rng.uniform(1.0, 3.0)
        waits.append(rng.uniform(hook.low, hook.high) + min(at for at in READS if at >= k))
    for x in (4.0, 6.0, 7.0, 9.0, 11.0):
        sampled = sum(w <= x for w in waits) / len(waits)
        assert sampled == pytest.approx(hot_floor_cdf(x, hook, start, READS), abs=0.01)
