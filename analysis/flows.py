"""The report's "Scripted flows" section (issue 37; scenarios/flows.yaml): which tools script the login flow, what
the script costs each (requests per CPU-second of the tool, flow against its plain GET of the file from the same
server at the same VUs, RTT and transport), each step's latency where the tool times them apart, and what the API
counted beside what the tool said. Medians over the repeats of ok runs; a failed flow shows the API's counts."""
from __future__ import annotations

import pandas as pd

from analysis.numbers import number

OK = "ok"
LEVEL = ["runtime", "tool", "target", "vus", "rtt_target_ms", "tls", "keepalive"]
STEPS = ["lat_login_p50_ms", "lat_api_get_p50_ms"]
SERVER = ["server_logins", "server_api_gets", "server_logins_refused", "server_api_gets_refused"]


def _flows(df: pd.DataFrame) -> pd.Series:
    return df["flow"].notna() if "flow" in df else pd.Series(False, index=df.index)


def _plain(df: pd.DataFrame) -> pd.Series:
    """The baseline: one GET of the file, keep-alive as the flow's, HTTP/1.1, no delay, rate or stall."""
    plain = ~_flows(df) & (df["protocol"].fillna("http/1.1") == "http/1.1") & df["backend_delay_ms"].isna()
    for column in ("rate_target_rps", "stall_ms"):
        if column in df:
            plain &= df[column].isna()
    return plain


def _per_cpu(runs: pd.DataFrame) -> pd.Series:
    return runs["rps"] / (runs["cpu_avg_pct"] / 100)


def cost_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Per ok flow scenario and tool: its medians, and the plain GET's at the same level (NaN where none ran)."""
    if "flow" not in df or not _flows(df).any():
        return pd.DataFrame()
    ok = df[df["status"] == OK].assign(per_cpu=lambda d: _per_cpu(d))
    flows, plain = ok[_flows(ok)], ok[_plain(ok)]
    medians = flows.groupby(LEVEL + ["scenario", "flow", "relogin_every"], dropna=False).agg(
        rps=("rps", "median"), per_cpu=("per_cpu", "median"), requests=("requests", "median"),
        **{c: (c, "median") for c in STEPS + SERVER}, runs=("rps", "size")).reset_index()
    base = plain.groupby(LEVEL, dropna=False).agg(plain_rps=("rps", "median"), plain_per_cpu=("per_cpu", "median"),
                                                  plain_scenario=("scenario", "first")).reset_index()
    return medians.merge(base, on=LEVEL, how="left")


def table(df: pd.DataFrame) -> dict:
    """{"cost": a line per tool and flow scenario, "cannot": a line per tool that cannot script it}."""
    if "flow" not in df or not _flows(df).any():
        return {}
    lines = []
    for _, row in cost_rows(df).iterrows():
        share = row["per_cpu"] / row["plain_per_cpu"] if pd.notna(row["plain_per_cpu"]) else None
        gets_per_login = row["server_api_gets"] / row["server_logins"] if row["server_logins"] else None
        lines.append({"tool": row["tool"], "runtime": row["runtime"], "scenario": row["scenario"], "result": OK,
                      "relogin every": number(row["relogin_every"]) if pd.notna(row["relogin_every"]) else "once",
                      "RPS": number(row["rps"]), "plain GET RPS": number(row["plain_rps"]),
                      "tool req/CPU-s": number(row["per_cpu"]), "plain req/CPU-s": number(row["plain_per_cpu"]),
                      "per core vs plain": "" if share is None else f"{share:.0%}",
                      "login p50 ms": number(row["lat_login_p50_ms"]), "GET p50 ms": number(row["lat_api_get_p50_ms"]),
                      "tool requests": number(row["requests"]), "API logins": number(row["server_logins"]),
                      "API GETs": number(row["server_api_gets"]),
                      "GETs / login": "" if gets_per_login is None else f"{gets_per_login:,.1f}",
                      "API 401s": number(row["server_logins_refused"] + row["server_api_gets_refused"])})
    failed = df[_flows(df) & (df["status"] == "failed")]
    for _, row in failed.drop_duplicates(["runtime", "tool", "scenario"]).iterrows():
        lines.append({"tool": row["tool"], "runtime": row["runtime"], "scenario": row["scenario"],
                      "result": f"failed: {row['error']}"})
    cannot = df[_flows(df) & (df["status"] == "unsupported")].drop_duplicates(["runtime", "tool"])
    return {"cost": sorted(lines, key=lambda r: (r["runtime"], r["scenario"], r["tool"])),
            "cannot": [{"tool": r["tool"], "runtime": r["runtime"], "why": r["error"]}
                       for _, r in cannot.sort_values(["runtime", "tool"]).iterrows()]}


def scorecard_cost(runs: pd.DataFrame) -> tuple[float, str] | None:
    """(flow req/CPU-s ÷ plain req/CPU-s, scenario) for one tool's runs: the flow logging in once, in the scenario
    with the lowest RTT and most VUs that has its plain GET (where the tool is pushed)."""
    rows = cost_rows(runs)
    if rows.empty:
        return None
    once = rows[rows["relogin_every"].isna() & rows["plain_per_cpu"].notna()]
    once = once.sort_values(["rtt_target_ms", "vus"], ascending=[True, False])
    if once.empty:
        return None
    first = once.iloc[0]
    return first["per_cpu"] / first["plain_per_cpu"], first["scenario"]
