"""Design checks against the designer's limits, motor catalogues and design specifications
(Vukobratović & Potkonjak, §20.4.1: "the limits that we impose in the design ... are given to
the computer and the software package checks the calculated characteristics against these
limits").

A :class:`DesignCheck` compares a :class:`~pinext.planning.DriveReport` with
:class:`DriveLimits` per joint (motor rated and peak torque, speed, voltage, winding
temperature) and :class:`LinkLimits` per flexible link (stress, tip deflection): one row per
limit with its margin :math:`1 - \\text{value}/\\text{limit}`. :func:`run_design` reads a TOML
specification (robot, motion, drives, limits) for the ``pinext design`` command.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..drives import DCMotor, Drive, drive_from_spec
from ..exceptions import (
    ExtensionError,
    FileFormatError,
    InvalidParameter,
    NameNotFound,
    OutputExists,
)
from ..validation import flag, integer, real, vector
from .drive_sizing import DriveReport, drive_requirements
from .motion import RestToRest
from .splines import Spline3m

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "CatalogueMotor",
    "CheckRow",
    "DesignCheck",
    "DesignResult",
    "DesignSpec",
    "DriveLimits",
    "LinkLimits",
    "catalogue_drive",
    "check_design",
    "load_catalogue",
    "read_design",
    "run_design",
]


#: Ambient temperature [°C] of the thermal model; a winding limit must lie above it.
AMBIENT = 25.0


def _limit(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise InvalidParameter(f"{name} must be a positive number, got {value}")
    return value


@dataclass(frozen=True)
class DriveLimits:
    """Limits of one drive, on the motor side; None: not checked.

    Args:
        rated_torque: Continuous (rated) motor torque [N.m], compared with the RMS torque.
        peak_torque: Peak motor torque [N.m].
        max_speed: Maximum motor speed [rad/s].
        max_voltage: Maximum armature voltage [V].
        max_winding_temperature: Maximum winding temperature [°C].
    """

    rated_torque: float | None = None
    peak_torque: float | None = None
    max_speed: float | None = None
    max_voltage: float | None = None
    max_winding_temperature: float | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name != "max_winding_temperature":
                object.__setattr__(self, f.name, _limit(f.name, getattr(self, f.name)))
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
            object.__setattr__(self, f.name, _limit(f.name, getattr(self, f.name)))


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

    @property
    def margin(self) -> float:
        """1 − value / limit (negative when the limit is exceeded)."""
        return 1.0 - self.value / self.limit

    @property
    def passed(self) -> bool:
        """value ≤ limit (False when the value could not be computed)."""
        return bool(np.isfinite(self.value) and self.value <= self.limit)


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
                f"{r.limit:.4g}",
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


# --------------------------------------------------------------------------------------------
# catalogue


MOTOR_KEYS = (
    "resistance",
    "torque_constant",
    "back_emf_constant",
    "rotor_inertia",
    "inductance",
    "viscous_friction",
    "thermal_resistance",
    "thermal_time_constant",
    "ambient_temperature",
)
RATING_KEYS = ("rated_torque", "peak_torque", "max_speed", "max_winding_temperature")


class CatalogueMotor(NamedTuple):
    """A motor of a catalogue with its ratings."""

    name: str
    """Catalogue name."""
    motor: DCMotor
    """The motor (``voltage_limit`` = nominal voltage)."""
    limits: DriveLimits
    """Its ratings as limits (max_voltage = nominal voltage)."""
    mass: float
    """Mass [kg] (0 if not given)."""


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as stream:
            return tomllib.load(stream)
    except FileNotFoundError:
        raise FileFormatError(str(path), "file", "not found") from None
    except tomllib.TOMLDecodeError as err:
        raise FileFormatError(str(path), "TOML", str(err)) from None


def load_catalogue(path: str | Path) -> dict[str, CatalogueMotor]:
    """Read a TOML motor catalogue: ``[[motor]]`` tables with ``name``, ``voltage`` [V], the
    :class:`~pinext.DCMotor` parameters, and the ratings ``rated_torque`` [N.m],
    ``peak_torque`` [N.m], ``max_speed`` [rad/s], ``max_winding_temperature`` [°C], optional
    ``mass`` [kg].

    Returns:
        Name -> :class:`CatalogueMotor`, in file order.

    Raises:
        FileFormatError: Unreadable file, or an entry with unknown or missing keys.
    """
    path = Path(path)
    entries = _read_toml(path).get("motor", [])
    valid = ("name", "voltage", "mass", *MOTOR_KEYS, *RATING_KEYS)
    out: dict[str, CatalogueMotor] = {}
    for k, entry in enumerate(entries):
        where = f"motor[{k}]"
        unknown = [key for key in entry if key not in valid]
        if unknown:
            raise FileFormatError(
                str(path), where, f"unknown keys {unknown}; valid keys: {', '.join(valid)}"
            )
        try:
            motor = DCMotor(
                **{key: entry[key] for key in MOTOR_KEYS if key in entry},
                voltage_limit=entry["voltage"],
            )
            limits = DriveLimits(
                **{key: entry.get(key) for key in RATING_KEYS}, max_voltage=entry["voltage"]
            )
            out[entry["name"]] = CatalogueMotor(
                entry["name"], motor, limits, float(entry.get("mass", 0.0))
            )
        except (KeyError, TypeError, InvalidParameter) as err:
            raise FileFormatError(str(path), where, f"bad or missing value: {err}") from None
    return out


# --------------------------------------------------------------------------------------------
# specification files


class DesignResult(NamedTuple):
    """What :func:`run_design` computed."""

    report: DriveReport
    check: DesignCheck
    html: Path | None
    """The HTML report written, if any."""


#: Keys of a design specification's top level.
TOP_KEYS = (
    "title",
    "robot",
    "extensions",
    "catalogue",
    "html",
    "gravity",
    "samples",
    "motion",
    "drives",
    "limits",
    "links",
)
#: Keys of its ``[motion]`` table, per law.
MOTION_KEYS = {
    "rest_to_rest": ("law", "q0", "dq", "duration"),
    "spline": ("law", "times", "positions", "v0", "a0", "vf", "af"),
}
#: Marks an HTML file as a pinext design report: a later run may overwrite it.
REPORT_MARKER = '<meta name="generator" content="pinext design">'
#: Most samples of the motion in a specification.
MAX_SAMPLES = 100_000


def _unknown(path: Path, where: str, table: Mapping[str, Any], valid: tuple[str, ...]) -> None:
    unknown = [key for key in table if key not in valid]
    if unknown:
        import difflib

        hints = [difflib.get_close_matches(key, valid, n=1) for key in unknown]
        guess = "".join(
            f" ('{k}': did you mean '{h[0]}'?)" for k, h in zip(unknown, hints, strict=True) if h
        )
        raise FileFormatError(
            str(path), where, f"unknown keys {unknown}{guess}; valid keys: {', '.join(valid)}"
        )


def _checked(path: Path, where: str, check: Any, *args: Any, **kwargs: Any) -> Any:
    """``check(*args, **kwargs)`` with its InvalidParameter named by file and key."""
    try:
        return check(*args, **kwargs)
    except InvalidParameter as err:
        raise ExtensionError(str(path), where, str(err)) from None


def _top_level(spec: Mapping[str, Any], path: Path) -> None:
    """Refuse unknown keys and values of the wrong kind at the top level of a specification."""
    _unknown(path, "top level", spec, TOP_KEYS)
    if "robot" not in spec or "motion" not in spec:
        raise FileFormatError(str(path), "top level", "needs 'robot' and a [motion] table")
    for key in ("title", "robot", "catalogue", "html"):
        if key in spec and not isinstance(spec[key], str):
            raise FileFormatError(str(path), key, f"must be a text, got {spec[key]!r}")
    if "extensions" in spec and not (
        spec["extensions"] is False or isinstance(spec["extensions"], str)
    ):
        raise FileFormatError(
            str(path), "extensions", f"must be a file name or false, got {spec['extensions']!r}"
        )
    for key in ("motion", "drives", "limits", "links"):
        if key in spec and not isinstance(spec[key], dict):
            raise FileFormatError(str(path), key, f"must be a table [{key}], got {spec[key]!r}")
    if "gravity" in spec:
        _checked(path, "gravity", flag, "gravity", spec["gravity"])
    if "samples" in spec:
        _checked(path, "samples", integer, "samples", spec["samples"], low=2, high=MAX_SAMPLES)


def _motion(spec: Mapping[str, Any], path: Path, n: int) -> Any:
    """The motion law of a ``[motion]`` table for a robot of ``n`` joints."""
    kind = spec.get("law", "rest_to_rest")
    if kind not in MOTION_KEYS:
        raise FileFormatError(
            str(path), "motion.law", f"must be 'rest_to_rest' or 'spline', got {kind!r}"
        )
    _unknown(path, "motion", spec, MOTION_KEYS[kind])
    try:
        if kind == "rest_to_rest":
            q0 = _checked(path, "motion.q0", vector, "q0", spec["q0"], n, what="one per joint")
            dq = _checked(path, "motion.dq", vector, "dq", spec["dq"], n, what="one per joint")
            duration = _checked(
                path,
                "motion.duration",
                real,
                "duration",
                spec["duration"],
                unit="[s]",
                low=0.0,
                strict=True,
            )
            return RestToRest(q0, dq, duration)
        positions = spec["positions"]
        if not isinstance(positions, list):
            raise FileFormatError(str(path), "motion.positions", "must be a list of knot rows")
        positions = [None if isinstance(p, str) else p for p in positions]
        return _checked(
            path,
            "motion",
            Spline3m,
            spec["times"],
            positions,
            spec.get("v0", 0.0),
            spec.get("a0", 0.0),
            spec.get("vf", 0.0),
            spec.get("af", 0.0),
        )
    except KeyError as err:
        raise FileFormatError(str(path), "motion", f"missing key {err}") from None


def output_path(target: Path, where: str, source: Path, *, force: bool = False) -> Path:
    """Where to write a report: refuse a folder, and a file that pinext did not write unless
    ``force`` (a previous report, with :data:`REPORT_MARKER`, is overwritten).

    Raises:
        FileFormatError: ``target`` is a folder.
        OutputExists: ``target`` is another file, and ``force`` is false.
    """
    if target.is_dir():
        raise FileFormatError(
            str(source), where, f"{target} is a folder; give a file name such as report.html"
        )
    if target.exists() and not force:
        with open(target, "rb") as stream:
            head = stream.read(4096)
        if REPORT_MARKER.encode() not in head:
            raise OutputExists(str(target), f"{where}:")
    return target


class DesignSpec(NamedTuple):
    """A design specification read by :func:`read_design` (every path resolved)."""

    path: Path
    """The TOML file."""
    table: dict[str, Any]
    """The file's tables as read (``[variables]``, ``[objective]``... for the tools that
    extend the format)."""
    title: str
    """Report title."""
    robot: Any
    """The :class:`pinext.Robot`."""
    motion: Any
    """The prescribed motion law."""
    catalogue: dict[str, CatalogueMotor]
    """The motor catalogue (empty without one)."""
    drives: dict[str, Drive]
    """Joint name -> drive (the URDF's, then the file's ``[drives]``)."""
    limits: dict[str, DriveLimits]
    """Joint name -> limits (catalogue ratings, then ``[limits]``)."""
    section_modulus: dict[str, Any]
    """Flexible link name -> section modulus [m^3]."""
    link_limits: dict[str, LinkLimits]
    """Flexible link name -> limits."""
    gravity: bool
    """Include gravity."""
    samples: int
    """Samples of the motion."""

    def requirements(self, drives: Mapping[str, Drive] | None = None) -> DriveReport:
        """:func:`~pinext.planning.drive_requirements` of the specification (``drives``
        overriding its own)."""
        return _checked(
            self.path,
            "top level",
            drive_requirements,
            self.robot,
            self.motion,
            drives={**self.drives, **(drives or {})},
            gravity=self.gravity,
            section_modulus=self.section_modulus,
            samples=self.samples,
        )


def catalogue_drive(
    joint: str, entry: CatalogueMotor, parts: Mapping[str, Any], transmission: Any = None
) -> Drive:
    """The drive of ``joint`` with the catalogue motor ``entry`` and the transmission table
    ``parts`` (``gear = {...}`` or ``elastic_transmission = {...}``, as in ``[drives.JOINT]``).
    """
    motor = {
        **{key: getattr(entry.motor, key) for key in MOTOR_KEYS},
        "voltage_limit": entry.motor.voltage_limit,
    }
    return drive_from_spec(joint, {**parts, "motor": motor}, transmission)


def read_design(spec_path: str | Path, *, extra: tuple[str, ...] = ()) -> DesignSpec:
    """Read a design specification (the format of :func:`run_design`): robot, motion,
    catalogue, drives and limits, checked before any computation.

    Args:
        spec_path: The TOML file.
        extra: Further top-level tables that the calling tool reads itself (e.g.
            ``("variables", "objective")`` for :func:`~pinext.planning.optimize`).

    Returns:
        :class:`DesignSpec`.

    Raises:
        FileFormatError: Malformed file, unknown keys or motors, values of the wrong kind or
            out of range (the message names the file and the key).
    """
    from ..robot import load_urdf

    path = Path(spec_path)
    table = _read_toml(path)
    base = path.parent
    _top_level({k: v for k, v in table.items() if k not in extra}, path)
    extensions = table.get("extensions")
    if isinstance(extensions, str):
        extensions = base / extensions
    robot = load_urdf(base / table["robot"], extensions=extensions)
    catalogue = load_catalogue(base / table["catalogue"]) if "catalogue" in table else {}
    drives: dict[str, Drive] = dict(robot.drives)
    limits: dict[str, DriveLimits] = {}
    for joint, drive_table in table.get("drives", {}).items():
        parts = dict(drive_table)
        name = parts.pop("catalogue_motor", None)
        if name is not None:
            if name not in catalogue:
                raise NameNotFound("catalogue motor", name, list(catalogue))
            drives[joint] = catalogue_drive(
                joint, catalogue[name], parts, robot.transmissions.get(joint)
            )
            limits[joint] = catalogue[name].limits
        else:
            drives[joint] = drive_from_spec(joint, parts, robot.transmissions.get(joint))
    for joint, limit_table in table.get("limits", {}).items():
        merged = {**(limits[joint].__dict__ if joint in limits else {}), **limit_table}
        try:
            limits[joint] = DriveLimits(**merged)
        except (TypeError, InvalidParameter) as err:
            raise FileFormatError(str(path), f"limits.{joint}", str(err)) from None
    moduli, link_limits = {}, {}
    for link, link_table in table.get("links", {}).items():
        link_table = dict(link_table)
        if "section_modulus" in link_table:
            moduli[link] = link_table.pop("section_modulus")
        try:
            link_limits[link] = LinkLimits(**link_table)
        except (TypeError, InvalidParameter) as err:
            raise FileFormatError(str(path), f"links.{link}", str(err)) from None
    return DesignSpec(
        path=path,
        table=table,
        title=table.get("title", f"pinext design: {path.stem}"),
        robot=robot,
        motion=_motion(table["motion"], path, robot.rigid_model.nq),
        catalogue=catalogue,
        drives=drives,
        limits=limits,
        section_modulus=moduli,
        link_limits=link_limits,
        gravity=table.get("gravity", True),
        samples=table.get("samples", 801),
    )


def run_design(
    spec_path: str | Path, html: str | Path | None = None, *, force: bool = False
) -> DesignResult:
    """Run a design specification: drive requirements, checks and the HTML report.

    The TOML file (paths relative to it)::

        title = "..."                      # optional
        robot = "arm.urdf"                 # URDF (its <pinext> block / sidecar is read)
        extensions = false                 # optional: sidecar file, or false to ignore them
        catalogue = "dc_motors.toml"       # optional motor catalogue
        html = "design.html"               # optional report (default <spec stem>.html)
        gravity = true
        samples = 801
        [motion]                           # law = "rest_to_rest" (q0, dq, duration) or
        law = "rest_to_rest"               # "spline" (times, positions with "free" at the
        q0 = [...]; dq = [...]; duration = 1.5   # 2nd and 2nd-to-last knots, v0, a0, vf, af)
        [drives.JOINT]
        catalogue_motor = "NAME"           # or a [drives.JOINT.motor] table
        gear = { ratio = 100, efficiency = 0.9 }   # or elastic_transmission = {...}
        [limits.JOINT]                     # optional, overrides the catalogue's ratings
        max_winding_temperature = 100.0
        [links.LINK]                       # flexible links of the URDF
        section_modulus = 1.7e-7
        max_stress = 2e8
        max_tip_deflection = 0.01

    Args:
        spec_path: The TOML file.
        html: Where to write the HTML report (overrides the file's ``html``); relative paths
            are taken from the current directory (the file's ``html`` from the file's folder).
        force: Overwrite an existing file that is not a previous pinext report.

    Returns:
        :class:`DesignResult`.

    Raises:
        FileFormatError: Malformed file, unknown keys or motors, values of the wrong kind or
            out of range (the message names the file and the key).
        OutputExists: The report would overwrite a file that pinext did not write.
    """
    from .design_report import write_design_html

    path = Path(spec_path)
    spec = _read_toml(path)
    _top_level(spec, path)
    if html is not None:
        target = output_path(Path(html), "--html", path, force=force)
    else:
        target = output_path(
            path.parent / spec.get("html", f"{path.stem}.html"), "html", path, force=force
        )
    design = read_design(path)
    report = design.requirements()
    check = check_design(report, design.limits, design.link_limits)
    write_design_html(report, check, target, title=design.title, limits=design.limits)
    return DesignResult(report, check, target)
