"""The Kubernetes examples render with `kubectl kustomize` and every object they hold validates
against the Kubernetes schemas (validate_manifests.mjs: kubernetes-models from npm, and the
PyTorchJob schema vendored from Kubeflow's training-operator). Then the pod is checked for what
the agent needs: a broken object must fail the validator, and the sidecar must see the training
processes and share their folder."""
import copy
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[1]
VALIDATOR = DEPLOY / "tests" / "validate_manifests.mjs"
EXAMPLES = {
    "indexed-job": {("v1", "Service"), ("v1", "PersistentVolumeClaim"), ("batch/v1", "Job")},
    "pytorchjob": {("v1", "PersistentVolumeClaim"), ("kubeflow.org/v1", "PyTorchJob")},
}


def render(example):
    done = subprocess.run(["kubectl", "kustomize", str(DEPLOY / "examples" / example)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [o for o in yaml.safe_load_all(done.stdout) if o]


def validate(objects):
    return subprocess.run(["node", str(VALIDATOR)], input=json.dumps(objects), capture_output=True, text=True,
                          timeout=60)


def pod_templates(obj):
    if obj["kind"] == "Job":
        return [obj["spec"]["template"]]
    if obj["kind"] == "PyTorchJob":
        return [r["template"] for r in obj["spec"]["pytorchReplicaSpecs"].values()]
    return []


@pytest.fixture(scope="module", params=sorted(EXAMPLES))
def rendered(request):
    return request.param, render(request.param)


def test_renders_and_every_object_validates(rendered):
    example, objects = rendered
    assert {(o["apiVersion"], o["kind"]) for o in objects} == EXAMPLES[example]
    done = validate(objects)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("\nok ") + done.stdout.startswith("ok ") == len(objects), done.stdout


def test_the_validator_rejects_broken_objects(rendered):
    _, objects = rendered
    job = next(o for o in objects if pod_templates(o))
    wrong_type = copy.deepcopy(job)
    pod_templates(wrong_type)[0]["spec"]["initContainers"][0]["ports"][0]["containerPort"] = "9400"
    no_name = copy.deepcopy(job)
    del pod_templates(no_name)[0]["spec"]["containers"][0]["name"]
    unknown = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    done = validate([wrong_type, no_name, unknown])
    lines = done.stdout.splitlines()
    assert done.returncode == 1 and len(lines) == 3, done.stdout + done.stderr
    assert all(line.startswith("FAIL ") for line in lines), done.stdout
    assert "containerPort" in lines[0] and "name" in lines[1] and "no schema" in lines[2], done.stdout


def test_the_pod_gives_the_agent_what_it_needs_and_no_more(rendered):
    _, objects = rendered
    templates = [t for o in objects for t in pod_templates(o)]
    assert templates
    for template in templates:
        spec = template["spec"]
        assert spec["shareProcessNamespace"] is True  # the training pids in the agent's /proc
        (agent,) = [c for c in spec["initContainers"] if c["name"] == "eroica-agent"]
        assert agent["restartPolicy"] == "Always"  # a native sidecar: the Job can still complete
        trainer = next(c for c in spec["containers"] if c["name"] == "pytorch")
        security = agent["securityContext"]
        assert security["capabilities"] == {"drop": ["ALL"]}
        assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
        assert spec["securityContext"]["runAsNonRoot"] is True
        # NVML through NVIDIA_VISIBLE_DEVICES, never by taking GPUs from training.
        assert "nvidia.com/gpu" not in json.dumps(agent.get("resources", {}))
        assert "nvidia.com/gpu" in json.dumps(trainer.get("resources", {}))
        env = {e["name"]: e.get("value") for e in trainer["env"]}
        args = dict(a.lstrip("-").split("=", 1) for a in agent["args"])
        assert args["dir"] == env["EROICA_LOCAL_DIR"]
        assert args["report-dir"] == env["EROICA_DIR"]
        mounts = {c["name"]: {m["name"]: m for m in c["volumeMounts"]} for c in (agent, trainer)}
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert "emptyDir" in volumes["eroica-local"]
        for container in mounts.values():
            assert env["EROICA_LOCAL_DIR"].startswith(container["eroica-local"]["mountPath"] + "/")
        assert mounts["eroica-agent"]["eroica-central"].get("readOnly") is True
        annotations = template["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true"
        assert annotations["prometheus.io/port"] == args["prometheus-port"] == str(agent["ports"][0]["containerPort"])
