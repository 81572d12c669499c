"""Start-up decisions of the listener process, before anything runs: the two stop
exceptions, the start-up checks' verdict, the instance id, the Kubernetes client, and the
one-line reasons logged when capacity-aware mode is off or could never see a job."""

from __future__ import annotations

import logging
import os
import secrets
import string
from collections.abc import Mapping, Sequence
from pathlib import Path

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


#: Where the Kubernetes client reads a kubeconfig when $KUBECONFIG is unset.
KUBECONFIG_DEFAULT = "~/.kube/config"
#: One connection per long-lived watch plus room for writes (the client's default is 10).
CONNECTION_POOL_SIZE = 32


class KubeCredentialsError(FatalError):
    """No usable Kubernetes credentials: one line naming where they were looked for."""


def credentials_problem(exc: Exception) -> str:
    """The one line for a failed :func:`kubernetes_api_client`."""
    if isinstance(exc, KubeCredentialsError):
        return str(exc)
    return f"no Kubernetes credentials: {' '.join(str(exc).split()) or type(exc).__name__}"


def kubernetes_api_client(env: Mapping[str, str]) -> k8s.ApiClient:
    """In-cluster service account when running in a pod; otherwise $KUBECONFIG / ~/.kube.

    Raises :class:`KubeCredentialsError` (one line: the source, the path, why) instead of the
    client's ``ConfigException``, whose text names neither the variable nor the file."""
    configuration = k8s.Configuration()
    if env.get("KUBERNETES_SERVICE_HOST"):
        try:
            k8s_config.load_incluster_config(client_configuration=configuration)
        except k8s_config.ConfigException as exc:
            raise KubeCredentialsError(
                f"no Kubernetes credentials: in-cluster service account (KUBERNETES_SERVICE_HOST "
                f"is set): {exc}"
            ) from None
    else:
        value = env.get("KUBECONFIG") or ""
        source = f"KUBECONFIG={value}" if value else f"the default kubeconfig {KUBECONFIG_DEFAULT}"
        paths = [p for p in value.split(os.pathsep) if p] if value else [KUBECONFIG_DEFAULT]
        if not any(Path(p).expanduser().is_file() for p in paths):
            raise KubeCredentialsError(
                f"no Kubernetes credentials: {source}: no such file (set KUBECONFIG to a "
                "kubeconfig file, or run in a pod with a service account)"
            )
        try:
            k8s_config.load_kube_config(
                config_file=value or None, client_configuration=configuration
            )
        except Exception as exc:  # the client raises whatever the file's shape trips on
            reason = " ".join(str(exc).split()) or type(exc).__name__
            if not isinstance(exc, k8s_config.ConfigException):
                reason = f"not a kubeconfig ({type(exc).__name__}: {reason})"
            raise KubeCredentialsError(f"no Kubernetes credentials: {source}: {reason}") from None
    configuration.connection_pool_maxsize = CONNECTION_POOL_SIZE
    return k8s.ApiClient(configuration)
