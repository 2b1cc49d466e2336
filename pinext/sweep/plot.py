"""The common pictures of a study: a response against one parameter, or over two."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..exceptions import InvalidParameter


def _column(df: Any, name: str, role: str) -> None:
    if name not in df.columns:
        raise InvalidParameter(
            f"{role} '{name}' is not a column of the study; columns: {', '.join(df.columns)}"
        )


def plot(df: Any, x: str, y: str, hue: str | None = None, *, ax: Any = None) -> Any:
    """Draw a study's rows (matplotlib).

    * ``hue=None``: ``y`` against ``x``, one marker per point (a line through them when
      every ``x`` appears once).
    * ``hue`` a column of many values (a response), with ``x`` and ``y`` forming a full grid:
      a heat map of ``hue`` over (``x``, ``y``) with a colour bar; not a full grid (samples):
      a scatter coloured by ``hue``.
    * ``hue`` a column of at most 8 values (a third parameter): one line of ``y`` against
      ``x`` per value.

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
    values = df[hue].unique()
    if len(values) <= 8 and hue not in (x, y) and len(df) > len(values):
        for value in sorted(values):
            data = df[df[hue] == value].sort_values(x)
            ax.plot(
                data[x].to_numpy(),
                data[y].to_numpy(),
                "o-",
                label=f"{hue} = {value:g}"
                if isinstance(value, (int, float))
                else f"{hue} = {value}",
            )
        ax.legend(fontsize=8)
        return ax
    table = df.pivot_table(index=y, columns=x, values=hue, aggfunc="mean")
    if table.size == len(df) and not table.isna().to_numpy().any():
        xs, ys = table.columns.to_numpy(float), table.index.to_numpy(float)
        mesh = ax.pcolormesh(_edges(xs), _edges(ys), table.to_numpy(), shading="flat")
        for axis, values_ in ((ax.xaxis, xs), (ax.yaxis, ys)):
            if _logarithmic(values_):
                (ax.set_xscale if axis is ax.xaxis else ax.set_yscale)("log")
    else:
        mesh = ax.scatter(df[x].to_numpy(), df[y].to_numpy(), c=df[hue].to_numpy())
    ax.figure.colorbar(mesh, ax=ax, label=hue)
    return ax


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
