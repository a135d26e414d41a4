"""Three fuzzers (issue 54), seeded, each a few seconds in the unit tier (`make fuzz` runs them longer:
LTH_FUZZ_INPUTS inputs each, LTH_FUZZ_SEED; tests/fuzzing.py):

- every tool's parser, as the harness calls it (ToolAdapter.parsed), on its captured real outputs
  (tests/fixtures/<tool>/<case>/), one file at a time mutated or cut short (a tool killed mid-write): metrics or
  a ParseError, never another exception; and metrics that keep the invariants (harness/store/figures.py
  figure_problems);
- the capture reader on the real pcaps (tests/fixtures/**/*.pcap) mutated: a summary or a CaptureError, and
  no negative span, latency or handshake in a summary;
- the scenario loader on the repository's scenario files mutated, and on scenarios of the refusals issue 54
  added: a list of scenarios or its one-line HarnessError, and no scenario it must refuse accepted.

Each prints its tally (inputs, crashes, wrong acceptances) and fails on any crash or wrong acceptance."""
from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, URL
from fuzzing import SEED, Tally, budget, mutated, truncations
from harness.errors import HarnessError
from harness.flows import FLOWS
from harness.network import openers, wire
from harness.scenarios import load_file
from harness.store.figures import figure_problems
from harness.tools.adapter import ToolAdapter
from harness.tools.output import ParseError, RunSpec, ToolOutput
from harness.tools.registry import discover

ADAPTERS = discover()
TEXT_FILES = ("stdout.txt", "stderr.txt")


# --- every parser ------------------------------------------------------------------------------------------------
@dataclass
class Case:
    """A captured run, copied where its files may be changed: the adapter that parses it and the spec it ran."""
    name: str
    adapter: ToolAdapter
    folder: Path
    spec_fields: dict
    launched_at: float

    def files(self) -> list[Path]:
        """The files the parser may read: the output streams and the tool's own files (not the harness's)."""
        harness_files = {"meta.json", "samples.csv", "record.json", "execution.json"}
        return sorted(p for p in self.folder.rglob("*")
                      if p.is_file() and p.name not in harness_files and not p.name.startswith("samples-"))

    def output(self) -> ToolOutput:
        spec = RunSpec(out_dir=self.folder, **self.spec_fields)
        read = lambda name: (self.folder / name).read_bytes().decode(errors="replace")   # noqa: E731 - as load_execution
        return ToolOutput(spec, read("stdout.txt"), read("stderr.txt"), 0, self.launched_at)


def captured_cases(scratch: Path) -> list[Case]:
    found = []
    for meta_path in sorted(FIXTURES.glob("*/*/meta.json")):
        meta = json.loads(meta_path.read_text())
        tool = meta["row"]["tool"]
        if tool not in ADAPTERS or not (REPO / "tools" / meta_path.parent.parent.name).is_dir() \
                or not all((meta_path.parent / name).is_file() for name in TEXT_FILES):
            continue
        scenario = {**meta["row"], **meta.get("scenario", {})}
        url = URL.replace("http://", "https://") if scenario.get("tls") or scenario.get("protocol") in ("h2", "h3") else URL
        fields = {"url": url, "vus": scenario["vus"], "duration_s": scenario["duration_s"], "cpus": 2,
                  "rate_rps": scenario.get("rate_rps"), "keepalive": scenario.get("keepalive", True),
                  "protocol": scenario.get("protocol") or "http/1.1", "streams": scenario.get("streams") or 1,
                  "flow": FLOWS.get(scenario.get("flow") or ""), "relogin_every": scenario.get("relogin_every")}
        name = f"{meta_path.parent.parent.name}/{meta_path.parent.name}"
        folder = shutil.copytree(meta_path.parent, scratch / name.replace("/", "-"))
        found.append(Case(name, ADAPTERS[tool], folder, fields, meta.get("launched_at") or 0.0))
    return found


def parsed_or_refused(case: Case, tally: Tally, what: str) -> None:
    """One parse of the case as its files are now, tallied."""
    tally.inputs += 1
    try:
        metrics = case.adapter.parsed(case.output())
    except ParseError:
        return
    except Exception as exc:  # noqa: BLE001 - the fuzzer's finding
        tally.crashes.append(f"{case.name} {what}: {type(exc).__name__}: {str(exc)[:120]}")
        return
    if problems := figure_problems(metrics):
        tally.wrong.append(f"{case.name} {what}: {problems[0]}")


def fuzz_parsers(scratch: Path, inputs: int, seed: int = SEED) -> tuple[Tally, Tally]:
    """(mutations, truncations): ``inputs`` mutated files over every case, round robin, and each case's files
    cut at points spread over their length (2 in the unit tier, 30 from 6,000 inputs)."""
    rng, cases = random.Random(seed), captured_cases(scratch)
    mutations, cut = Tally(), Tally()
    for index in range(inputs):
        case = cases[index % len(cases)]
        path = rng.choice(case.files())
        original = path.read_bytes()
        path.write_bytes(mutated(original, rng))
        parsed_or_refused(case, mutations, f"{path.name} mutated")
        path.write_bytes(original)
    pairs = [(case, path) for case in cases for path in case.files()]
    points = min(30, max(2, inputs // 200))
    for case, path in pairs:
        original = path.read_bytes()
        for short in truncations(original, points):
            path.write_bytes(short)
            parsed_or_refused(case, cut, f"{path.name} cut at {len(short)} of {len(original)} bytes")
        path.write_bytes(original)
    return mutations, cut


def test_every_parser_gives_a_row_or_a_parse_error_and_keeps_the_invariants(tmp_path, capsys):
    mutations, cut = fuzz_parsers(tmp_path, budget(250))
    with capsys.disabled():
        print(f"\n{mutations.line('parsers, mutated')}\n{cut.line('parsers, cut short')}")
    assert mutations.crashes + cut.crashes == [] and mutations.wrong + cut.wrong == []


def test_the_captured_outputs_parse_with_no_invariant_broken(tmp_path):
    """The fuzzer's starting points are sound: every real output parses and keeps the invariants."""
    tally = Tally()
    for case in captured_cases(tmp_path):
        parsed_or_refused(case, tally, "as captured")
    assert tally.crashes == [] and tally.wrong == [] and tally.inputs >= 40


# --- the capture reader ------------------------------------------------------------------------------------------
PCAPS = sorted(FIXTURES.glob("**/*.pcap"))
# The load's port of each capture: the wire fixtures' ports, the openers' h2c (81) and TLS (443) ones.
PORTS = {"capture.pcap": 8080, "lth-capture.pcap": 80}


def port_of(pcap: Path) -> int:
    return PORTS.get(pcap.name, 81 if "h2c" in pcap.name else 443)


def fuzz_capture(scratch: Path, inputs: int, seed: int = SEED) -> Tally:
    rng, tally, path = random.Random(seed), Tally(), scratch / "fuzzed.pcap"
    readers = {"summarise": wire.summarise, "request_send_times": wire.request_send_times, "openers": openers.read}
    for index in range(inputs):
        source = PCAPS[index % len(PCAPS)]
        path.write_bytes(mutated(source.read_bytes(), rng))
        for name, read in readers.items():
            tally.inputs += 1
            try:
                result = read(path, port_of(source))
            except ValueError:        # wire.CaptureError, and a file too short to be a pcap
                continue
            except Exception as exc:  # noqa: BLE001 - the fuzzer's finding
                tally.crashes.append(f"{name} {source.name}: {type(exc).__name__}: {str(exc)[:120]}")
                continue
            if name == "summarise":
                described = result.describe()
                below = [k for k in ("span_s", "p50_ms", "p99_ms", "min_ms", "max_ms", "connect_p50_ms")
                         if described[k] is not None and not described[k] >= 0]
                if below:
                    tally.wrong.append(f"{name} {source.name}: {below[0]} {described[below[0]]}")
    return tally


def test_the_capture_reader_gives_a_summary_or_a_capture_error(tmp_path, capsys):
    tally = fuzz_capture(tmp_path, budget(600))
    with capsys.disabled():
        print(f"\n{tally.line('capture reader')}")
    assert tally.crashes == [] and tally.wrong == []


# --- the scenario loader -----------------------------------------------------------------------------------------
SCENARIO_FILES = sorted([*REPO.glob("scenarios/*.yaml"), *FIXTURES.glob("bad-input/*.yaml")])
# What the loader must refuse, however it is written (issue 54): a backend delay with a flow (the delay is on the
# static file only), a delay of "-0", and an id the report reads as a capacity step.
MUST_REFUSE = [
    "scenarios:\n  - {id: a, vus: 2, rtt_ms: 0.1, duration_s: 5, target: api, flow: login, backend_delay_ms: '50'}\n",
    "scenarios:\n  - {id: a, vus: 2, rtt_ms: 0.1, duration_s: 5, backend_delay_ms: '-0'}\n",
    "scenarios:\n  - {id: a, vus: 2, rtt_ms: 0.1, duration_s: 5, backend_delay_ms: '-0..5'}\n",
    "scenarios:\n  - {id: capacity-x, vus: 2, rtt_ms: 0.1, duration_s: 5}\n",
    "scenarios:\n  - {id: Capacity-rate100, vus: 2, rtt_ms: 0.1, duration_s: 5}\n",
]


def wrongly_accepted(scenarios: list) -> str | None:
    """What an accepted scenario must never be (None: nothing)."""
    for scenario in scenarios:
        if scenario.id.lower().startswith("capacity-"):
            return f"{scenario.id}: an id the report reads as a capacity step"
        if scenario.flow and scenario.backend_delay_ms is not None:
            return f"{scenario.id}: a backend delay with flow {scenario.flow}"
        if scenario.backend_delay_ms is not None and scenario.backend_delay_ms.lstrip().startswith("-"):
            return f"{scenario.id}: backend_delay_ms {scenario.backend_delay_ms!r}"
    return None


def fuzz_scenarios(scratch: Path, inputs: int, seed: int = SEED) -> Tally:
    rng, tally, path = random.Random(seed), Tally(), scratch / "fuzzed.yaml"
    sources = [p.read_bytes() for p in SCENARIO_FILES] + [text.encode() for text in MUST_REFUSE]
    for index in range(inputs + len(MUST_REFUSE)):
        fixed = index - inputs
        path.write_bytes(MUST_REFUSE[fixed].encode() if fixed >= 0 else mutated(sources[index % len(sources)], rng))
        tally.inputs += 1
        try:
            scenarios = load_file(path)
        except HarnessError as exc:
            if "\n" in str(exc):
                tally.crashes.append(f"a HarnessError of {str(exc).count(chr(10)) + 1} lines")
            continue
        except Exception as exc:  # noqa: BLE001 - the fuzzer's finding
            tally.crashes.append(f"{type(exc).__name__}: {str(exc)[:120]}")
            continue
        if problem := wrongly_accepted(scenarios):
            tally.wrong.append(problem)
    return tally


def test_the_scenario_loader_gives_scenarios_or_one_line_and_refuses_what_it_must(tmp_path, capsys):
    tally = fuzz_scenarios(tmp_path, budget(600))
    with capsys.disabled():
        print(f"\n{tally.line('scenario loader')}")
    assert tally.crashes == [] and tally.wrong == []


@pytest.mark.parametrize("text", MUST_REFUSE)
def test_each_refusal_the_scenario_fuzzer_checks_is_one_line(tmp_path, text):
    (tmp_path / "s.yaml").write_text(text)
    with pytest.raises(HarnessError) as refused:
        load_file(tmp_path / "s.yaml")
    assert "\n" not in str(refused.value)
