"""Kubernetes, on paper: one run (a tool, a scenario, N generator tasks) rendered as manifests, validated
offline against the Kubernetes schemas (kubernetes-validate; tests/test_kubernetes.py), never applied here
(no cluster can run on these machines). The same task contract as the swarm runtime (task.py):

- a Namespace; the target as a Deployment of lth-target on a node labelled lth.target=true, behind a
  headless Service (the tools reach the pod itself, as with Swarm's dnsrr: no kube-proxy in the path);
- the generators as an Indexed Job (``completionMode: Indexed``, ``parallelism = completions = N``,
  ``backoffLimit: 0``) of the tool's image on nodes labelled lth.generator=true, each pod running
  task_agent.pl (from a ConfigMap) against the coordinator at ``--coordinator HOST:PORT``, which hands
  each task its command (written beside the manifests, commands.json: the same share split as ssh and
  Swarm, runtimes/together.py), releases them together and receives their folders.

    python -m harness.suite.kubernetes --tool wrk --scenario scenarios/shootout.yaml:vu20-rtt0.1 \\
        --generators 4 --coordinator 198.18.0.1:7000 --out k8s/

``serve`` (the coordinator, from commands.json) and ``gather`` (the pods' logs into a results folder) are the
harness's side of running them (kube_results.py; the kubectl steps: docs/engines.md).
"""
from __future__ import annotations

import argparse
import json
import secrets
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from harness.errors import HarnessError
from harness.runtimes.docker import TARGET_IMAGE, tool_image
from harness.runtimes.generator import there
from harness.runtimes.swarm import GENERATOR_LABEL, TARGET_LABEL
from harness.runtimes.swarm_options import check_shares
from harness.runtimes.task import AGENT, TASK_WORKDIR
from harness.scenarios import Scenario
from harness.runtimes.together import load_shares
from harness.targets.file_server import TARGET_FILE
from harness.tools import registry
from harness.tools.adapter import ToolAdapter
from harness.tools.output import RunSpec

KUBERNETES_VERSION = "1.30"      # the schemas the manifests are validated against
NAME = "lth"


@dataclass(frozen=True)
class KubeRun:
    adapter: ToolAdapter
    scenario: Scenario
    generators: int
    coordinator: str           # HOST:PORT every pod reaches: where the harness's coordinator listens
    token: str = "rendered"    # the coordinator's secret: `serve` reads it back from commands.json
    namespace: str = "lth-bench"

    @property
    def target_url(self) -> str:
        return f"http://{NAME}-target.{self.namespace}.svc.cluster.local:80/{TARGET_FILE}"


def shares(run: KubeRun) -> list[dict]:
    """Each index's share of the VUs (and rate): the split of ssh and Swarm (runtimes/together.py)."""
    return [asdict(share) for share in load_shares(run.scenario, run.adapter, run.generators)]


def commands(run: KubeRun) -> list[list[str]]:
    """Each task's command line, its share of the VUs (and rate) by its index, paths as in the task."""
    parts = run.generators
    found = []
    for share in shares(run):
        vus, part_rate = share["vus"], share["rate_rps"]
        spec = RunSpec(url=run.target_url, vus=vus, duration_s=run.scenario.duration_s, out_dir=Path(f"{TASK_WORKDIR}/run"),
                       cpus=1, rate_rps=part_rate, per_request=parts > 1, keepalive=run.scenario.keepalive,
                       protocol=run.scenario.protocol, streams=run.scenario.streams)
        found.append([there(arg, f"{TASK_WORKDIR}/repo") for arg in run.adapter.command(spec)])
    return found


COMPONENT = "app.kubernetes.io/component"   # target or generators: applied apart (kubectl apply -l, docs/engines.md)


def _meta(run: KubeRun, name: str, component: str, app: str | None = None) -> dict:
    return {"name": name, "namespace": run.namespace, "labels": {"app.kubernetes.io/part-of": NAME, COMPONENT: component,
                                                                 **({"app": app} if app else {})}}


def target(run: KubeRun) -> list[dict]:
    """The target's Deployment and its headless Service."""
    app = f"{NAME}-target"
    pod = {"nodeSelector": {TARGET_LABEL: "true"}, "containers": [{
        "name": "nginx", "image": TARGET_IMAGE, "imagePullPolicy": "IfNotPresent",
        "ports": [{"containerPort": 80, "name": "http"}],
        # A TCP probe: an HTTP one would add a request a second to stub_status's count, which gather checks
        # the tools' sum against.
        "readinessProbe": {"tcpSocket": {"port": 80}, "periodSeconds": 1}}]}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(run, app, "target", app),
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": app}},
                           "template": {"metadata": {"labels": {"app": app}}, "spec": pod}}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": _meta(run, app, "target", app),
               "spec": {"clusterIP": "None", "selector": {"app": app}, "ports": [{"port": 80, "targetPort": 80,
                                                                                   "name": "http"}]}}
    return [deployment, service]


def generators(run: KubeRun) -> list[dict]:
    """The agent's ConfigMap and the Indexed Job of N tasks."""
    agent = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(run, f"{NAME}-agent", "generators"),
             "data": {"task_agent.pl": AGENT.read_text()}}
    env = [{"name": "LTH_COORDINATOR", "value": run.coordinator}, {"name": "LTH_TOKEN", "value": run.token},
           {"name": "LTH_TASK", "valueFrom": {"fieldRef": {
               "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
           {"name": "LTH_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
           {"name": "LTH_LOG_RESULTS", "value": "1"}]    # the results also in the pod's log, for `gather`
    container = {"name": "generator", "image": tool_image(run.adapter), "imagePullPolicy": "IfNotPresent",
                 "command": ["perl", "/agent/task_agent.pl"], "env": env,
                 "volumeMounts": [{"name": "agent", "mountPath": "/agent", "readOnly": True}]}
    pod = {"restartPolicy": "Never", "nodeSelector": {GENERATOR_LABEL: "true"}, "containers": [container],
           "volumes": [{"name": "agent", "configMap": {"name": f"{NAME}-agent"}}]}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta(run, f"{NAME}-generators-{run.adapter.name}", "generators"),
           "spec": {"completionMode": "Indexed", "completions": run.generators, "parallelism": run.generators,
                    "backoffLimit": 0, "ttlSecondsAfterFinished": 600,
                    "template": {"metadata": {"labels": {"app": f"{NAME}-generator"}}, "spec": pod}}}
    return [agent, job]


def manifests(run: KubeRun) -> list[dict]:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": run.namespace,
                                                                       "labels": {"app.kubernetes.io/part-of": NAME,
                                                                                  COMPONENT: "target"}}}
    return [namespace, *target(run), *generators(run)]


def render(run: KubeRun, out: Path) -> list[Path]:
    """manifests.yaml (every document) and commands.json (what the coordinator hands each index) in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "manifests.yaml", out / "commands.json"]
    written[0].write_text(yaml.safe_dump_all(manifests(run), sort_keys=False, width=120))
    written[1].write_text(json.dumps({"tool": run.adapter.name, "scenario": run.scenario.model_dump(mode="json"),
                                      "generators": run.generators, "token": run.token, "url": run.target_url,
                                      "shares": shares(run), "commands": commands(run)}, indent=2) + "\n")
    return written


def parse(argv: list[str]) -> tuple[KubeRun, Path]:
    parser = argparse.ArgumentParser(prog="python -m harness.suite.kubernetes",
                                     description="render one run as Kubernetes manifests (validated, not applied)")
    parser.add_argument("--tool", required=True, help="one tool id")
    parser.add_argument("--scenario", required=True, metavar="FILE:ID", help="one scenario")
    parser.add_argument("--generators", type=int, default=1, metavar="N", help="tasks of the Indexed Job")
    parser.add_argument("--coordinator", required=True, metavar="HOST:PORT",
                        help="where the pods reach the harness's coordinator")
    parser.add_argument("--out", type=Path, required=True, help="folder for manifests.yaml and commands.json")
    args = parser.parse_args(argv)
    from harness import scenarios
    tools, chosen = registry.select(args.tool), scenarios.select(args.scenario)
    if len(tools) != 1 or len(chosen) != 1:
        raise HarnessError(f"one tool and one scenario per rendering: got {len(tools)} tool(s), {len(chosen)} scenario(s)")
    if args.generators < 1:
        raise HarnessError(f"--generators {args.generators}: at least 1 generator task")
    if ":" not in args.coordinator:
        raise HarnessError(f"--coordinator {args.coordinator}: HOST:PORT")
    check_shares(args.generators, chosen)
    return KubeRun(tools[0], chosen[0], args.generators, args.coordinator, token=secrets.token_hex(8)), args.out


def serve_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.suite.kubernetes serve",
                                     description="the run's coordinator: hands each pod its command, starts them together")
    parser.add_argument("--from", dest="folder", type=Path, required=True, help="the rendering's folder (commands.json)")
    parser.add_argument("--bind", default="0.0.0.0", help="the address to listen on (the pods reach --coordinator)")
    parser.add_argument("--port", type=int, default=None, help="default: the port of the rendering's --coordinator")
    parser.add_argument("--wait", type=float, default=600.0, metavar="S", help="for every pod to start its tool")
    args = parser.parse_args(argv)
    from harness.suite.kube_results import RenderedRun, serve
    rendered = RenderedRun.load(args.folder)
    port = args.port if args.port is not None else _rendered_port(args.folder)
    barrier = serve(rendered, args.folder, args.bind, port, args.wait)
    print(f"barrier: {json.dumps(barrier['barrier'])}")
    return 0


def _rendered_port(folder: Path) -> int:
    for document in yaml.safe_load_all((folder / "manifests.yaml").read_text()):
        if document.get("kind") == "Job":
            env = document["spec"]["template"]["spec"]["containers"][0]["env"]
            return int(next(e["value"] for e in env if e["name"] == "LTH_COORDINATOR").rsplit(":", 1)[1])
    raise HarnessError(f"{folder / 'manifests.yaml'} has no Job: pass --port")


def gather_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.suite.kubernetes gather",
                                     description="a results folder from the Indexed Job's pod logs (kubectl logs)")
    parser.add_argument("--from", dest="folder", type=Path, required=True, help="the rendering's folder (commands.json)")
    parser.add_argument("--logs", type=Path, nargs="+", required=True, help="the pods' logs (kubectl logs --tail=-1)")
    parser.add_argument("--stub-status-before", type=Path, metavar="FILE", help="Nginx's stub_status before the Job")
    parser.add_argument("--stub-status-after", type=Path, metavar="FILE", help="... and after it")
    parser.add_argument("--tool-version", default=None, help="the tool's version in its image (not in the logs)")
    parser.add_argument("--out", type=Path, required=True, help="the results folder to write (new or empty)")
    args = parser.parse_args(argv)
    from harness.suite.kube_results import BARRIER, RenderedRun, gather, server_requests
    if (args.stub_status_before is None) != (args.stub_status_after is None):
        raise HarnessError("--stub-status-before and --stub-status-after go together (the server's count is "
                           "their difference)")
    missing = [str(p) for p in args.logs if not p.is_file()]
    if missing:
        raise HarnessError(f"--logs {missing[0]}: no such file")
    rendered = RenderedRun.load(args.folder)
    barrier_file = args.folder / BARRIER
    barrier = json.loads(barrier_file.read_text()) if barrier_file.is_file() else None
    served = server_requests(args.stub_status_before, args.stub_status_after)
    row = gather(rendered, args.logs, args.out, served, barrier, args.tool_version)
    counted = "not read" if row.server_requests is None else f"{row.server_requests:,}"
    print(f"{args.out}: {row.tool} {row.scenario}, {row.generators} generators: {row.status}, "
          f"{row.requests if row.requests is None else format(row.requests, ',')} requests merged, "
          f"server counted {counted}" + (f" ({row.error})" if row.error else ""))
    return 0


def main(argv: list[str]) -> int:
    """``render`` (the default: the first word may be left out), ``serve`` or ``gather``."""
    commands_by_name = {"serve": serve_command, "gather": gather_command}
    try:
        if argv[:1] and argv[0] in commands_by_name:
            return commands_by_name[argv[0]](argv[1:])
        run, out = parse(argv[1:] if argv[:1] == ["render"] else argv)
        for path in render(run, out):
            print(path)
    except HarnessError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
