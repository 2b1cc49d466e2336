"""The self-contained HTML design report: check table, speed–torque diagrams, thermal curves
and power plots (Vukobratović & Potkonjak, §20.4.1), figures embedded as base64 PNG."""

from __future__ import annotations

import base64
import html as html_lib
import io
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from .drive_sizing import DriveReport

__all__ = ["design_figures", "write_design_html"]


def _png(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _grid(n: int):
    from matplotlib.figure import Figure

    cols = min(3, max(n, 1))
    rows = max(1, int(np.ceil(n / cols)))
    fig = Figure(figsize=(4.2 * cols, 3.4 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes


def speed_torque_figure(report: DriveReport, limits: Mapping[str, object] | None = None):
    """Operating points (θ̇, T_em) of every DC drive over its four-quadrant envelope.

    The envelope is the voltage band :math:`|R T/C_M + C_E \\dot\\theta| \\le U` (steady state)
    with the rated and peak torques and the maximum speed when the limits give them, and the
    amplifier's envelope (:meth:`pinext.drives.DCMotor.torque_speed_envelope`) of a motor with
    a ``current_limit``.
    """
    limits = limits or {}
    columns = [(k, m) for k, m in enumerate(report.motors) if m is not None]
    fig, axes = _grid(len(columns))
    for ax, (k, motor) in zip(axes, columns, strict=False):
        lim = limits.get(report.joints[k])
        speed, torque = report.motor_speed[:, k], report.motor_torque[:, k]
        ax.plot(speed, torque, ".", ms=2, color="C0", label="operating points")
        voltage = getattr(lim, "max_voltage", None) or motor.voltage_limit
        w_max = max(np.abs(speed).max(), 1e-9)
        max_speed = getattr(lim, "max_speed", None)
        if max_speed:
            w_max = max(w_max, max_speed)
        w = np.linspace(-1.2 * w_max, 1.2 * w_max, 3)
        if voltage:
            for sign in (1, -1):
                band = motor.torque_constant * (sign * voltage - motor.back_emf_constant * w)
                ax.plot(
                    w,
                    band / motor.resistance,
                    "k-",
                    lw=1,
                    label="voltage limit" if sign > 0 else None,
                )
        if getattr(motor, "current_limit", None):  # the amplifier's current limit too
            wide = np.linspace(w[0], w[-1], 201)
            low, high = motor.torque_speed_envelope(wide)
            ax.plot(wide, high, "b-", lw=1, label="amplifier envelope")
            ax.plot(wide, low, "b-", lw=1)
        for key, style, label in (("rated_torque", "g--", "rated"), ("peak_torque", "r--", "peak")):
            value = getattr(lim, key, None)
            if value:
                ax.axhline(value, ls=style[1:], color=style[0], lw=1, label=f"{label} torque")
                ax.axhline(-value, ls=style[1:], color=style[0], lw=1)
        if max_speed:
            ax.axvline(max_speed, color="m", ls=":", lw=1, label="max speed")
            ax.axvline(-max_speed, color="m", ls=":", lw=1)
        t_max = max(np.abs(torque).max(), getattr(lim, "peak_torque", None) or 0.0, 1e-9)
        ax.set_ylim(-1.3 * t_max, 1.3 * t_max)
        ax.set_xlim(w[0], w[-1])
        ax.set_title(report.joints[k])
        ax.set_xlabel("motor speed θ̇ [rad/s]")
        ax.set_ylabel("motor torque T_em [N.m]")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return fig


def thermal_figure(report: DriveReport, limits: Mapping[str, object] | None = None):
    """Winding temperatures against time, with the limits."""
    from matplotlib.figure import Figure

    limits = limits or {}
    fig = Figure(figsize=(8, 3.6), layout="constrained")
    ax = fig.subplots()
    for k, joint in enumerate(report.joints):
        series = report.winding_temperature[:, k]
        if np.isfinite(series).all():
            line = ax.plot(report.t, series, label=joint)[0]
            value = getattr(limits.get(joint), "max_winding_temperature", None)
            if value:
                ax.axhline(value, color=line.get_color(), ls="--", lw=0.8)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("winding temperature [°C] (dashed: limits)")
    ax.grid(alpha=0.3)
    if ax.lines:
        ax.legend(fontsize=8, ncol=3)
    return fig


def power_figure(report: DriveReport):
    """Joint mechanical power and motor electrical power u·i against time."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 5.5), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    for k, joint in enumerate(report.joints):
        line = top.plot(report.t, report.power[:, k], label=joint)[0]
        electric = report.voltage[:, k] * report.current[:, k]
        if np.isfinite(electric).all():
            bottom.plot(report.t, electric, color=line.get_color(), label=joint)
    top.set_ylabel("joint power τ q̇ [W]")
    bottom.set_ylabel("electrical power u i [W]")
    bottom.set_xlabel("t [s]")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    top.legend(fontsize=8, ncol=3)
    return fig


def torque_figure(report: DriveReport):
    """Joint torques against time."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 3.6), layout="constrained")
    ax = fig.subplots()
    for k, joint in enumerate(report.joints):
        ax.plot(report.t, report.torque[:, k], label=joint)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("joint torque [N.m]")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=3)
    return fig


def design_figures(report: DriveReport, limits: Mapping[str, object] | None = None) -> dict:
    """Title -> matplotlib Figure of every plot of the report."""
    figures = {"Joint torques": torque_figure(report), "Power": power_figure(report)}
    if any(m is not None for m in report.motors):
        figures["Speed–torque diagrams"] = speed_torque_figure(report, limits)
        figures["Winding temperature"] = thermal_figure(report, limits)
    return figures


def _table(header, rows, classes=None) -> str:
    head = "".join(f"<th>{html_lib.escape(str(h))}</th>" for h in header)
    body = []
    for k, row in enumerate(rows):
        cls = f' class="{classes[k]}"' if classes else ""
        cells = "".join(f"<td>{html_lib.escape(str(c))}</td>" for c in row)
        body.append(f"<tr{cls}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: right; }
th { background: #eee; }
tr.fail td { background: #fdd; } tr.pass td { background: #efe; }
img { max-width: 100%; }
"""


def write_design_html(
    report: DriveReport,
    check,
    path: str | Path,
    *,
    title: str = "pinext design report",
    limits: Mapping[str, object] | None = None,
    sections: Sequence[str] = (),
) -> Path:
    """Write a self-contained HTML report (no network, no server): the check table, the
    requirements summary, flexible-link loads and the figures as base64 PNG images.

    Args:
        report: The :class:`~pinext.planning.DriveReport`.
        check: The :class:`~pinext.planning.DesignCheck`.
        path: Output file.
        title: Page title.
        limits: Joint name -> :class:`~pinext.planning.DriveLimits` (drawn on the plots).
        sections: HTML fragments placed after the title (e.g. the optimization's result).

    Returns:
        The path written.
    """
    path = Path(path)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="generator" content="pinext design">',
        f"<title>{html_lib.escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{html_lib.escape(title)}</h1>",
        *sections,
        f"<p>Motion of {report.duration:.4g} s, {report.t.size} samples. "
        "Drive requirements by Pinocchio's inverse dynamics (Vukobratović &amp; Potkonjak, "
        "§20.4.1).</p>",
        f"<h2>Design check: {'PASS' if check.passed else 'FAIL'}</h2>",
        _table(
            check.HEADER,
            check.cells(),
            ["pass" if r.passed else "fail" for r in check.rows],
        ),
        "<h2>Requirements</h2>",
        _table(report.SUMMARY_HEADER, report.summary()),
    ]
    if report.flexible:
        rows = [
            [link, f"{x.peak_moment:.4g}", f"{x.peak_stress:.4g}", f"{x.peak_tip_deflection:.4g}"]
            for link, x in report.flexible.items()
        ]
        parts += [
            "<h2>Flexible links (quasi-static)</h2>",
            _table(("link", "peak root moment [N.m]", "peak stress [Pa]", "peak tip [m]"), rows),
        ]
    for name, fig in design_figures(report, limits).items():
        parts.append(f"<h2>{html_lib.escape(name)}</h2>")
        parts.append(f'<img alt="{html_lib.escape(name)}" src="data:image/png;base64,{_png(fig)}">')
    parts.append("</body></html>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
