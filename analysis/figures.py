"""Writing a chart: PNG, what the report page shows; SVG as well only when asked (`make report SVG=1`,
`python -m analysis.report --svg`). Each format is a full redraw of the figure: a report of 24 panels
spent 40% of its time writing every chart twice."""
from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from harness.store.safe import write_bytes_inside  # noqa: E402

DPI = 110


def save(figure: plt.Figure, out: Path, name: str, svg: bool = False, dpi: int = DPI) -> Path:
    """``out``/``name``.png (and .svg with ``svg``); the figure is closed either way. Written by the results
    folder's rule (harness/store/safe.py: no link followed, atomic): a shared folder's report/ may hold a planted
    link."""
    try:
        for ext in ("png", "svg") if svg else ("png",):
            drawn = io.BytesIO()
            figure.savefig(drawn, format=ext, dpi=dpi)
            write_bytes_inside(out.parent, out / f"{name}.{ext}", drawn.getvalue())
    finally:
        plt.close(figure)
    return out / f"{name}.png"
