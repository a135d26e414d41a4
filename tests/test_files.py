"""Results files written atomically (harness/files.py write_atomic): a write that fails half-way (here the disk
full: a file size limit the writer hits) leaves the previous file whole, never a torn one that would crash
--resume or rederive."""
import json
import subprocess
import sys

import pytest

from conftest import REPO

OLD = {"runtime": "host", "kept": True}
# Each writer, writing a large new content into FOLDER (argv[1]); the folder holds the old file already.
WRITERS = {
    "environment.json": "from harness.store.results import ResultsFolder\n"
                        "ResultsFolder(folder).write_json('environment.json', big)",
    "capacity.json": "from harness.store.results import ResultsFolder\n"
                     "ResultsFolder(folder).write_json('capacity.json', big)",
    "meta.json": "from harness.store.results import RunRow, write_meta\n"
                 "write_meta(folder, RunRow(tool='t', tool_version=None, runtime='host', scenario='s', vus=1, "
                 "rtt_target_ms=0.1, duration_s=1), big)",
    "record.json": "from harness.store.record import RunRecord\n"
                   "RunRecord(tool='t', runtime='host', scenario=big, repeat=1, started_at='', run_dir='s/t', "
                   "shaper='none', cpus_target='', cpus_tool='', split={}).save(folder)",
    "execution.json": "from harness.store.record import Execution, save_execution\n"
                      "save_execution(Execution(exit_code=0, timed_out=False, wall_s=1.0, launched_at=0.0, samples=[], "
                      "stdout='', stderr='', affinity={'': {1: big}}), folder)",
    "shaping.json": "import harness.network.shaping as shaping\n"
                    "shaping.steady_probe = lambda *probe: {'median_ms': 1.0, 'connect_ms': 0.5}\n"
                    "shaping._calibrate(None, None, shaping.Knob('netem', big['padding'], 0.1, print), 1.0, folder)",
}
FULL_DISK = """
import resource, signal, sys
from pathlib import Path
folder = Path(sys.argv[1])
big = {{"padding": "x" * 100_000}}
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)          # a write past the limit fails (EFBIG) instead
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
try:
    {writer}
except OSError as exc:
    print("failed:", exc.strerror)
"""


@pytest.mark.parametrize("name", WRITERS)
def test_a_write_that_fails_half_way_leaves_the_previous_file_whole(tmp_path, name):
    (tmp_path / name).write_text(json.dumps(OLD))
    script = FULL_DISK.format(writer=WRITERS[name].replace("\n", "\n    "))
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                            timeout=60)
    assert result.stdout.strip() == "failed: File too large", result.stderr
    assert json.loads((tmp_path / name).read_text()) == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]      # no temporary file left beside it


def test_the_new_content_replaces_the_old_readable_by_all_by_default(tmp_path):
    from harness.files import write_atomic
    (tmp_path / "a.json").write_text("old")
    write_atomic(tmp_path / "a.json", "new")
    assert (tmp_path / "a.json").read_text() == "new" and (tmp_path / "a.json").stat().st_mode & 0o777 == 0o644


def test_a_log_is_read_since_an_offset_a_line_at_a_time(tmp_path):
    """Issue 54: lines_since read the whole rest of a log into memory (a line per API request: millions a run)."""
    import tracemalloc
    from harness.files import lines_since
    log = tmp_path / "api.log"
    with log.open("wb") as handle:
        handle.write(b"before the run\n")
        handle.writelines(b"login 200\n" for _ in range(300_000))     # 3 MB
        handle.write(b"get 401 \xff\r\n")
    offset = len(b"before the run\n")
    lines = lines_since(log, offset)
    assert next(lines) == "login 200"
    tracemalloc.start()
    try:
        counted = sum(1 for _ in lines)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert counted == 300_000 and peak < 500_000, peak
    assert list(lines_since(log, log.stat().st_size - 11)) == ["get 401 \ufffd"]
    assert list(lines_since(tmp_path / "not-yet.log", 0)) == []
