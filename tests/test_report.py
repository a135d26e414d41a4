"""The report on real results committed as sample data (results/sample/: a host and a Docker run
of wrk and ab, two scenarios, two repetitions)."""
import csv
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import load_results
from analysis.charts import CHARTS, NEEDS_CAPTURE, spread, with_limits
from analysis.report import SUMMARY_METRICS, build, main
from conftest import REPO

SAMPLE = sorted((REPO / "results" / "sample").iterdir())
HOST = next(p for p in SAMPLE if p.name.endswith("-host"))


class Tables(HTMLParser):
    """Collects every table's rows by the table's id/class, and every img src. ``tables``: each cell's
    full value, its title where it has one (a short header's runs.csv column, a rounded number's or a
    cut note's value as written), else its text; ``shown``: the texts as the page shows them."""

    def __init__(self):
        super().__init__()
        self.tables, self.shown, self.images = {}, {}, []
        self._current, self._shown, self._cell, self._title = None, None, None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            key = attrs.get("id") or attrs.get("class")
            self._current, self._shown = self.tables.setdefault(key, []), self.shown.setdefault(key, [])
        elif tag == "tr" and self._current is not None:
            self._current.append([])
            self._shown.append([])
        elif tag in ("td", "th") and self._current is not None:
            self._cell, self._title = "", attrs.get("title")
        elif tag == "img":
            self.images.append(attrs["src"])

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._current[-1].append(self._cell if self._title is None else self._title)
            self._shown[-1].append(self._cell)
            self._cell = None
        elif tag == "table":
            self._current = self._shown = None


def parse(html_file: Path) -> Tables:
    tables = Tables()
    tables.feed(html_file.read_text())
    return tables


@pytest.fixture(scope="module")
def host_report(tmp_path_factory) -> Path:
    """`python -m analysis.report HOST --out DIR --svg`, as typed; its index.html."""
    out = tmp_path_factory.mktemp("host") / "report"
    assert main([str(HOST), "--out", str(out), "--svg"]) == 0
    return out / "index.html"


def test_every_chart_is_written_and_referenced_and_tables_equal_runs_csv(report_of):
    index = report_of(SAMPLE)
    page = parse(index)
    for name in set(CHARTS) - NEEDS_CAPTURE:               # the sample has no capture: tests/test_capture.py
        assert (index.parent / f"{name}.png").stat().st_size > 1000, name
        assert f"{name}.png" in page.images
    assert not list(index.parent.glob("*.svg")) and ".svg" not in index.read_text()     # only with --svg
    with (HOST / "runs.csv").open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert page.tables["runs"][:len(rows)] == rows            # first folder's runs table, cell for cell
    ratios = page.tables["ratios"]
    assert {r[0] for r in ratios[1:]} == {"wrk", "ab"} and all(float(r[2]) > 0 for r in ratios[1:])


def test_with_svg_every_chart_is_written_as_svg_too_and_linked_beside_its_png(host_report):
    html = host_report.read_text()
    names = {p.stem for p in host_report.parent.glob("*.png")}
    # one runtime: no Docker/host ratio; the headline picture (analysis/headline.py) beside the charts
    assert names == set(CHARTS) - NEEDS_CAPTURE - {"docker_vs_host"} | {"headline"}
    for name in names:
        svg = host_report.parent / f"{name}.svg"
        assert svg.stat().st_size > 1000 and svg.read_text().rstrip().endswith("</svg>"), name
        assert f'<img src="{name}.png"' in html and f'<a href="{name}.svg">SVG</a>' in html, name


def test_summary_medians_come_from_the_runs(host_report):
    df = load_results(HOST)
    wrk = df[(df["tool"] == "wrk") & (df["scenario"] == "vu20-rtt0.1")]
    page = parse(host_report)
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
def test_a_headless_browser_renders_the_report_with_every_image(tmp_path, report_of):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is missing: `make test` installs it (scripts/deps.sh)")
    index = report_of(SAMPLE)
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000"]
    dom = subprocess.run([*flags, "--dump-dom", index.as_uri()], capture_output=True, text=True, timeout=120).stdout
    assert 'data-images-ok="yes"' in dom, dom[-500:]
    assert f'data-images="{len(CHARTS) - len(NEEDS_CAPTURE) + 1}"' in dom     # + the headline picture
    screenshot = tmp_path / "report.png"
    subprocess.run([*flags, f"--screenshot={screenshot}", "--window-size=1400,2400", index.as_uri()],
                   capture_output=True, timeout=120)
    assert screenshot.stat().st_size > 50_000


def test_a_latency_below_the_tools_resolution_is_shown_as_such_and_never_charted(tmp_path):
    """ab's rows of the sample turned into a whole-ms tool's: p50 emptied by the runner (with its
    note), p99 exactly one tick (1 ms)."""
    from harness.store.figures import BELOW_RESOLUTION, emptied_cell
    folder = tmp_path / HOST.name
    shutil.copytree(HOST, folder)
    with (folder / "runs.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        fields, rows = reader.fieldnames, list(reader)
    fields = fields + [f for f in ("notes", "timing_resolution_ms") if f not in fields]   # older sample schema
    for row in rows:
        if row["tool"] == "ab" and row["scenario"] == "vu20-rtt0.1":
            row.update(timing_resolution_ms="1", lat_p50_ms="", lat_p99_ms="1", lat_min_ms="", lat_p99_9_ms="",
                       lat_below_resolution=emptied_cell(["lat_min_ms", "lat_p50_ms"]),
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


STALL_RESULTS = REPO / "tests" / "fixtures" / "openmodel" / "stall-results"
REFUSED = 'Get "http://198.18.0.2:80/style.css": dial tcp 198.18.0.2:80: connect: connection refused'


@pytest.fixture(scope="module")
def with_failures(tmp_path_factory) -> Path:
    """Real rows of an open-model suite (tests/fixtures/openmodel/stall-results), two scenarios, five tools:
    artillery timed out in both (its row still carries the mem/cpu it had when killed, as folders written
    before the runner withheld them do), wrk is unsupported, and hey's rate1000-rtt10 run is turned into
    a failure that kept its figures. Read only, by every test of this module."""
    folder = tmp_path_factory.mktemp("failures") / "20261123T110413Z-host"
    folder.mkdir()
    shutil.copy(STALL_RESULTS / "environment.json", folder)
    with (STALL_RESULTS / "runs.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        fields, rows = reader.fieldnames, list(reader)
    rows = [r for r in rows if r["scenario"] in ("rate1000-rtt0.1", "rate1000-rtt10")
            and r["tool"] in ("k6", "hey", "oha", "artillery", "wrk")]
    failed = next(r for r in rows if r["tool"] == "hey" and r["scenario"] == "rate1000-rtt10")
    failed.update(status="failed", error=REFUSED)
    assert failed["mem_avg_mb"] and failed["cpu_avg_pct"]
    with (folder / "runs.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return folder


def test_failed_runs_are_listed_with_their_error_before_the_first_chart(with_failures, report_of):
    index = report_of([with_failures])
    html = index.read_text()
    assert html.index('id="failed-runs"') < html.index("<figure")
    header, *body = parse(index).tables["failed"]
    listed = {(r[header.index("scenario")], r[header.index("tool")]): r for r in body}
    assert set(listed) == {("rate1000-rtt10", "hey"), ("rate1000-rtt0.1", "artillery"), ("rate1000-rtt10", "artillery"),
                           ("rate1000-rtt0.1", "wrk"), ("rate1000-rtt10", "wrk")}
    hey = listed[("rate1000-rtt10", "hey")]
    assert hey[header.index("status")] == "failed" and hey[header.index("error")] == REFUSED
    assert listed[("rate1000-rtt0.1", "artillery")][header.index("status")] == "timeout"
    wrk = listed[("rate1000-rtt10", "wrk")]
    assert wrk[header.index("status")] == "unsupported" and wrk[header.index("error")].startswith(
        "open model not supported: closed model only: wrk has no rate option")
    assert [r[0] for r in body] == sorted((r[0] for r in body), key=["failed", "timeout", "unsupported"].index)
    assert "1 failed, 2 timeout, 2 unsupported of 10 runs" in html


def test_all_ok_says_so_in_one_line(host_report):
    html = host_report.read_text()
    assert "None: all 8 runs ran ok." in html and 'id="failed"' not in html


def _status_marks(fig, scenario: str) -> dict[str, list[str]]:
    """The status texts of the facet of ``scenario``, by the y-axis label of the row they sit on (the panels of
    a row share their y axis: only the leftmost shows its labels)."""
    ax = next(a for a in fig.axes if a.get_visible() and a.get_title().split()[:1] == [scenario])
    ticks = ax.get_yticks()
    rows = dict(zip(np.round(ticks).astype(int), ax.yaxis.get_major_formatter().format_ticks(ticks)))
    marks = {}
    for text in ax.texts:
        if text.get_gid() == "status":
            marks.setdefault(rows[round(text.get_position()[1])], []).append(text.get_text())
    return marks


# mem_per_vu has no facet per scenario (one slope per tool over its VU levels): its own test below says why a tool has none.
@pytest.mark.parametrize("name", sorted(set(CHARTS) - NEEDS_CAPTURE - {"docker_vs_host", "mem_per_vu"}))
def test_every_bar_chart_writes_the_status_where_a_run_without_an_ok_repetition_would_be(with_failures, name):
    import matplotlib.pyplot as plt
    df = with_limits(load_results(with_failures))
    fig = CHARTS[name][1](df)
    try:
        # once per row, even where a row holds two bars (memory, bottleneck); none at an ok run's row
        assert _status_marks(fig, "rate1000-rtt10") == {"hey": ["failed"], "artillery": ["timeout"],
                                                        "wrk": ["unsupported"]}
        assert _status_marks(fig, "rate1000-rtt0.1") == {"artillery": ["timeout"], "wrk": ["unsupported"]}
    finally:
        plt.close(fig)


def test_docker_vs_host_names_the_runtime_whose_runs_failed():
    import matplotlib.pyplot as plt
    df = load_results(*SAMPLE)
    df.loc[(df["runtime"] == "docker") & (df["tool"] == "ab") & (df["scenario"] == "vu20-rtt0.1"), "status"] = "failed"
    fig = CHARTS["docker_vs_host"][1](df)
    try:
        assert _status_marks(fig, "vu20-rtt0.1") == {"ab": ["failed (docker)"]}
        assert _status_marks(fig, "vu100-rtt50") == {}
    finally:
        plt.close(fig)


def test_a_run_that_did_not_end_ok_has_no_figure_in_the_summary(with_failures, report_of):
    header, *body = parse(report_of([with_failures])).tables["summary"]
    row = {(r[0], r[1]): dict(zip(header, r)) for r in body}
    for key in (("rate1000-rtt10", "hey"), ("rate1000-rtt0.1", "artillery"), ("rate1000-rtt10", "wrk")):
        assert row[key]["ok"] == "0"
        assert all(row[key][m] == "" for m in SUMMARY_METRICS), row[key]      # rps, mem_*, cpu, ...
    hey_ok = row[("rate1000-rtt0.1", "hey")]
    assert hey_ok["mem_avg_mb"] != "" and hey_ok["cpu_avg_pct"] != ""           # the same tool's ok run keeps them
    stats = spread(with_limits(load_results(with_failures)), "mem_peak_mb").set_index(["scenario", "label"])
    assert np.isnan(stats.loc[("rate1000-rtt10", "hey"), "median"])
    assert stats.loc[("rate1000-rtt10", "hey"), "status"] == "failed"


def test_the_memory_chart_names_its_runtimes():
    from analysis.charts import memory
    df = with_limits(load_results(*SAMPLE))
    title = " ".join(next(t for t in memory(df).texts if t.get_gid() == "title").get_text().split())   # wrapped
    assert "runtime: docker, host;" in title and "average and peak" in title
    # the runs it holds, and that two per cell give no whiskers (issue 48)
    assert title.endswith("; 16 ok runs, 2 per tool and scenario (no whiskers)")


def test_a_status_marks_colour_comes_from_the_runs_statuses_not_from_its_text():
    """red for a failed or timed-out row, grey for an unsupported one or a flagged figure (spread's colour)."""
    from analysis.charts import spread
    rows = [{"scenario": "s", "label": label, "status": status, "rps": 1.0, "requests": 10}
            for label, status in (("a", "timeout"), ("a", "unsupported"), ("b", "unsupported"), ("c", "ok"))]
    colours = spread(pd.DataFrame(rows), "rps").set_index("label")["colour"]
    assert (colours["a"], colours["b"]) == ("tab:red", "dimgrey")


def test_the_memory_per_vu_chart_draws_each_slope_and_says_why_a_tool_has_none():
    """A slope only over three VU levels or more at one RTT (issue 48); two levels, or levels spread over RTTs (the
    quick run's 20 VUs at 0.1 ms and 100 at 50 ms), are no slope, and the bar's place says why."""
    from analysis.charts import NOT_MEASURABLE, mem_per_vu
    from analysis.memory import NOT_MEASURED
    base = {"status": "ok", "target": "nginx", "keepalive": True, "tls": False,
            "backend_delay_ms": float("nan"), "rate_target_rps": float("nan"), "stall_ms": float("nan")}
    rows = [{**base, "scenario": f"vu{vus}-rtt{rtt}", "label": tool, "tool": tool, "vus": vus, "rtt_target_ms": rtt,
             "mem_avg_mb": mem}
            for tool, vus, rtt, mem in (("hey", 50, 50, 10.0), ("hey", 100, 50, 35.0), ("hey", 200, 50, 85.0),  # 512 KiB/VU
                                        ("k6", 20, 0.1, 40.0), ("k6", 100, 50, 10.0),     # two RTTs: no slope
                                        ("wrk", 50, 50, 5.0), ("wrk", 100, 50, 5.0), ("wrk", 200, 50, 5.0))]  # flat
    figure = mem_per_vu(pd.DataFrame(rows))
    (ax,) = [a for a in figure.axes if a.get_visible()]
    widths = [bar.get_width() for bar in ax.patches]
    assert widths[0] == pytest.approx(512) and widths[2] == pytest.approx(0, abs=1e-9)
    marks = {round(t.get_position()[1]): t.get_text() for t in ax.texts if t.get_gid() == "status"}
    assert marks == {1: f"{NOT_MEASURABLE}: {NOT_MEASURED}"}   # sorted: hey, k6, wrk
    title = " ".join(next(t for t in figure.texts if t.get_gid() == "title").get_text().split())
    assert title.endswith("6 ok runs at 50 ms over 50/100/200 VUs")


def test_summary_numbers_never_print_in_exponent_form():
    from analysis.numbers import number
    assert [number(v) for v in (999.9, 999.4, 12345.6, 0.01234, 99.96)] == ["1,000", "999", "12,346", "0.0123", "100"]
    assert [number(v) for v in (None, float("nan"), "not measurable here")] == ["", "", "not measurable here"]


def test_the_rps_chart_draws_no_target_capacity(report_of):
    """A capacity line would be the chart's own best bar (circular), repeated on panels where it cannot
    apply: there is none until a real capacity measurement exists."""
    import matplotlib.pyplot as plt
    import analysis.charts
    df = with_limits(load_results(*SAMPLE))
    fig = CHARTS["rps"][1](df)
    try:
        texts = [a.get_title() for a in fig.axes] + [t.get_label() for a in fig.axes for t in a.get_lines()]
        assert not any("capacity" in t for t in texts), texts
    finally:
        plt.close(fig)
    assert not hasattr(analysis.charts, "target_capacity")
    assert "capacity" not in report_of(SAMPLE).read_text()


@pytest.mark.parametrize("scenarios, runtimes", [(4, 1), (1, 1), (2, 3)],
                         ids=["two rows", "one narrow panel", "one tall row"])
def test_the_title_the_legend_and_the_panel_titles_never_overlap(scenarios, runtimes):
    """A tall figure's title ran into the first panel's title, and the latency legend into the title;
    a narrow one's title ran off the figure. ``runtimes``: each tool's rows once per (made-up) runtime."""
    import matplotlib.pyplot as plt
    df = with_limits(load_results(STALL_RESULTS))
    df = df[df["scenario"].isin(sorted(df["scenario"].unique())[:scenarios])]
    df = pd.concat([df.assign(label=df["label"] + f" ({n})") for n in range(runtimes)], ignore_index=True)
    for name in sorted(set(CHARTS) - NEEDS_CAPTURE - {"docker_vs_host"}):
        fig = CHARTS[name][1](df)
        try:
            renderer = fig.canvas.get_renderer()
            title = next(t for t in fig.texts if t.get_gid() == "title").get_window_extent(renderer)
            panels = [a.title.get_window_extent(renderer) for a in fig.axes if a.get_visible() and a.get_title()]
            legends = [legend.get_window_extent(renderer) for legend in fig.legends]
            assert 0 <= title.x0 and title.x1 <= fig.bbox.width and title.y1 <= fig.bbox.height, name
            assert not any(title.overlaps(box) for box in panels + legends), name
            assert not any(legend.overlaps(box) for legend in legends for box in panels), name
        finally:
            plt.close(fig)


def test_the_counting_chart_has_one_x_scale_for_every_panel():
    """-0.03% beside -1.8% on scales of their own read as the same miss."""
    import matplotlib.pyplot as plt
    df = with_limits(load_results(REPO / "tests" / "fixtures" / "rederive" / "20261125T010420Z-host"))
    diff = (df["requests"] - df["server_requests"]) / df["server_requests"] * 100
    assert diff.groupby(df["scenario"]).min().max() > -0.1 > -1 > diff.min()      # the panels' figures differ
    fig = CHARTS["counting"][1](df)
    try:
        limits = {a.get_xlim() for a in fig.axes if a.get_visible()}
        assert len(limits) == 1, limits
        (low, high), = limits
        assert low <= diff.min() and high >= 0
    finally:
        plt.close(fig)


def test_the_bottleneck_axis_ends_near_the_data_and_its_labels_sit_beside_the_bars():
    """The axis ran to 160% whatever the data, with the limiting side written over the bars at its edge."""
    import matplotlib.pyplot as plt
    from analysis.charts import bottleneck
    df = with_limits(load_results(REPO / "tests" / "fixtures" / "rederive" / "20261125T010420Z-host"))
    top = max(df["tool_cpu_share"].max(), df["target_cpu_share"].max())
    assert 50 < top < 100
    fig = bottleneck(df)
    try:
        renderer = fig.canvas.get_renderer()
        panels = [a for a in fig.axes if a.get_visible()]
        for ax in panels:
            assert ax.get_xlim() == (0, pytest.approx(105))           # 0..100% of the CPUs plus room
            box = ax.get_window_extent(renderer)
            labels = [t for t in ax.texts if t.get_text() and t.get_gid() != "status"]
            assert {t.get_text() for t in labels} <= {"neither", "other processes"} and labels
            for text in labels:
                extent = text.get_window_extent(renderer)
                assert box.x1 < extent.x0 and extent.x1 <= fig.bbox.width, text.get_text()
                assert not any(extent.overlaps(bar.get_window_extent(renderer)) for bar in ax.patches)
    finally:
        plt.close(fig)
    first = df.index[0]     # above 100% of its CPUs (top counted a stalled frame's time twice): still in view
    df.loc[first, "cpu_avg_pct"] *= 150.0 / df.loc[first, "tool_cpu_share"]
    fig = bottleneck(df)
    try:
        assert max(a.get_xlim()[1] for a in fig.axes if a.get_visible()) == pytest.approx(157.5)
    finally:
        plt.close(fig)


def test_the_summary_fits_the_page_with_short_headers(report_of):
    """It was wider than 1,400 px, its scenario ids wrapped: short headers (each titled with its column),
    ids that never wrap, a figure's min-max range on a line of its own, limited_by without its explanation."""
    from analysis.report import HEADERS
    folder = REPO / "tests" / "fixtures" / "rederive" / "20261125T010420Z-host"
    assert "neither (latency or the tool's own limits)" in (folder / "runs.csv").read_text()
    index = report_of([folder])
    page = parse(index)
    header, shown = page.tables["summary"][0], page.shown["summary"][0]
    assert header[-len(HEADERS):] == list(HEADERS) and shown[-len(HEADERS):] == list(HEADERS.values())
    assert max(len(word) for h in HEADERS.values() for word in h.split()) <= 7      # was target_cpu_pct
    html = index.read_text()
    assert html.count('<td class="text id">') == 2 * (len(page.tables["summary"]) - 1)
    assert re.search(r"td\.id \{ white-space: nowrap; \}", html)
    assert {r[-1] for r in page.tables["summary"][1:]} == {"neither", "other processes"}


def test_the_all_runs_table_rounds_numbers_and_cuts_long_notes(report_of):
    """It printed 0.228856 and rows ~400 px tall from long notes: numbers as in the summary (analysis.numbers), a text
    cut to one line; the value as written stays in the cell's title (the table still equals runs.csv)."""
    from analysis.load import NUMERIC
    from analysis.numbers import number
    from analysis.report import TEXT_CHARS
    folder = REPO / "tests" / "fixtures" / "rederive" / "20261125T010420Z-host"
    with (folder / "runs.csv").open(newline="") as handle:
        header, *rows = list(csv.reader(handle))
    index = report_of([folder])
    page = parse(index)
    assert page.tables["runs"] == [header, *rows]
    shown = page.shown["runs"][1:]
    numbers = [(written, text) for row, texts in zip(rows, shown) for column, written, text in zip(header, row, texts)
               if column in NUMERIC and written]
    assert all(text == number(float(written)) for written, text in numbers)
    assert any(len(written) > len(text) for written, text in numbers)                # there was something to round
    notes = [texts[header.index("notes")] for texts in shown]
    assert max(len(r[header.index("notes")]) for r in rows) > 400 and max(map(len, notes)) == TEXT_CHARS
    assert re.search(r"table\.runs td \{ white-space: nowrap; \}", index.read_text())


def test_a_folder_whose_meta_json_holds_no_row_still_has_a_report(tmp_path):
    """tests/fixtures/shapers keeps only the shaping part of each meta.json: the report raised KeyError 'row'."""
    folder = tmp_path / "netem"
    shutil.copytree(REPO / "tests" / "fixtures" / "shapers" / "netem", folder)
    assert "summary" in parse(build([folder], tmp_path / "report")).tables


XSS = "<img src=x onerror=alert(1)>"


def test_an_error_a_tool_text_or_an_environment_value_holding_markup_is_shown_escaped(tmp_path):
    """A tool's stderr line (the error), a tool's own text (its version) or a value in environment.json is text,
    never HTML on the page."""
    folder = tmp_path / HOST.name
    shutil.copytree(HOST, folder)
    with (folder / "runs.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        fields, rows = reader.fieldnames, list(reader)
    rows[0].update(status="failed", error=f"stderr: {XSS}")
    rows[1]["tool_version"] = XSS
    with (folder / "runs.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    environment = json.loads((folder / "environment.json").read_text())
    (folder / "environment.json").write_text(json.dumps({**environment, "kernel": XSS}))
    html = build([folder], tmp_path / "report").read_text()
    assert "<img src=x" not in html
    assert html.count("&lt;img src=x onerror=alert(1)&gt;") >= 3
    page = parse(tmp_path / "report" / "index.html")
    header, *body = page.tables["failed"]
    assert body[0][header.index("error")] == f"stderr: {XSS}"        # the text, as written
    assert all(src.endswith(".png") for src in page.images)          # the report's own markup is still markup


def test_a_folder_a_suite_is_writing_gets_no_report_and_one_line_naming_the_suite(tmp_path, monkeypatch, capsys):
    from harness.store.lock import acquire, folder_lock, record_folder
    monkeypatch.setenv("LTH_LOCK_DIR", str(tmp_path / "lock"))      # never the machine's lock
    folder = tmp_path / HOST.name
    shutil.copytree(HOST, folder)
    with acquire() as suite, folder_lock(folder):
        record_folder(suite, folder)
        assert main([str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {folder} is being written by another harness (pid ")
    assert not (folder / "report").exists()
