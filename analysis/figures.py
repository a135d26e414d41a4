"""Writing a chart: PNG, what the report page shows; SVG as well only when asked (`make report SVG=1`,
`python -m analysis.report --svg`). Each format is a full redraw of the figure: a report of 24 panels
spent 40% of its time writing every chart twice."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DPI = 110


def save(figure: plt.Figure, out: Path, name: str, svg: bool = False) -> None:
    """``out``/``name``.png (and .svg with ``svg``); the figure is closed either way."""
    try:
        for ext in ("png", "svg") if svg else ("png",):
            figure.savefig(out / f"{name}.{ext}", dpi=DPI)
    finally:
        plt.close(figure)
