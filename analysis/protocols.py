"""The report's HTTP/2 section (issue 38; scenarios/protocols.yaml): for every tool, runtime, target, VU level and
RTT that has an HTTP/2 scenario, each protocol and streams setting run there, HTTP/1.1 included: RPS, p50/p99,
requests per CPU-second of the tool and of the target, and the connections the file server accepted (the tool's
when it loads Nginx itself; behind a proxy they are the proxy's, and left out). Each HTTP/2 line is compared with
HTTP/1.1 at the same target, VUs and RTT over the same transport (h2 with HTTP/1.1 over TLS, h2c with plain
HTTP/1.1). Medians over the repeats of ok runs; an unsupported or failed run says why.
"""
from __future__ import annotations

import re

import pandas as pd

from analysis.numbers import number

OK = "ok"
LEVEL = ["runtime", "tool", "target", "vus", "rtt_target_ms"]
SETTING = ["protocol", "streams", "tls", "scenario"]
HTTP2 = ("h2", "h2c", "h3")   # the protocols compared with HTTP/1.1 (h3: HTTP/3, over TLS as h2)
ORDER = {"http/1.1": 0, "h2": 1, "h2c": 2, "h3": 3}


def _closed_loop(df: pd.DataFrame) -> pd.DataFrame:
    """Runs with keep-alive on, no backend delay, rate or stall: the protocol (and the target) is what differs."""
    plain = (df["keepalive"].astype(str) == "True") & df["backend_delay_ms"].isna()
    for column in ("rate_target_rps", "stall_ms", "flow"):
        if column in df:
            plain &= df[column].isna()
    return df[plain].assign(tls=df["tls"].astype(str) == "True",
                            streams=pd.to_numeric(df.get("streams", 1), errors="coerce").fillna(1).astype(int))


def _medians(ok: pd.DataFrame) -> pd.DataFrame:
    ok = ok.assign(tool_rps_per_cpu_s=ok["rps"] / (ok["cpu_avg_pct"] / 100),
                   target_rps_per_cpu_s=ok["rps"] / (ok["target_cpu_pct"] / 100))
    columns = ["rps", "lat_p50_ms", "lat_p99_ms", "tool_rps_per_cpu_s", "target_rps_per_cpu_s", "server_connections"]
    return ok.groupby(LEVEL + SETTING, dropna=False)[columns].median().reset_index()


def table(df: pd.DataFrame) -> list[dict]:
    """One line per tool, runtime, target, VU level, RTT and protocol setting, where the level has an HTTP/2
    scenario."""
    if df.empty or "protocol" not in df or not df["protocol"].isin(HTTP2).any():
        return []
    runs = _closed_loop(df)
    levels = runs[runs["protocol"].isin(HTTP2)][LEVEL].drop_duplicates()
    runs = runs.merge(levels, on=LEVEL)
    medians = _medians(runs[runs["status"] == OK])
    rows = []
    for key, group in runs.groupby(LEVEL + SETTING, dropna=False):
        level, setting = dict(zip(LEVEL, key[:len(LEVEL)])), dict(zip(SETTING, key[len(LEVEL):]))
        row = {"tool": level["tool"], "runtime": level["runtime"], "target": level["target"], "VUs": int(level["vus"]),
               "RTT ms": number(level["rtt_target_ms"]), "protocol": _protocol(setting),
               "streams": int(setting["streams"]), "scenario": setting["scenario"]}
        mine = medians[(medians[LEVEL + SETTING] == pd.Series({**level, **setting})).all(axis=1)]
        if mine.empty:
            first = group.drop_duplicates("status").iloc[0]
            rows.append({**row, "result": f"{first['status']}: {first['error']}"})
            continue
        now = mine.iloc[0]
        base = _baseline(medians, level, setting)
        connections = number(now["server_connections"]) if level["target"] == "nginx" else ""
        rows.append({**row, "result": "ok", "connections": connections,
                     "RPS": number(now["rps"]), "vs HTTP/1.1": _change(now["rps"], base),
                     "p50 ms": number(now["lat_p50_ms"]), "p99 ms": number(now["lat_p99_ms"]),
                     "tool req/CPU-s": number(now["tool_rps_per_cpu_s"]),
                     "target req/CPU-s": number(now["target_rps_per_cpu_s"])})
    return sorted(rows, key=lambda r: (r["runtime"], r["target"] != "nginx", r["target"], r["RTT ms"], r["VUs"],
                                       r["tool"], ORDER[r["protocol"].split()[0]], r["protocol"], r["streams"]))


def _protocol(setting: dict) -> str:
    return "http/1.1 over TLS" if setting["protocol"] == "http/1.1" and setting["tls"] else setting["protocol"]


def _baseline(medians: pd.DataFrame, level: dict, setting: dict) -> float | None:
    """HTTP/1.1's RPS at the same level (target included) over the same transport (TLS for h2), for an HTTP/2
    line."""
    if setting["protocol"] not in HTTP2:
        return None
    same = medians[(medians[LEVEL] == pd.Series(level)).all(axis=1) & (medians["protocol"] == "http/1.1")
                   & (medians["tls"] == (setting["protocol"] != "h2c"))]
    return None if same.empty else same["rps"].iloc[0]


def _change(new: float, old: float | None) -> str:
    return "" if old is None or pd.isna(old) or not old or pd.isna(new) else f"{new / old - 1:+.0%}"


def section(df: pd.DataFrame) -> dict:
    """The table split for reading: {"lines": what ran (a tool's HTTP/1.1 baselines only where it ran HTTP/2 or
    HTTP/3 at that level, ok or failed), "cannot": a line per tool and reason, with the protocols it concerns}."""
    lines = table(df)
    if not lines:
        return {}
    unsupported = [line for line in lines if line["result"].startswith("unsupported: ")]
    ran = [line for line in lines if line not in unsupported]
    spoke = {_level(line) for line in ran if line["protocol"] in HTTP2}
    cannot: dict[tuple, list[str]] = {}
    for line in unsupported:
        why = re.sub(r"^(h2c?|h3) not supported: ", "", line["result"].removeprefix("unsupported: "))
        cannot.setdefault((line["tool"], line["runtime"], why), []).append(line["protocol"])
    return {"lines": [line for line in ran if line["protocol"] in HTTP2 or _level(line) in spoke],
            "cannot": [{"tool": tool, "runtime": runtime, "protocols": ", ".join(dict.fromkeys(protocols)), "why": why}
                       for (tool, runtime, why), protocols in sorted(cannot.items())]}


def _level(line: dict) -> tuple:
    return line["tool"], line["runtime"], line["target"], line["VUs"], line["RTT ms"]
