"""drill adapter: the command and its wrapper, and the parser on a real run
(tests/fixtures/drill/vu20-host/, copied from a 5-second harness run folder: run.sh's calibration
notes, the --stats summary, the window marks and meta.json with Nginx's count).

Parsed figures are checked against drill's own per-step summary lines (the parser reads the global
ones), the iteration count run.sh gave it, and Nginx's count (real run + calibration runs). The login flow:
tests/fixtures/drill/flow-vu20/ (scenarios/flows.yaml flow-vu20-rtt0.1, host, 3 s: the plan run.sh wrote, the
--stats summary with its per-step blocks, and meta.json with the API's counts).
"""
import json
import re
import shutil
from pathlib import Path

import pytest

from harness import TOOLS_DIR
from harness.flows import LOGIN
from harness.tools.output import ParseError, RunSpec, ToolOutput
from harness.tools.registry import discover
from conftest import TLS_URL, captured_run, command_spec

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "drill" / "vu20-host"
FLOW_FIXTURE = FIXTURE.parent / "flow-vu20"
DRILL = discover()["drill"]


def load(folder: Path) -> tuple[ToolOutput, dict]:
    return captured_run(folder, launched_at=json.loads((folder / "meta.json").read_text())["launched_at"])


def test_command_runs_the_quiet_wrapper_with_base_and_path(tmp_path):
    spec = command_spec(tmp_path)
    assert DRILL.command(spec) == [str(TOOLS_DIR / "drill" / "run.sh"), str(tmp_path), "http://198.18.0.2:80",
                                   "/style.css", "20", "5"]
    run = (TOOLS_DIR / "drill" / "run.sh").read_text()
    assert "--quiet --stats --nanosec" in run and DRILL.sampled_process == "drill"


def test_keepalive_off_and_tls_are_run_sh_options(tmp_path):
    argv = DRILL.command(command_spec(tmp_path, url=TLS_URL, keepalive=False))
    assert argv == [str(TOOLS_DIR / "drill" / "run.sh"), str(tmp_path), "https://198.18.0.2:443", "/style.css", "20", "5",
                    "--close", "--no-check-certificate"]
    run = (TOOLS_DIR / "drill" / "run.sh").read_text()
    # --close adds the header to the plan's request; the drill option reaches the calibration and the real run.
    assert "--close) HEADERS=$'\\n      headers:\\n        Connection: close'" in run
    assert "url: '$URLPATH'$HEADERS" in run and run.count('"${DRILL_OPTIONS[@]}"') == 2


def test_version_is_read_from_drill_version_output():
    assert DRILL.parse_version("drill 0.9.1\n") == "0.9.1"


def step_line(text: str, label: str) -> float:
    return float(re.search(rf"^lth\s+{re.escape(label)}\s+([\d.]+)", text, re.MULTILINE).group(1))


def test_parser_agrees_with_drills_step_summary_and_nginx():
    output, meta = load(FIXTURE)
    row, metrics = meta["row"], DRILL.parse(output)
    stats = (FIXTURE / "drill-stats.txt").read_text()
    iterations = int(re.search(r"iterations: (\d+)", (FIXTURE / "benchmark.yml").read_text()).group(1))
    assert metrics.requests == step_line(stats, "Total requests") == iterations
    assert metrics.errors == step_line(stats, "Failed requests") == 0
    assert metrics.lat_p50_ms == step_line(stats, "Median time per request") / 1e6
    assert metrics.lat_mean_ms == step_line(stats, "Average time per request") / 1e6
    assert metrics.lat_p99_ms == step_line(stats, "99.0'th percentile") / 1e6
    assert metrics.lat_max_ms == step_line(stats, "Max time per request") / 1e6
    assert metrics.lat_min_ms is None and metrics.lat_p95_ms is None
    # drill's own "Time taken" (1 decimal) lies within run.sh's marks around the process.
    taken = float(re.search(r"^Time taken for tests\s+([\d.]+)", stats, re.MULTILINE).group(1))
    assert taken - 0.05 <= metrics.measured_s <= taken + 0.2
    assert metrics.rps == pytest.approx(metrics.requests / metrics.measured_s)
    # Nginx counted the real run and the calibration runs, nothing else.
    calibration = sum(int(l.split()[1]) for l in (FIXTURE / "drill-calibration.txt").read_text().splitlines())
    assert row["server_requests"] == metrics.requests + calibration
    assert metrics.notes == [f"Nginx's count includes the {calibration} requests of the calibration runs "
                             "before the load window"]
    # The load window starts after the calibration runs.
    assert 0 < metrics.load_start_s < row["duration_s"]
    for name in ("requests", "errors", "rps", "lat_p50_ms", "lat_p99_ms", "lat_max_ms"):
        assert getattr(metrics, name) == pytest.approx(row[name]), name


def test_unfinished_run_or_missing_marks_are_parse_errors(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(FIXTURE, folder)
    output, _ = load(folder)
    (folder / "drill-window.txt").write_text("start 100.0\n")
    with pytest.raises(ParseError, match="start/end"):
        DRILL.parse(output)
    (folder / "drill-stats.txt").write_text("Concurrency 20\nIterations 40578\n")
    with pytest.raises(ParseError, match="no --stats summary"):
        DRILL.parse(output)
    (folder / "drill-stats.txt").unlink()
    with pytest.raises(ParseError, match="missing"):
        DRILL.parse(output)


# --- the login flow (issue 37) ------------------------------------------------------------------------------
def flow_argv(tmp_path: Path, relogin_every: int | None = None, url: str = "http://198.18.0.2:80/style.css") -> list[str]:
    return DRILL.command(RunSpec(url=url, vus=20, duration_s=5, out_dir=tmp_path, cpus=2, flow=LOGIN,
                                 relogin_every=relogin_every))


def test_flow_command_passes_the_flow_to_run_sh(tmp_path):
    flow = ["--flow", "/api/auth/login", '{"username":"lth-user","password":"lth-password"}', "application/json",
            "token", "/api/contact?size=20&page=0", "Authorization"]
    # The plain path stays: run.sh's calibration runs GET it (the API would count their logins as the VUs').
    assert flow_argv(tmp_path) == [str(TOOLS_DIR / "drill" / "run.sh"), str(tmp_path), "http://198.18.0.2:80",
                                   "/style.css", "20", "5", *flow, "0"]
    assert flow_argv(tmp_path, relogin_every=10, url=TLS_URL)[3:] == ["/style.css", "20", "5", "--no-check-certificate",
                                                                     *flow, "10"]
    assert "--flow" not in DRILL.command(command_spec(tmp_path))


def test_run_sh_writes_the_flow_in_drills_plan_idiom():
    run = (TOOLS_DIR / "drill" / "run.sh").read_text()
    assert "    assign: login" in run and "'{{ login.body.$TOKEN_FIELD }}'" in run and "with_items_range:" in run
    assert "  - name: login" in run and "  - name: api_get" in run
    # Once per VU: VUS iterations (one session each); relogin N: iterations of one login and N GETs.
    assert 'flow_plan "$OUT/benchmark.yml" "$VUS" "$gets"' in run
    assert 'flow_plan "$OUT/benchmark.yml" "$total" "$RELOGIN_EVERY"' in run
    plan = (FLOW_FIXTURE / "benchmark.yml").read_text()
    assert "        'Authorization': '{{ login.body.token }}'" in plan and "iterations: 20\n" in plan


def test_flow_run_totals_and_per_step_figures():
    output, meta = load(FLOW_FIXTURE)
    row, metrics = meta["row"], DRILL.parse(output)
    assert row["flow"] == "login" and row["relogin_every"] is None and row["status"] == "ok"
    stats = (FLOW_FIXTURE / "drill-stats.txt").read_text()

    def step(name: str, label: str) -> float:
        return float(re.search(rf"^{name}\s+{re.escape(label)}\s+([\d.]+)", stats, re.MULTILINE).group(1))

    logins, gets = step("login", "Total requests"), step("api_get", "Total requests")
    gets_per_vu = int(re.search(r"stop: (\d+)", (FLOW_FIXTURE / "benchmark.yml").read_text()).group(1))
    # Every VU (iteration) logged in once and sent its GETs; the API counted the same, nothing refused.
    assert logins == row["server_logins"] == row["vus"] == 20
    assert gets == row["server_api_gets"] == 20 * gets_per_vu
    assert row["server_logins_refused"] == row["server_api_gets_refused"] == 0
    # The totals are drill's global lines, over both steps.
    assert metrics.requests == logins + gets == step_line_global(stats, "Total requests") == row["requests"]
    assert metrics.errors == 0
    assert metrics.lat_p50_ms == step_line_global(stats, "Median time per request") / 1e6
    for name, column in (("login", "lat_login"), ("api_get", "lat_api_get")):
        assert getattr(metrics, f"{column}_p50_ms") == step(name, "Median time per request") / 1e6 == row[f"{column}_p50_ms"]
        assert getattr(metrics, f"{column}_p99_ms") == step(name, "99.0'th percentile") / 1e6 == row[f"{column}_p99_ms"]
    assert metrics.lat_login_p50_ms > metrics.lat_api_get_p50_ms
    assert "`login` and `api_get`" in metrics.source
    # Nginx's count: the flow's requests and the calibration runs' GETs of the file.
    calibration = sum(int(l.split()[1]) for l in (FLOW_FIXTURE / "drill-calibration.txt").read_text().splitlines())
    assert row["server_requests"] == metrics.requests + calibration


def step_line_global(text: str, label: str) -> float:
    return float(re.search(rf"^{re.escape(label)}\s+([\d.]+)", text, re.MULTILINE).group(1))


def test_plain_run_has_no_step_figures():
    metrics = DRILL.parse(load(FIXTURE)[0])
    assert (metrics.lat_login_p50_ms, metrics.lat_login_p99_ms, metrics.lat_api_get_p50_ms,
            metrics.lat_api_get_p99_ms) == (None, None, None, None)
