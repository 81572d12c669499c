"""One capacity-aware scale set on the real control plane, installed the way the docs say.

Steps of :func:`install_scale_set`:
1. the declarative install (``config/install``, rendered by kustomize) applied to the API
   server: PriorityClasses, the read-only ClusterRole, the listener's ServiceAccount, token
   Secret, bindings and Role, the ``capacityAware`` and hook-template ConfigMaps. The PodMonitor
   and PrometheusRule are left out: they need prometheus-operator's CRDs, which this world
   does not run;
2. the GitHub credentials Secret ARC's controller reads (a PAT the Actions face accepts);
3. the AutoscalingRunnerSet as ARC's ``gha-runner-scale-set`` chart renders
   ``config/values-capacity-aware.yaml`` in ``kubernetes-novolume`` mode
   (:func:`autoscaling_runner_set`), pointed at the face, with the release's version label;
4. wait for ARC's controller to register the scale set with the face and write the listener's
   config Secret.

:func:`listener_files` then writes what the listener pod would mount: the config file ARC wrote,
the ``capacityAware`` ConfigMap's file, and a kubeconfig holding the install's ServiceAccount
token, so the listener runs as the install's identity under the real authorizer.
"""

from __future__ import annotations

import base64
import copy
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from e2e.components import ARC_VERSION
from e2e.control_plane import ControlPlane, kubeconfig
from e2e.platform import CONTROLLER_NAMESPACE, RUNNER_NAMESPACE, SYSTEM_TAINT, apply

REPO = Path(__file__).resolve().parent.parent
SCALE_SET = "arc-runners"
GITHUB_SECRET = "arc-github-pat"
PAT = "ghp_e2eWorldPersonalAccessToken0000000000"
#: Kinds the install renders that need CRDs this world does not serve.
NOT_SERVED = frozenset({"PodMonitor", "PrometheusRule"})


class InstallError(RuntimeError):
    """The scale set did not come up; the message says which step."""


@dataclass(frozen=True)
class ScaleSetOptions:
    max_runners: int = 10
    min_runners: int = 0
    #: Overrides applied to the install's ``capacityAware`` ConfigMap, as an operator would
    #: edit it (scenario settings; every one is named in the report).
    capacity_aware: Mapping[str, Any] | None = None


def rendered_install(plane: ControlPlane) -> list[dict[str, Any]]:
    text = plane.kubectl("kustomize", str(REPO / "config" / "install"))
    return [doc for doc in yaml.safe_load_all(text) if doc]


def _novolume_env() -> list[dict[str, Any]]:
    """What the chart adds to the runner container in kubernetes-novolume mode
    (charts/gha-runner-scale-set/templates/_helpers.tpl of the release)."""
    return [
        {"name": "ACTIONS_RUNNER_CONTAINER_HOOKS", "value": "/home/runner/k8s-novolume/index.js"},
        {
            "name": "ACTIONS_RUNNER_POD_NAME",
            "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
        },
        {"name": "ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER", "value": "true"},
    ]


def autoscaling_runner_set(
    values: Mapping[str, Any], configure_url: str, options: ScaleSetOptions
) -> dict[str, Any]:
    """The AutoscalingRunnerSet the chart would render from ``values``.

    Deviation, named: the listener template also gets a toleration and node selector for the
    world's tainted system node, so ARC's listener pod (which kwok only pretends to run; the
    real listener is a host process) never takes room on a node Karpenter launched for jobs.
    """
    template = copy.deepcopy(dict(values["template"]))
    runner = template["spec"]["containers"][0]
    names = {e["name"] for e in runner.get("env") or ()}
    runner["env"] = list(runner.get("env") or ()) + [
        e for e in _novolume_env() if e["name"] not in names
    ]
    template["spec"].setdefault("restartPolicy", "Never")
    listener = copy.deepcopy(dict(values.get("listenerTemplate") or {"spec": {}}))
    listener["spec"]["tolerations"] = [{**SYSTEM_TAINT, "operator": "Equal"}]
    listener["spec"]["nodeSelector"] = {"e2e.arc-capacity/role": "system"}
    labels = {
        "app.kubernetes.io/name": SCALE_SET,
        "app.kubernetes.io/instance": SCALE_SET,
        "app.kubernetes.io/version": ARC_VERSION,
        "app.kubernetes.io/managed-by": "e2e",
        "app.kubernetes.io/part-of": "gha-rs",
        "app.kubernetes.io/component": "autoscaling-runner-set",
        "actions.github.com/scale-set-name": SCALE_SET,
        "actions.github.com/scale-set-namespace": RUNNER_NAMESPACE,
    }
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingRunnerSet",
        "metadata": {"name": SCALE_SET, "namespace": RUNNER_NAMESPACE, "labels": labels},
        "spec": {
            "githubConfigUrl": configure_url,
            "githubConfigSecret": GITHUB_SECRET,
            "runnerScaleSetName": SCALE_SET,
            "minRunners": options.min_runners,
            "maxRunners": options.max_runners,
            "listenerTemplate": listener,
            "template": template,
        },
    }


def shipped_values() -> dict[str, Any]:
    return dict(yaml.safe_load((REPO / "config" / "values-capacity-aware.yaml").read_text()))


def _with_capacity_overrides(doc: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    data = doc["data"]
    key = next(iter(data))
    block = yaml.safe_load(data[key])
    block["capacityAware"].update(overrides)
    data[key] = yaml.safe_dump(block, sort_keys=False)
    return doc


def install_scale_set(
    plane: ControlPlane, configure_url: str, options: ScaleSetOptions
) -> dict[str, Any]:
    """Apply the install and the scale set; returns the rendered install's documents."""
    docs = rendered_install(plane)
    served = [d for d in docs if d["kind"] not in NOT_SERVED]
    if options.capacity_aware:
        served = [
            _with_capacity_overrides(d, options.capacity_aware)
            if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("capacity-aware")
            else d
            for d in served
        ]
    apply(plane, served)
    apply(
        plane,
        [
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": GITHUB_SECRET, "namespace": RUNNER_NAMESPACE},
                "stringData": {"github_token": PAT},
            },
            autoscaling_runner_set(shipped_values(), configure_url, options),
        ],
    )

    def names(found: list[dict[str, Any]]) -> list[str]:
        return [f"{d['kind']}/{d['metadata']['name']}" for d in found]

    return {
        "applied": names(served),
        "left_out": names([d for d in docs if d["kind"] in NOT_SERVED]),
    }


def _get_json(plane: ControlPlane, *args: str) -> Any:
    return json.loads(plane.kubectl("get", "-o", "json", *args))


def wait_for_listener_config(plane: ControlPlane, timeout: float = 120) -> dict[str, Any]:
    """The config.json ARC's controller wrote for its listener (Secret ``<listener>-config``),
    once it names an EphemeralRunnerSet that exists."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listeners = _get_json(plane, "-n", CONTROLLER_NAMESPACE, "autoscalinglisteners")["items"]
        for listener in listeners:
            name = f"{listener['metadata']['name']}-config"
            secret = json.loads(
                plane.kubectl(
                    "get", "-o", "json", "-n", CONTROLLER_NAMESPACE, "secret", name, check=False
                )
                or "{}"
            )
            raw = (secret.get("data") or {}).get("config.json")
            if raw:
                config = dict(json.loads(base64.b64decode(raw)))
                if _ers_exists(plane, str(config.get("ephemeral_runner_set_name"))):
                    return config
        time.sleep(1)
    raise InstallError(
        f"ARC's controller wrote no listener config Secret in {CONTROLLER_NAMESPACE} within "
        f"{timeout:.0f} s (see the arc-controller log)"
    )


def _ers_exists(plane: ControlPlane, name: str) -> bool:
    """A config naming an EphemeralRunnerSet that is gone is one ARC is about to replace."""
    found = plane.kubectl(
        "get", "-o", "name", "-n", RUNNER_NAMESPACE, "ephemeralrunnersets", name, check=False
    )
    return bool(found.strip())


def service_account_token(plane: ControlPlane, timeout: float = 60) -> str:
    """The install's token Secret, once kube-controller-manager's token controller filled it."""
    name = f"{SCALE_SET}-capacity-listener-token"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        secret = _get_json(plane, "-n", CONTROLLER_NAMESPACE, "secret", name)
        token = (secret.get("data") or {}).get("token")
        if token:
            return base64.b64decode(token).decode()
        time.sleep(0.5)
    raise InstallError(f"the token Secret {name} was not filled within {timeout:.0f} s")


def capacity_aware_file(plane: ControlPlane) -> str:
    cm = _get_json(plane, "-n", CONTROLLER_NAMESPACE, "configmap", f"{SCALE_SET}-capacity-aware")
    return str(cm["data"]["capacityAware.yaml"])


def listener_files(
    plane: ControlPlane, directory: Path, config: Mapping[str, Any], metrics_addr: str
) -> dict[str, Path]:
    """Write the three files the listener pod would have mounted; returns their paths.

    Deviation, named: ``metrics_addr`` is moved to a loopback port of its own (every process of
    this world shares the host's network namespace, where ARC's ``:8080`` would collide)."""
    directory.mkdir(parents=True, exist_ok=True)
    files = {
        "config": directory / "config.json",
        "capacity": directory / "capacityAware.yaml",
        "kubeconfig": directory / "listener.kubeconfig",
    }
    files["config"].write_text(json.dumps({**config, "metrics_addr": metrics_addr}, indent=2))
    files["capacity"].write_text(capacity_aware_file(plane))
    files["kubeconfig"].write_text(
        yaml.safe_dump(
            kubeconfig(
                plane.server,
                plane.certificates.ca_cert,
                user={"token": service_account_token(plane)},
                name=f"system:serviceaccount:{CONTROLLER_NAMESPACE}:{SCALE_SET}-capacity-listener",
            )
        )
    )
    for path in files.values():
        path.chmod(0o600)
    return files
