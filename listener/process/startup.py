"""Start-up decisions of the listener process, before anything runs: the two stop
exceptions, the start-up checks' verdict, the instance id, the Kubernetes client, and the
one-line reasons logged when capacity-aware mode is off or could never see a job."""

from __future__ import annotations

import logging
import secrets
import string
from collections.abc import Mapping, Sequence

from kubernetes import client as k8s
from kubernetes import config as k8s_config

from listener.process.capacity_config import ENV_FILE, ENV_JSON
from providers.kubernetes.checks import Finding, Severity
from reconciler.settings import CapacityAwareSettings

log = logging.getLogger("listener")


def capacity_off_reason(env: Mapping[str, str]) -> str:
    """Why capacity-aware mode is off, for the one log line that says so at start."""
    if not env.get(ENV_FILE) and not env.get(ENV_JSON):
        return (
            f"no capacityAware block (neither ${ENV_FILE} nor ${ENV_JSON} is set); "
            "advertising maxRunners like stock ARC"
        )
    return "capacityAware.enabled is false; advertising maxRunners like stock ARC"


def blind_at_zero(capacity: CapacityAwareSettings) -> bool:
    """Scale to zero with statistics as the only demand and their refresh turned off: nothing
    would ever reveal a new job (measured in the simulator: bench/demand_sources.py,
    scale-to-zero with ``statisticsRefresh: 0``, 0 of 15 jobs ran)."""
    sources = capacity.demand.resolved_sources(capacity.hud.url)
    return (
        capacity.proactive_capacity == 0
        and tuple(sources) == ("statistics",)
        and capacity.demand.statistics_refresh <= 0
    )


class FatalError(Exception):
    """Stops the process with one clear line (exit 1)."""


class Stopped(Exception):
    """SIGTERM arrived during a start-up phase: shut down cleanly (exit 0)."""


def refuse_to_start(findings: Sequence[Finding]) -> None:
    """Log the start-up checks' warnings; raise FatalError naming every error."""
    for finding in findings:
        if finding.severity is not Severity.ERROR:
            log.warning("start-up check %s: %s", finding.check, finding.message)
    problems = [f"{f.check}: {f.message}" for f in findings if f.severity is Severity.ERROR]
    if problems:
        raise FatalError("start-up checks failed: " + " | ".join(problems))


def new_instance_id() -> str:
    """Five lowercase alphanumerics: labels our placeholders, prefixes our pair ids."""
    alphabet = string.ascii_lowercase + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(5))


#: One connection per long-lived watch plus room for writes (the client's default is 10).
CONNECTION_POOL_SIZE = 32


def kubernetes_api_client(env: Mapping[str, str]) -> k8s.ApiClient:
    """In-cluster service account when running in a pod; otherwise $KUBECONFIG / ~/.kube."""
    configuration = k8s.Configuration()
    if env.get("KUBERNETES_SERVICE_HOST"):
        k8s_config.load_incluster_config(client_configuration=configuration)
    else:
        k8s_config.load_kube_config(
            config_file=env.get("KUBECONFIG"), client_configuration=configuration
        )
    configuration.connection_pool_maxsize = CONNECTION_POOL_SIZE
    return k8s.ApiClient(configuration)
