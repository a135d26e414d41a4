"""How the report writes a figure: one rule for every table, label and sentence."""
from __future__ import annotations

import pandas as pd


def number(value: float | str | None, digits: int = 3) -> str:
    """`digits` significant digits below 1,000, whole numbers with separators above (999.95 is "1,000",
    never "1e+03"); a missing value is an empty cell, a string (a flag, a note) stays as it is."""
    if isinstance(value, str):
        return value
    if value is None or pd.isna(value):
        return ""
    short = f"{value:.{digits}g}"
    return f"{value:,.0f}" if abs(value) >= 1000 or "e" in short else short
