"""The figure and the writer every plot of :mod:`pinext.visualization.plots` uses
(matplotlib's object API: no GUI backend)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure


def save(
    figure: Figure, path: str | Path, formats: Sequence[str] = ("png", "svg"), dpi: int = 110
) -> list[Path]:
    """Write a figure in each format (``path`` without or with a suffix); returns the files."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in formats:
        target = path.with_suffix(f".{fmt}")
        figure.savefig(target, dpi=dpi, bbox_inches="tight")
        written.append(target)
    return written


def _figure(
    rows: int = 1, cols: int = 1, *, height: float = 2.6, width: float = 7.0, sharex: bool = True
) -> tuple[Figure, np.ndarray]:
    fig = Figure(figsize=(width, height * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, sharex=sharex, squeeze=False).ravel())
    for ax in axes:
        ax.grid(True, alpha=0.3)
    return fig, axes
