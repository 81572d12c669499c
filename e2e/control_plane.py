"""The real Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok's fake kubelets, as upstream builds them (e2e/build.py).

Steps of :meth:`ControlPlane.start`, each waited on before the next:
1. certificates and keys (e2e/pki.py);
2. etcd, ready when ``/health`` says so;
3. kube-apiserver with TLS, client certificates, service-account tokens, RBAC and the default
   admission plugins (Priority resolves ``priorityClassName``, ServiceAccount, ...), ready on
   ``/readyz``;
4. an admin kubeconfig (client certificate in ``system:masters``);
5. kube-controller-manager (garbage collector, token controller, node lifecycle, ...) and
   kube-scheduler (the default profile, preemption included), ready on ``/healthz``;
6. kwok, managing only nodes annotated ``kwok.x-k8s.io/node=fake`` (Karpenter's kwok provider
   annotates its nodes so), with upstream's node stages and pod stages whose start delay is
   set here.

Nothing listens beyond 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from e2e.build import binary
from e2e.components import KWOK_VERSION
from e2e.pki import Pki, create_pki
from e2e.processes import Supervisor, free_port


@dataclass(frozen=True)
class KwokTiming:
    """How long kwok's fake kubelet takes to start a bound pod's containers."""

    pod_start_ms: int = 1500
    pod_start_jitter_ms: int = 1000


def gomodcache() -> Path:
    done = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True)
    return Path(done.stdout.strip())


def kwok_module_dir() -> Path:
    """The kwok module as the build downloaded it: its stage YAMLs are read from there."""
    return gomodcache() / f"sigs.k8s.io/kwok@{KWOK_VERSION}"


def kwok_stages(timing: KwokTiming) -> list[dict[str, Any]]:
    """Upstream's stages: node initialise and heartbeat (with Lease), and the fast pod stages
    (ready, delete), the pod-ready one given a start delay. No pod-complete stage: a runner
    pod ends when the runner double says its job is done, as a real runner's does."""
    stage_dir = kwok_module_dir() / "kustomize" / "stage"
    docs = []
    for relative in (
        "node/fast/node-initialize.yaml",
        "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
        "pod/fast/pod-ready.yaml",
        "pod/fast/pod-delete.yaml",
    ):
        stage = yaml.safe_load((stage_dir / relative).read_text())
        if stage["metadata"]["name"] == "pod-ready":
            stage["spec"]["delay"] = {
                "durationMilliseconds": timing.pod_start_ms,
                "jitterDurationMilliseconds": timing.pod_start_ms + timing.pod_start_jitter_ms,
            }
        docs.append(stage)
    return docs


def _https_ok(url: str, pki: Pki | None, *, expect: bytes = b"ok") -> bool:
    """GET ``url``: with ``pki``, the API server as admin; without, a controller's /healthz,
    served on loopback with the self-signed certificate it generates in memory at start (there
    is nothing to verify it against)."""
    context = (
        ssl.create_default_context(cafile=str(pki.ca_cert))
        if pki
        else ssl._create_unverified_context()
    )
    if pki:
        context.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))
    with urllib.request.urlopen(url, context=context, timeout=2) as answer:
        return bool(answer.status == 200 and answer.read().strip() == expect)


def _http_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=2) as answer:
        return json.loads(answer.read())


class ControlPlane:
    """Start and address one control plane; the supervisor owns its processes."""

    def __init__(self, supervisor: Supervisor, workdir: Path, timing: KwokTiming) -> None:
        self.supervisor = supervisor
        self.workdir = workdir
        self.timing = timing
        self.pki: Pki | None = None
        self.api_port = 0
        self.kubeconfig = workdir / "admin.kubeconfig"

    @property
    def certificates(self) -> Pki:
        if self.pki is None:
            raise RuntimeError("the control plane has not been started (no certificates yet)")
        return self.pki

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"

    def start(self) -> None:
        self.pki = create_pki(self.workdir / "pki")
        etcd_client, etcd_peer = free_port(), free_port()
        self._etcd(etcd_client, etcd_peer)
        self._apiserver(etcd_client)
        self._write_admin_kubeconfig()
        self._controller_manager()
        self._scheduler()
        self._kwok()

    # --- the components ----------------------------------------------------------------

    def _etcd(self, client: int, peer: int) -> None:
        data = self.workdir / "etcd"
        process = self.supervisor.start(
            "etcd",
            [
                str(binary("etcd")),
                "--name=node0",
                f"--data-dir={data}",
                f"--listen-client-urls=http://127.0.0.1:{client}",
                f"--advertise-client-urls=http://127.0.0.1:{client}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=node0=http://127.0.0.1:{peer}",
                "--listen-metrics-urls=",
                "--auto-compaction-retention=1",
                # A test world on a shared disk: durability is not what is measured.
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
            ports=(client, peer),
        )
        self.etcd_port = client
        self.supervisor.wait_until(
            process,
            lambda: _http_json(f"http://127.0.0.1:{client}/health").get("health") == "true",
            timeout=60,
            what="healthy",
        )

    def _apiserver(self, etcd_port: int) -> None:
        pki = self.certificates
        self.api_port = free_port()
        process = self.supervisor.start(
            "kube-apiserver",
            [
                str(binary("kube-apiserver")),
                f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.api_port}",
                f"--tls-cert-file={pki.serving_cert}",
                f"--tls-private-key-file={pki.serving_key}",
                f"--client-ca-file={pki.ca_cert}",
                f"--service-account-key-file={pki.sa_pub}",
                f"--service-account-signing-key-file={pki.sa_key}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--proxy-client-cert-file={pki.proxy_cert}",
                f"--proxy-client-key-file={pki.proxy_key}",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--authorization-mode=Node,RBAC",
                "--allow-privileged=true",
                "--endpoint-reconciler-type=none",
                "--v=1",
            ],
            ports=(self.api_port,),
        )
        self.supervisor.wait_until(
            process,
            lambda: _https_ok(f"{self.server}/readyz", pki),
            timeout=120,
            what="ready (/readyz)",
        )

    def _write_admin_kubeconfig(self) -> None:
        pki = self.certificates
        self.kubeconfig.write_text(
            yaml.safe_dump(
                kubeconfig(
                    self.server,
                    pki.ca_cert,
                    user={
                        "client-certificate": str(pki.admin_cert),
                        "client-key": str(pki.admin_key),
                    },
                    name="e2e-admin",
                )
            )
        )

    def _component(self, name: str, args: Sequence[str]) -> None:
        port = free_port()
        process = self.supervisor.start(
            name,
            [
                str(binary(name)),
                f"--kubeconfig={self.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
                # One replica each: nothing to elect, and no Lease churn in the figures.
                "--leader-elect=false",
                *args,
            ],
            ports=(port,),
        )
        self.supervisor.wait_until(
            process,
            lambda: _https_ok(f"https://127.0.0.1:{port}/healthz", None),
            timeout=120,
            what="healthy (/healthz)",
        )

    def _controller_manager(self) -> None:
        pki = self.certificates
        self._component(
            "kube-controller-manager",
            [
                f"--root-ca-file={pki.ca_cert}",
                f"--service-account-private-key-file={pki.sa_key}",
                "--use-service-account-credentials=true",
                # kwok renews node Leases; a longer grace keeps a busy 2-core machine's late
                # heartbeat from tainting a node.
                "--node-monitor-grace-period=60s",
                "--v=1",
            ],
        )

    def _scheduler(self) -> None:
        self._component("kube-scheduler", ["--v=1"])

    def _kwok(self) -> None:
        stages = self.workdir / "kwok-stages.yaml"
        stages.write_text(yaml.safe_dump_all(kwok_stages(self.timing)))
        process = self.supervisor.start(
            "kwok",
            [
                str(binary("kwok")),
                f"--kubeconfig={self.kubeconfig}",
                f"--config={stages}",
                "--manage-all-nodes=false",
                "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                "--node-lease-duration-seconds=40",
                "--cidr=10.244.0.0/16",
                "--node-ip=127.0.0.1",
            ],
        )
        self.supervisor.wait_until(process, lambda: process.alive(), timeout=5, what="running")

    # --- helpers -----------------------------------------------------------------------

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
        done = subprocess.run(
            [str(binary("kubectl")), f"--kubeconfig={self.kubeconfig}", *args],
            input=stdin,
            capture_output=True,
            text=True,
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def version(self) -> dict[str, Any]:
        pki = self.certificates
        context = ssl.create_default_context(cafile=str(pki.ca_cert))
        context.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))
        with urllib.request.urlopen(f"{self.server}/version", context=context, timeout=5) as answer:
            return dict(json.loads(answer.read()))


def kubeconfig(server: str, ca: Path, *, user: dict[str, str], name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "e2e", "cluster": {"server": server, "certificate-authority": str(ca)}}
        ],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": "e2e", "user": name}}],
        "current-context": name,
    }


def no_proxy_env() -> dict[str, str]:
    """Loopback never through a proxy, whatever the caller's environment says."""
    keep = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy")}
    keep["NO_PROXY"] = keep["no_proxy"] = "127.0.0.1,localhost"
    return keep
