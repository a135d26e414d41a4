"""Kubernetes on paper (harness/suite/kubernetes.py): the rendered manifests hold against the Kubernetes
schemas offline (kubernetes-validate, strict: an unknown field fails too), and say what the issue asks of the
Job; the commands the coordinator would hand out split the VUs as ssh and Swarm do. No cluster is involved."""
import json
import re

import pytest
import yaml

kubernetes_validate = pytest.importorskip("kubernetes_validate")

from harness.suite import kubernetes  # noqa: E402
from harness.suite.kubernetes import KUBERNETES_VERSION  # noqa: E402

SCENARIO = "scenarios/shootout.yaml:vu20-rtt0.1"


@pytest.fixture
def rendered(tmp_path):
    assert kubernetes.main(["--tool", "wrk", "--scenario", SCENARIO, "--generators", "3",
                            "--coordinator", "198.18.0.1:7000", "--out", str(tmp_path)]) == 0
    return list(yaml.safe_load_all((tmp_path / "manifests.yaml").read_text())), \
        json.loads((tmp_path / "commands.json").read_text())


def test_every_manifest_is_valid_against_the_kubernetes_schemas(rendered):
    documents, _ = rendered
    assert [d["kind"] for d in documents] == ["Namespace", "Deployment", "Service", "ConfigMap", "Job"]
    for document in documents:
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_the_target_and_the_generators_are_applied_apart_by_their_label(rendered):
    """docs/engines.md: `kubectl apply -l app.kubernetes.io/component=target`, then stub_status, then the Job."""
    documents, _ = rendered
    by = {d["kind"]: d["metadata"]["labels"]["app.kubernetes.io/component"] for d in documents}
    assert by == {"Namespace": "target", "Deployment": "target", "Service": "target", "ConfigMap": "generators",
                  "Job": "generators"}


def test_the_validation_can_fail(rendered):
    documents, _ = rendered
    job = documents[-1]
    job["spec"]["backoffLimit"] = "none"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, KUBERNETES_VERSION, strict=True)
    job["spec"]["backoffLimit"], job["spec"]["parallelism_"] = 0, 3     # strict: a misspelt field fails
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, KUBERNETES_VERSION, strict=True)


def test_the_generators_are_one_indexed_job_of_n_tasks_on_labelled_nodes(rendered):
    documents, _ = rendered
    job, target = documents[-1], documents[1]
    assert job["spec"]["completionMode"] == "Indexed" and job["spec"]["backoffLimit"] == 0
    assert job["spec"]["completions"] == job["spec"]["parallelism"] == 3
    pod = job["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"lth.generator": "true"} and pod["containers"][0]["image"] == "lth-tool-wrk:latest"
    assert pod["containers"][0]["command"] == ["perl", "/agent/task_agent.pl"]
    env = {e["name"]: e for e in pod["containers"][0]["env"]}
    assert env["LTH_COORDINATOR"]["value"] == "198.18.0.1:7000"
    assert "job-completion-index" in env["LTH_TASK"]["valueFrom"]["fieldRef"]["fieldPath"]
    assert env["LTH_LOG_RESULTS"]["value"] == "1"                  # results in the pod's log, for `gather`
    # No HTTP readiness probe: its requests would land in stub_status's count, which gather checks the sum against.
    assert target["spec"]["template"]["spec"]["containers"][0]["readinessProbe"] == {"tcpSocket": {"port": 80},
                                                                                     "periodSeconds": 1}
    assert target["spec"]["template"]["spec"]["nodeSelector"] == {"lth.target": "true"}
    assert documents[2]["spec"]["clusterIP"] == "None"        # headless: the tools reach the pod itself


def test_each_task_gets_its_share_of_the_vus(rendered):
    documents, commands = rendered
    env = {e["name"]: e.get("value") for e in documents[-1]["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert commands["token"] == env["LTH_TOKEN"] and len(commands["token"]) == 16     # what `serve` answers to
    assert [s["vus"] for s in commands["shares"]] == [7, 7, 6] and commands["scenario"]["id"] == "vu20-rtt0.1"
    connections = [int(re.search(r"-c(\d+)", " ".join(c)).group(1)) for c in commands["commands"]]
    assert connections == [7, 7, 6]                            # 20 over 3, the remainder spread
    assert all("/tmp/lth-task/repo/tools/wrk/report.lua" in c for c in commands["commands"])


@pytest.mark.parametrize("argv, fragment", [
    (["--generators", "0"], "at least 1 generator task"),
    (["--generators", "21"], "has 20 VUs, fewer than the tasks"),
    (["--coordinator", "nowhere"], "HOST:PORT"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, fragment):
    base = {"--tool": "wrk", "--scenario": SCENARIO, "--generators": "2", "--coordinator": "198.18.0.1:7000",
            "--out": str(tmp_path / "out")}
    base.update(dict(zip(argv[::2], argv[1::2])))
    assert kubernetes.main([w for pair in base.items() for w in pair]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fragment in err[0] and not (tmp_path / "out").exists()
