"""fortio adapter (the example of adding a compiled tool): the command, and the parser on a real run
(tests/fixtures/fortio/vu20-host/: the run's folder with fortio's own -json file), checked against what the
parser does not read: fortio's text summary on stderr, its histogram's buckets and Nginx's count."""
import json
import re
import shutil

import pytest

from conftest import FIXTURES, TLS_URL, assert_ordered, captured_run, cases, command_spec
from harness.tools.output import ParseError
from harness.tools.registry import discover

ADAPTER = discover()["fortio"]


def test_command_runs_vus_connections_unpaced_for_the_duration_with_fine_buckets(tmp_path):
    argv = ADAPTER.command(command_spec(tmp_path, vus=20, duration_s=5))
    assert argv[:2] == [ADAPTER.binary, "load"] and argv[-1] == "http://198.18.0.2:80/style.css"
    options = dict(zip(argv[2:-1:2], argv[3:-1:2]))
    assert options == {"-c": "20", "-t": "5s", "-qps": "0", "-timeout": "10s", "-r": "0.0001",
                       "-p": "50,75,90,95,99", "-json": str(tmp_path / "fortio.json")}
    # the declared resolution is the lowest buckets' width (-r), in ms
    assert ADAPTER.timing_resolution_ms == pytest.approx(float(options["-r"]) * 1000)


def test_keepalive_off_and_tls(tmp_path):
    argv = ADAPTER.command(command_spec(tmp_path, url=TLS_URL, keepalive=False))
    assert "-keepalive=false" in argv and "-k" in argv and argv[-1] == TLS_URL
    plain = ADAPTER.command(command_spec(tmp_path))
    assert "-keepalive=false" not in plain and "-k" not in plain


@pytest.mark.parametrize("case", cases("fortio"))
def test_parser_agrees_with_fortios_summary_its_buckets_and_nginx(case):
    output, meta = captured_run(FIXTURES / "fortio" / case)
    metrics = ADAPTER.parse(output)
    done = re.search(r"^All done (\d+) calls \(plus (\d+) warmup\) [\d.]+ ms avg, ([\d.]+) qps", output.stderr, re.M)
    assert metrics.requests == int(done.group(1)) and metrics.errors == 0
    assert metrics.rps == pytest.approx(float(done.group(3)), rel=0.01)
    # Nginx served the counted requests and one warm-up request per connection
    assert metrics.requests + int(done.group(2)) == meta["row"]["server_requests"]
    # its text summary prints the same percentiles (seconds), the first "# target" block
    printed = [float(v) * 1000 for v in re.findall(r"^# target \d+% ([\d.e-]+)", output.stderr, re.M)[:5]]
    assert [metrics.lat_p50_ms, metrics.lat_p75_ms, metrics.lat_p90_ms, metrics.lat_p95_ms,
            metrics.lat_p99_ms] == pytest.approx(printed, rel=1e-4)
    # each percentile lies in the bucket where the histogram's cumulative percent crosses it
    buckets = json.loads((FIXTURES / "fortio" / case / "fortio.json").read_text())["DurationHistogram"]["Data"]
    assert sum(b["Count"] for b in buckets) == metrics.requests
    for percent, value in ((50, metrics.lat_p50_ms), (99, metrics.lat_p99_ms)):
        bucket = next(b for b in buckets if b["Percent"] >= percent)
        assert bucket["Start"] * 1000 <= value <= bucket["End"] * 1000, (percent, value, bucket)
    assert_ordered(metrics)


def test_a_run_without_its_json_or_with_a_cut_one_is_a_parse_error(tmp_path):
    output, _ = captured_run(FIXTURES / "fortio" / cases("fortio")[0], out_dir=tmp_path)
    with pytest.raises(ParseError, match="no fortio.json"):
        ADAPTER.parse(output)
    shutil.copy(FIXTURES / "fortio" / cases("fortio")[0] / "fortio.json", tmp_path)
    result = json.loads((tmp_path / "fortio.json").read_text())
    del result["DurationHistogram"]["Percentiles"]
    (tmp_path / "fortio.json").write_text(json.dumps(result))
    with pytest.raises(ParseError, match="Percentiles"):
        ADAPTER.parse(output)
