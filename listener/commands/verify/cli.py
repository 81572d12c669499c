"""``arc-capacity-listener verify --scale-set NAME [--namespace NS] [--json] [--timeout 10m]
[--no-exercise]``: reads, then exercises, then one row per check (see listener/commands/verify/).

Credentials like ``run``: in-cluster when ``$KUBERNETES_SERVICE_HOST`` is set, else
``$KUBECONFIG`` / ``~/.kube/config``. The capacityAware block: ``--config FILE``, else
``$CAPACITY_AWARE_CONFIG`` / ``$CAPACITY_AWARE_JSON``, else the ConfigMap labelled for the
scale set (config/capacity-aware-configmap.yaml's labels), else defaults (a failing row).

Cleanup on every exit path: leftovers of an interrupted earlier run are removed first; what
this run creates is deleted in a ``finally`` (Ctrl-C and SIGTERM included, which end the run
as an ``interrupted`` row). Exit 0: no row failed; 1: a row failed; 2: bad usage.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import signal
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError as Urllib3Error

from listener.commands.verify.cluster import VerifyError, find_scale_set, load_settings
from listener.commands.verify.exercises import Budget, Exercises
from listener.commands.verify.probe import Probe, WaitClock, remove_labelled, sweep_leftovers
from listener.commands.verify.reads import read_hook, read_rows, settings_row
from listener.commands.verify.report import Report, failed, passed, row_text, skipped
from listener.commands.verify.shapes import LABEL_VERIFY, Shapes
from listener.process.startup import credentials_problem, kubernetes_api_client, new_instance_id
from providers.kubernetes.pods.placeholders import PlaceholderSpecError
from reconciler.settings import CapacityAwareSettings
from reconciler.settings_types import duration_seconds

EXERCISES = (
    "pair-ready",
    "node-autoscaler",
    "runner-preempts",
    "workflow-preempts",
    "ready-timeout",
    "garbage-collection",
)
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
IN_CLUSTER_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def _name(value: str) -> str:
    if not _DNS_LABEL.match(value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a Kubernetes name (lowercase letters, digits and '-', at most 63)"
        )
    return value


def _seconds(low: float, high: float) -> Callable[[str], float]:
    def parse(value: str) -> float:
        try:
            seconds = duration_seconds(value)
        except (TypeError, ValueError):
            seconds = -1.0
        if not low <= seconds <= high:
            raise argparse.ArgumentTypeError(
                f"{value!r}: a duration between {low:.0f}s and {high:.0f}s, e.g. 90s, 10m"
            )
        return seconds

    return parse


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="arc-capacity-listener verify",
        description="Check, then exercise with short-lived probe pods, that placeholders work "
        "for one scale set on this cluster. Deletes everything it creates.",
    )
    p.add_argument("--scale-set", required=True, type=_name, help="AutoscalingRunnerSet name")
    p.add_argument("--namespace", type=_name, help="its namespace (default: kubeconfig's)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--timeout", type=_seconds(1, 3600), default=600.0, help="whole run (10m)")
    p.add_argument("--no-exercise", action="store_true", help="stop after reading")
    p.add_argument("--config", type=Path, help="capacityAware file (else env, else ConfigMap)")
    p.add_argument(
        "--probe-timeout",
        type=_seconds(1, 600),
        default=15.0,
        help="how long a probe pod may take to preempt a placeholder, and when the "
        "unschedulable probe pair is judged timed out (15s)",
    )
    return p


def default_namespace(env: Mapping[str, str]) -> str:
    if env.get("KUBERNETES_SERVICE_HOST") and IN_CLUSTER_NAMESPACE.exists():
        return IN_CLUSTER_NAMESPACE.read_text().strip()
    from kubernetes import config as k8s_config

    with contextlib.suppress(Exception):  # no kubeconfig: the credentials step says so
        _, current = k8s_config.list_kube_config_contexts(config_file=env.get("KUBECONFIG"))
        return str((current.get("context") or {}).get("namespace") or "default")
    return "default"


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM ends the run like Ctrl-C, so the ``finally`` cleanup runs."""

    def interrupt(_sig: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread (tests): Ctrl-C handling is the caller's
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(
    argv: Sequence[str] | None,
    *,
    env: Mapping[str, str],
    clock: WaitClock | None = None,
) -> int:
    """``env``: the process's environment, read once at the command line's entry."""
    args = parser().parse_args(argv)  # exit 2 on bad usage
    environ = dict(env)
    clock = clock or WaitClock()
    namespace = args.namespace or default_namespace(environ)
    try:
        api = kubernetes_api_client(environ)
    except Exception as exc:  # kubeconfig missing or unreadable: one line, no traceback
        print(f"arc-capacity-listener verify: {credentials_problem(exc)}", file=sys.stderr)
        return 1
    report = Report(args.scale_set, namespace)
    if not args.json:  # each row as it completes: the exercises take tens of seconds
        print(report.header(), end="", flush=True)
        report.on_row = lambda row: print(row_text(row), end="", flush=True)
    started = clock.monotonic()
    with api, sigterm_as_interrupt():
        Verify(api, args, namespace, environ, clock, report).run(started + args.timeout)
    report.seconds = clock.monotonic() - started
    print(report.as_json() if args.json else report.summary(), end="" if not args.json else "\n")
    return report.exit_code


class Verify:
    def __init__(
        self,
        api: k8s.ApiClient,
        args: argparse.Namespace,
        namespace: str,
        env: Mapping[str, str],
        clock: WaitClock,
        report: Report,
    ) -> None:
        self.api = api
        self.args = args
        self.namespace = namespace
        self.env = env
        self.clock = clock
        self.report = report
        self.run_id = new_instance_id()
        self.namespaces: list[str] = [namespace]

    def run(self, deadline: float) -> None:
        try:
            self._steps(deadline)
        except KeyboardInterrupt:
            self.report.add(failed("interrupted", "stopped by a signal", "re-run verify"))
        except VerifyError as exc:
            self.report.add(failed("scale-set", str(exc), "fix the arguments or settings above"))
        except ApiException as exc:
            fix = (
                "give the identity running verify the access docs/verify.md lists"
                if exc.status in (401, 403)
                else "check that the API server is healthy and re-run"
            )
            self.report.add(failed("api", f"the API answered HTTP {exc.status} {exc.reason}", fix))
        except (Urllib3Error, OSError) as exc:
            host = self.api.configuration.host
            self.report.add(failed("api", f"cannot reach the Kubernetes API at {host}: {exc}", ""))
        except Exception as exc:  # a bug: still clean up and print the report, one line
            self.report.add(
                failed("error", f"{type(exc).__name__}: {exc}", "please report this (--json)")
            )
        finally:
            self._cleanup()

    def _steps(self, deadline: float) -> None:
        args, report = self.args, self.report
        try:
            settings, where = load_settings(self.api, args.scale_set, args.config, self.env)
        except VerifyError as exc:
            report.add(failed("settings", str(exc), "fix the capacityAware block it names"))
            return
        report.add(settings_row(settings, where))
        scale = find_scale_set(self.api, args.scale_set, self.namespace, settings)
        self.namespaces = list(dict.fromkeys([self.namespace, scale.target.placeholder_namespace]))
        report.add(
            passed(
                "scale-set",
                f"EphemeralRunnerSet {scale.target.ers_name}, maxRunners "
                f"{scale.target.max_runners}",
            )
        )
        sweep = sweep_leftovers(self.api, self.namespaces, self.clock.now())
        others = "".join(f"; left run {run} alone (in progress)" for run in sweep.running)
        report.add(
            passed("leftovers", f"removed {sweep.removed} object(s) of an earlier run{others}")
        )
        hook = read_hook(self.api, scale)  # once: the shapes and the reading rows use it
        shapes = self._shapes(settings, scale.ers, None, hook.pod_spec)
        for row in read_rows(self.api, scale, settings, shapes, hook):
            report.add(row)
        if args.no_exercise or shapes is None:
            why = "--no-exercise" if args.no_exercise else "placeholders cannot be sized"
            report.add(*(skipped(check, why) for check in EXERCISES))
            return
        probe = Probe(self.api, scale.target.placeholder_namespace, self.run_id, self.clock)
        until = self.clock.now() + max(0.0, deadline - self.clock.monotonic()) + 60
        owner = probe.create_owner(until)
        probe_shapes = self._shapes(settings, scale.ers, owner, hook.pod_spec)
        if probe_shapes is None:
            return
        budget = Budget(deadline, args.probe_timeout)
        for row in Exercises(probe, probe_shapes, settings, budget).run():
            report.add(row)

    def _shapes(
        self,
        settings: CapacityAwareSettings,
        ers: Mapping[str, Any],
        owner: Mapping[str, Any] | None,
        workflow_pod_spec: Mapping[str, Any] | None,
    ) -> Shapes | None:
        """The pods of this run; the workflow half placed by the hook template, as the
        listener places it (None: it could not be read; the workflow-resources row says why,
        and the listener falls back to the runner template's placement too)."""
        try:
            return Shapes(
                settings,
                ers,
                run_id=self.run_id,
                namespace=self.namespaces[-1],
                owner=owner,
                now=self.clock.now(),
                workflow_pod_spec=workflow_pod_spec,
            )
        except PlaceholderSpecError as exc:
            self.report.add(failed("placeholder-size", str(exc), "fix the runner template"))
            return None

    def _cleanup(self) -> None:
        """Delete every object of this run (pods first); a row says what, if anything, stayed."""
        started = self.clock.monotonic()
        try:
            left = remove_labelled(
                k8s.CoreV1Api(self.api), self.namespaces, f"{LABEL_VERIFY}={self.run_id}"
            )
        except (ApiException, Urllib3Error, OSError) as exc:
            self.report.add(
                failed(
                    "cleanup",
                    f"could not delete this run's objects: {exc}",
                    f"kubectl delete pods,configmaps -l {LABEL_VERIFY}={self.run_id} -A",
                )
            )
            return
        seconds = self.clock.monotonic() - started
        if left:
            self.report.add(
                failed(
                    "cleanup",
                    f"still present: {', '.join(left)}",
                    f"kubectl delete pods,configmaps -l {LABEL_VERIFY}={self.run_id} -A",
                    seconds,
                )
            )
        else:
            self.report.add(passed("cleanup", "nothing of this run remains", seconds))
