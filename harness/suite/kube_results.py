"""The harness's side of a Kubernetes run (harness/suite/kubernetes.py renders it; docs/engines.md has the kubectl
steps): ``serve`` is the run's coordinator outside any runtime (the commands of commands.json, the start barrier,
barrier.json), and ``gather`` turns what `kubectl logs` gives of the Indexed Job's pods (each task's results block:
task_results.py) into a results folder laid out as a Swarm or ssh run's (``<scenario>/<tool>/generator-<i>/``,
record.json, runs.csv), derived by harness/row as the runner derives it: one merged row, each part's meta.json
beside it, the server's count from two stub_status pages read before and after the run.

    python -m harness.suite.kubernetes serve --from k8s/ --bind 0.0.0.0
    python -m harness.suite.kubernetes gather --from k8s/ --logs k8s/logs/*.log \\
        --stub-status-before k8s/before.txt --stub-status-after k8s/after.txt --out results/k8s-wrk
"""
from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from harness.errors import HarnessError
from harness.row import derive_stored
from harness.runtimes.task import READY_TIMEOUT_S, Coordinator, Payload, TaskSession
from harness.runtimes.task_results import LoggedTask, read_logs, write_part
from harness.store.record import Execution, PartRecord, RunRecord, split_fields
from harness.store.results import ENVIRONMENT_JSON, ResultsFolder, RunRow
from harness.store.stored import load_run
from harness.suite.execution import store_latency_log
from harness.targets.file_server import stub_status_counters
from harness.cpus import CpuSplit
from harness.tools import registry
from harness.tools.adapter import ToolAdapter
from harness.tools.output import RunSpec, ToolOutput

COMMANDS = "commands.json"
BARRIER = "barrier.json"
PART_FOLDER = "generator-{index}"    # as the runner names a part's folder (suite/runner.py PART_DIR)
RUNTIME = "kubernetes"


@dataclass(frozen=True)
class RenderedRun:
    """commands.json as the rendering wrote it: what each index runs, and the run's setup."""
    tool: str
    scenario: dict             # Scenario.model_dump()
    generators: int
    token: str
    url: str
    shares: list[dict]         # per index: vus, rate_rps
    commands: list[list[str]]

    @classmethod
    def load(cls, folder: Path) -> "RenderedRun":
        path = folder / COMMANDS
        try:
            data = json.loads(path.read_text())
            return cls(**{name: data[name] for name in cls.__dataclass_fields__})
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise HarnessError(f"{path}: not a rendering of this harness ({type(exc).__name__}: {exc}); render it "
                               "again with python -m harness.suite.kubernetes") from None

    def adapter(self) -> ToolAdapter:
        return registry.select(self.tool)[0]


# --- serve: the coordinator, outside a runtime -------------------------------------------------------------------
def serve(rendered: RenderedRun, folder: Path, bind: str, port: int, wait_s: float) -> dict:
    """Hands each task its command, releases them together, waits for every tool's end; barrier.json in
    ``folder`` (each task's ready and start times on this machine's clock). The results come from the logs."""
    from harness.runtimes.generator import bundle
    data = bundle([rendered.adapter()])
    try:
        coordinator = Coordinator(bind, [Payload(data, argv) for argv in rendered.commands], port=port,
                                  token=rendered.token)
    except OSError as exc:
        raise HarnessError(f"the coordinator cannot listen on {bind}:{port} ({exc.strerror or exc}): pass "
                           "another --bind or --port, and render again with that --coordinator") from None
    print(f"coordinator listening on {coordinator.address} for {rendered.generators} task(s)", flush=True)
    try:
        states = [coordinator.wait_started(i, wait_s) for i in range(rendered.generators)]
        print(f"all {len(states)} task(s) started, spread {coordinator.spread_s()} s", flush=True)
        for state in states:
            if not state.done.wait(rendered.scenario["duration_s"] + READY_TIMEOUT_S):
                raise HarnessError(f"task {state.index + 1} did not end within its duration + "
                                   f"{READY_TIMEOUT_S:.0f} s")
    finally:
        coordinator.close()
    barrier = {"barrier": coordinator.barrier(), "tasks": [state.record() for state in coordinator.tasks]}
    (folder / BARRIER).write_text(json.dumps(barrier, indent=2) + "\n")
    return barrier


# --- gather: the pods' logs into a results folder -----------------------------------------------------------------
def stub_status_requests(path: Path) -> int:
    """Nginx's request total from a saved stub_status page (harness/targets/file_server.py's reading)."""
    counters = stub_status_counters(path.read_text(errors="replace") if path.is_file() else "")
    if counters is None:
        raise HarnessError(f"{path}: not an Nginx stub_status page (curl -s http://127.0.0.1:8080/nginx_status "
                           "through kubectl port-forward)")
    return counters.requests


def server_requests(before: Path | None, after: Path | None) -> int | None:
    """The requests Nginx served between the two pages, less the second page's own request (as the runner)."""
    if before is None or after is None:
        return None
    return stub_status_requests(after) - stub_status_requests(before) - 1


def _part(rendered: RenderedRun, adapter: ToolAdapter, task: LoggedTask, run_dir: Path, barrier: dict | None,
          tool_version: str | None) -> PartRecord:
    folder = PART_FOLDER.format(index=task.index + 1)
    share = rendered.shares[task.index]
    seen = {**barrier["barrier"], "task": barrier["tasks"][task.index]} if barrier else None
    execution = write_part(task, run_dir / folder, seen)
    spec = RunSpec(url=rendered.url, vus=share["vus"], duration_s=rendered.scenario["duration_s"],
                   out_dir=run_dir / folder, cpus=1, rate_rps=share["rate_rps"], per_request=rendered.generators > 1,
                   keepalive=rendered.scenario.get("keepalive", True),
                   protocol=rendered.scenario.get("protocol", "http/1.1"), streams=rendered.scenario.get("streams", 1))
    return PartRecord(folder=folder, host=f"{task.node} (pod {task.task})", vus=share["vus"], url=rendered.url,
                      rate_rps=share["rate_rps"], per_request=rendered.generators > 1,
                      command=rendered.commands[task.index], tool_version=tool_version,
                      memory_check_name=TaskSession.memory_check_name, executed=True,
                      histogram=store_latency_log(adapter, spec, execution) if execution.exit_code == 0 else None)


def _record(rendered: RenderedRun, tasks: list[LoggedTask], run_dir: str, served: int | None) -> RunRecord:
    started = datetime.fromtimestamp(min(t.launched_at for t in tasks), timezone.utc)
    split = CpuSplit((), reason="engine tasks: every CPU of their node")
    return RunRecord(tool=rendered.tool, runtime=RUNTIME, scenario=rendered.scenario, repeat=1,
                     started_at=started.isoformat(timespec="seconds"), run_dir=run_dir, shaper="none",
                     cpus_target="", cpus_tool="", split=split_fields(split), server_requests=served)


def _fresh(out: Path) -> None:
    if out.exists() and any(out.iterdir()):
        raise HarnessError(f"--out {out} is not empty: gather into a new folder (rederive an existing one)")


def gather(rendered: RenderedRun, logs: list[Path], out: Path, served: int | None,
           barrier: dict | None = None, tool_version: str | None = None) -> RunRow:
    """The results folder ``out`` from the pods' logs: every part, record.json, meta.json, runs.csv."""
    tasks = read_logs(logs)
    if len(tasks) != rendered.generators:
        raise HarnessError(f"the logs hold {len(tasks)} task(s), the rendering {rendered.generators}: gather the "
                           "logs of this rendering's Job")
    _fresh(out)
    partial = out.parent / f".{out.name}.gathering"     # renamed to ``out`` once whole: nothing half-written stays
    shutil.rmtree(partial, ignore_errors=True)
    try:
        row = _write(rendered, tasks, partial, served, barrier, tool_version)
        partial.rename(out)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return row


def _write(rendered: RenderedRun, tasks: list[LoggedTask], out: Path, served: int | None, barrier: dict | None,
           tool_version: str | None) -> RunRow:
    adapter = rendered.adapter()
    relative = f"{rendered.scenario['id']}/{rendered.tool}"
    run_dir = out / relative
    run_dir.mkdir(parents=True)
    record = _record(rendered, tasks, relative, served)
    record.parts = [_part(rendered, adapter, task, run_dir, barrier, tool_version) for task in tasks]
    record.save(run_dir)
    derived = derive_stored(load_run(record, run_dir), adapter)
    derived.write()
    (out / ENVIRONMENT_JSON).write_text(json.dumps({"runtime": RUNTIME, "generators": rendered.generators,
                                                    "gathered_from": "the Indexed Job's pod logs (kubectl logs)",
                                                    **({"barrier": barrier["barrier"]} if barrier else {})},
                                                   indent=2) + "\n")
    ResultsFolder(out).append(derived.row)
    return derived.row
