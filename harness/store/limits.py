"""Who limited a run, as the stored row names it: the limited_by codes and the rule behind them, on plain values.

harness/row/bottleneck.py applies the rule to a run it derives; harness/store/upgrade.py to a row of a folder
written before the limited_by column; analysis/ reads the codes. They live here, below all three (tests/test_imports.py).
"""
from __future__ import annotations

SATURATED = 0.9    # share of a side's CPUs, averaged over the load window
# The limited_by codes and what each means (the README's column table; the report shows the code).
SIDES = {"tool": "the tool's CPUs saturated", "target": "the target's CPUs saturated",
         "tool and target": "both sides' CPUs saturated",
         "shaper": "the shaped path (Toxiproxy) was slower under the load and the run fell short of VUs / RTT",
         "shared CPUs": "no isolation: tool and target together saturated every CPU",
         "other processes": "other processes on the machine took the sides' CPUs (CPUs contended)",
         "neither": "neither side saturated: the RTT, or the tool's own limits (e.g. one thread)",
         "not measured": "no CPU samples", "n/a": "the run did not end ok"}
CONTENDED = "CPUs contended"   # the contention note's opening words (harness/row/bottleneck.py contention_note)


def side(tool_saturated: bool | None, target_saturated: bool | None, isolated: bool, cpu_pct: float | None,
         target_cpu_pct: float | None, all_cpus: int, contended: bool = False, capped_by_shaper: bool = False) -> str:
    """The rule behind limited_by, on plain values: a code of SIDES for a run that ended ok."""
    if tool_saturated and target_saturated:
        return "tool and target"
    if tool_saturated:
        return "tool"
    if target_saturated:
        return "target"
    if tool_saturated is None and target_saturated is None:
        return "not measured"
    if capped_by_shaper:
        return "shaper"
    if not isolated and cpu_pct is not None and target_cpu_pct is not None \
            and cpu_pct + target_cpu_pct >= SATURATED * 100 * all_cpus:
        return "shared CPUs"
    if contended:
        return "other processes"
    return "neither"
