"""Security gaps the other suites did not cover.

Covered elsewhere (see docs/reliability.md "Security"): redaction (tests/ship/test_logging.py,
tests/providers/actions/test_secrets_in_logs.py), the Actions client's TLS verification and custom
CA (tests/providers/actions/test_client_contract.py::TestTransportSetup), the placeholder pod golden
files (tests/providers/kubernetes/pods/test_placeholders.py), RBAC (tests/ship/test_rbac.py), the
image user (tests/ship/test_dockerfile.py).

Here: the HUD client verifies TLS by default too (it builds its own httpx client), and the
hardening check used on every placeholder of the chaos day can tell a hardened pod from one
that is not (so ``not_hardened == ()`` there means something).
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path

import pytest
from pydantic import SecretStr

from providers.hud.client import HudClient, HudError
from providers.kubernetes.pods.placeholders import PlaceholderPodBuilder
from reconciler.ports import PairSpec
from reconciler.settings import CapacityAwareSettings
from simulator.faces.actions import ActionsFace, ScriptedJobFeed
from tests.providers.actions.test_client_contract import tls_server_context
from tests.reliability.cases_world import is_hardened
from tests.reliability.support import ERS, NS, ers_object


def test_the_hud_client_refuses_an_untrusted_certificate_by_default(tmp_path: Path) -> None:
    _ca, context = tls_server_context(tmp_path)
    # Any HTTPS server on loopback with a certificate from an unknown CA will do.
    with ActionsFace(ScriptedJobFeed(), tls=context) as server:
        client = HudClient(
            f"{server.url}/api/clickhouse/queued_jobs_aggregate",
            token=SecretStr("hud-token"),
            timeout=5,
        )

        async def ask() -> None:
            try:
                await client.queued_rows(["linux"])
            finally:
                await client.aclose()

        with pytest.raises(HudError) as caught:
            asyncio.run(asyncio.wait_for(ask(), 10))
    assert caught.value.kind == "connect"
    assert (
        "CERTIFICATE_VERIFY_FAILED" in caught.value.reason
        or "certificate" in str(caught.value).lower()
    )


def _pods() -> tuple[dict, dict]:
    settings = CapacityAwareSettings(enabled=True)
    ers = {**ers_object(), "metadata": {**ers_object()["metadata"], "uid": "ers-uid"}}
    builder = PlaceholderPodBuilder(settings, ers, instance="abcde", namespace=NS, owner=ers)
    return builder.build(PairSpec("abcde-1", ERS, "p-ph-abcde-1-r", "p-ph-abcde-1-w", 0.0))


def test_built_placeholders_pass_the_hardening_check() -> None:
    assert all(is_hardened(pod) for pod in _pods())


@pytest.mark.parametrize(
    "weaken",
    [
        lambda p: p["spec"]["securityContext"].pop("runAsNonRoot"),
        lambda p: p["spec"]["securityContext"].update(seccompProfile={"type": "Unconfined"}),
        lambda p: p["spec"].update(automountServiceAccountToken=True),
        lambda p: p["spec"]["containers"][0]["securityContext"].update(
            allowPrivilegeEscalation=True
        ),
        lambda p: p["spec"]["containers"][0]["securityContext"].update(
            readOnlyRootFilesystem=False
        ),
        lambda p: p["spec"]["containers"][0]["securityContext"]["capabilities"].update(
            drop=["NET_RAW"]
        ),
    ],
    ids=["root", "seccomp", "token", "escalation", "writable-root", "capabilities"],
)
def test_the_hardening_check_catches_each_missing_field(weaken) -> None:  # type: ignore[no-untyped-def]
    pod = copy.deepcopy(_pods()[0])
    weaken(pod)
    assert not is_hardened(pod)
