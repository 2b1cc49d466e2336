"""Design checks against the designer's limits (Vukobratović & Potkonjak, §20.4.1: "the
limits that we impose in the design ... are given to the computer and the software package
checks the calculated characteristics against these limits").

A :class:`DesignCheck` compares a :class:`~pinext.planning.DriveReport` with
:class:`DriveLimits` per joint (motor rated and peak torque, speed, voltage, winding
temperature, the gear's rated and peak output torque) and :class:`LinkLimits` per
flexible link (stress, tip deflection): one row per limit with its margin
:math:`1 - \\text{value}/\\text{limit}`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import NamedTuple

import numpy as np

from ..exceptions import NameNotFound
from ..validation import real
from .drive_sizing import DriveReport

__all__ = ["CheckRow", "DesignCheck", "DriveLimits", "LinkLimits", "check_design"]


#: Ambient temperature [°C] of the thermal model; a winding limit must lie above it.
AMBIENT = 25.0


def _positive(name: str, value: float | None) -> float | None:
    return real(name, value, low=0.0, strict=True, none=True)


@dataclass(frozen=True)
class DriveLimits:
    """Limits of one drive, on the motor side; None: not checked.

    Args:
        rated_torque: Continuous (rated) motor torque [N.m], compared with the RMS torque.
        peak_torque: Peak motor torque [N.m].
        max_speed: Maximum motor speed [rad/s].
        max_voltage: Maximum armature voltage [V].
        max_winding_temperature: Maximum winding temperature [°C].
        gear_rated_torque: Rated (continuous) output torque of the gear [N.m], compared with
            the RMS joint torque (a harmonic drive's catalogue rating).
        gear_peak_torque: Peak output torque of the gear [N.m], compared with the peak joint
            torque.
    """

    rated_torque: float | None = None
    peak_torque: float | None = None
    max_speed: float | None = None
    max_voltage: float | None = None
    max_winding_temperature: float | None = None
    gear_rated_torque: float | None = None
    gear_peak_torque: float | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name != "max_winding_temperature":
                object.__setattr__(self, f.name, _positive(f.name, getattr(self, f.name)))
        temperature = real(
            "max_winding_temperature",
            self.max_winding_temperature,
            unit="[°C] (above the ambient 25 °C)",
            low=AMBIENT,
            strict=True,
            none=True,
        )
        object.__setattr__(self, "max_winding_temperature", temperature)


@dataclass(frozen=True)
class LinkLimits:
    """Limits of one flexible link; None: not checked.

    Args:
        max_stress: Maximum bending stress at the root [Pa].
        max_tip_deflection: Maximum quasi-static tip deflection [m].
    """

    max_stress: float | None = None
    max_tip_deflection: float | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, _positive(f.name, getattr(self, f.name)))


class CheckRow(NamedTuple):
    """One checked quantity."""

    name: str
    """Joint or link name."""
    quantity: str
    """What is checked, with its unit."""
    value: float
    """The computed value (NaN: not computed)."""
    limit: float
    """The limit."""
    lower: bool = False
    """The limit is a lower one (a natural frequency): value ≥ limit."""

    @property
    def margin(self) -> float:
        """1 − value / limit, or value / limit − 1 for a lower limit (negative when the
        limit is not met)."""
        if self.lower:
            return self.value / self.limit - 1.0
        return 1.0 - self.value / self.limit

    @property
    def passed(self) -> bool:
        """value ≤ limit, or value ≥ limit for a lower limit (False when the value could not
        be computed)."""
        if not np.isfinite(self.value):
            return False
        return bool(self.value >= self.limit if self.lower else self.value <= self.limit)


@dataclass
class DesignCheck:
    """The pass/fail table of a design."""

    rows: list[CheckRow]

    @property
    def passed(self) -> bool:
        """Every limit is met."""
        return all(r.passed for r in self.rows)

    def failures(self) -> list[CheckRow]:
        """The rows that fail."""
        return [r for r in self.rows if not r.passed]

    HEADER = ("joint/link", "quantity", "value", "limit", "margin", "result")

    def cells(self) -> list[list[str]]:
        """The rows as strings (see :attr:`HEADER`)."""
        return [
            [
                r.name,
                r.quantity,
                f"{r.value:.4g}",
                f"{'≥ ' if r.lower else ''}{r.limit:.4g}",
                f"{100 * r.margin:+.1f} %" if np.isfinite(r.value) else "-",
                "pass" if r.passed else "FAIL",
            ]
            for r in self.rows
        ]

    def table(self) -> str:
        """Plain-text table."""
        cells = [list(self.HEADER), *self.cells()]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.HEADER))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
        lines.insert(1, "  ".join("-" * w for w in widths))
        verdict = "PASS" if self.passed else f"FAIL ({len(self.failures())} limit(s) exceeded)"
        return "\n".join(line.rstrip() for line in lines) + f"\n\ndesign: {verdict}"


def check_design(
    report: DriveReport,
    drive_limits: Mapping[str, DriveLimits] | None = None,
    link_limits: Mapping[str, LinkLimits] | None = None,
) -> DesignCheck:
    """Check a drive report against the designer's limits.

    Args:
        report: From :func:`~pinext.planning.drive_requirements`.
        drive_limits: Joint name -> :class:`DriveLimits`.
        link_limits: Flexible link name -> :class:`LinkLimits`.

    Returns:
        :class:`DesignCheck`.

    Raises:
        NameNotFound: A joint that the report does not have, or a link that is not flexible.
    """
    rows: list[CheckRow] = []
    for joint, limits in (drive_limits or {}).items():
        k = report.joint_index(joint)
        values = (
            ("rated_torque", "RMS motor torque [N.m]", report.rms_motor_torque[k]),
            ("peak_torque", "peak motor torque [N.m]", report.peak_motor_torque[k]),
            ("max_speed", "peak motor speed [rad/s]", report.peak_motor_speed[k]),
            ("max_voltage", "peak voltage [V]", report.peak_voltage[k]),
            (
                "max_winding_temperature",
                "peak winding temperature [°C]",
                report.peak_temperature[k],
            ),
            ("gear_rated_torque", "RMS gear torque [N.m]", report.rms_torque[k]),
            ("gear_peak_torque", "peak gear torque [N.m]", report.peak_torque[k]),
        )
        for key, label, value in values:
            limit = getattr(limits, key)
            if limit is not None:
                rows.append(CheckRow(joint, label, float(value), float(limit)))
    for link, link_limit in (link_limits or {}).items():
        if link not in report.flexible:
            raise NameNotFound("flexible link", link, list(report.flexible))
        loads = report.flexible[link]
        if link_limit.max_stress is not None:
            rows.append(
                CheckRow(link, "peak root stress [Pa]", loads.peak_stress, link_limit.max_stress)
            )
        if link_limit.max_tip_deflection is not None:
            rows.append(
                CheckRow(
                    link,
                    "peak tip deflection [m]",
                    loads.peak_tip_deflection,
                    link_limit.max_tip_deflection,
                )
            )
    return DesignCheck(rows)
