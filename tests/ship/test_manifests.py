"""config/: every manifest validates against the Kubernetes schemas, and the files agree.

Validation uses ``kubernetes-validate`` (the Kubernetes OpenAPI schemas as JSON schema, strict:
unknown fields are errors). Objects of kinds it has no schema for (CRDs) are skipped with the
reason; today config/ holds none. The Helm values file is not a manifest: its two pod
templates (``listenerTemplate``, ``template``) and the hook's pod template are validated
against the PodTemplateSpec schema instead. config/scenarios/ belongs to the simulator.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from listener.observability.metrics import ARC_FAMILIES, CAPACITY_FAMILIES
from providers.kubernetes.pods.labels import DEFAULT_PRIORITY_CLASSES
from reconciler.settings import CapacityAwareSettings

try:
    import kubernetes_validate
except ImportError:  # the consistency tests below still run
    kubernetes_validate = None

needs_validator = pytest.mark.skipif(
    kubernetes_validate is None,
    reason="kubernetes-validate is not installed (pip install kubernetes-validate)",
)

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config"
K8S_VERSION = "1.32"
MANIFESTS = sorted(
    p
    for p in CONFIG.glob("*.yaml")
    if p.name != "values-capacity-aware.yaml"  # Helm values, checked below
)


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def by_kind(kind: str) -> list[dict[str, Any]]:
    return [d for p in MANIFESTS for d in docs(p) if d.get("kind") == kind]


def pod_template_validator() -> Any:
    """A strict JSON-schema validator for core/v1 PodTemplateSpec, from kubernetes-validate's
    own schema files (the same ones ``validate`` uses)."""
    import importlib_resources
    import jsonschema
    from referencing import Registry, Resource

    version = kubernetes_validate.utils.latest_version()
    base = importlib_resources.files("kubernetes_validate").joinpath(
        f"kubernetes-json-schema/v{version}-local-strict"
    )
    schema = json.loads(base.joinpath("podtemplatespec-v1.json").read_text())
    definitions = json.loads(base.joinpath("_definitions.json").read_text())
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)


VALUES = yaml.safe_load((CONFIG / "values-capacity-aware.yaml").read_text())
_HOOK = next(c for c in by_kind("ConfigMap") if "workflow-pod.yaml" in c.get("data", {}))
HOOK_TEMPLATE: dict[str, Any] = yaml.safe_load(_HOOK["data"]["workflow-pod.yaml"])


def test_config_has_the_shipped_manifests() -> None:
    names = {p.name for p in MANIFESTS}
    assert {
        "priorityclasses.yaml",
        "rbac.yaml",
        "hook-template.yaml",
        "capacity-aware-configmap.yaml",
    } <= names


OBJECTS = [(p, obj) for p in MANIFESTS for obj in docs(p)]


@needs_validator
@pytest.mark.parametrize(
    ("path", "obj"),
    OBJECTS,
    ids=[f"{p.name}:{o['kind']}/{o['metadata']['name']}" for p, o in OBJECTS],
)
def test_every_manifest_validates_against_the_kubernetes_schema(
    path: Path, obj: dict[str, Any]
) -> None:
    try:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        kind = f"{obj['kind']} ({obj['apiVersion']})"
        pytest.skip(f"{kind} is a CRD kubernetes-validate has no schema for")
    except kubernetes_validate.ValidationError as exc:
        pytest.fail(f"{path.name}: {exc.message} at {list(exc.path)}")


def test_every_manifest_file_holds_objects() -> None:
    for path in MANIFESTS:
        assert docs(path), f"{path.name} holds no objects"


@needs_validator
def test_the_validator_rejects_a_broken_manifest() -> None:
    """Guard against a validation step that silently passes everything."""
    broken = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "x"},
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)  # value is required
    typo = {**broken, "value": 1, "preemptionPolicey": "Never"}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(typo, K8S_VERSION, strict=True)


@needs_validator
@pytest.mark.parametrize(
    ("where", "template"),
    [
        ("values: listenerTemplate", VALUES["listenerTemplate"]),
        ("values: template", VALUES["template"]),
        ("hook-template.yaml: workflow-pod.yaml", HOOK_TEMPLATE),
    ],
)
def test_embedded_pod_templates_validate(where: str, template: dict[str, Any]) -> None:
    errors = [
        f"{'.'.join(str(p) for p in e.path)}: {e.message}"
        for e in pod_template_validator().iter_errors(template)
    ]
    assert not errors, f"{where}: {errors}"


def test_the_priority_ladder() -> None:
    classes = {d["metadata"]["name"]: d for d in by_kind("PriorityClass")}
    expected = {name: value for name, value in DEFAULT_PRIORITY_CLASSES.values()}
    assert {n: c["value"] for n, c in classes.items()} == expected
    for name, cls in classes.items():
        placeholder = "placeholder" in name
        assert cls["preemptionPolicy"] == ("Never" if placeholder else "PreemptLowerPriority"), name
        assert cls["globalDefault"] is False
        assert cls["description"].strip()
    names = CapacityAwareSettings().priority_classes
    assert set(classes) == {
        names.runner_placeholder,
        names.runner,
        names.workflow_placeholder,
        names.workflow,
    }


def test_runner_and_workflow_pods_get_their_classes() -> None:
    assert VALUES["template"]["spec"]["priorityClassName"] == "arc-runner"
    assert HOOK_TEMPLATE["spec"]["priorityClassName"] == "arc-workflow"
    assert [c["name"] for c in HOOK_TEMPLATE["spec"]["containers"]] == ["$job"]


def test_values_use_a_mode_where_workflow_pods_go_through_the_scheduler() -> None:
    assert VALUES["containerMode"]["type"] == "kubernetes-novolume"


def listener_container() -> dict[str, Any]:
    (container,) = [
        c for c in VALUES["listenerTemplate"]["spec"]["containers"] if c["name"] == "listener"
    ]
    return container


def test_the_listener_reads_the_capacity_aware_configmap_it_mounts(tmp_path: Path) -> None:
    container = listener_container()
    env = {e["name"]: e.get("value") for e in container["env"]}
    config_path = Path(env["CAPACITY_AWARE_CONFIG"])
    (mount,) = [m for m in container["volumeMounts"] if Path(m["mountPath"]) == config_path.parent]
    (volume,) = [
        v for v in VALUES["listenerTemplate"]["spec"]["volumes"] if v["name"] == mount["name"]
    ]
    (configmap,) = [
        c for c in by_kind("ConfigMap") if c["metadata"]["name"] == volume["configMap"]["name"]
    ]
    assert configmap["metadata"]["namespace"] == VALUES["controllerServiceAccount"]["namespace"], (
        "the ConfigMap must live in the listener's (controller) namespace"
    )
    # The file the listener will read parses into valid settings with the lead's loader.
    from listener.process.capacity_config import load_capacity_aware

    text = configmap["data"][config_path.name]
    (tmp_path / config_path.name).write_text(text)
    settings = load_capacity_aware({"CAPACITY_AWARE_CONFIG": str(tmp_path / config_path.name)})
    assert settings.enabled is True


def test_the_hook_asks_for_what_the_workflow_placeholder_reserves() -> None:
    configmap = next(c for c in by_kind("ConfigMap") if "capacityAware.yaml" in c["data"])
    block = yaml.safe_load(configmap["data"]["capacityAware.yaml"])["capacityAware"]
    job = HOOK_TEMPLATE["spec"]["containers"][0]["resources"]
    assert job["requests"] == block["workflowResources"] == job["limits"]


def test_the_runner_mounts_the_hook_template_it_names() -> None:
    spec = VALUES["template"]["spec"]
    (runner,) = [c for c in spec["containers"] if c["name"] == "runner"]
    env = {e["name"]: e.get("value") for e in runner["env"]}
    path = Path(env["ACTIONS_RUNNER_CONTAINER_HOOK_TEMPLATE"])
    (mount,) = [m for m in runner["volumeMounts"] if Path(m["mountPath"]) == path.parent]
    (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    hook = next(
        c for c in by_kind("ConfigMap") if c["metadata"]["name"] == volume["configMap"]["name"]
    )
    assert path.name in hook["data"]
    assert runner["resources"]["requests"], "the runner placeholder copies these requests"


def test_the_listener_container_is_hardened_and_probed() -> None:
    container = listener_container()
    assert container["command"] == ["arc-capacity-listener", "run"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    pod_security = VALUES["listenerTemplate"]["spec"]["securityContext"]
    assert pod_security["runAsNonRoot"] is True and pod_security["runAsUser"] != 0
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_rbac_subjects_are_the_listener_service_account_in_the_controller_namespace() -> None:
    bindings = by_kind("RoleBinding") + by_kind("ClusterRoleBinding")
    assert len(bindings) == 2
    for binding in bindings:
        (subject,) = binding["subjects"]
        assert subject["kind"] == "ServiceAccount"
        assert subject["namespace"] == VALUES["controllerServiceAccount"]["namespace"]
        assert subject["name"].endswith("-listener")


# --- listener config example (docs/protocol.md#config-file) ---------------------------------------

PROTOCOL_5_1_KEYS = {
    "configure_url", "vault_type", "vault_lookup_key", "azure_key_vault", "github_app_id",
    "github_app_installation_id", "github_app_private_key", "github_token",
    "ephemeral_runner_set_namespace", "ephemeral_runner_set_name", "max_runners", "min_runners",
    "runner_scale_set_id", "runner_scale_set_name", "server_root_ca", "log_level", "log_format",
    "metrics_addr", "metrics_endpoint", "metrics",
}  # fmt: skip


def test_the_example_listener_config_has_every_key_with_arc_types() -> None:
    example = json.loads((CONFIG / "listener-config.example.json").read_text())
    assert set(example) == PROTOCOL_5_1_KEYS
    assert isinstance(example["github_app_installation_id"], int)
    assert example["runner_scale_set_id"] != 0
    assert example["max_runners"] >= example["min_runners"]
    assert example["log_level"] in {"debug", "info", "warn", "error"}
    assert example["log_format"] in {"text", "json"}
    # exactly one credential kind, and obviously fake
    assert example["github_token"] and not example["github_app_private_key"]
    assert "EXAMPLE" in example["github_token"]


# --- Grafana dashboard -----------------------------------------------------------------------

DASHBOARD = json.loads((CONFIG / "grafana-dashboard.json").read_text())
_METRIC = re.compile(r"\b(?:gha|arc_capacity)_[a-z_]+")


def panels() -> list[dict[str, Any]]:
    return [p for p in DASHBOARD["panels"] if p["type"] != "row"]


def exprs() -> list[str]:
    return [t["expr"] for p in panels() for t in p.get("targets", [])]


def test_dashboard_queries_only_use_metrics_that_exist() -> None:
    known: set[str] = set()
    for family in (*ARC_FAMILIES, *CAPACITY_FAMILIES):
        known.add(family.name)
        if family.kind == "histogram":
            known |= {family.name + s for s in ("_bucket", "_sum", "_count")}
    used = {name for expr in exprs() for name in _METRIC.findall(expr)}
    assert used, "no metric found in the dashboard queries"
    assert used <= known, f"unknown metrics in the dashboard: {sorted(used - known)}"


@pytest.mark.parametrize(
    "metrics",
    [
        ("arc_capacity_advertised", "arc_capacity_max_runners_live"),
        ("arc_capacity_pairs",),
        ("arc_capacity_runner_side", "arc_capacity_workflow_side"),
        ("arc_capacity_transitions_total",),
        ("arc_capacity_reconcile_duration_seconds_bucket",),
        ("gha_assigned_jobs", "gha_running_jobs"),
        ("arc_capacity_hud_errors_total",),
        ("arc_capacity_long_poll_cuts_total",),
        ("arc_capacity_starved_runners",),
    ],
)
def test_dashboard_has_a_panel_for(metrics: tuple[str, ...]) -> None:
    for panel in panels():
        text = " ".join(t["expr"] for t in panel.get("targets", []))
        if all(re.search(rf"\b{m}\b", text) for m in metrics):
            return
    pytest.fail(f"no panel shows {metrics}")


def test_dashboard_is_importable() -> None:
    assert DASHBOARD["uid"] and DASHBOARD["title"]
    ids = [p["id"] for p in DASHBOARD["panels"]]
    assert len(ids) == len(set(ids))
    variables = {v["name"] for v in DASHBOARD["templating"]["list"]}
    assert {"datasource", "namespace", "name"} <= variables
    for panel in panels():
        assert panel["datasource"]["uid"] == "${datasource}"


def test_the_example_listener_config_loads_with_the_listeners_own_parser() -> None:
    arc_config = pytest.importorskip("listener.arc.config")
    config = arc_config.load_listener_config(CONFIG / "listener-config.example.json")
    assert config.ephemeral_runner_set_name == "arc-runners"
    assert config.metrics is None
