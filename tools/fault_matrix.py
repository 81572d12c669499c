"""Run every fault case and the chaos day, and write docs/reliability.md from what happened.

    python -m tools.fault_matrix           # regenerate docs/reliability.md
    python -m tools.fault_matrix --check   # exit 1 if the file is not what the cases produce

The cases live in ``tests/reliability/cases.py`` (real clients against the loopback faces
with injected faults) and ``tests/reliability/cases_world.py`` (the simulated world in virtual
time, the restart harness, the chaos day). ``tests/reliability/test_fault_matrix.py`` runs the
same cases in the test suite and asserts the committed file equals :func:`render` of their
outcomes, so the table can never drift from the behaviour.

A case whose expectation does not hold is either a known gap (:data:`KNOWN_GAPS`: rendered as
GAP with where to fix it; the test is a strict xfail) or a failure (rendered FAILED, and the
test fails).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.reliability.cases import Outcome
    from tests.reliability.cases_world import ChaosResult

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "reliability.md"


@dataclass(frozen=True)
class Gap:
    fix_at: str
    why: str


#: Cases whose expectation is the product's promise and is NOT met today (owners to fix).
KNOWN_GAPS: dict[str, Gap] = {
    # Both gaps this page first found are closed: `actions_401_admin` (the client drops a
    # refused admin token and retries once) and `stale_cache_outage` (fail closed while the
    # watches are down). A new gap goes here with where to fix it; its case becomes a strict
    # xfail that fails loudly once fixed.
}

BAD_DAY_FIGURES = (
    "| Bad day | Figure | Target | Command, commit |\n"
    "|---|---|---|---|\n"
    "| SIGTERM, every Kubernetes call hangs (Lease 15 s) | exit 0 after 1.47 s (exit "
    "deadline not needed) | exit 0 within 5 s (before: 49 s) | "
    "`bench/bad_days.py --only exit`, e9af86e |\n"
    "| SIGTERM, 429 `Retry-After: 120` (Lease 15 s) | exit 0 after 2.27 s (exit deadline "
    "not needed) | exit 0 within 5 s | `bench/bad_days.py --only exit`, e9af86e |\n"
    "| Kubernetes API unreachable 60 s | the process exits 1 10.8 s in (Lease lost at the 10 s "
    "renew deadline); GetMessage every poll window while up (longest gap 2.00 s), header 0 "
    "throughout; 0 writes after the renew deadline; header > 0 again 13.4 s after the API "
    "returned (a successor started at the exit, as ARC recreates the pod) | header back "
    "within Lease duration + 5 s = 20 s (before: the exit took 46 s more) | "
    "`bench/bad_days.py --only outage`, 77f636a |\n"
    "| watch streams cut every 8 s for 1 min, then whole | header back at its value (2) "
    "1.06 s after the last cut; 0 % of the 30 polls during the cuts at 0; 4 placeholder "
    "creates (2 pairs, none twice), 0 deletes | within 3 s (before: 36.7 s, 83 % at 0) | "
    "`bench/bad_days.py --only cuts`, 8dae359 |"
)

#: Issue 34's bad days: what failed, what fixed it, the regression tests, and the figures
#: measured by bench/bad_days.py (command and commit given with them).
BAD_DAYS = [
    "",
    "## Bad days (issue 34), as regression tests",
    "",
    "Real `python -m listener run` processes whose Kubernetes API goes through the fault proxy "
    "(the `k8s ...` and `actions 503 on the session delete` rows of the fault matrix; "
    "`tests/reliability/test_bad_days.py` runs the same scenarios under behaviour names).",
    "",
    "| Failure | Fixed by | Regression test |",
    "|---|---|---|",
    "| SIGTERM with the API unreachable or throttled (429 `Retry-After: 120`) exited after "
    "49 s | the scaler's writes run on a daemon lane and wait on a stop token "
    "(providers/kubernetes/write/lane.py); worker threads are daemons "
    "(listener/process/daemon_executor.py); "
    "shutdown steps bounded; an exit deadline (4.5 s) as the last resort | "
    "`test_sigterm_exits_0_within_5s_whatever_the_kubernetes_api_does`, "
    "`tests/listener/test_kube_writer.py::test_a_stop_ends_a_write_waiting_out_retry_after_120` |",
    "| a process that had lost its Lease landed an old scale patch when the API returned | "
    "every write fenced on the Lease (`fenced_timeout`: sent only while renewable, with a "
    "timeout ending before a successor could hold it); Lease loss exits 1 | "
    "`test_a_process_that_lost_its_lease_sends_no_write_when_the_api_returns`, "
    "`tests/listener/test_kube_writer.py::TestLeaseFence` |",
    "| no GetMessage while a Kubernetes write retried | the handler runs beside the long "
    "poll; a write stuck over 2 s closes the gate (0) and polling goes on | "
    "`test_get_message_goes_on_at_0_while_a_scale_write_is_stuck` |",
    "| a cut watch backed off more each time (36.7 s at 0 after the last cut) | client-go's "
    "reflector rules (providers/kubernetes/watch/backoff.py, docs/semantics.md) | "
    "`tests/providers/kubernetes/watch/test_backoff.py` |",
    "| a session left behind met the next process with 409 until it expired | the Lease "
    "carries the session id; the next holder deletes it on its first 409 | "
    "`test_a_session_the_last_listener_could_not_delete_is_deleted_by_the_next`, "
    "`tests/providers/kubernetes/lease/test_election.py::"
    "test_the_next_holder_inherits_the_session_the_last_one_noted` |",
    "| a crash between the ack and the JobStarted patch lost the patch (0.15: runner left "
    "Pending) | ack after the message's effects, idempotent handlers | "
    "`actions_crash_before_patch` above, `tests/listener/test_loop.py::TestOrderOfOperations` |",
    "",
    "Measured with `.venv/bin/python bench/bad_days.py` (listener defaults; the world's short "
    "reconcile interval, 2 s; Lease 15 s for exit and outage, 4 s for the cuts):",
    "",
    BAD_DAY_FIGURES,
]

FINDINGS = (
    (
        "listener/process/app.py `ListenerApp.run` (fixed, issue 10)",
        "the capacity-aware side used to start before the message session was opened, so a "
        "second listener pod ran a reconciler against the owner's pairs. Now a Lease elects "
        "one owner and the session is opened before the capacity side starts. The simulated "
        "world's `second_listener` fault above still models the old behaviour (a reconciler "
        "without a session) to show the ledger stays honest even then.",
    ),
    (
        "placeholderTtl (lease)",
        "the lease is read only by a listener: a listener gone for good leaves its "
        "placeholders until the next instance's first step (or the ERS owner reference's "
        "garbage collection when the scale set is deleted, or activeDeadlineSeconds). While "
        "the API refuses writes for longer than placeholderTtl/2, leases expire; nobody can "
        "delete the pods either (`k8s_5xx (writes, > TTL)` above).",
    ),
    (
        "fixed while this page was written",
        "the ledger advertised for one step the pairs that same step was deleting (now "
        "discounted: c0bf1e3; the restart test asserts it after every step), and workflow "
        "pods (20) preempted running jobs' runner pods (0) when the cluster was full (now "
        "arc-runner sits at 20 too: cbb21d3; the chaos table counts such preemptions). The "
        "two gaps this page first listed are closed too: an admin token refused before its "
        "`exp` is dropped and the call retried once with a fresh chain (`actions_401 (admin + "
        "queue)`), and while the watches are down for more than one interval the listener "
        "advertises 0 and takes no decisions (`k8s watches down 3 min + node_loss`; a lower "
        "header never revokes assigned jobs).",
    ),
)


_P = "tests/reliability/test_production_failures.py::"
#: Issue 10's numbered failures: what went wrong, what fixed it, which test keeps it fixed.
ISSUE_10 = (
    (
        "1",
        "two listeners for one scale set: the newcomer adopted and deleted the owner's "
        "placeholders; every shutdown deleted all of them",
        "session before the capacity side; `coordination.k8s.io/v1` Lease election "
        "(providers/kubernetes/lease/election.py); shutdown deletes only this instance's pods",
        f"`{_P}test_two_listeners_for_one_scale_set_the_second_waits_and_never_touches_the_"
        f"owners_pods`, `...the_second_takes_over_when_the_owner_is_killed_without_releasing`, "
        f"`tests/providers/kubernetes/lease/test_election.py`, `bench/rollout.py`",
    ),
    (
        "2",
        "poison messages wedged the scale set (nulls, zone-less zero time, unknown outer "
        "type, missing statistics, deep nesting)",
        "Go-like decoding (null = zero value, zone-less time = UTC); a message still not "
        "understood is logged with its id, counted, acked and skipped",
        f"`{_P}test_poison_messages_are_skipped_and_jobs_keep_flowing`, `actions_poison` above, "
        "`tests/providers/actions/test_hardening.py`",
    ),
    (
        "3",
        "background tasks died silently (HUD poller; informer on a malformed watch line "
        "while the cache still looked fresh)",
        "every background task supervised (logged once, counted, restarted with backoff); "
        "informer crashes and dead threads make the cache stale (fail closed, not ready)",
        "`tests/providers/actions/test_hud_client.py::test_an_unexpected_error_in_the_hud_poller_is_an_"
        "outage_and_polling_goes_on`, "
        "`tests/providers/kubernetes/watch/test_cache.py::test_a_malformed_watch_"
        "line_is_counted_and_every_informer_keeps_applying_events`, "
        "`...::test_a_dead_informer_thread_makes_the_cache_stale`, "
        "`tests/listener/test_supervise.py`",
    ),
    (
        "4",
        "bad credentials still created placeholders",
        "the session is opened (credentials proven) before the capacity side starts",
        f"`{_P}test_bad_credentials_stop_the_listener_before_it_writes_a_placeholder`",
    ),
    (
        "5",
        "SIGTERM ignored while waiting for the first cache sync; a backward wall-clock "
        "jump stalled the periodic reconcile",
        "every start-up phase races the stop signal; the reconcile schedule runs on the "
        "monotonic clock",
        f"`{_P}test_sigterm_ends_the_listener_while_waiting_for_the_first_cache_sync`, "
        f"`{_P}test_sigterm_is_honoured_while_waiting_for_the_lease`",
    ),
    (
        "6",
        "unbounded network reads (no total deadline on the long poll, no size cap)",
        "a total deadline per attempt (Go's `http.Client.Timeout`) and an 8 MiB cap on every "
        "Actions response body",
        "`tests/providers/actions/test_hardening.py::test_a_slow_drip_answer_is_cut_at_the_total_"
        "deadline`, `...::test_an_answer_one_byte_over_the_cap_is_refused_without_retry`",
    ),
    (
        "7",
        "config input: YAML alias bomb, deep nesting, a token echoed under a wrong key, "
        '`enabled: "yes"`, `proactiveCapacity: true`, `image: ""`, credentials in '
        "`configure_url`",
        "aliases refused, depth and size capped (one line), unknown keys never echo values, "
        "strict booleans and integers, non-empty image, userinfo in URLs refused",
        "`tests/listener/test_config_hardening.py`, "
        "`tests/providers/actions/test_config_url.py::test_"
        "credentials_in_the_configure_url_are_refused_without_echoing_them`",
    ),
)


def _regressions() -> list[dict[str, object]]:
    from tests.fuzz.support import load_regressions

    return load_regressions()


def _cases() -> dict[str, Callable[[], Outcome]]:
    from tests.reliability.cases import HTTP_CASES
    from tests.reliability.cases_at_least_once import AT_LEAST_ONCE_CASES
    from tests.reliability.cases_bad_days import BAD_DAY_CASES
    from tests.reliability.cases_world import WORLD_CASES

    return {**HTTP_CASES, **AT_LEAST_ONCE_CASES, **BAD_DAY_CASES, **WORLD_CASES}


def run_cases(only: set[str] | None = None) -> dict[str, Outcome]:
    """Every case's Outcome, by case name (in table order)."""
    return {name: run() for name, run in _cases().items() if only is None or name in only}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def verdict(name: str, outcome: Outcome) -> str:
    held = outcome.held
    if held:
        return "held"
    if name in KNOWN_GAPS:
        return "**GAP**"
    return "**FAILED**"


def render(outcomes: Mapping[str, Outcome], chaos: Mapping[int, ChaosResult]) -> str:
    from simulator.faults import KIND_INFO
    from simulator.measurement.invariants import describe
    from tests.fuzz.support import KNOWN_OPEN

    lines = [
        "# Reliability: faults, outcomes, invariants",
        "",
        "<!-- Generated by `python -m tools.fault_matrix` from the fault cases in",
        "tests/reliability/; tests/reliability/test_fault_matrix.py fails when this file is",
        "not what the cases produce. Do not edit by hand. -->",
        "",
        "The listener sits between GitHub and a production cluster. This page lists every "
        "fault we inject, where, what the listener must do, and what it was observed to do "
        "(real clients against the loopback faces for the Kubernetes API, the Actions "
        "service and HUD; the simulated world in virtual time for the cluster and the "
        "listener process itself).",
        "",
        "## Invariants (checked continuously)",
        "",
        "`simulator/measurement/invariants.py` watches every simulated run it is wired into "
        "(the chaos day, the world cases, the restart test):",
        "",
        "| Invariant | Promise |",
        "|---|---|",
    ]
    lines += [f"| `{name}` | {text} |" for name, text in describe()]
    lines += [
        "",
        '"One interval" is the reconcile interval (`recalculateInterval`). A `maxRunners` '
        "change gets the listener pod's restart delay + 1 s (ARC recreates the pod; its first "
        "poll is clamped to the new value).",
        "",
        "## Fault matrix",
        "",
        "| Fault | Injected into -> component | Expected | Observed | Verdict |",
        "|---|---|---|---|---|",
    ]
    for name, outcome in outcomes.items():
        o = outcome
        lines.append(
            f"| `{_cell(o.fault)}` | {_cell(o.where)} | "
            f"{_cell(o.expected)} | {_cell(o.observed)} | "
            f"{verdict(name, o)} |"
        )
    lines += [
        "",
        "Fault kinds (`simulator/faults/`, usable in a scenario's `<name>.faults.yaml`):",
        "",
        "| Kind | Meaning | Shape | Params |",
        "|---|---|---|---|",
    ]
    for kind, info in KIND_INFO.items():
        params = ", ".join(sorted(info.params)) or "-"
        lines.append(f"| `{kind.value}` | {info.meaning} | {info.shape} | {params} |")
    lines += [
        "",
        "## The chaos day",
        "",
        "`config/scenarios/chaos.yaml` (one cluster, one scale set, a working day of jobs, an "
        "ICE window and a drain) with every fault of `config/scenarios/chaos.faults.yaml`, "
        "for three seeds (`tests/reliability/test_chaos.py`):",
        "",
        "| Seed | Jobs | Completed | Failed | Runners preempted by workflow pods | Stuck | "
        "Faults applied | Crashes / restarts | Longest over-advertisement | Invariants |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for seed, run in chaos.items():
        report = run.report
        lines.append(
            f"| {seed} | {run.jobs_total} | {run.jobs_completed} | "
            f"{run.jobs_failed} | {run.runners_preempted_by_workflows} | "
            f"{run.jobs_stuck} | "
            f"{run.faults_applied} | {run.crashes} / "
            f"{run.restarts} | {report.longest_excess:.1f} s | "
            f"{'all held' if report.ok else _cell(report.summary())} |"
        )
    lines += [
        "",
        "Failed jobs are those whose runner or workflow pod was on a node that was lost or "
        "consolidated, or was deleted with the placeholders around it (the same seeds fail "
        "none without faults). `actions_*` faults are not in the virtual day (the simulated "
        "listener has no HTTP); they run against the real client above. Nor is "
        "`fleet_store_down` (the day's one cluster has no fleet store): its case above runs "
        "a two-cluster fleet.",
        "",
        "## Known gaps (the expectation is the promise; the code does not keep it yet)",
        "",
    ]
    for name, gap in KNOWN_GAPS.items():
        lines.append(f"- **{name}** ({gap.fix_at}): {gap.why}")
    if not KNOWN_GAPS:
        lines.append("None open: every case above holds (see 'Other findings' for what was fixed).")
    lines += [
        "",
        "## Production failures (issue 10), as regression tests",
        "",
        "Probed as an operator would, with real `python -m listener run` processes against "
        "the loopback faces. Each numbered failure has a regression test named after it:",
        "",
        "| # | Failure | Fixed by | Regression test |",
        "|---|---|---|---|",
    ]
    lines += [f"| {n} | {failure} | {fix} | {test} |" for n, failure, fix, test in ISSUE_10]
    lines += BAD_DAYS
    lines += ["", "## Other findings", ""]
    lines += [f"- **{where}**: {text}" for where, text in FINDINGS]
    lines += [
        "",
        "## Bad input",
        "",
        "Every parser of outside input raises one typed error naming what, where and what is "
        "allowed, and applies nothing. Fuzzed with hypothesis (`tests/fuzz/`, bounded: about "
        "10 s in CI; `FUZZ_SCALE=50` for a long local run): GetMessage bodies (outer message, "
        "the body string, job messages) and the real GetMessage call, session documents, "
        "ARC's listener config (document and file), the `capacityAware` block (mapping, file, "
        "inline JSON), HUD answers, scenario files and fault plans. Every crash found is kept "
        "in `tests/fuzz/regressions/` and replayed by `tests/fuzz/test_regressions.py` "
        f"({len(_regressions())} cases); the ones still open are strict xfails:",
        "",
    ]
    lines += [f"- `{k.signature}`: fix in {k.fix_at}" for k in KNOWN_OPEN] or [
        "- none open: the three found in other modules (a bracketed `configure_url` host, "
        "non-UTF-8 `capacityAware` and scenario files) were fixed by their owners "
        "(5c97770, cbb21d3), and one in the fault-plan parser here."
    ]
    lines += [
        "",
        "## Security",
        "",
        "| Promise | Where it is checked |",
        "|---|---|",
        "| Secrets only from files / env, `SecretStr`, redacted in every log line and error | "
        "tests/ship/test_logging.py, tests/providers/actions/test_secrets_in_logs.py, "
        "tests/fuzz/test_fuzz_config.py (config errors never echo the PAT) |",
        "| TLS verification on by default, custom CA supported | "
        "tests/providers/actions/test_client_contract.py::TestTransportSetup, "
        "tests/reliability/test_security.py |",
        "| Placeholder pods: runAsNonRoot, no privilege escalation, all capabilities dropped, "
        "read-only root fs, no service-account token, seccomp RuntimeDefault | "
        "tests/providers/kubernetes/pods/test_placeholders.py (golden files), "
        "tests/reliability/test_security.py |",
        "| RBAC least privilege (no cluster-wide pod writes) | tests/ship/test_rbac.py |",
        "| Image runs as non-root | tests/ship/test_dockerfile.py |",
        "| Dependency audit | tests/reliability/test_dependency_audit.py (`pip-audit`, opt-in: "
        "`RUN_DEPENDENCY_AUDIT=1`; needs PyPI's JSON API) |",
        "",
    ]
    return "\n".join(lines)


def generate() -> str:
    from tests.reliability.cases_world import CHAOS_SEEDS, run_chaos

    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)  # the faults make the listener log, as they should
    try:
        outcomes = run_cases()
        chaos = {seed: run_chaos(seed) for seed in CHAOS_SEEDS}
    finally:
        logging.disable(previous)
    return render(outcomes, chaos)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    args = parser.parse_args(argv)
    text = generate()
    if args.check:
        current = DOC.read_text() if DOC.exists() else ""
        if current != text:
            print(f"{DOC} is stale: run python -m tools.fault_matrix", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text)
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
