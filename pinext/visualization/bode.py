"""Bode plots of linear models (:func:`pinext.linearize`), re-exported by
:mod:`pinext.visualization.plots`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..exceptions import InvalidParameter
from ._figures import _figure


def bode(
    models: Any,
    input: str | int,
    output: str | int,
    f: Any = None,
    *,
    labels: Sequence[str] | None = None,
    marks: bool = True,
) -> Figure:
    """Bode plot of one input-output channel of one or several linear models.

    Args:
        models: A :class:`pinext.LinearModel` or a sequence of them (same channel names).
        input: Input name (or index).
        output: Output name (or index).
        f: Frequencies [Hz]; default 400 points log-spaced over two decades around the
            models' poles.
        labels: Legend entries, one per model.
        marks: Mark the first model's resonances (modes, dotted) and anti-resonances
            (imaginary transmission zeros, dashed).

    Returns:
        Figure with magnitude [dB of output unit / input unit] and phase [deg] against f [Hz].
    """
    from ..linear_models import frequency_response

    models = list(models) if isinstance(models, Sequence) else [models]
    if not models:
        raise InvalidParameter("bode needs at least one linear model")
    first = models[0]
    if f is None:
        moving = np.abs(first.poles())
        moving = moving[moving > 1e-9] / (2 * np.pi)
        low, high = (moving.min(), moving.max()) if moving.size else (0.1, 10.0)
        f = np.logspace(np.log10(low) - 1, np.log10(high) + 1, 400)
    f = np.asarray(f, dtype=float)
    i, o = first._index(input, "input"), first._index(output, "output")
    unit = f"{first.output_units[o]}/{first.input_units[i]}"
    fig, (ax_m, ax_p) = _figure(2, 1, height=2.8)
    for k, model in enumerate(models):
        g = frequency_response(model, input, output, f)
        label = labels[k] if labels is not None else None
        ax_m.semilogx(f, 20 * np.log10(np.maximum(np.abs(g), 1e-300)), color=f"C{k}", label=label)
        ax_p.semilogx(f, np.degrees(np.unwrap(np.angle(g))), color=f"C{k}")
    if marks:
        for mode in first.modes():
            if f.min() <= mode.frequency <= f.max():
                ax_m.axvline(mode.frequency, color="0.4", ls=":", lw=0.8)
        zeros = first.zeros(input, output)
        for z in zeros[(zeros.imag > 0) & (np.abs(zeros.real) <= 0.1 * np.abs(zeros))]:
            if f.min() <= abs(z) / (2 * np.pi) <= f.max():
                ax_m.axvline(abs(z) / (2 * np.pi), color="0.4", ls="--", lw=0.8)
    ax_m.set_ylabel(f"|G| [dB, {unit}]")
    ax_p.set_ylabel("phase [deg]")
    ax_p.set_xlabel("frequency f [Hz]")
    ax_m.set_title(f"{first.output_names[o]} / {first.input_names[i]}")
    if labels is not None:
        ax_m.legend(fontsize=7)
    return fig
