"""The report's target section (issue 23; scenarios/targets.yaml): one table per question.

- ``cost_table``: what keep-alive off and TLS cost each tool: its RPS and CPU per request (tool and
  target) against the same tool, VUs and RTT on the plain setup (Nginx, keep-alive, HTTP), and for
  keep-alive off the requests per connection actually counted (the wire's, else the file server's).
- ``proxy_table``: a reverse proxy in the path, with the tool that pushed the direct target hardest:
  RPS, p50 added, CPU per 1,000 RPS of the proxy and of the file server behind it, and the RPS a proxy
  core would carry (RPS / the proxy's cores busy).
- ``slow_backend_table``: which tools held every connection open against a backend that sleeps.
Figures are medians over the repeats of ok runs; every comparison is within one runtime.
"""
from __future__ import annotations

import pandas as pd

from harness.scenarios import parse_delay
from analysis.load import default_setup
from analysis.numbers import number

OK = "ok"
KEYS = ["runtime", "tool", "vus", "rtt_target_ms"]
HOLD_FRACTION = 0.95     # connections counted / VUs for "held them all"


def _setting(df: pd.DataFrame, column: str, default: str) -> pd.Series:
    return df[column].fillna(default).astype(str) if column in df else pd.Series(default, index=df.index)


def _medians(rows: pd.DataFrame) -> pd.DataFrame:
    ok = rows[rows["status"] == OK].copy()
    ok["tool_cpu_us"] = ok["cpu_avg_pct"] / 100 / ok["rps"] * 1e6
    ok["target_cpu_us"] = ok["target_cpu_pct"] / 100 / ok["rps"] * 1e6
    columns = ["rps", "lat_p50_ms", "lat_p99_ms", "tool_cpu_us", "target_cpu_us", "target_cpu_pct",
               "proxy_cpu_pct", "wire_requests_per_connection", "server_connections", "server_requests", "errors",
               "wire_connections"]
    return ok.groupby(KEYS + ["scenario"], dropna=False)[[c for c in columns if c in ok]].median().reset_index()


def _change(new: float | None, old: float | None) -> str:
    return "" if new is None or old is None or pd.isna(new) or pd.isna(old) or not old else f"{new / old - 1:+.0%}"


def cost_table(df: pd.DataFrame) -> list[dict]:
    """Keep-alive off and TLS against the plain setup, per tool (unsupported runs say why)."""
    plain = _medians(df[default_setup(df)])
    rows = []
    for change, mask in (("keep-alive off", _setting(df, "keepalive", "True") == "False"),
                         ("TLS", _setting(df, "tls", "False") == "True")):
        only = mask & (_setting(df, "target", "nginx") == "nginx") & (_setting(df, "backend_delay_ms", "") == "") \
            & (_setting(df, "protocol", "http/1.1") == "http/1.1")
        changed = df[only]
        measured = _medians(changed)
        for (runtime, tool, vus, rtt, scenario), runs in changed.groupby(KEYS + ["scenario"], dropna=False):
            base = plain[(plain["runtime"] == runtime) & (plain["tool"] == tool) & (plain["vus"] == vus)
                         & (plain["rtt_target_ms"] == rtt)]
            mine = measured[(measured["scenario"] == scenario) & (measured["runtime"] == runtime) & (measured["tool"] == tool)]
            row = {"tool": tool, "runtime": runtime, "change": change, "scenario": scenario}
            if mine.empty:
                statuses = runs.drop_duplicates("status")
                rows.append({**row, "result": f"{statuses['status'].iloc[0]}: {statuses['error'].iloc[0]}"})
                continue
            now, before = mine.iloc[0], base.iloc[0] if len(base) else None
            rows.append({**row, "result": "ok", "plain scenario": "" if before is None else before["scenario"],
                         "RPS plain": number(None if before is None else before["rps"]), "RPS": number(now["rps"]),
                         "RPS change": _change(now["rps"], None if before is None else before["rps"]),
                         "tool CPU µs/req plain → now": _arrow(before, now, "tool_cpu_us"),
                         "target CPU µs/req plain → now": _arrow(before, now, "target_cpu_us"),
                         "requests per connection": _per_connection(now) if change == "keep-alive off" else ""})
    return sorted(rows, key=lambda r: (r["change"], r["runtime"], r["result"] != "ok", r["tool"]))


def _arrow(before: pd.Series | None, now: pd.Series, column: str) -> str:
    old = "" if before is None else number(before.get(column))
    return f"{old or '?'} → {number(now.get(column)) or '?'}"


def _per_connection(now: pd.Series) -> str:
    """Requests per TCP connection, as counted: the wire's, else the file server's (a direct target)."""
    wire = now.get("wire_requests_per_connection")
    if wire is not None and not pd.isna(wire):
        return f"{wire:.2f} (wire)"
    connections, requests = now.get("server_connections"), now.get("server_requests")
    if connections and not pd.isna(connections) and requests and not pd.isna(requests):
        return f"{requests / connections:.2f} (Nginx's count)"
    return ""


def proxy_table(df: pd.DataFrame) -> list[dict]:
    """Direct vs each proxy at the VU levels a proxy ran at, with each runtime's reference tool."""
    target = _setting(df, "target", "nginx")
    plain_http = (_setting(df, "keepalive", "True") == "True") & (_setting(df, "tls", "False") == "False") \
        & (_setting(df, "backend_delay_ms", "") == "") & (_setting(df, "protocol", "http/1.1") == "http/1.1")
    proxied = df[plain_http & (target != "nginx")]
    if proxied.empty:
        return []
    levels = proxied[["runtime", "vus", "rtt_target_ms"]].drop_duplicates()
    candidates = df[plain_http].merge(levels, on=["runtime", "vus", "rtt_target_ms"])
    medians = _medians(candidates).merge(candidates[KEYS + ["scenario", "target"]].drop_duplicates(),
                                         on=KEYS + ["scenario"])
    rows = []
    for runtime, mine in medians.groupby("runtime"):
        direct = mine[mine["target"] == "nginx"]
        # The tool that pushed Nginx hardest (without a direct run: the proxies hardest).
        reference = (direct if len(direct) else mine).groupby("tool")["rps"].max().idxmax()
        for (name, vus), run in mine[mine["tool"] == reference].sort_values(["target", "vus"]).groupby(["target", "vus"], sort=False):
            now = run.iloc[0]
            base = direct[(direct["tool"] == reference) & (direct["vus"] == vus)]
            before = base.iloc[0] if len(base) else None
            rows.append(_proxy_row(runtime, reference, name, vus, now, before))
    return sorted(rows, key=lambda r: (r["runtime"], r["target"] != "nginx (direct)", r["target"], r["VUs"]))


def _proxy_row(runtime: str, tool: str, name: str, vus: float, now: pd.Series, before: pd.Series | None) -> dict:
    rps = now["rps"]
    proxy = now.get("proxy_cpu_pct")
    proxy = None if proxy is None or pd.isna(proxy) else proxy
    upstream = now["target_cpu_pct"] - (proxy or 0) if not pd.isna(now["target_cpu_pct"]) else None
    added = None if before is None else now["lat_p50_ms"] - before["lat_p50_ms"]
    return {"runtime": runtime, "tool": tool, "target": "nginx (direct)" if name == "nginx" else name,
            "VUs": int(vus), "RPS": number(rps),
            "vs direct": "" if name == "nginx" else _change(rps, None if before is None else before["rps"]),
            "p50 ms": number(now["lat_p50_ms"]), "p50 added ms": "" if name == "nginx" or added is None else f"{added:+.3f}",
            "proxy CPU per 1k RPS": "" if proxy is None else f"{proxy / 100 / (rps / 1000):.3f}",
            "file server CPU per 1k RPS": "" if upstream is None else f"{upstream / 100 / (rps / 1000):.3f}",
            "RPS per proxy core": "" if not proxy else number(rps / (proxy / 100))}


def slow_backend_table(df: pd.DataFrame) -> list[dict]:
    """Per tool and runtime in a backend-delay scenario: did it hold every connection, at the rate the
    delay allows (VUs / (mean delay + RTT))?"""
    delayed = df[_setting(df, "backend_delay_ms", "") != ""]
    rows = []
    for (runtime, tool, scenario), runs in delayed.groupby(["runtime", "tool", "scenario"]):
        first = runs.iloc[0]
        row = {"tool": tool, "runtime": runtime, "scenario": scenario, "VUs": int(first["vus"]),
               "delay ms": first["backend_delay_ms"]}
        try:        # a results folder from elsewhere may hold anything in the cell
            low, high = parse_delay(str(first["backend_delay_ms"]))
        except ValueError as exc:
            rows.append({**row, "verdict": f"unreadable delay: {exc}"})
            continue
        mean_s = (low + high) / 2 / 1000 + first["rtt_target_ms"] / 1000
        expected = first["vus"] / mean_s
        ok = runs[runs["status"] == OK]
        row["expected RPS"] = number(expected)
        if ok.empty:
            rows.append({**row, "verdict": f"{first['status']}: {first['error']}"})
            continue
        now = _medians(ok).iloc[0]
        connections = now.get("wire_connections") if not pd.isna(now.get("wire_connections", float("nan"))) \
            else now["server_connections"]
        rows.append({**row, "RPS": number(now["rps"]), "of expected": f"{now['rps'] / expected:.0%}",
                     "connections": number(connections), "p50 ms": number(now["lat_p50_ms"]),
                     "p99 ms": number(now["lat_p99_ms"]), "errors": number(now["errors"]),
                     "verdict": _held(now, connections, first["vus"], expected)})
    return sorted(rows, key=lambda r: (r["runtime"], not r["verdict"].startswith("held"), r["tool"]))


def _held(now: pd.Series, connections: float | None, vus: float, expected: float) -> str:
    if now["errors"] and not pd.isna(now["errors"]):
        return f"{now['errors']:,.0f} errors"
    if connections is None or pd.isna(connections):
        return "not counted (no connection count)"
    if connections < HOLD_FRACTION * vus:
        return f"opened only {connections:,.0f} of {vus:,.0f} connections"
    if connections > vus / HOLD_FRACTION:
        return f"reconnected: {connections:,.0f} connections for {vus:,.0f} VUs"
    if now["rps"] < 0.9 * expected:
        return f"held {vus:,.0f} connections, but at {now['rps'] / expected:.0%} of the rate they allow"
    return f"held {vus:,.0f} connections"


def section(df: pd.DataFrame) -> dict:
    """What the template shows (each table only when its scenarios are in the results)."""
    return {"cost": cost_table(df), "proxy": proxy_table(df), "slow": slow_backend_table(df)}
