"""HUD demand: the queued_jobs_aggregate client against the loopback HUD face, and the
fail-open fallback (docs/design.md#demand-sources) logged once per outage."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from providers.actions.models import RunnerScaleSet
from providers.actions.redact import SecretRegistry
from providers.hud.client import (
    HudClient,
    HudDemandSource,
    HudError,
    HudQuery,
    parse_rows,
    scale_set_labels,
    token_from_env,
)
from reconciler.snapshot import Demand
from simulator.faces.hud import HudFace, queued_row
from tests.providers.actions.conftest import run

TOKEN = "hud-bot-token-0123456789"
LABELS = ("linux.2xlarge", "arc-runners")

ROWS = [
    queued_row("linux.2xlarge", 10, repo="pytorch"),
    queued_row("linux.2xlarge", 4, repo="vision"),  # same label, another repo: summed
    queued_row("arc-runners", 3),
    queued_row("linux.4xlarge", 50),  # not ours
]


@pytest.fixture
def hud() -> Iterator[HudFace]:
    with HudFace(ROWS, token=TOKEN) as face:
        yield face


def client(face: HudFace, *, token: str | None = TOKEN, timeout: float = 2.0) -> HudClient:
    return HudClient(
        face.url,
        token=SecretStr(token) if token else None,
        timeout=timeout,
        query=HudQuery(orgs=("pytorch",)),
        registry=SecretRegistry(),
    )


class Observer:
    def __init__(self) -> None:
        self.calls: list[str | None] = []

    def record_hud_request(self, duration: float, *, error_kind: str | None = None) -> None:
        assert duration >= 0
        self.calls.append(error_kind)


async def poll_times(source: HudDemandSource, times: int) -> list[Demand]:
    try:
        return [await source.poll() for _ in range(times)]
    finally:
        await source.client.aclose()


class TestQuery:
    def test_sums_rows_of_the_scale_set_labels(self, hud: HudFace) -> None:
        async def go() -> int:
            c = client(hud)
            try:
                return await c.queued_jobs(LABELS)
            finally:
                await c.aclose()

        assert run(go()) == 17

    def test_sends_the_token_and_the_parameters(self, hud: HudFace) -> None:
        source = HudDemandSource(client(hud), LABELS)
        run(poll_times(source, 1))
        (request,) = hud.requests
        assert request.token == "<redacted>" and request.status == 200
        assert request.parameters == {
            "queuedThresholdMinutes": 0,
            "maxAgeDays": 3,
            "orgs": ["pytorch"],
            "repo": "",
            "runnerLabels": list(LABELS),
        }

    def test_token_comes_from_the_environment(self) -> None:
        token = token_from_env("HUD_INTERNAL_BOT_TOKEN", {"HUD_INTERNAL_BOT_TOKEN": " abc123 "})
        assert token is not None and token.get_secret_value() == "abc123"
        assert token_from_env("HUD_INTERNAL_BOT_TOKEN", {}) is None

    def test_client_from_the_capacity_aware_settings(self, hud: HudFace) -> None:
        from reconciler.settings import HudSettings

        assert HudClient.from_settings(HudSettings(), env={}) is None  # no URL: no HUD
        settings = HudSettings(url=hud.url, token_env="MY_HUD_TOKEN", timeout=3)
        made = HudClient.from_settings(settings, env={"MY_HUD_TOKEN": TOKEN})
        assert made is not None and made.timeout == 3
        assert run(poll_times(HudDemandSource(made, LABELS), 1))[0].queued_jobs == 17
        assert hud.requests[0].token == "<redacted>"

    def test_a_missing_token_warning_names_the_environment_variable(
        self, hud: HudFace, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The warning named only the x-hud-internal-bot header, not the variable to set
        (capacityAware.hud.tokenEnv's value), so an operator could not tell what was missing."""
        from reconciler.settings import HudSettings

        caplog.set_level(logging.WARNING, logger="providers.hud.client")
        settings = HudSettings(url=hud.url, token_env="MY_HUD_TOKEN")
        assert HudClient.from_settings(settings, env={}) is not None
        (warning,) = [r.getMessage() for r in caplog.records if "no HUD token" in r.getMessage()]
        assert "$MY_HUD_TOKEN is unset or empty" in warning
        assert "capacityAware.hud.tokenEnv" in warning

    def test_labels_are_discovered_from_the_scale_set(self) -> None:
        scale_set = RunnerScaleSet.model_validate(
            {"name": "arc-runners", "labels": [{"name": "linux.2xlarge"}, {"name": "gpu"}]}
        )
        assert scale_set_labels(scale_set) == ("linux.2xlarge", "gpu")
        assert scale_set_labels(RunnerScaleSet(name="arc-runners")) == ("arc-runners",)

    def test_clickhouse_quoted_counts_are_integers(self) -> None:
        rows = parse_rows(b'[{"runner_label": "a", "num_queued_jobs": "12"}]')
        assert rows[0].num_queued_jobs == 12


class TestFallback:
    """Every failure is reported as ``queued_jobs=None`` (the reconciler's floor), never 0."""

    @pytest.mark.parametrize(
        ("break_it", "kind", "message"),
        [
            (lambda f: f.outage(503), "http", "HTTP 503"),
            (lambda f: f.outage(500), "http", "HTTP 500"),
            (lambda f: f.malformed("not-json"), "decode", "not JSON"),
            (lambda f: f.malformed("not-a-list"), "decode", "expected a JSON array"),
            (lambda f: f.malformed("wrong-types"), "decode", "num_queued_jobs"),
            (lambda f: f.absurd(-1), "decode", "outside 0..1000000"),
            (lambda f: f.absurd(10**7), "decode", "outside 0..1000000"),
        ],
    )
    def test_failure(self, hud: HudFace, break_it, kind: str, message: str) -> None:  # type: ignore[no-untyped-def]
        break_it(hud)
        observer = Observer()
        (demand,) = run(poll_times(HudDemandSource(client(hud), LABELS, observer=observer), 1))
        assert demand.queued_jobs is None
        assert demand.error is not None and message in demand.error
        assert observer.calls == [kind]

    def test_a_slow_hud_times_out(self, hud: HudFace) -> None:
        hud.slow(1.0)
        observer = Observer()
        source = HudDemandSource(client(hud, timeout=0.1), LABELS, observer=observer)
        (demand,) = run(poll_times(source, 1))
        assert demand.queued_jobs is None and "no answer within 0.1 s" in (demand.error or "")
        assert observer.calls == ["timeout"]

    def test_a_wrong_token_is_refused_and_falls_back(self, hud: HudFace) -> None:
        (demand,) = run(poll_times(HudDemandSource(client(hud, token="nope-nope"), LABELS), 1))
        assert demand.queued_jobs is None and "HTTP 401" in (demand.error or "")
        assert hud.requests[0].token == "<wrong>"

    def test_nothing_listening_is_a_connect_failure(self) -> None:
        with HudFace(ROWS) as face:
            url = face.url
        source = HudDemandSource(
            HudClient(url, token=None, timeout=1, registry=SecretRegistry()), LABELS
        )
        (demand,) = run(poll_times(source, 1))
        assert demand.queued_jobs is None and "connect error" in (demand.error or "")

    def test_an_absurd_total_is_refused(self) -> None:
        rows = parse_rows(
            b'[{"runner_label": "a", "num_queued_jobs": 900000},'
            b' {"runner_label": "a", "num_queued_jobs": 900000}]'
        )
        from providers.hud.client import sum_for_labels

        with pytest.raises(HudError, match="not plausible"):
            sum_for_labels(rows, ["a"])

    @pytest.mark.parametrize(
        ("labels", "expected"),
        [
            (["arc-gpu"], 3),  # a one-label scale set: its row only
            (["arc-gpu", "linux.g5", "gpu"], 3 + 5 + 7),  # multi-label (ARC 0.14 #4408)
            (["ARC-GPU", "Linux.G5"], 3 + 5),  # runs-on labels are case-insensitive
            (["arc-gpu", "arc-gpu"], 3),  # a label given twice counts once
            (["arc-gpu", "self-hosted"], 3),  # the generic label says nothing
            (["nothing-queued"], 0),
        ],
    )
    def test_a_scale_set_counts_the_rows_of_every_one_of_its_labels(
        self, labels: list[str], expected: int
    ) -> None:
        from providers.hud.client import sum_for_labels

        rows = parse_rows(
            json.dumps(
                [
                    {"runner_label": label, "num_queued_jobs": n}
                    for label, n in (
                        ("arc-gpu", 3),
                        ("linux.g5", 5),
                        ("gpu", 7),
                        ("self-hosted", 100),
                        ("other", 40),
                    )
                ]
            ).encode()
        )
        assert sum_for_labels(rows, labels) == expected


class TestOutageLogging:
    def test_an_outage_is_logged_once_when_it_starts_and_once_when_it_ends(
        self, hud: HudFace, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.DEBUG, logger="providers.hud.client")
        source = HudDemandSource(client(hud), LABELS)

        async def story() -> list[Demand]:
            seen = [await source.poll()]
            hud.outage(503)
            seen += [await source.poll() for _ in range(4)]
            hud.healthy()
            seen.append(await source.poll())
            hud.malformed("not-json")
            seen += [await source.poll() for _ in range(2)]
            await source.client.aclose()
            return seen

        demands = run(story())
        assert [d.queued_jobs for d in demands] == [17, None, None, None, None, 17, None, None]
        records = [r for r in caplog.records if r.name == "providers.hud.client"]
        warnings = [r.getMessage() for r in records if r.levelno == logging.WARNING]
        infos = [r.getMessage() for r in records if r.levelno == logging.INFO]
        assert len(warnings) == 2  # one per outage, not one per poll
        assert "HTTP 503" in warnings[0] and "not JSON" in warnings[1]
        assert infos == [
            "HUD demand is back after 4 failed poll(s): 17 queued jobs for "
            "['linux.2xlarge', 'arc-runners']"
        ]
        assert TOKEN not in caplog.text

    def test_run_polls_until_stopped(self, hud: HudFace) -> None:
        import asyncio

        class Stopper(Observer):
            def __init__(self, stop: asyncio.Event) -> None:
                super().__init__()
                self.stop = stop

            def record_hud_request(self, duration: float, *, error_kind: str | None = None):  # type: ignore[no-untyped-def]
                super().record_hud_request(duration, error_kind=error_kind)
                if len(self.calls) == 3:
                    self.stop.set()

        async def story() -> int:
            stop = asyncio.Event()
            source = HudDemandSource(client(hud), LABELS, observer=Stopper(stop))
            await source.run(stop, interval=0.01)
            await source.client.aclose()
            return len(hud.requests)

        assert run(story()) == 3

    def test_before_the_first_poll_the_demand_is_unknown(self, hud: HudFace) -> None:
        source = HudDemandSource(client(hud), LABELS)
        assert source.current.queued_jobs is None
        run(source.client.aclose())

    def test_a_scale_set_without_labels_is_refused(self, hud: HudFace) -> None:
        with pytest.raises(ValueError, match="no labels"):
            HudDemandSource(client(hud), ())


def test_an_unexpected_error_in_the_hud_poller_is_an_outage_and_polling_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A bug or an unexpected library error in a poll falls back like an outage, is
    counted, logged once with its traceback, and the next poll goes on. Prevents issue 10's
    failure 3: such an error ended the poller silently, with demand frozen."""

    class Broken:
        calls = 0

        async def queued_jobs(self, labels: object) -> int:
            Broken.calls += 1
            if Broken.calls <= 2:
                raise KeyError("surprise")
            return 4

        async def aclose(self) -> None:
            pass

    observer = Observer()
    source = HudDemandSource(Broken(), LABELS, observer=observer)  # type: ignore[arg-type]
    caplog.set_level(logging.WARNING, logger="providers.hud.client")
    demands = run(poll_times(source, 3))
    assert [d.queued_jobs for d in demands] == [None, None, 4]
    assert "KeyError" in (demands[0].error or "")
    assert observer.calls == ["internal", "internal", None]
    tracebacks = [r for r in caplog.records if r.exc_info]
    assert len(tracebacks) == 1


def test_a_changed_hud_answer_wakes_the_reconciler_and_a_repeat_does_not(hud: HudFace) -> None:
    """Without the wake a new HUD answer waited for the periodic reconcile (30 s) in production
    while the simulated driver reacted at once: the world measured a faster listener."""
    wakes: list[int] = []
    source = HudDemandSource(client(hud), LABELS, on_change=lambda: wakes.append(1))
    demands = run(poll_times(source, 2))
    assert [d.queued_jobs for d in demands] == [17, 17]
    assert wakes == [1]  # "not polled yet" -> 17 is a change; 17 -> 17 is not
