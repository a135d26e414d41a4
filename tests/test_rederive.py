"""python -m harness rederive: runs.csv and meta.json derived again from a results folder's raw files.

The fixture is a real `harness run --runtime host --tools wrk,ab,k6 --scenarios scenarios/quick.yaml
--duration 3` (vu20-rtt0.1, and vu100-rtt50 through Toxiproxy, each tool's 1-VU baseline, no longer read), as
written."""
from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.store.upgrade import LEGACY_SIDES, RETIRED
from harness.row.usage import growth, resident
from harness.store.figures import emptied_cell, emptied_columns
from harness.store.record import SCHEMA_VERSION
from harness.store.results import _cell
from harness.store.samples import read_csv

REPO = Path(__file__).resolve().parents[1]
STORED = next((REPO / "tests" / "fixtures" / "rederive").iterdir())


def rederive(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", "rederive", str(folder)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


# Columns added after STORED was written (new columns only ever go last): re-derived, they are empty
# there (its runs had no capture and no probe under the load), in runs.csv and in every meta.json's row,
# except Toxiproxy's CPU, which its stored samples give (the stored meta.json's target_usage has it), and
# mem_growth_mb_per_s, which the stored samples give (grown).
ADDED_SINCE = ["wire_connect_ms", "shaper_cpu_pct", "rtt_loaded_ms", "shaper_added_ms", "wire_rate_rps", "wire_rate_cv",
               "wire_rate_min_window_rps", "wire_gap_cv", "wire_schedule", "target", "keepalive", "tls",
               "backend_delay_ms", "target_stack", "target_version", "server_connections", "proxy_cpu_pct",
               "wire_connections", "wire_requests_per_connection", "mem_growth_mb_per_s",
               "protocol", "streams", "server_off_protocol_requests", "wire_h2_connections",
               "flow", "relogin_every", "server_logins", "server_logins_refused", "server_api_gets",
               "server_api_gets_refused", "lat_login_p50_ms", "lat_login_p99_ms", "lat_api_get_p50_ms",
               "lat_api_get_p99_ms", "lat_p99_9_ms", "schema_version"]
# Issue 23's and 38's setup columns: a record stored before them was of today's target, keep-alive, plain
# HTTP/1.1.
SETUP_DEFAULTS = {"target": "nginx", "keepalive": True, "tls": False, "protocol": "http/1.1", "streams": 1}


# Derived otherwise since STORED was written. Issue 35: a frame with RSS 0 (the tool exiting) is no memory
# reading; k6's last frame at vu100-rtt50, after its load window, was its mem_startup_peak_mb (0.0).
CORRECTED = {"vu100-rtt50/k6": {"mem_startup_peak_mb": None}}
# Emptied since 2026-11-27 (they came from the 1-VU baseline run, no longer read: memory per VU is a slope,
# analysis/memory.py), out of the row since 2026-11-28 (harness/store/upgrade.py RETIRED); meta.json holds no
# mem_baseline_1vu.


def unretired(row: dict) -> dict:
    return {name: value for name, value in row.items() if name not in RETIRED}


def grown(run_dir: str, samples: str = "samples.csv") -> float | None:
    """The RSS growth over the stored run's load window that harness/sampling.py's growth gives."""
    window = json.loads((STORED / run_dir / "meta.json").read_text()).get("load_window_s")
    return growth([f for f in read_csv(STORED / run_dir / samples)
                   if resident(f) and (window is None or window[0] <= f.t_s <= window[1])])


def recoded(row: dict) -> dict:
    """Issue 36: limited_by is a code (the explanation left out), lat_below_resolution a JSON list."""
    return {"limited_by": LEGACY_SIDES.get(row["limited_by"], row["limited_by"]),
            "lat_below_resolution": emptied_cell(emptied_columns(row["lat_below_resolution"]))}


def added(run_dir: str) -> dict:
    """The added, retired, corrected and recoded columns' values a re-derivation of STORED/run_dir gives."""
    meta = json.loads((STORED / run_dir / "meta.json").read_text())
    usage = meta.get("target_usage", {})
    return {**dict.fromkeys(ADDED_SINCE), **SETUP_DEFAULTS,
            "shaper_cpu_pct": usage.get("toxiproxy", {}).get("cpu_avg_pct"), "mem_growth_mb_per_s": grown(run_dir),
            **CORRECTED.get(run_dir, {}), **recoded(meta["row"]), "schema_version": SCHEMA_VERSION}


def stored_runs_csv() -> bytes:
    """STORED's runs.csv as a re-derivation writes it now: corrected, the added columns last."""
    with (STORED / "runs.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    written = io.StringIO(newline="")
    writer = csv.DictWriter(written, [*unretired(rows[0]), *ADDED_SINCE])
    writer.writeheader()
    writer.writerows({**unretired(row), **{name: _cell(v) for name, v in added(row["run_dir"]).items()}} for row in rows)
    return written.getvalue().encode()


def checked(run_dir: str, method: str) -> dict:
    """Since 2026-11-27 the memory check is the last window frame with a resident frame after it, and carries
    that frame's RSS too (harness/sampling.py check_span): the stored samples give it."""
    window = json.loads((STORED / run_dir / "meta.json").read_text()).get("load_window_s")
    frames = read_csv(STORED / run_dir / "samples.csv")
    this, following = [(a, b) for a, b in zip(frames, frames[1:]) if resident(a) and resident(b) and a.rss_check_mb
                       and (window is None or window[0] <= a.t_s <= window[1])][-1]
    return {"method": method, "top_mb": this.rss_mb, "next_top_mb": following.rss_mb, "check_mb": this.rss_check_mb}


def stored_meta(meta: Path) -> dict:
    """A run's stored meta.json as a re-derivation writes it now (the target's groups count exiting frames)."""
    stored, run_dir = json.loads(meta.read_text()), str(meta.parent.relative_to(STORED))
    stored.pop("mem_baseline_1vu", None)
    usage = {name: {**group, "mem_frames_dropped": 0, "mem_growth_mb_per_s": grown(run_dir, f"samples-{name}.csv"),
                    "check_next_top_mb": None}
             for name, group in stored.get("target_usage", {}).items()}
    return {**stored, "row": {**unretired(stored["row"]), **added(run_dir)}, **({"target_usage": usage} if usage else {}),
            "memory_check": checked(run_dir, stored["memory_check"]["method"]), "overtime_s": 0.0,
            "schema_version": SCHEMA_VERSION}


def copy(tmp_path: Path) -> Path:
    folder = tmp_path / STORED.name
    shutil.copytree(STORED, folder)
    return folder


def checked_p99_9(row: dict) -> None:
    """The column added since (issue 51): where the tool's every latency is read, between its p99 and max; then
    left out of the byte comparison (its value is tests/test_percentiles.py's and tests/test_hdr.py's)."""
    value = row["lat_p99_9_ms"]
    if value not in (None, ""):
        assert float(row["lat_p99_ms"]) <= float(value) <= float(row["lat_max_ms"]), row["tool"]
    return None


def p99_9_checked_and_blanked(written: bytes) -> bytes:
    rows = list(csv.DictReader(io.StringIO(written.decode(), newline="")))
    assert any(row["lat_p99_9_ms"] for row in rows if row["tool"] == "wrk")      # wrk's histogram has it
    for row in rows:
        row["lat_p99_9_ms"] = _cell(checked_p99_9(row))
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def test_a_stored_folder_derives_to_the_same_runs_csv_byte_for_byte(tmp_path):
    folder = copy(tmp_path)
    result = rederive(folder)
    assert result.returncode == 0, result.stderr
    assert "re-derived 6 runs (6 ok)" in result.stdout
    assert p99_9_checked_and_blanked((folder / "runs.csv").read_bytes()) == stored_runs_csv()
    assert (folder / "runs.csv.before-rederive").read_bytes() == (STORED / "runs.csv").read_bytes()
    for meta in STORED.glob("*/*/meta.json"):
        again = json.loads((folder / meta.relative_to(STORED)).read_text())
        again["row"]["lat_p99_9_ms"] = checked_p99_9(again["row"])
        assert again == stored_meta(meta), meta
        assert list(again["row"])[-len(ADDED_SINCE):] == ADDED_SINCE


def test_the_row_comes_from_the_raw_files(tmp_path):
    """A changed tool output (what a parser fix would read differently) changes the re-derived row."""
    folder = copy(tmp_path)
    stdout = folder / "vu20-rtt0.1" / "ab" / "stdout.txt"
    stored = stdout.read_text()
    requests = stored.split("Complete requests:")[1].split()[0]
    stdout.write_text(stored.replace(f"Complete requests:      {requests}", "Complete requests:      1234"))
    assert rederive(folder).returncode == 0
    rows = {line.split(",")[0] + line.split(",")[3]: line for line in (folder / "runs.csv").read_text().splitlines()}
    assert ",1234," in rows["abvu20-rtt0.1"] and ",1234," not in (STORED / "runs.csv").read_text()


def test_the_samples_are_read_again(tmp_path):
    folder = copy(tmp_path)
    run = folder / "vu100-rtt50" / "k6"
    meta = json.loads((run / "meta.json").read_text())
    samples = (run / "samples.csv").read_text().splitlines()
    doubled = [samples[0], *(",".join([f.split(",")[0], str(float(f.split(",")[1]) * 2), *f.split(",")[2:]])
                             for f in samples[1:])]
    (run / "samples.csv").write_text("\n".join(doubled) + "\n")
    assert rederive(folder).returncode == 0
    again = json.loads((run / "meta.json").read_text())
    assert again["row"]["mem_avg_mb"] == pytest.approx(2 * meta["row"]["mem_avg_mb"], abs=0.002)
    assert again["row"]["mem_peak_mb"] == pytest.approx(2 * meta["row"]["mem_peak_mb"], abs=0.002)


def test_a_folder_written_before_records_is_refused_in_one_line(tmp_path):
    old = tmp_path / "old"
    shutil.copytree(REPO / "tests" / "fixtures" / "schema0" / "20261123T003909Z-host", old)   # the sample of 2026-11-23
    before = (old / "runs.csv").read_bytes()
    result = rederive(old)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "written before results schema 1" in result.stderr and "rerun" in result.stderr
    assert (old / "runs.csv").read_bytes() == before


def test_not_a_results_folder_is_one_line(tmp_path):
    result = rederive(tmp_path)
    assert result.returncode == 2 and "has no runs.csv" in result.stderr and result.stderr.count("\n") == 1


def test_the_probe_under_the_load_is_read_again_and_its_gets_are_not_the_tools(tmp_path):
    """A Toxiproxy run's record with the RTT probed during the load (harness/network/shaping.py loaded_probe):
    its GETs leave Nginx's count, its figures fill the shaper columns."""
    folder = copy(tmp_path)
    record_file = folder / "vu100-rtt50" / "wrk" / "record.json"
    record = json.loads(record_file.read_text())
    probe = {"at_s": 1.2, "count": 10, "direct_ms": 0.4, "via_ms": 70.0, "ended_s": 2.5, "gets_direct": 11, "gets_via": 11}
    record_file.write_text(json.dumps({**record, "shaper_load": probe}))
    assert rederive(folder).returncode == 0
    row = json.loads((folder / "vu100-rtt50" / "wrk" / "meta.json").read_text())["row"]
    assert row["server_requests"] == record["server_requests"] - 22
    assert row["rtt_loaded_ms"] == 70.0
    assert row["shaper_added_ms"] == pytest.approx(70.0 - row["rtt_measured_ms"])


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def one_line_exit_2(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), \
        result.stdout + result.stderr
    return result.stderr


def test_a_torn_record_stops_it_in_one_line_with_nothing_written(tmp_path):
    """All or nothing: the torn record is the last run's, so every run before it derives fine first."""
    folder = copy(tmp_path)
    last = list(csv.DictReader((folder / "runs.csv").open(newline="")))[-1]["run_dir"]
    record = folder / last / "record.json"
    record.write_text(record.read_text()[:200])
    before = snapshot(folder)
    error = one_line_exit_2(rederive(folder))
    assert f"{last}/record.json cannot be read (JSONDecodeError" in error and "nothing was re-derived" in error
    assert snapshot(folder) == before


@pytest.mark.parametrize("where", ["run_dir", "parts"])
def test_a_run_folder_leading_outside_the_results_folder_is_refused_and_nothing_written(tmp_path, where):
    """A crafted runs.csv run_dir, or a record's parts[].folder, naming a folder outside: nothing is written
    there (nor anywhere)."""
    folder = copy(tmp_path)
    outside = tmp_path / "outside"
    rows = list(csv.DictReader((folder / "runs.csv").open(newline="")))
    shutil.copytree(folder / rows[0]["run_dir"], outside)
    if where == "run_dir":
        rows[0]["run_dir"] = "../outside"
        with (folder / "runs.csv").open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    else:
        record_file = folder / rows[0]["run_dir"] / "record.json"
        record = json.loads(record_file.read_text())
        record["parts"] = [{**part, "folder": "../../../outside"} for part in record["parts"]] * 2
        record_file.write_text(json.dumps(record))
    before, outside_before = snapshot(folder), snapshot(outside)
    error = one_line_exit_2(rederive(folder))
    assert "leads outside" in error and "nothing was re-derived" in error
    assert snapshot(folder) == before and snapshot(outside) == outside_before


def test_a_folder_a_suite_is_writing_is_refused_naming_the_suite(tmp_path, monkeypatch):
    from harness.store.lock import acquire, folder_lock, record_folder
    monkeypatch.setenv("LTH_LOCK_DIR", str(tmp_path / "lock"))      # never the machine's lock
    folder = copy(tmp_path)
    before = snapshot(folder)
    with acquire() as suite, folder_lock(folder):
        record_folder(suite, folder)
        error = one_line_exit_2(rederive(folder))
    assert error.startswith(f"error: {folder} is being written by another harness (pid {os.getpid()}, `")
    assert snapshot(folder) == before
    assert rederive(folder).returncode == 0        # free again
