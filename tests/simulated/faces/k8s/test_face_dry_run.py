"""``?dryRun=All`` on every write verb of the face: validated and answered, nothing stored.

Regression: server-side apply (``application/apply-patch+yaml``), update and merge/JSON patch
ignored ``dryRun`` and wrote the object, so ``kubectl apply --server-side --dry-run=server``
against the face changed it (found with config/install's dry run)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest

from simulator.engine.store import ObjectStore
from simulator.faces.k8s import K8sFace

PATH = "/api/v1/namespaces/arc-systems/configmaps"
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "1"}}


@pytest.fixture
def face() -> Iterator[K8sFace]:
    with K8sFace(ObjectStore(time.time, history=100)) as running:
        yield running


def stored(face: K8sFace) -> object:
    found = face.store.find("ConfigMap", "arc-systems", "cm")
    return None if found is None else found.get("data")


def test_a_server_side_apply_dry_run_creates_nothing(face: K8sFace) -> None:
    answer = httpx.patch(
        f"{face.url}{PATH}/cm?dryRun=All&fieldManager=t",
        content=json.dumps(CM),
        headers={"Content-Type": "application/apply-patch+yaml"},
        timeout=10,
    )
    assert answer.status_code == 201, answer.text
    assert answer.json()["data"] == {"a": "1"} and stored(face) is None


@pytest.mark.parametrize("verb", ["apply", "merge", "update"])
def test_a_dry_run_change_of_an_existing_object_answers_it_and_keeps_the_stored_one(
    face: K8sFace, verb: str
) -> None:
    assert httpx.post(f"{face.url}{PATH}", json=CM, timeout=10).status_code == 201
    changed = {**CM, "data": {"a": "2"}}
    url = f"{face.url}{PATH}/cm?dryRun=All&fieldManager=t"
    if verb == "apply":
        headers = {"Content-Type": "application/apply-patch+yaml"}
        answer = httpx.patch(url, content=json.dumps(changed), headers=headers, timeout=10)
    elif verb == "merge":
        headers = {"Content-Type": "application/merge-patch+json"}
        body = json.dumps({"data": {"a": "2"}})
        answer = httpx.patch(url, content=body, headers=headers, timeout=10)
    else:
        answer = httpx.put(url, json=changed, timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.json()["data"] == {"a": "2"}
    assert stored(face) == {"a": "1"}
