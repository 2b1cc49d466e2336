"""The common pictures of a study: a response against one parameter, or over two."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..exceptions import InvalidParameter

if TYPE_CHECKING:
    import pandas as pd


def _column(df: Any, name: str, role: str) -> None:
    if name not in df.columns:
        raise InvalidParameter(
            f"{role} '{name}' is not a column of the study; columns: {', '.join(df.columns)}"
        )


def plot(df: pd.DataFrame, x: str, y: str, hue: str | None = None, *, ax: Any = None) -> Any:
    """Draw a study's rows (matplotlib).

    * ``hue=None``: ``y`` against ``x``, one marker per point (a line through them when
      every ``x`` appears once).
    * ``x`` and ``y`` forming a full grid (one row per cell): a heat map of ``hue`` over
      (``x``, ``y``) with a colour bar, logarithmic axes for logarithmic grids.
    * otherwise, ``hue`` of at most 8 values (a third parameter): one line of ``y`` against
      ``x`` per value; of more values (samples): a scatter coloured by ``hue``.

    Rows that are not ``ok`` are left out.

    Args:
        df: The DataFrame returned by :func:`pinext.sweep` (or :func:`pinext.sweep.read`).
        x: Column on the horizontal axis.
        y: Column on the vertical axis.
        hue: Column shown in colour, or None.
        ax: Axes to draw in; default a new figure.

    Returns:
        The matplotlib Axes.

    Raises:
        InvalidParameter: A column that the study does not have, or no ``ok`` row.
    """
    import matplotlib.pyplot as plt

    for name, role in ((x, "x"), (y, "y"), (hue, "hue")):
        if name is not None:
            _column(df, name, role)
    if "status" in df.columns:
        df = df[df["status"] == "ok"]
    if not len(df):
        raise InvalidParameter("no successful point to plot (every row failed or was lost)")
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4.8))
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    if hue is None:
        data = df.sort_values(x)
        style = "o-" if data[x].is_unique else "o"
        ax.plot(data[x].to_numpy(), data[y].to_numpy(), style)
        return ax
    numeric = df[hue].dtype.kind in "biuf"
    if numeric and _is_grid(df, x, y):
        table = df.pivot_table(index=y, columns=x, values=hue, aggfunc="first")
        xs, ys = table.columns.to_numpy(float), table.index.to_numpy(float)
        mesh = ax.pcolormesh(_edges(xs), _edges(ys), table.to_numpy(), shading="flat")
        if _logarithmic(xs):
            ax.set_xscale("log")
        if _logarithmic(ys):
            ax.set_yscale("log")
    elif df[hue].nunique() <= 8:
        for value in sorted(df[hue].unique()):
            data = df[df[hue] == value].sort_values(x)
            label = f"{hue} = {value:g}" if numeric else f"{hue} = {value}"
            ax.plot(data[x].to_numpy(), data[y].to_numpy(), "o-", label=label)
        ax.legend(fontsize=8)
        return ax
    else:
        mesh = ax.scatter(df[x].to_numpy(), df[y].to_numpy(), c=df[hue].to_numpy())
    ax.figure.colorbar(mesh, ax=ax, label=hue)
    return ax


def _is_grid(df: pd.DataFrame, x: str, y: str) -> bool:
    """Every (x, y) pair of a full grid appears exactly once."""
    cells = df[[x, y]].drop_duplicates()
    return len(cells) == len(df) == df[x].nunique() * df[y].nunique()


def _logarithmic(values: np.ndarray) -> bool:
    """Grid values evenly spaced in the logarithm rather than linearly."""
    if values.size < 3 or np.any(values <= 0):
        return False
    linear = np.ptp(np.diff(values)) / np.ptp(values)
    logarithmic = np.ptp(np.diff(np.log(values))) / np.ptp(np.log(values))
    return bool(logarithmic < linear)


def _edges(values: np.ndarray) -> np.ndarray:
    """Cell edges around grid values (geometric means on a logarithmic grid)."""
    if values.size == 1:
        return (
            np.array([values[0] - 0.5, values[0] + 0.5])
            if values[0] <= 0
            else np.array([values[0] / 1.5, values[0] * 1.5])
        )
    if _logarithmic(values):
        logs = np.log(values)
        return np.exp(_edges_linear(logs))
    return _edges_linear(values)


def _edges_linear(values: np.ndarray) -> np.ndarray:
    middle = 0.5 * (values[1:] + values[:-1])
    return np.concatenate([[2 * values[0] - middle[0]], middle, [2 * values[-1] - middle[-1]]])
