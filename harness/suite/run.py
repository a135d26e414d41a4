"""One run: a (scenario, tool, repeat) on every generator the runtime has, from its fresh folder to its row.

``Run.new`` makes the run's folder and record; ``Run.execute`` shapes, verifies, probes, runs the tool and
stores what happened (record.json, each part's RunSpec, execution and latency histogram), then derives the
row (harness/row) from the stored run as `rederive` would read it back. Whatever goes wrong becomes the row's
status and error; only an interrupt escapes.
"""
from __future__ import annotations

import json
import time
import traceback
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from harness.errors import HarnessError
from harness.flows import FLOWS
from harness.network.capture import Capture
from harness.network.shaping import loaded_probe, measured_rtt, proxy_pids, shaped
from harness.row import derive_stored, rtt_ok
from harness.runtimes import Runtime, Session
from harness.scenarios import Scenario
from harness.store.record import Execution, PartRecord, RunRecord, split_fields
from harness.store.results import ResultsFolder
from harness.store.stall import StallRecord
from harness.store.stored import Derived, load_run
from harness.suite import console, stall
from harness.runtimes.together import load_shares
from harness.suite.execution import execute, execute_together, store_latency_log
from harness.targets.file_server import Target, ensure_allowed
from harness.tools import openmodel
from harness.tools.adapter import Declarations, ToolAdapter
from harness.tools.output import RunSpec

PART_DIR = "generator-{index}"   # a part's folder when several generators share a run
OVERTIME_GRACES = 4   # past its grace, a tool still working after its load may go on this many graces more


def grace_s(duration_s: int, override: float | None = None) -> float:
    """How long past its duration a tool may take before it is killed as hung."""
    return override if override is not None else max(30.0, duration_s * 0.5)


@dataclass
class Phases:
    """The wall time of each phase of one run (record.json's phases_s; meta.json's overhead_s is
    every phase but the load): where the harness's own time around the tool goes."""
    seconds: dict[str, float]
    _started: dict[str, float] = field(default_factory=dict)   # a phase timed across callbacks: when it began

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        self.start(name)
        try:
            yield
        finally:
            self.stop(name)

    def start(self, name: str) -> None:
        self._started[name] = time.monotonic()

    def stop(self, name: str) -> None:
        started = self._started.pop(name, None)
        if started is not None:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.monotonic() - started, 3)


@dataclass(frozen=True)
class RunSettings:
    """What every run of a suite shares: the runtime entered, the results folder, and how the runs go."""
    runtime: Runtime
    folder: ResultsFolder
    shaper: str = "none"                  # how a scenario's RTT is made where it needs shaping (netem|toxiproxy)
    grace_s: float | None = None          # --grace (None: grace_s()'s default)
    allow_external_target: bool = False

    def unshaped(self) -> "RunSettings":
        """These settings for a run that never starts: its row says no shaper."""
        return replace(self, shaper="none")


@dataclass(frozen=True)
class PartPlan:
    """One generator's share of a run, decided before it starts."""
    folder: str               # relative to the run's folder ("": the run's folder itself)
    vus: int
    rate_rps: int | None
    per_request: bool         # one of several generators: its latencies are kept for the merge


@dataclass
class Run:
    settings: RunSettings
    adapter: ToolAdapter
    scenario: Scenario
    run_dir: Path
    record: RunRecord
    capture: Capture
    phases: Phases

    @classmethod
    def new(cls, settings: RunSettings, scenario: Scenario, adapter: ToolAdapter, repeat: int = 1,
            capture: Capture | None = None) -> "Run":
        """The run's fresh folder and its record, before anything has run."""
        folder, runtime = settings.folder, settings.runtime
        run_dir = folder.fresh_run_dir(scenario.id, adapter.name, repeat)
        cpus_target, cpus_tool = runtime.cpu_columns()
        record = RunRecord(tool=adapter.name, runtime=runtime.name, scenario=scenario.model_dump(), repeat=repeat,
                           started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                           run_dir=str(run_dir.relative_to(folder.path)),
                           shaper=settings.shaper if scenario.needs_shaping else "none", cpus_target=cpus_target,
                           cpus_tool=cpus_tool, split=split_fields(runtime.split),
                           declarations=Declarations.of(adapter).to_record())
        return cls(settings, adapter, scenario, run_dir, record, capture or Capture(enabled=False),
                   Phases(record.phases_s))

    @property
    def runtime(self) -> Runtime:
        return self.settings.runtime

    def unrunnable(self, reason: str, status: str = "failed") -> Derived:
        """The row of a run that cannot start here (``status``: failed, or unsupported), saying why."""
        self.record.unrunnable, self.record.unrunnable_status = reason, status
        return self._stored_and_derived()

    def execute(self) -> Derived:
        """The run on every generator the runtime has (one, or several whose parts are merged), stored and derived."""
        record, phases = self.record, self.phases
        record.grace_s = grace_s(self.scenario.duration_s, self.settings.grace_s) + self.adapter.wind_down_s(
            self.scenario.protocol)
        with phases.timed("target_facts"):
            record.target = self.runtime.target_facts() or None
        try:
            with ExitStack() as stack:
                # Callbacks run last-in first-out: "stop" starts before the sessions end and stops after.
                stack.callback(phases.stop, "stop")
                with phases.timed("start"):
                    sessions = stack.enter_context(self.runtime.parts(self.adapter))
                stack.callback(phases.start, "stop")
                self._on(sessions)
                with phases.timed("logs"):
                    sessions[0].save_logs(self.run_dir)
        except HarnessError as exc:
            record.error = str(exc)
        except Exception as exc:  # noqa: BLE001 - a bug or crash in one run must not sink the suite
            record.error, record.traceback = f"harness error: {type(exc).__name__}: {exc}", traceback.format_exc()
        record.capture = _capture_summary(self.capture)
        return self._stored_and_derived()

    def _plans(self, generators: int) -> list[PartPlan]:
        several = generators > 1
        return [PartPlan(PART_DIR.format(index=i + 1) if several else "", share.vus, share.rate_rps, several)
                for i, share in enumerate(load_shares(self.scenario, self.adapter, generators))]

    def _on(self, sessions: list[Session]) -> None:
        """Shape, verify and probe from every generator, run the tool on all of them at once, and note every fact
        into the record."""
        plans = self._plans(len(sessions))
        for session in sessions:   # before the harness's own traffic too (the calibration's probes); the shaped one in _part
            ensure_allowed(session.target.host, self.settings.allow_external_target, session.explicit_target)
        with ExitStack() as stack:
            stack.callback(self.phases.stop, "unshape")
            with self.phases.timed("shape"):
                targets = [stack.enter_context(self._shaped(session, plan)) for session, plan in zip(sessions, plans)]
            stack.callback(self.phases.start, "unshape")
            with self.phases.timed("probe"):
                for session, target, plan in zip(sessions, targets, plans):   # a part that fails leaves those before
                    self.record.parts.append(self._part(session, target, plan))
            self.record.proxy_beside_tool = self.record.shaper == "toxiproxy" and not sessions[0].proxy_beside_target
            specs = [self._spec(part) for part in self.record.parts]
            self._counted(sessions, targets[0], specs)

    def _shaped(self, session: Session, plan: PartPlan) -> AbstractContextManager[Target]:
        (self.run_dir / plan.folder).mkdir(exist_ok=True)
        return shaped(session, self.record.shaper, self.scenario.rtt_ms, plan.vus, self.run_dir / plan.folder)

    def _spec(self, part: PartRecord) -> RunSpec:
        """The part's RunSpec, made once here from the typed scenario and stored with the part (the derivation
        reads it back), with the command it gives."""
        scenario = self.scenario
        spec = RunSpec(url=part.url, vus=part.vus, duration_s=scenario.duration_s, out_dir=self.run_dir / part.folder,
                       cpus=part.cpus, rate_rps=part.rate_rps, per_request=part.per_request,
                       keepalive=scenario.keepalive, protocol=scenario.protocol, streams=scenario.streams,
                       flow=FLOWS.get(scenario.flow or ""), relogin_every=scenario.relogin_every)
        part.spec, part.command = spec.to_record(), self.adapter.command(spec)
        return spec

    def _counted(self, sessions: list[Session], target: Target, specs: list[RunSpec]) -> None:
        """The load, with the target's counts around it, and what each part left."""
        record = self.record
        before, logged_before, api_before = target.counters(), target.protocol_log_size(), target.api_log_size()
        with self.phases.timed("load"):
            executions, stalled = self._load(sessions, target, specs)
        # stub_status counts its own request and connection: `after` includes one of each beyond `before`.
        after = target.counters()
        record.server_requests = after.requests - before.requests - 1
        record.server_connections = after.accepts - before.accepts - 1
        record.server_off_protocol = target.off_protocol_requests(logged_before)
        api = target.api_counts(api_before)
        record.server_api = asdict(api) if api is not None else None
        record.stall = stalled.to_dict() if stalled is not None else None
        for part, spec, execution in zip(record.parts, specs, executions):
            part.executed = not isinstance(execution, BaseException)
            if not part.executed:
                part.error = f"{type(execution).__name__}: {execution}"
            elif execution.exit_code == 0 and not execution.timed_out:
                part.histogram = store_latency_log(self.adapter, spec, execution)

    def _load(self, sessions: list[Session], target: Target, specs: list[RunSpec]
              ) -> tuple[list[Execution | BaseException], StallRecord | None]:
        """The tool on every generator at once, with the stall injected where the scenario asks; one generator's
        run is also captured and probed under the load (the shaper's RTT)."""
        record, scenario, adapter, session = self.record, self.scenario, self.adapter, sessions[0]
        deadline_s, overtime_s = scenario.duration_s + record.grace_s, OVERTIME_GRACES * record.grace_s
        with stall.injected(session.target_pids, scenario.stall_at_s, scenario.stall_ms, session.remote_freeze) as stalled:
            if len(sessions) > 1:   # the wire capture records one generator's link: not here yet
                return execute_together([(s, p.command, spec.out_dir) for s, p, spec in zip(sessions, record.parts, specs)],
                                        deadline_s, adapter.sampled_process, overtime_s), stalled
            others = {"nginx": session.target_pids, **({"proxy": session.proxy_pids} if session.proxy_pids() else {}),
                      **({"toxiproxy": proxy_pids} if record.shaper == "toxiproxy" and session.proxy_beside_target else {})}
            rate = openmodel.rate_for(scenario, adapter)
            paced = (rate, adapter.rate_schedule) if rate else None
            with self.capture.recording(session, target, self.run_dir, paced), \
                    loaded_probe(session, target, record.shaper, scenario.rtt_ms, scenario.duration_s) as under_load:
                executions = [execute(session, record.parts[0].command, self.run_dir, deadline_s,
                                      adapter.sampled_process, others, overtime_s)]
            record.shaper_load = under_load
        return executions, stalled

    def _part(self, session: Session, target: Target, plan: PartPlan) -> PartRecord:
        ensure_allowed(target.host, self.settings.allow_external_target, session.explicit_target)
        part = PartRecord(folder=plan.folder, host=session.where, vus=plan.vus, url=target.url, cpus=session.cpus,
                          rate_rps=plan.rate_rps, per_request=plan.per_request,
                          memory_check_name=session.memory_check_name, target_cores=session.target_cores,
                          containers=getattr(session, "containers", None))
        part.tool_version = _version(session, self.adapter)
        session.verify(target)
        shaping = self.run_dir / plan.folder / "shaping.json"
        part.shaping = json.loads(shaping.read_text()) if shaping.is_file() else None
        rtt_ms = self.scenario.rtt_ms
        part.rtt_measured_ms = measured_rtt(session, target, rtt_ms, part.shaping)
        if not rtt_ok(part.rtt_measured_ms, rtt_ms):
            console.rtt_missed(part.rtt_measured_ms, session.where, rtt_ms)
        return part

    def _stored_and_derived(self) -> Derived:
        """record.json saved, the run read back as `rederive` reads it, its row derived and meta.json written."""
        self.record.save(self.run_dir)
        derived = derive_stored(load_run(self.record, self.run_dir), self.adapter)
        derived.write()
        return derived


def _capture_summary(capture: Capture) -> dict | None:
    """The capture's summary for the record; a failure reading it (a corrupted pcap, a bug) is the row's note,
    never the suite's end."""
    try:
        return capture.summary()
    except Exception as exc:  # noqa: BLE001 - the run's figures stand without the wire's
        return {"error": f"harness error: {type(exc).__name__}: {exc}"}


_VERSIONS: dict[tuple[str, str, str], str] = {}


def _version(session: Session, adapter: ToolAdapter) -> str:
    """The tool's version where it runs, asked once per suite (a JVM tool's answer takes a second or more)."""
    key = (type(session).__name__, session.where, adapter.name)
    if key not in _VERSIONS:
        _VERSIONS[key] = session.version(adapter)
    return _VERSIONS[key]
