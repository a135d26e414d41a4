"""The report on real results committed as sample data (results/sample/: a host and a Docker run
of wrk and ab, two scenarios, two repetitions)."""
import csv
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from analysis import load_results
from analysis.charts import CHARTS, NEEDS_CAPTURE, spread
from analysis.report import build
from conftest import REPO

SAMPLE = sorted((REPO / "results" / "sample").iterdir())
HOST = next(p for p in SAMPLE if p.name.endswith("-host"))


class Tables(HTMLParser):
    """Collects every table's rows (cell texts) by the table's id/class, and every img src."""

    def __init__(self):
        super().__init__()
        self.tables, self.images, self._current, self._cell = {}, [], None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._current = self.tables.setdefault(attrs.get("id") or attrs.get("class"), [])
        elif tag == "tr" and self._current is not None:
            self._current.append([])
        elif tag in ("td", "th") and self._current is not None:
            self._cell = ""
        elif tag == "img":
            self.images.append(attrs["src"])

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._current[-1].append(self._cell)
            self._cell = None
        elif tag == "table":
            self._current = None


def parse(html_file: Path) -> Tables:
    tables = Tables()
    tables.feed(html_file.read_text())
    return tables


def test_every_chart_is_written_and_referenced_and_tables_equal_runs_csv(tmp_path):
    index = build(SAMPLE, tmp_path)
    page = parse(index)
    for name in set(CHARTS) - NEEDS_CAPTURE:               # the sample has no capture: tests/test_capture.py
        for ext in ("png", "svg"):
            assert (tmp_path / f"{name}.{ext}").stat().st_size > 1000, name
        assert f"{name}.png" in page.images
    with (HOST / "runs.csv").open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert page.tables["runs"][:len(rows)] == rows            # first folder's runs table, cell for cell
    ratios = page.tables["ratios"]
    assert {r[0] for r in ratios[1:]} == {"wrk", "ab"} and all(float(r[2]) > 0 for r in ratios[1:])


def test_summary_medians_come_from_the_runs(tmp_path):
    df = load_results(HOST)
    wrk = df[(df["tool"] == "wrk") & (df["scenario"] == "vu20-rtt0.1")]
    page = parse(build([HOST], tmp_path))
    header, *body = page.tables["summary"]
    row = next(r for r in body if r[0] == "vu20-rtt0.1" and r[1] == "wrk")
    shown = float(row[header.index("rps")].split(" ")[0].replace(",", ""))
    assert shown == pytest.approx(wrk["rps"].median(), rel=1e-3)


def test_a_metric_the_tool_does_not_report_is_a_gap_not_a_zero(tmp_path):
    folder = tmp_path / HOST.name
    shutil.copytree(HOST, folder)
    with (folder / "runs.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        fields, rows = reader.fieldnames, list(reader)
    for row in rows:
        if row["tool"] == "ab":
            row["lat_p99_ms"] = ""
    with (folder / "runs.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    df = load_results(folder)
    assert df[df["tool"] == "ab"]["lat_p99_ms"].isna().all()
    stats = spread(df, "lat_p99_ms").set_index(["scenario", "label"])
    assert np.isnan(stats.loc[("vu20-rtt0.1", "ab"), "median"])
    page = parse(build([folder], tmp_path / "report"))
    header, *body = page.tables["summary"]
    ab = next(r for r in body if r[1] == "ab")
    assert ab[header.index("lat_p99_ms")] == "" and ab[header.index("rps")] != ""


def test_load_results_combines_folders_with_labels_and_environment():
    df = load_results(*SAMPLE)
    assert set(df["runtime"]) == {"host", "docker"}
    assert set(df["label"]) == {"wrk (host)", "ab (host)", "wrk (docker)", "ab (docker)"}
    assert df["rps"].dtype == float and (df["env_cores"].notna()).all()


@pytest.mark.e2e
def test_a_headless_browser_renders_the_report_with_every_image(tmp_path):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is missing: `make test` installs it (scripts/deps.sh)")
    index = build(SAMPLE, tmp_path / "report")
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000"]
    dom = subprocess.run([*flags, "--dump-dom", index.as_uri()], capture_output=True, text=True, timeout=120).stdout
    assert 'data-images-ok="yes"' in dom, dom[-500:]
    assert f'data-images="{len(CHARTS) - len(NEEDS_CAPTURE)}"' in dom
    screenshot = tmp_path / "report.png"
    subprocess.run([*flags, f"--screenshot={screenshot}", "--window-size=1400,2400", index.as_uri()],
                   capture_output=True, timeout=120)
    assert screenshot.stat().st_size > 50_000


def test_a_latency_below_the_tools_resolution_is_shown_as_such_and_never_charted(tmp_path):
    """ab's rows of the sample turned into a whole-ms tool's: p50 emptied by the runner (with its
    note), p99 exactly one tick (1 ms)."""
    from harness.adapter import BELOW_RESOLUTION
    folder = tmp_path / HOST.name
    shutil.copytree(HOST, folder)
    with (folder / "runs.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        fields, rows = reader.fieldnames, list(reader)
    fields = fields + [f for f in ("notes", "timing_resolution_ms") if f not in fields]   # older sample schema
    for row in rows:
        if row["tool"] == "ab" and row["scenario"] == "vu20-rtt0.1":
            row.update(timing_resolution_ms="1", lat_p50_ms="", lat_p99_ms="1",
                       notes=BELOW_RESOLUTION.format(resolution=1, columns="lat_min_ms, lat_p50_ms"))
    with (folder / "runs.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    df = load_results(folder)
    ab = df[(df["tool"] == "ab") & (df["scenario"] == "vu20-rtt0.1")]
    assert ab["lat_p99_ms"].isna().all() and ab["lat_added_ms"].isna().all()
    assert set(ab["lat_p50_ms_below_res"]) == {"< 1"} and set(ab["lat_p99_ms_below_res"]) == {"~1"}
    assert np.isnan(spread(df, "lat_p99_ms").set_index(["scenario", "label"]).loc[("vu20-rtt0.1", "ab"), "median"])
    header, *body = parse(build([folder], tmp_path / "report")).tables["summary"]
    shown = next(r for r in body if r[0] == "vu20-rtt0.1" and r[1] == "ab")
    assert (shown[header.index("lat_p50_ms")], shown[header.index("lat_p99_ms")]) == ("< 1 ms", "~1 ms")
    wrk = next(r for r in body if r[0] == "vu20-rtt0.1" and r[1] == "wrk")
    assert float(wrk[header.index("lat_p50_ms")].split(" ")[0]) > 0      # a µs tool's figures stay
