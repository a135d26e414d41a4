"""The study's charts, one function per question, each drawn from the loaded DataFrame.

Repetitions are shown as the median with its 95% bootstrap interval as whiskers (analysis/uncertainty.py),
over the runs that ran ok; a figure flagged "not measurable here" is written, not drawn. A metric a
tool does not report is NaN and leaves a gap (never a zero bar); a (scenario, tool) with no ok run
has its status ("failed", "timeout", "unsupported") written where its bar would be.
"""
from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Iterable

import matplotlib

matplotlib.use("Agg")
import matplotlib.artist  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.text  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from analysis.change import compare  # noqa: E402
from analysis.load import closed_model, scenario_order  # noqa: E402
from analysis.memory import Slope, per_vu_slopes  # noqa: E402
from analysis.uncertainty import NOT_MEASURABLE as FLAGGED, estimate  # noqa: E402
from harness.cpus import parse_cpus  # noqa: E402
from harness.store.limits import SATURATED  # noqa: E402
from harness.store.results import STATUSES  # noqa: E402

OK = "ok"
NOT_MEASURABLE = "not measurable"
STATUS_COLORS = {"failed": "tab:red", "timeout": "tab:red", "unsupported": "dimgrey", NOT_MEASURABLE: "dimgrey",
                 FLAGGED: "dimgrey"}


def run_status(statuses: Iterable[object]) -> str:
    """"ok" when any repetition ran ok, else how they ended ("failed", "timeout, failed"); NaN is no status."""
    seen = _ordered(statuses)
    return OK if OK in seen else ", ".join(seen)


def _ordered(statuses: Iterable[object]) -> list[str]:
    return sorted({s for s in statuses if isinstance(s, str)},
                  key=lambda s: STATUSES.index(s) if s in STATUSES else len(STATUSES))


def _colour(statuses: Iterable[object]) -> str:
    """The colour of a row's status mark (drawn where it has no ok run): its first status's."""
    seen = _ordered(statuses)
    return STATUS_COLORS.get(seen[0], "tab:red") if seen else "tab:red"


def spread(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per (scenario, label), over its ok repetitions: the median of ``metric``, its 95% bootstrap interval
    (``low``, ``high``; NaN for one run), ``n``, ``cv``, ``status`` (run_status) and the ``colour`` its mark
    takes. A figure flagged "not
    measurable here" (analysis/uncertainty.py: too few requests for the percentile, CV over the limit) has
    no median and the flag as its status; a (scenario, label) without an ok run is kept, with NaN figures."""
    rows = []
    # positions per group and plain arrays: a pandas selection per group cost ~1 ms, and there are
    # scenarios x tools groups per metric
    groups = df.groupby(["scenario", "label"]).indices
    values = df[metric].to_numpy()
    requests = df["requests"].to_numpy() if "requests" in df else None
    statuses = df["status"].to_numpy(dtype=object)
    ok = statuses == OK
    for (scenario, label), at in sorted(groups.items()):
        mine = at[ok[at]]
        found = estimate(values[mine].tolist(), metric, [] if requests is None else requests[mine].tolist())
        status, colour = run_status(statuses[at]), _colour(statuses[at])
        if found.flag and status == OK:
            status, colour = found.flag, STATUS_COLORS[FLAGGED]
        rows.append({"scenario": scenario, "label": label, "median": found.median if found.usable else np.nan,
                     "low": np.nan if found.low is None else found.low,
                     "high": np.nan if found.high is None else found.high,
                     "n": found.n, "cv": found.cv, "status": status, "colour": colour})
    return pd.DataFrame(rows, columns=["scenario", "label", "median", "low", "high", "n", "cv", "status", "colour"])


def by_scenario(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``frame``'s rows per scenario, split once: a boolean selection per panel copies every column each time."""
    return dict(tuple(frame.groupby("scenario", sort=False)))


def _facets(df: pd.DataFrame, title: str, held: str | None = None) -> tuple[plt.Figure, list[tuple[str, plt.Axes]]]:
    """``held``: what the figures stand on, for the title (default: runs_held of ``df``)."""
    scenarios = scenario_order(df)
    cols = min(3, len(scenarios)) or 1
    rows = math.ceil(len(scenarios) / cols) or 1
    labels = df["label"].nunique()
    # one row per label, the same in every panel: only the leftmost panel of a row names them (as seaborn's
    # FacetGrid does); every panel naming every tool was most of a chart's texts, and of its drawing time
    fig, axes = plt.subplots(rows, cols, figsize=(5.4 * cols, 0.6 + rows * (1.6 + 0.3 * labels)), squeeze=False,
                             sharey=True)
    for ax in axes.flat[len(scenarios):]:
        ax.set_visible(False)
    _title(fig, f"{title}; {held or runs_held(df)}")
    return fig, list(zip(scenarios, axes.flat))


def runs_held(df: pd.DataFrame) -> str:
    """What a chart's figures stand on, for its title: the ok runs per tool and scenario, and whether that
    gives whiskers (three runs or more: a 95% interval; fewer: none)."""
    ok = df[df["status"] == OK]
    if ok.empty:
        return "no ok run"
    per_cell = ok.groupby(["scenario", "label"]).size()
    low, high = int(per_cell.min()), int(per_cell.max())
    count = f"{low}" if low == high else f"{low}-{high}"
    whiskers = "no whiskers" if high < 3 else "whiskers where 3 or more"
    return f"{len(ok)} ok runs, {count} per tool and scenario ({whiskers})"


def _title(fig: plt.Figure, title: str) -> None:
    """Placed in inches from the top (a fraction of a tall figure's height ran into what is under it); _layout
    makes room for it."""
    fig.suptitle(title, fontsize=12, x=0.01, y=1 - PAD_IN / fig.get_figheight(), ha="left", va="top",
                 in_layout=False, gid="title")


def _wrap_to_figure(text: matplotlib.text.Text, renderer) -> None:
    """Breaks ``text`` (left-aligned, in figure coordinates) into lines that end inside the figure. Text's own
    wrap=True measures the line anew after every word, at each draw: a tenth of a report's time went to the
    title and caption; here a line's width per character, measured once, sets textwrap's width."""
    fig, written = text.get_figure(), text.get_text()
    room = (1 - text.get_position()[0]) * fig.bbox.width - fig.dpi * PAD_IN
    for _ in range(4):
        extent = text.get_window_extent(renderer)
        if extent.x1 <= fig.bbox.width - fig.dpi * PAD_IN / 2:
            return
        longest = max(len(line) for line in text.get_text().splitlines())
        width = max(10, int(longest * room / extent.width))
        text.set_text("\n".join(textwrap.fill(line, width, break_long_words=False, break_on_hyphens=False)
                                  for line in written.splitlines()))


PAD_IN = 0.1    # inches between the title, the legend, the panels and the caption
# A panel's title at a fixed place just over it: left to matplotlib, each draw places it by laying out every
# tick label of the panel's y axis (~18% of a draw), to end at the same place (no panel has x ticks on top).
TITLE_Y = 1.0


def _layout(fig: plt.Figure, legend_from: plt.Axes | None = None, ncol: int = 1, caption: str = "") -> None:
    """Stacks, top down, the title, the legend shared by every facet (the entries of ``legend_from``) on a
    line of its own, the panels, and ``caption`` under them; each measured, so none runs into another."""
    renderer = fig.canvas.get_renderer()
    height = fig.get_figheight()

    def inches(artist: matplotlib.artist.Artist) -> float:
        return artist.get_window_extent(renderer).height / fig.dpi

    title = next(t for t in fig.texts if t.get_gid() == "title")
    _wrap_to_figure(title, renderer)
    top = PAD_IN + inches(title) + PAD_IN
    if legend_from is not None:
        legend = fig.legend(*legend_from.get_legend_handles_labels(), loc="upper right", fontsize=8, ncol=ncol,
                            bbox_to_anchor=(1, 1 - top / height), borderaxespad=0)
        top += inches(legend) + PAD_IN
    bottom = 0.0
    if caption:
        text = fig.text(0.01, PAD_IN / height, caption, fontsize=7, color="#555")
        _wrap_to_figure(text, renderer)
        bottom = (PAD_IN + inches(text)) / height
    _fit(fig, renderer, (0, bottom, 1, 1 - top / height))


TIGHT_PAD = 1.08    # tight_layout's default padding, in font sizes


def _fit(fig: plt.Figure, renderer, rect: tuple[float, float, float, float]) -> None:
    """``fig.tight_layout(rect=rect)`` of a grid of one-cell panels, from one measurement of each panel:
    tight_layout given a rect measures every panel twice, and each measurement lays out every tick label
    (on 24 panels of 29 tools, 15% of a report's time)."""
    rows, cols = fig.axes[0].get_subplotspec().get_gridspec().get_geometry()
    width, height = fig.get_size_inches()
    pad = TIGHT_PAD * matplotlib.rcParams["font.size"] / 72
    # each panel's decorations (ticks, labels, title, texts), as fractions of the figure, by side
    left, right, top, bottom = (np.zeros((rows, cols)) for _ in range(4))
    to_figure = fig.transFigure.inverted()
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        spec = ax.get_subplotspec()
        cell = (spec.rowspan.start, spec.colspan.start)
        box, tight = ax.get_position(), to_figure.transform_bbox(ax.get_tightbbox(renderer, for_layout_only=True))
        left[cell], right[cell] = box.x0 - tight.x0, tight.x1 - box.x1
        top[cell], bottom[cell] = tight.y1 - box.y1, box.y0 - tight.y0
    margins = {"left": rect[0] + max(left[:, 0].max(), 0) + pad / width,
               "right": rect[2] - max(right[:, -1].max(), 0) - pad / width,
               "top": rect[3] - max(top[0].max(), 0) - pad / height,
               "bottom": rect[1] + max(bottom[-1].max(), 0) + pad / height}
    across = (right[:, :-1] + left[:, 1:]).max(initial=0) + pad / width      # between neighbouring columns
    down = (bottom[:-1] + top[1:]).max(initial=0) + pad / height            # between neighbouring rows
    panel_width = (margins["right"] - margins["left"] - across * (cols - 1)) / cols
    panel_height = (margins["top"] - margins["bottom"] - down * (rows - 1)) / rows
    if panel_width <= 0 or panel_height <= 0:
        fig.tight_layout(rect=rect)       # decorations wider than the figure: tight_layout's warning says so
        return
    spaces = {**({"wspace": across / panel_width} if cols > 1 else {}),
              **({"hspace": down / panel_height} if rows > 1 else {})}
    fig.subplots_adjust(**margins, **spaces)


def _bars(ax: plt.Axes, stats: pd.DataFrame, labels: list[str], color: str = "tab:blue", offset: float = 0.0,
          height: float = 0.8, name: str | None = None) -> None:
    stats = stats.set_index("label").reindex(labels)
    y = np.arange(len(labels)) + offset
    low = (stats["median"] - stats["low"]).clip(lower=0)      # the interval; none for one run
    high = (stats["high"] - stats["median"]).clip(lower=0)
    ax.barh(y, stats["median"], height=height, color=color, label=name,
            xerr=[low.fillna(0), high.fillna(0)], error_kw={"elinewidth": 0.8, "capsize": 2})
    _rows(ax, labels)
    _mark_not_ok(ax, stats)


def _rows(ax: plt.Axes, labels: list[str]) -> None:
    """One row per label, top to bottom, every row inside the axes even where it holds no bar."""
    ax.set_yticks(np.arange(len(labels)), labels, fontsize=8)
    ax.set_ylim(len(labels) - 0.5, -0.5)


def _mark_not_ok(ax: plt.Axes, stats: pd.DataFrame) -> None:
    """Writes the status of each row (label) that has no ok run where its bar would be, in its colour (spread):
    without it the gap would read as "not reported". Once per row, however many bars a row holds."""
    marked = {t.get_position()[1] for t in ax.texts if t.get_gid() == "status"}
    for y, (text, colour) in enumerate(zip(stats["status"], stats["colour"])):
        if not isinstance(text, str) or text == OK or y in marked:
            continue
        # x in axes fraction: the mark stays at the axis' left on a log scale, where x=0 does not exist
        ax.text(0.01, y, text, transform=ax.get_yaxis_transform(), gid="status", fontsize=7, fontstyle="italic",
                va="center", ha="left", color=colour)


def rps(df: pd.DataFrame) -> plt.Figure:
    fig, facets = _facets(df, "Requests per second (median over the runs, 95% interval whiskers)")
    stats = by_scenario(spread(df, "rps"))
    firsts = df.drop_duplicates("scenario").set_index("scenario")
    labels = sorted(df["label"].unique())
    for scenario, ax in facets:
        info = firsts.loc[scenario]
        scenario_stats = stats[scenario]
        _bars(ax, scenario_stats, labels)
        ceiling = info["vus"] / (info["rtt_target_ms"] / 1000)
        top = np.nanmax([scenario_stats["high"].max(), 1.0])
        drawn = ceiling <= 1.6 * top    # a line far beyond the bars would squash them
        if drawn:
            ax.axvline(ceiling, color="tab:red", linestyle="--", linewidth=1.2)
        ax.set_title(f"{scenario} ({info['vus']:.0f} VUs, {info['rtt_target_ms']:g} ms)\nVUs/RTT ceiling "
                     f"{ceiling:,.0f} ({'red dashed line' if drawn else 'off the axis'})", fontsize=8, y=TITLE_Y)
        ax.set_xlabel("requests/s", fontsize=8)
        ax.xaxis.set_major_formatter(matplotlib.ticker.EngFormatter(sep=""))
    _layout(fig)
    return fig


def latency(df: pd.DataFrame) -> plt.Figure:
    fig, facets = _facets(df, "Response time: mean, p50, p95, p99 (log scale where tools differ > 20x, so none is dropped)")
    labels = sorted(df["label"].unique())
    markers = {"lat_mean_ms": ("mean", "o"), "lat_p50_ms": ("p50", "s"), "lat_p95_ms": ("p95", "^"),
               "lat_p99_ms": ("p99", "D")}
    spreads = {metric: by_scenario(spread(df, metric)) for metric in markers}
    rtts = df.drop_duplicates("scenario").set_index("scenario")["rtt_target_ms"]
    for scenario, ax in facets:
        for metric, (name, marker) in markers.items():
            stats = spreads[metric][scenario].set_index("label").reindex(labels)
            ax.scatter(stats["median"], np.arange(len(labels)), marker=marker, s=18, label=name)
        _rows(ax, labels)
        _mark_not_ok(ax, stats)
        rtt = rtts[scenario]
        ax.axvline(rtt, color="grey", linestyle="--", linewidth=0.8, label="target RTT")
        ax.set_title(f"{scenario} (RTT {rtt:g} ms)", fontsize=9, y=TITLE_Y)
        ax.set_xlabel("ms (log)", fontsize=8)
        _log_axis(ax)
    _layout(fig, facets[0][1], ncol=5)
    return fig


def _log_axis(ax: plt.Axes) -> None:
    """Log scale where values span more than 20x (so outliers need no dropping), linear otherwise."""
    low, high = ax.dataLim.intervalx
    if low > 0 and high / low > 20:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    else:
        ax.set_xlabel(ax.get_xlabel().replace(" (log)", ""))


def _simple(metric: str, title: str, unit: str, reference: float | None = None,
            not_measurable: Callable[[pd.DataFrame], pd.Series] | None = None,
            shared_x: bool = False) -> Callable[[pd.DataFrame], plt.Figure]:
    """``not_measurable``: the rows the harness left without the figure on purpose; such a
    (scenario, label) gets "not measurable" at its place instead of a gap ("not reported").
    ``shared_x``: one x-scale for every panel, so that panels compare by eye."""
    def draw(df: pd.DataFrame) -> plt.Figure:
        fig, facets = _facets(df, title)
        stats = spread(df, metric)
        if not_measurable:
            said = df[(df["status"] == OK) & not_measurable(df)]
            keys = set(zip(said["scenario"], said["label"]))
            said_here = pd.Series([k in keys for k in zip(stats["scenario"], stats["label"])], index=stats.index)
            mark = stats["median"].isna() & said_here
            stats.loc[mark, "status"] = NOT_MEASURABLE
        labels = sorted(df["label"].unique())
        for scenario, ax in facets:
            _bars(ax, stats[stats["scenario"] == scenario], labels, color="tab:purple")
            if reference is not None:
                ax.axvline(reference, color="grey", linewidth=0.8)
            ax.set_title(scenario, fontsize=9, y=TITLE_Y)
            ax.set_xlabel(unit, fontsize=8)
        if shared_x:
            limits = np.array([ax.get_xlim() for _, ax in facets])
            for _, ax in facets:
                ax.set_xlim(limits[:, 0].min(), limits[:, 1].max())
        _layout(fig)
        return fig
    return draw


def added_latency(df: pd.DataFrame) -> plt.Figure | None:
    """Only captured runs have lat_added_ms (= tool_error_p50_ms)."""
    if df[df["status"] == OK]["lat_added_ms"].isna().all():
        return None
    return _simple("lat_added_ms", "Latency the tool adds: its p50 minus the wire's p50 (--capture)", "ms", 0.0)(df)


WIRE_CAPTION = ("wire figures: tcpdump on the generator's side of the link for the tool's run only (--capture), "
                "request's first byte out to response's last byte in, per keep-alive connection")


def latency_accuracy(df: pd.DataFrame) -> plt.Figure | None:
    """Per tool, its reported p50/p99 (filled) next to the wire's (hollow), joined by a line."""
    captured = df[(df["status"] == OK) & df["wire_p50_ms"].notna()] if "wire_p50_ms" in df else df.iloc[0:0]
    if captured.empty:
        return None
    fig, facets = _facets(captured, "Latency accuracy: reported (filled) vs wire (hollow) p50 and p99")
    labels = sorted(captured["label"].unique())
    y = np.arange(len(labels))
    for scenario, ax in facets:
        subset = captured[captured["scenario"] == scenario]
        for tool_metric, wire_metric, name, color, offset in (("lat_p50_ms", "wire_p50_ms", "p50", "tab:blue", -0.15),
                                                               ("lat_p99_ms", "wire_p99_ms", "p99", "tab:red", 0.15)):
            tool = spread(subset, tool_metric).set_index("label").reindex(labels)["median"]
            wire = spread(subset, wire_metric).set_index("label").reindex(labels)["median"]
            ax.hlines(y + offset, wire, tool, color=color, linewidth=1)
            ax.scatter(tool, y + offset, color=color, marker="o", s=22, label=f"{name} reported")
            ax.scatter(wire, y + offset, facecolors="white", edgecolors=color, marker="o", s=22, label=f"{name} wire")
        _rows(ax, labels)
        ax.set_title(f"{scenario} (RTT {subset['rtt_target_ms'].iloc[0]:g} ms)", fontsize=9, y=TITLE_Y)
        ax.set_xlabel("ms (log)", fontsize=8)
        _log_axis(ax)
    _layout(fig, facets[0][1], ncol=4, caption=WIRE_CAPTION)
    return fig


def memory(df: pd.DataFrame) -> plt.Figure:
    runtimes = ", ".join(sorted(df["runtime"].dropna().unique()))
    fig, facets = _facets(df, f"Memory of the load generator: average and peak RSS (top's RES, 1 s) over the load "
                              f"window, per tool and VU level; runtime: {runtimes}")
    labels = sorted(df["label"].unique())
    peak, average = (by_scenario(spread(df, metric)) for metric in ("mem_peak_mb", "mem_avg_mb"))
    for scenario, ax in facets:
        _bars(ax, peak[scenario], labels, color="tab:orange", offset=-0.2, height=0.4, name="peak")
        _bars(ax, average[scenario], labels, color="tab:blue", offset=0.2, height=0.4, name="average")
        ax.set_title(scenario, fontsize=9, y=TITLE_Y)
        ax.set_xlabel("MiB (log)", fontsize=8)
        _log_axis(ax)
    _layout(fig, facets[0][1], ncol=2)    # a legend in a panel covered its bars
    return fig


def runtime_ratios(df: pd.DataFrame) -> pd.DataFrame:
    """Docker/host ratios of median RPS and p50 per (tool, scenario) present in both runtimes, each with its
    95% bootstrap interval and verdict (analysis/change.py; "faster": Docker's RPS higher or p50 lower)."""
    columns = ["tool", "scenario", *(f"{m}_{part}" for m in ("rps", "p50") for part in ("ratio", "low", "high", "verdict"))]
    host, docker = df[df["runtime"] == "host"], df[df["runtime"] == "docker"]
    if host.empty or docker.empty:
        return pd.DataFrame(columns=columns)
    found = compare(host, docker)
    if found.empty:
        return pd.DataFrame(columns=columns)
    found.columns = [c.replace("lat_p50_ms_", "p50_") for c in found.columns]
    return found[columns].dropna(subset=["rps_ratio", "p50_ratio"], how="all").reset_index(drop=True)


def docker_vs_host(df: pd.DataFrame) -> plt.Figure | None:
    ratios = runtime_ratios(df)
    if ratios.empty:
        return None
    scenarios = df[["scenario", "vus", "rtt_target_ms"]].drop_duplicates("scenario")
    data = ratios.merge(scenarios, on="scenario").assign(label=lambda d: d["tool"])
    fig, facets = _facets(data, "Container vs bare metal: Docker / host ratio of medians, 95% interval whiskers (1 = no "
                                "difference)", runs_held(df))
    statuses = {scenario: _runtime_status(df[df["scenario"] == scenario]) for scenario in data["scenario"].unique()}
    labels = sorted(set(data["label"]).union(*(s.index for s in statuses.values())))
    for scenario, ax in facets:
        subset = data[data["scenario"] == scenario].set_index("label").reindex(labels)
        y = np.arange(len(labels))
        for metric, offset, name, color in (("rps", -0.2, "RPS ratio", "tab:blue"), ("p50", 0.2, "p50 ratio", "tab:orange")):
            ratio = subset[f"{metric}_ratio"].astype(float)
            errors = [(ratio - subset[f"{metric}_low"].astype(float)).clip(lower=0).fillna(0),
                      (subset[f"{metric}_high"].astype(float) - ratio).clip(lower=0).fillna(0)]
            ax.barh(y + offset, ratio, height=0.4, label=name, color=color, xerr=errors,
                    error_kw={"elinewidth": 0.8, "capsize": 2})
        ax.axvline(1.0, color="grey", linewidth=0.8)
        _rows(ax, labels)
        _mark_not_ok(ax, statuses[scenario].reindex(labels))
        ax.set_title(scenario, fontsize=9, y=TITLE_Y)
    _layout(fig, facets[0][1], ncol=2)    # a legend in a panel covered its bars
    return fig


def _runtime_status(runs: pd.DataFrame) -> pd.DataFrame:
    """Per tool run in both runtimes: ``status``, ok or which runtime had no ok run and how it ended ("failed
    (docker)"), and the ``colour`` of its mark (the first such runtime's)."""
    grouped = runs.groupby(["tool", "runtime"])["status"]
    by_runtime, colours = (grouped.agg(how).unstack("runtime") for how in (run_status, _colour))
    if not {"docker", "host"} <= set(by_runtime.columns):
        return pd.DataFrame(columns=["status", "colour"])
    both = by_runtime[["docker", "host"]].dropna()
    rows = []
    for tool, row in both.iterrows():
        failed = [(runtime, status) for runtime, status in row.items() if status != OK]
        rows.append({"status": "; ".join(f"{status} ({runtime})" for runtime, status in failed) or OK,
                     "colour": colours.loc[tool, failed[0][0]] if failed else ""})
    return pd.DataFrame(rows, index=both.index, columns=["status", "colour"])


def _cpus(column: pd.Series, all_cpus: pd.Series) -> pd.Series:
    """CPUs in a cpus_tool/cpus_target list ("0-1,3" -> 3); every CPU where the list is empty."""
    def count(text: object) -> float:
        return len(parse_cpus(text)) if isinstance(text, str) and text else np.nan
    return column.map(count).fillna(all_cpus)


def with_limits(df: pd.DataFrame) -> pd.DataFrame:
    """Each side's CPU as a share of its own CPUs, beside the row's limited_by (every row has one as loaded:
    harness/store/upgrade.py fills it in folders written before the column)."""
    df = df.assign(**{c: df[c] if c in df else np.nan
                      for c in ("cpus_tool", "cpus_target", "tool_saturated", "target_saturated", "limited_by")})
    cores = pd.to_numeric(df.get("env_cores"), errors="coerce")
    tool_cpus, target_cpus = _cpus(df["cpus_tool"], cores), _cpus(df["cpus_target"], cores)
    return df.assign(tool_cpu_share=df["cpu_avg_pct"] / tool_cpus, target_cpu_share=df["target_cpu_pct"] / target_cpus)


def bottleneck(df: pd.DataFrame) -> plt.Figure:
    data = with_limits(df)
    fig, facets = _facets(data, f"Who limits the run: each side's CPU as % of its own CPUs (>= {SATURATED:.0%}: "
                                "saturated)")
    labels = sorted(data["label"].unique())
    tool, target = (by_scenario(spread(data, metric)) for metric in ("tool_cpu_share", "target_cpu_share"))
    subsets = by_scenario(data[["scenario", "label", "status", "tool_cpu_share", "target_cpu_share", "limited_by",
                                "cpus_tool", "cpus_target"]])
    for scenario, ax in facets:
        subset = subsets[scenario]
        _bars(ax, tool[scenario], labels, color="tab:blue", offset=-0.2, height=0.4, name="tool")
        _bars(ax, target[scenario], labels, color="tab:red", offset=0.2, height=0.4, name="Nginx")
        ax.axvline(SATURATED * 100, color="grey", linestyle="--", linewidth=0.8)
        ok = subset[subset["status"] == OK]     # a killed run's CPU is no figure to scale the axis to
        ax.set_xlim(0, 1.05 * max(100.0, np.nanmax([ok["tool_cpu_share"].max(), ok["target_cpu_share"].max(), 0])))
        sides = ok.groupby("label")["limited_by"].agg(lambda limits: ", ".join(sorted(set(limits))))
        for y, label in enumerate(labels):    # right of the axes: beside the bars, over none
            ax.text(1.02, y, sides.get(label, ""), transform=ax.get_yaxis_transform(), fontsize=7, va="center",
                    ha="left")
        cpus = subset[["cpus_tool", "cpus_target"]].astype(object).fillna("").drop_duplicates()
        split = "; ".join(f"tool on {t or 'all'}, Nginx on {g or 'all'}" for t, g in cpus.itertuples(index=False))
        ax.set_title(f"{scenario} ({split})", fontsize=8, y=TITLE_Y)
        ax.set_xlabel("% of the side's CPUs", fontsize=8)
    _layout(fig, facets[0][1], ncol=2)
    return fig


req_per_cpu = _simple("req_per_cpu_s", "Efficiency: requests per CPU-second of the tool (requests / tool CPU-seconds "
                      "in the load window)", "requests per CPU-second")
def mem_per_vu(df: pd.DataFrame) -> plt.Figure:
    """One bar per tool: the slope of its average RSS over three VU levels or more at one RTT (analysis/memory.py),
    95% whiskers from three runs or more; where there is no slope, why."""
    found = per_vu_slopes(closed_model(df[df["status"] == OK]))
    labels = sorted(df["label"].unique())
    fig, ax = plt.subplots(figsize=(8, 0.3 * len(labels) + 1.6))
    fitted = [s for s in found.values() if s.kib_per_vu is not None]
    held = (f"{sum(s.runs for s in fitted)} ok runs at "
            f"{'/'.join(sorted({f'{s.rtt_ms:g}' for s in fitted}))} ms over "
            f"{'; '.join(sorted({'/'.join(map(str, s.levels)) for s in fitted}))} VUs" if fitted
            else "no tool ran three VU levels at one RTT")
    _title(fig, "Memory per VU: the least-squares slope of average RSS over three VU levels or more at one RTT "
                f"(closed model), KiB per VU, whiskers: its 95% interval; {held}")
    none = Slope(None, why_none="no ok closed-model run")
    each = [found.get(label, none) for label in labels]
    stats = pd.DataFrame({"label": labels,
                          "status": [OK if s.kib_per_vu is not None else f"{NOT_MEASURABLE}: {s.why_none}" for s in each],
                          "colour": STATUS_COLORS[NOT_MEASURABLE],
                          "median": [s.kib_per_vu for s in each], "low": [s.low for s in each],
                          "high": [s.high for s in each]}).astype({"median": float, "low": float, "high": float})
    _bars(ax, stats, labels, color="tab:purple")
    ax.axvline(0.0, color="grey", linewidth=0.8)
    ax.set_xlabel("KiB per VU", fontsize=8)
    _layout(fig)
    return fig


def counting(df: pd.DataFrame) -> plt.Figure:
    counted = df.assign(count_diff_pct=(df["requests"] - df["server_requests"]) / df["server_requests"] * 100)
    return _simple("count_diff_pct", "Counting accuracy: (tool's requests - Nginx's count) / Nginx's count "
                   "(one scale for every panel)", "%", 0.0, shared_x=True)(counted)


NEEDS_CAPTURE = {"added_latency", "latency_accuracy"}   # drawn only from --capture runs (wire_* columns)

CHARTS: dict[str, tuple[str, Callable[[pd.DataFrame], plt.Figure | None]]] = {
    "rps": ("Requests per second per tool and scenario, with the VUs/RTT ceiling", rps),
    "latency": ("Response time per tool and VU level", latency),
    "added_latency": ("Latency the tool itself adds: its p50 minus the wire's p50 (captured runs only)", added_latency),
    "latency_accuracy": (f"Latency accuracy: each tool's reported p50 and p99 next to the wire's; {WIRE_CAPTION}",
                         latency_accuracy),
    "memory": ("Memory per tool and VU level", memory),
    "docker_vs_host": ("Container vs bare metal", docker_vs_host),
    "counting": ("Accuracy of counting: tool vs Nginx", counting),
    "bottleneck": ("Who is the bottleneck: tool and Nginx CPU, each against its own CPU set, and which side "
                   "saturated (>= 90% of its CPUs over the load window); Nginx's figure includes Toxiproxy where it shapes the RTT "
                   "(it runs on Nginx's CPUs); the label right of each row is the side that limited the run", bottleneck),
    "req_per_cpu": ("Requests per CPU-second of the tool: efficiency independent of how many cores it got", req_per_cpu),
    "mem_per_vu": ("Memory per VU: the slope of each tool's RSS over the VU levels it ran", mem_per_vu),
}
