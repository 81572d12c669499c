"""The ``github`` demand source against a loopback fake of GitHub's REST API: queued jobs
whose labels match the scale set, ETags, the rate-limit reserve, and the App token."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pydantic import SecretStr

from providers.actions.auth import AppAuth, PatAuth
from providers.demand import FailureMode
from providers.demand.github_rest import (
    GitHubQueuedJobs,
    count_queued,
    job_matches,
    token_provider,
)
from providers.demand.polling import PolledDemand
from reconciler.clock import ManualClock
from tests.providers.actions.conftest import run
from tests.providers.demand.github_fake import GitHubFake, job
from tests.providers.demand.loopback import LoopbackServer

REPO = "octo/app"
LABELS = ("arc-runners",)


@pytest.fixture
def fake() -> GitHubFake:
    return GitHubFake(
        runs={
            REPO: {
                1: (
                    "queued",
                    [job(11, "queued", "arc-runners"), job(12, "queued", "ubuntu-latest")],
                ),
                2: (
                    "in_progress",
                    [
                        job(21, "in_progress", "arc-runners"),
                        job(22, "queued", "self-hosted", "arc-runners"),
                    ],
                ),
                3: ("completed", [job(31, "queued", "arc-runners")]),  # not a listed status
            }
        }
    )


@pytest.fixture
def server(fake: GitHubFake) -> Iterator[LoopbackServer]:
    with LoopbackServer(fake) as srv:
        yield srv


def source(
    server: LoopbackServer, fake: GitHubFake, http: httpx.AsyncClient, **kwargs: object
) -> GitHubQueuedJobs:
    return GitHubQueuedJobs(
        server.url,
        [REPO],
        LABELS,
        token_provider(PatAuth(SecretStr(fake.token)), server.url, http),
        http=http,
        **kwargs,  # type: ignore[arg-type]
    )


def test_label_matching_follows_runs_on_routing() -> None:
    assert job_matches(["arc-runners"], ["arc-runners"])
    assert job_matches(["self-hosted", "ARC-Runners"], ["arc-runners"])
    assert not job_matches(["self-hosted"], ["arc-runners"])
    assert not job_matches(["arc-runners", "gpu"], ["arc-runners"])
    # A multi-label scale set (ARC 0.14 #4408) takes a job whose labels are all among its own.
    multi = ["arc-gpu", "linux", "gpu"]
    assert job_matches(["self-hosted", "linux", "GPU"], multi)
    assert job_matches(["arc-gpu"], multi)
    assert not job_matches(["linux", "gpu", "big-disk"], multi)
    assert (
        count_queued([job(1, "queued", "arc-runners"), job(2, "completed", "arc-runners")], LABELS)
        == 1
    )


def test_counts_queued_jobs_of_queued_and_in_progress_runs_that_match(
    server: LoopbackServer, fake: GitHubFake
) -> None:
    async def go() -> int:
        async with httpx.AsyncClient() as http:
            return await source(server, fake, http)()

    assert run(go()) == 2  # job 11 and job 22; 12 is another label, 31 is in a completed run


def test_second_poll_is_answered_by_304s_that_do_not_spend_the_rate_limit(
    server: LoopbackServer, fake: GitHubFake
) -> None:
    async def go() -> tuple[int, int, GitHubQueuedJobs]:
        async with httpx.AsyncClient() as http:
            fetch = source(server, fake, http)
            first = await fetch()
            spent = 5000 - fake.remaining
            second = await fetch()
            return first + second, spent, fetch

    total, spent_first, fetch = run(go())
    assert total == 4
    assert spent_first == 4  # two run lists + two job lists
    assert fetch.not_modified == 4
    assert fake.remaining == 5000 - 4
    conditional = [r for r in server.requests if "if-none-match" in r.headers]
    assert len(conditional) == 4


def test_below_the_reserve_it_stops_calling_and_fails_open_to_the_floor(
    server: LoopbackServer, fake: GitHubFake
) -> None:
    fake.remaining = 120

    async def go() -> list[int | None]:
        async with httpx.AsyncClient() as http:
            polled = PolledDemand("github", source(server, fake, http, rate_limit_reserve=100))
            first = (await polled.poll()).queued_jobs
            fake.remaining = 50  # someone else spent the budget meanwhile
            fake.runs[REPO][4] = ("queued", [job(41, "queued", "arc-runners")])  # new content
            second = (await polled.poll()).queued_jobs  # sees remaining 50 after this poll...
            calls = len(server.requests)
            third = await polled.poll()  # ...and makes no call now
            assert len(server.requests) == calls
            assert third.error is not None and "reserve of 100" in third.error
            assert polled.failure_mode is FailureMode.OPEN_TO_FLOOR
            return [first, second, third.queued_jobs]

    assert run(go()) == [2, 3, None]


def test_a_secondary_rate_limit_pauses_it_for_retry_after(
    server: LoopbackServer, fake: GitHubFake
) -> None:
    fake.secondary_limit_retry_after = 60
    clock = ManualClock(1000.0)

    async def go() -> tuple[str | None, int, str | None]:
        async with httpx.AsyncClient() as http:
            polled = PolledDemand("github", source(server, fake, http, clock=clock))
            first = (await polled.poll()).error
            calls = len(server.requests)
            clock.advance(59)
            paused = (await polled.poll()).error
            assert len(server.requests) == calls  # 1 s before Retry-After ends: no call
            fake.secondary_limit_retry_after = None
            clock.advance(2)  # 1 s after it ends
            await polled.poll()
            return first, len(server.requests) - calls, paused

    first, calls_after, paused = run(go())
    assert first is not None and "rate limit (HTTP 403)" in first
    assert paused is not None and "paused" in paused
    assert calls_after == 4


def test_bad_credentials_are_a_failure_not_zero(server: LoopbackServer, fake: GitHubFake) -> None:
    async def go() -> tuple[int | None, str | None]:
        async with httpx.AsyncClient() as http:
            fetch = GitHubQueuedJobs(
                server.url,
                [REPO],
                LABELS,
                token_provider(PatAuth(SecretStr("ghp_" + "w" * 36)), server.url, http),
                http=http,
            )
            demand = await PolledDemand("github", fetch).poll()
            return demand.queued_jobs, demand.error

    queued, error = run(go())
    assert queued is None
    assert (
        error
        == f"GitHub API answered HTTP 401 for /repos/{REPO}/actions/runs?status=queued&per_page=100"
    )


def test_github_app_credentials_mint_one_installation_token_and_reuse_it(
    server: LoopbackServer, fake: GitHubFake
) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    auth = AppAuth(app_id="123", installation_id=42, private_key=SecretStr(pem))

    async def go() -> list[int]:
        async with httpx.AsyncClient() as http:
            fetch = GitHubQueuedJobs(
                server.url, [REPO], LABELS, token_provider(auth, server.url, http), http=http
            )
            return [await fetch(), await fetch()]

    assert run(go()) == [2, 2]
    assert fake.minted == 1
    minted = [r for r in server.requests if r.method == "POST"]
    assert minted[0].path == "/app/installations/42/access_tokens"
    assert minted[0].headers["authorization"].startswith("Bearer eyJ")


def test_an_org_config_without_repositories_is_refused_with_what_to_set() -> None:
    with pytest.raises(ValueError, match=r"demand\.github\.repositories"):
        GitHubQueuedJobs(
            "http://127.0.0.1:1",
            [],
            LABELS,
            token_provider(PatAuth(SecretStr("t")), "", httpx.AsyncClient()),
            http=httpx.AsyncClient(),
        )
