"""The live world itself: what it hands to a listener is what the listener accepts (fast)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kubernetes import client as k8s

from listener.arc.config import parse_listener_config
from reconciler.settings import parse_capacity_aware
from simulator.faces.live import write_files
from simulator.faces.live_spec import LiveSpec, LiveSpecError
from simulator.faces.live_world import LiveWorld


def test_configs_it_writes_are_valid_for_the_listener(world: LiveWorld, tmp_path: Path) -> None:
    files = write_files(world, tmp_path, "127.0.0.1:18080")
    config = parse_listener_config(json.loads(files["listener"].read_text()))
    assert config.ephemeral_runner_set_namespace == "arc-runners"
    assert config.ephemeral_runner_set_name == world.spec.scale_set
    assert config.runner_scale_set_id == world.scale_set.id
    assert not config.uses_app
    block = json.loads(files["capacity"].read_text())["capacityAware"]
    settings = parse_capacity_aware(block, where="live")
    assert settings.enabled
    assert settings.hud.url == world.hud.url
    env = world.listener_env(files["kubeconfig"], files["listener"])
    assert env["LISTENER_CONFIG_PATH"] == str(files["listener"])


def test_the_kubernetes_face_serves_the_arc_objects(world: LiveWorld) -> None:
    with k8s.ApiClient(k8s.Configuration(host=world.k8s.url)) as api:
        custom = k8s.CustomObjectsApi(api)
        ers = custom.get_namespaced_custom_object(
            "actions.github.com",
            "v1alpha1",
            "arc-runners",
            "ephemeralrunnersets",
            world.spec.scale_set,
        )
        classes = k8s.SchedulingV1Api(api).list_priority_class().items
    template = ers["spec"]["ephemeralRunnerSpec"]["spec"]
    assert template["priorityClassName"] == "arc-runner"
    assert {pc.metadata.name for pc in classes} >= {
        "arc-placeholder-runner",
        "arc-runner",
        "arc-placeholder-workflow",
        "arc-workflow",
    }


@pytest.mark.parametrize(
    ("spec", "names"),
    [
        (LiveSpec(ice_start=30, ice_end=20), "ice_start/ice_end"),
        (LiveSpec(instance_type="x9.huge"), "instance_type"),
        (LiveSpec(job_duration=0), "job_duration"),
    ],
)
def test_a_bad_spec_is_refused_naming_the_field(spec: LiveSpec, names: str) -> None:
    with pytest.raises(LiveSpecError, match=names):
        LiveWorld(spec)
