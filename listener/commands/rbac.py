"""``arc-capacity-listener rbac``: the extra RBAC of one scale set's listener, without hand edits.

ARC names the listener ServiceAccount ``<AutoscalingRunnerSet>-<hash of its namespace>-listener``
and creates it in the controller namespace, labelled ``actions.github.com/scale-set-name`` and
``actions.github.com/scale-set-namespace``; a runner-group or URL change recreates it. This
command finds it from the AutoscalingRunnerSet's name and namespace (by those labels, in any
namespace or the one given) and prints the ClusterRole, ClusterRoleBinding, Role(s) and
RoleBinding(s) of ``providers.kubernetes.permissions`` bound to it, as YAML for
``kubectl apply -f -``; with ``--apply`` it creates or updates them itself.

With ``--own-service-account`` it needs no cluster: the listener runs as a ServiceAccount
of fixed name, ``<scale set>-capacity-listener`` in the controller namespace, whose token
Secret ``<scale set>-capacity-listener-token`` the listener template mounts over the
in-cluster token path (``arc-capacity-listener values`` writes that mount; ARC ignores a
``serviceAccountName`` in ``listenerTemplate``). It prints that ServiceAccount, its token
Secret and the bindings, ARC's own listener rules included: the objects of the declarative
install (config/install/), which a test keeps equal to these.

Exit codes: 0 done; 1 not found / not allowed / unreachable (one line on stderr); 2 usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError as Urllib3Error

from providers.kubernetes.permissions import ARC_LISTENER_RULES, CLUSTER_RULES, NAMESPACED_RULES

LABEL_NAME = "actions.github.com/scale-set-name"
LABEL_NAMESPACE = "actions.github.com/scale-set-namespace"
PART_OF = {"app.kubernetes.io/part-of": "arc-capacity-listener"}
ROLE = "arc-capacity-listener"
CLUSTER_ROLE = "arc-capacity-listener-read"
RBAC_GROUP = "rbac.authorization.k8s.io"
#: Suffixes of the fixed names of ``--own-service-account`` (``<scale set>-<suffix>``).
OWN_ACCOUNT = "capacity-listener"
OWN_TOKEN = "capacity-listener-token"
#: Marks the objects of one scale set's own identity (not ARC's scale-set labels: `rbac`
#: finds ARC's listener ServiceAccount by those).
SCALE_SET_LABEL = "arc-capacity-listener/scale-set"
#: Where the in-cluster client reads its token; mounting the token Secret here makes the
#: listener run as the fixed ServiceAccount (the ServiceAccount admission plugin does not
#: mount the pod's own token over an existing mount at this path).
TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"


class RbacError(Exception):
    """One line for stderr: what was not found or not allowed, and where."""


def find_listener_service_account(
    core: k8s.CoreV1Api, scale_set: str, namespace: str, controller_namespace: str | None = None
) -> tuple[str, str]:
    """(namespace, name) of the listener ServiceAccount ARC made for this scale set."""
    selector = f"{LABEL_NAME}={scale_set},{LABEL_NAMESPACE}={namespace}"
    if controller_namespace:
        found = core.list_namespaced_service_account(controller_namespace, label_selector=selector)
    else:
        found = core.list_service_account_for_all_namespaces(label_selector=selector)
    listeners: list[tuple[str, str]] = []
    for sa in found.items:
        # The API always sets both on a stored object; the client's models allow None.
        meta = sa.metadata
        if meta is None or not meta.namespace or not meta.name:
            continue
        if meta.name.startswith(f"{scale_set}-") and meta.name.endswith("-listener"):
            listeners.append((meta.namespace, meta.name))
    where = f"namespace {controller_namespace}" if controller_namespace else "any namespace"
    if not listeners:
        raise RbacError(
            f"no listener ServiceAccount for AutoscalingRunnerSet {namespace}/{scale_set} in "
            f"{where} (looked for labels {selector}); is the scale set installed and its "
            "listener created?"
        )
    if len(listeners) > 1:
        names = ", ".join(f"{ns}/{n}" for ns, n in listeners)
        raise RbacError(
            f"several listener ServiceAccounts match ({names}); pass --controller-namespace"
        )
    return listeners[0]


def bindings(
    service_account: tuple[str, str],
    scale_set: str,
    namespaces: Sequence[str],
) -> list[dict[str, Any]]:
    """Pure: the objects to apply for this ServiceAccount (cluster ones first)."""
    sa_namespace, sa_name = service_account
    subject = [{"kind": "ServiceAccount", "name": sa_name, "namespace": sa_namespace}]
    rbac = "rbac.authorization.k8s.io/v1"
    objects: list[dict[str, Any]] = [
        cluster_role(),
        {
            "apiVersion": rbac,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{CLUSTER_ROLE}-{sa_name}", "labels": dict(PART_OF)},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": CLUSTER_ROLE,
            },
            "subjects": subject,
        },
    ]
    for namespace in dict.fromkeys(namespaces):
        objects.append(
            {
                "apiVersion": rbac,
                "kind": "Role",
                "metadata": {"name": ROLE, "namespace": namespace, "labels": dict(PART_OF)},
                "rules": [rule.as_dict() for rule in NAMESPACED_RULES],
            }
        )
        objects.append(
            {
                "apiVersion": rbac,
                "kind": "RoleBinding",
                "metadata": {
                    "name": f"{ROLE}-{scale_set}",
                    "namespace": namespace,
                    "labels": dict(PART_OF),
                },
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ROLE},
                "subjects": subject,
            }
        )
    return objects


def own_service_account(
    scale_set: str, controller_namespace: str, namespaces: Sequence[str]
) -> list[dict[str, Any]]:
    """Pure: the fixed-name identity of one scale set's listener and its permissions (ARC's
    listener rules plus ours): ServiceAccount, token Secret, ClusterRole, ClusterRoleBinding,
    and a Role and RoleBinding per namespace, all named from the scale set."""
    account = f"{scale_set}-{OWN_ACCOUNT}"
    labels = {**PART_OF, SCALE_SET_LABEL: scale_set}
    subject = [{"kind": "ServiceAccount", "name": account, "namespace": controller_namespace}]
    rbac = "rbac.authorization.k8s.io/v1"
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {
                "name": account,
                "namespace": controller_namespace,
                "labels": dict(labels),
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": f"{scale_set}-{OWN_TOKEN}",
                "namespace": controller_namespace,
                "labels": dict(labels),
                # The token controller fills token, ca.crt and namespace for this account.
                "annotations": {"kubernetes.io/service-account.name": account},
            },
            "type": "kubernetes.io/service-account-token",
        },
        cluster_role(),
        {
            "apiVersion": rbac,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{account}-read", "labels": dict(labels)},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": CLUSTER_ROLE},
            "subjects": subject,
        },
    ]
    rules = [rule.as_dict() for rule in (*NAMESPACED_RULES, *ARC_LISTENER_RULES)]
    for namespace in dict.fromkeys(namespaces):
        meta = {"name": account, "namespace": namespace, "labels": dict(labels)}
        objects.append({"apiVersion": rbac, "kind": "Role", "metadata": dict(meta), "rules": rules})
        objects.append(
            {
                "apiVersion": rbac,
                "kind": "RoleBinding",
                "metadata": dict(meta),
                "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": account},
                "subjects": subject,
            }
        )
    return objects


def cluster_role() -> dict[str, Any]:
    """The read-only ClusterRole every scale set's listener is bound to."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": CLUSTER_ROLE, "labels": dict(PART_OF)},
        "rules": [rule.as_dict() for rule in CLUSTER_RULES],
    }


def render(objects: Sequence[Mapping[str, Any]], service_account: tuple[str, str]) -> str:
    header = (
        f"# RBAC of arc-capacity-listener for ServiceAccount "
        f"{service_account[0]}/{service_account[1]} (arc-capacity-listener rbac)\n"
    )
    return header + yaml.safe_dump_all(list(objects), sort_keys=False)


def apply(api_client: k8s.ApiClient, objects: Sequence[Mapping[str, Any]]) -> list[str]:
    """Create each object, or replace it when it exists; returns one line per object."""
    rbac_api, core_api = k8s.RbacAuthorizationV1Api(api_client), k8s.CoreV1Api(api_client)
    done = []
    for obj in objects:
        kind, meta = obj["kind"], obj["metadata"]
        name, namespace = meta["name"], meta.get("namespace")
        suffix = "namespaced_" if namespace else ""
        api: Any = core_api if kind in ("ServiceAccount", "Secret") else rbac_api
        snake = {
            "ClusterRole": "cluster_role",
            "ClusterRoleBinding": "cluster_role_binding",
            "Role": "role",
            "RoleBinding": "role_binding",
            "ServiceAccount": "service_account",
            "Secret": "secret",
        }[kind]
        args = (namespace, obj) if namespace else (obj,)
        try:
            getattr(api, f"create_{suffix}{snake}")(*args)
            done.append(f"{kind.lower()}/{name} created")
        except ApiException as exc:
            if exc.status != 409:
                raise
            replace_args = (name, namespace, obj) if namespace else (name, obj)
            getattr(api, f"replace_{suffix}{snake}")(*replace_args)
            done.append(f"{kind.lower()}/{name} configured")
    return done


def main(argv: Sequence[str] | None, *, env: Mapping[str, str]) -> int:
    """``env``: the process's environment, read once at the command line's entry."""
    parser = argparse.ArgumentParser(
        prog="arc-capacity-listener rbac",
        description="Print (or apply) the RBAC of one scale set's capacity-aware listener.",
    )
    parser.add_argument("--scale-set", required=True, help="AutoscalingRunnerSet name")
    parser.add_argument("--namespace", required=True, help="its namespace (the runners')")
    parser.add_argument("--controller-namespace", help="where ARC runs the listener pods")
    parser.add_argument(
        "--placeholder-namespace", help="capacityAware.placeholderNamespace, if not the runners'"
    )
    parser.add_argument("--apply", action="store_true", help="create/update them now")
    parser.add_argument(
        "--own-service-account",
        action="store_true",
        help="a ServiceAccount of fixed name for the listener (GitOps; no cluster needed to print)",
    )
    args = parser.parse_args(argv)
    namespaces = [args.namespace, args.placeholder_namespace or args.namespace]
    own: list[dict[str, Any]] = []
    if args.own_service_account:
        controller = args.controller_namespace or "arc-systems"
        own = own_service_account(args.scale_set, controller, namespaces)
        if not args.apply:
            sys.stdout.write(render(own, (controller, f"{args.scale_set}-{OWN_ACCOUNT}")))
            return 0
    from listener.process.startup import credentials_problem, kubernetes_api_client

    environ = dict(env)
    try:
        api_client = kubernetes_api_client(environ)
    except Exception as exc:  # kubeconfig missing or unreadable: one line, no traceback
        print(f"arc-capacity-listener rbac: {credentials_problem(exc)}", file=sys.stderr)
        return 1
    try:
        with api_client:
            if own:
                objects = own
            else:
                sa = find_listener_service_account(
                    k8s.CoreV1Api(api_client),
                    args.scale_set,
                    args.namespace,
                    args.controller_namespace,
                )
                objects = bindings(sa, args.scale_set, namespaces)
                if not args.apply:
                    sys.stdout.write(render(objects, sa))
                    return 0
            for line in apply(api_client, objects):
                print(line)
            return 0
    except RbacError as exc:
        print(f"arc-capacity-listener rbac: {exc}", file=sys.stderr)
    except ApiException as exc:
        print(
            f"arc-capacity-listener rbac: the API server answered HTTP {exc.status} {exc.reason}",
            file=sys.stderr,
        )
    except (Urllib3Error, OSError) as exc:
        host = api_client.configuration.host
        print(
            f"arc-capacity-listener rbac: cannot reach the Kubernetes API at {host}: {exc}",
            file=sys.stderr,
        )
    return 1
