"""The drive-sizing problem of an optimal design (Vukobratović & Potkonjak, §20.4.1): the
motors and gears of a robot's drives chosen for a prescribed motion, each candidate screened by
inverse dynamics against the catalogue ratings and the designer's limits.

A :class:`DriveProblem` is built from a ``pinext design`` specification with ``[variables]``
and ``[objective]`` tables (:meth:`DriveProblem.from_spec`), or in Python. Besides the drives
(a catalogue motor, a gear ratio, an elastic transmission's stiffness and damping, a
harmonic-drive size from a catalogue), a flexible link's section and a payload may be varied
(:mod:`.link_variables`); they change the robot, so each of their candidates costs a new joint
side.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..drives import Drive, ElasticTransmission, Gear
from ..exceptions import FileFormatError, InvalidParameter, NameNotFound
from ..validation import real
from .catalogue import CatalogueMotor, HarmonicDrive, load_harmonic_drives, missing_prices
from .design import _unknown, read_design
from .design_check import DesignCheck, DriveLimits, LinkLimits, check_design
from .drive_sizing import DriveReport, _assemble, _joint_side
from .link_variables import LinkSection, Payload, parse_link, parse_payload
from .natural_frequency import FrequencyRows, min_frequency_limit, vibrates
from .optimize_problem import Choice, Continuous, Evaluation, Problem, Variable

__all__ = ["DRIVE_CRITERIA", "DriveProblem"]

#: Criteria of a :class:`DriveProblem` (summed over the joints) with their units.
DRIVE_CRITERIA = {
    "motor_mass": "total motor mass [kg] (the catalogue's masses)",
    "drive_mass": "total mass of the catalogue motors and harmonic drives [kg]",
    "cost": "Σ catalogue prices of the motors and harmonic drives",
    "link_mass": "Σ ρ A L of the flexible links whose section is varied [kg]",
    "negative_payload": "− payload mass [kg] (minimised: the heaviest payload)",
    "peak_motor_torque": "Σ peak |T_em| [N.m]",
    "rms_motor_torque": "Σ RMS T_em [N.m]",
    "copper_loss": "Σ ∫ R i² dt over the motion [J]",
    "energy": "Σ ∫ max(u i, 0) dt, electrical energy drawn over the motion [J]",
}
#: Keys of a ``[variables.JOINT]`` table.
VARIABLE_KEYS = ("motor", "ratio", "stiffness", "damping", "efficiency", "harmonic_drive")
#: Keys of a joint table that a harmonic drive sets.
HARMONIC_SETS = ("ratio", "stiffness", "damping", "efficiency")
#: Keys of the ``[objective]`` table.
OBJECTIVE_KEYS = ("minimize", "weights")


def _bad(where: str, message: str, path: Path | None) -> Exception:
    if path is not None:
        return FileFormatError(str(path), where, message)
    return InvalidParameter(f"{where}: {message}")


class DriveProblem(Problem):
    """Motors, gears, harmonic drives, link sections and a payload chosen for a prescribed
    motion, screened by inverse dynamics against the catalogue ratings and the designer's
    limits.

    The joint side of :func:`~pinext.planning.drive_requirements` (Pinocchio's ``rnea`` along
    the motion) does not depend on the drives and is computed once; each candidate costs only
    the motor side (ratio, efficiency, rotor inertia, voltage, heating) and
    :func:`~pinext.planning.check_design`: one constraint per limit, named
    ``"JOINT: quantity [unit]"``, its margin :math:`1 - \\text{value}/\\text{limit}`.

    Args:
        robot: The :class:`pinext.Robot`.
        motion: The prescribed motion (see :func:`~pinext.planning.drive_requirements`).
        variables: Joint name -> its variables, as the ``[variables.JOINT]`` tables:
            ``motor`` (a list of catalogue names, or ``"catalogue"`` for all of them, smallest
            mass first), ``ratio`` (a list of standard ratios, or ``{low, high}`` for a
            continuous one), ``stiffness`` [N.m/rad] and ``damping`` [N.m.s/rad] (an elastic
            transmission; a list, a ``{low, high}`` range or a number) and ``efficiency``
            (a number: the gear's), or ``harmonic_drive`` (a list of names of
            ``harmonic_drives``, or ``"catalogue"`` for all of them, smallest rated torque
            first: the transmission is then the size's elastic one, its rated and peak
            output torque limits of the joint torque). A flexible link's name -> its section
            (:func:`~pinext.planning.link_variables.parse_link`: ``section``, the dimensions,
            ``density``); ``"payload"`` -> ``{mass, frame}`` (a point mass at a frame).
        catalogue: Name -> :class:`~pinext.planning.CatalogueMotor`.
        harmonic_drives: Name -> :class:`~pinext.planning.HarmonicDrive`.
        drives: Joint name -> the drive of the joints that are not varied, and the starting
            drive (motor, transmission kind) of those that are.
        limits: Joint name -> :class:`~pinext.planning.DriveLimits`, overriding the
            catalogue's ratings key by key.
        link_limits: Flexible link name -> :class:`~pinext.planning.LinkLimits`.
        section_modulus: Flexible link name -> W [m^3].
        min_natural_frequency: Lower limit of the first natural frequency [Hz], rigid joints
            and motors held, elastic transmissions' springs in place (:mod:`.natural_frequency`;
            mass matrices once per robot, no simulation).
        minimize: Criterion or criteria of :data:`DRIVE_CRITERIA`.
        weights: See :class:`Problem`.
        gravity: Include gravity.
        samples: Samples of the motion.
        verify: See :class:`Problem`; it receives the design and may call
            :meth:`drives_of` and :meth:`robot_of` to build the drives and the robot.
        extensions: How the robot of a design with a new section is loaded from
            ``robot.path`` (``load_urdf``'s ``extensions``).
        title: Report title.
        source: The specification file, when read from one (errors name it).
    """

    def __init__(
        self,
        robot: Any,
        motion: Any,
        variables: Mapping[str, Mapping[str, Any]],
        *,
        catalogue: Mapping[str, CatalogueMotor] | None = None,
        harmonic_drives: Mapping[str, HarmonicDrive] | None = None,
        drives: Mapping[str, Drive] | None = None,
        limits: Mapping[str, Mapping[str, Any] | DriveLimits] | None = None,
        link_limits: Mapping[str, LinkLimits] | None = None,
        section_modulus: Mapping[str, Any] | None = None,
        min_natural_frequency: float | None = None,
        minimize: str | Sequence[str] = "motor_mass",
        weights: Sequence[float] | None = None,
        gravity: bool = True,
        samples: int = 801,
        verify: Callable[[dict[str, Any]], Mapping[str, float]] | None = None,
        extensions: Any = None,
        title: str = "optimal drives",
        source: str | Path | None = None,
    ) -> None:
        self.source = None if source is None else Path(source)
        self.robot = robot
        self.motion = motion
        self.catalogue = dict(catalogue or {})
        self.harmonic_drives = dict(harmonic_drives or {})
        self.extensions = extensions
        #: Flexible link name -> its section variables.
        self.sections: dict[str, LinkSection] = {}
        #: The payload, if any.
        self.payload: Payload | None = None
        self.base_drives = dict(getattr(robot, "drives", {}) or {})
        self.base_drives.update(drives or {})
        self.limit_overrides: dict[str, dict[str, Any]] = {}
        for joint, table in (limits or {}).items():
            if isinstance(table, DriveLimits):
                table = {k: v for k, v in table.__dict__.items() if v is not None}
            try:
                DriveLimits(**dict(table))
            except (TypeError, InvalidParameter) as err:
                raise _bad(f"limits.{joint}", str(err), self.source) from None
            self.limit_overrides[joint] = dict(table)
        self.link_limits = dict(link_limits or {})
        self.section_modulus = dict(section_modulus or {})
        self.min_natural_frequency = min_frequency_limit("min_natural_frequency",
                                                         min_natural_frequency)  # fmt: skip
        self._frequency = FrequencyRows(motion, self.min_natural_frequency or 1.0)
        self.gravity = gravity
        self.samples = samples
        criteria = [minimize] if isinstance(minimize, str) else list(minimize)
        for criterion in criteria:
            if criterion not in DRIVE_CRITERIA:
                raise _bad(
                    "objective.minimize",
                    f"unknown criterion {criterion!r}; valid criteria: "
                    + "; ".join(f"{k} ({v})" for k, v in DRIVE_CRITERIA.items()),
                    self.source,
                )
        joints = [
            robot.model.names[j]
            for j in range(1, robot.model.njoints)
            if robot.model.joints[j].nv == 1
        ]
        self.fixed: dict[str, dict[str, Any]] = {}
        parsed: list[Variable] = []
        if not variables:
            raise _bad(
                "variables", "no design variable: give [variables.JOINT] tables", self.source
            )
        links = [spec.link for spec in getattr(robot, "flexible", [])]
        for joint, table in variables.items():
            if not isinstance(table, Mapping):
                raise _bad(f"variables.{joint}", f"must be a table, got {table!r}", self.source)
            try:
                if joint == "payload":
                    self.payload, found = parse_payload(robot, table)
                    parsed += found
                    continue
                if joint in links and (joint not in joints or "section" in table):
                    self.sections[joint], found = parse_link(robot, joint, table, extensions)
                    parsed += found
                    continue
            except InvalidParameter as err:
                raise _bad(f"variables.{joint}", str(err), self.source) from None
            except NameNotFound as err:
                raise _bad(f"variables.{joint}.frame", str(err), self.source) from None
            if joint not in joints:
                raise NameNotFound("joint, flexible link or payload", joint,
                                   [*joints, *links, "payload"])  # fmt: skip
            self.fixed[joint] = self._joint_variables(joint, table, parsed)
        for joint in self.limit_overrides:
            if joint not in self.fixed and joint not in self.base_drives:
                raise _bad(
                    f"limits.{joint}",
                    f"joint '{joint}' has no motor to limit: give it a [variables.{joint}] "
                    f"table with motor = [...] or a [drives.{joint}] table; joints with "
                    f"variables: {', '.join(self.fixed)}",
                    self.source,
                )
        #: Joint -> the names of its variables (the joints with any).
        self.varied = {
            joint: names
            for joint in self.fixed
            if (names := [v.name for v in parsed if v.name.startswith(f"{joint}.")])
        }
        #: The variables that change the robot (sections, payload).
        self.structural = [v.name for v in parsed if v.name.split(".")[0] not in self.fixed]
        if "cost" in criteria:
            self._check_prices(parsed)
        if min_natural_frequency is not None and not vibrates(robot, self.base_drives, variables):
            raise _bad("min_natural_frequency", "needs a flexible link or an elastic "
                       "transmission: with its joints held this robot has no vibration mode",
                       self.source)  # fmt: skip
        # a section or a payload changes every joint's torques: no groups then
        groups = None if self.structural else list(self.varied.values())
        super().__init__(parsed, self._evaluate, criteria, weights, verify, title, groups)
        self._sides: dict[Any, Any] = {}

    def _joint_variables(
        self, joint: str, table: Mapping[str, Any], parsed: list[Variable]
    ) -> dict[str, Any]:
        """Parse a ``[variables.JOINT]`` table into ``parsed``; returns its fixed values."""
        unknown = [k for k in table if k not in VARIABLE_KEYS]
        if unknown:
            raise _bad(
                f"variables.{joint}",
                f"unknown keys {unknown}; valid keys: {', '.join(VARIABLE_KEYS)}",
                self.source,
            )
        both = [k for k in HARMONIC_SETS if k in table]
        if "harmonic_drive" in table and both:
            raise _bad(
                f"variables.{joint}",
                "a harmonic drive sets the transmission (ratio, stiffness, damping): give "
                f"harmonic_drive alone, without {', '.join(both)}",
                self.source,
            )
        fixed: dict[str, Any] = {}
        for key, value in table.items():
            name, where = f"{joint}.{key}", f"variables.{joint}.{key}"
            try:
                if key == "motor":
                    parsed.append(Choice(name, self._entries(value, where, "motor")))
                elif key == "harmonic_drive":
                    parsed.append(Choice(name, self._entries(value, where, "harmonic_drive")))
                elif key == "efficiency":
                    fixed[key] = real(where, value, low=0.0, high=1.0, strict=True)
                elif isinstance(value, Mapping):
                    extra = [k for k in value if k not in ("low", "high")]
                    if extra or "low" not in value or "high" not in value:
                        raise InvalidParameter(
                            f"{where} as a range needs exactly low and high, got {dict(value)}"
                        )
                    variable = Continuous(name, value["low"], value["high"])
                    if variable.low <= 0:
                        raise InvalidParameter(
                            f"{where}: low must be positive, got {value['low']!r}"
                        )
                    parsed.append(variable)
                elif isinstance(value, (list, tuple)):
                    choice = Choice(name, tuple(value))
                    if any(isinstance(x, str) or x <= 0 for x in choice.options):
                        raise InvalidParameter(
                            f"{where}: every value must be a positive number, got {value}"
                        )
                    parsed.append(choice)
                else:
                    fixed[key] = real(where, value, low=0.0, strict=True)
            except InvalidParameter as err:
                raise _bad(where, str(err), self.source) from None
        names = [v.name for v in parsed]
        if f"{joint}.motor" not in names and joint not in self.base_drives:
            raise _bad(
                f"variables.{joint}",
                f"no motor: give motor = [catalogue names] or a [drives.{joint}] table with "
                "the motor",
                self.source,
            )
        base = self.base_drives.get(joint)
        elastic = isinstance(getattr(base, "transmission", None), ElasticTransmission)
        if ("stiffness" in table) != ("damping" in table) and not elastic:
            raise _bad(f"variables.{joint}", "an elastic transmission needs both stiffness "
                       "and damping", self.source)  # fmt: skip
        if "efficiency" in table and (elastic or "stiffness" in table or "damping" in table):
            raise _bad(f"variables.{joint}.efficiency", "an elastic transmission ((20.98)-(20.99)) "
                       "has no efficiency, its loss is its damping: give efficiency only with a "
                       "rigid gear", self.source)  # fmt: skip
        return fixed

    def _absent(self, design: Mapping[str, Any]) -> set[str]:
        """Varied joints of which ``design`` holds no variable (a group's partial design)."""
        return {
            joint
            for joint, names in self.varied.items()
            if not any(name in design for name in names)
        }

    def _entries(self, value: Any, where: str, kind: str) -> tuple[str, ...]:
        """The catalogue names of a ``motor`` variable (lightest first) or of a
        ``harmonic_drive`` variable (smallest rated torque first)."""
        if kind == "motor":
            catalogue: Mapping[str, Any] = self.catalogue
            size: Callable[[str], Any] = lambda n: (self.catalogue[n].mass, n)  # noqa: E731
            hint = 'catalogue = "FILE.toml" with [[motor]] tables (e.g. examples/dc_motors.toml)'
        else:
            catalogue = self.harmonic_drives
            size = lambda n: (  # noqa: E731
                self.harmonic_drives[n].rated_torque,
                self.harmonic_drives[n].mass,
                n,
            )
            hint = (
                'harmonic_drives = "FILE.toml" with [[harmonic_drive]] tables '
                "(e.g. examples/optimal_drives_harmonic.toml)"
            )
        if not catalogue:
            label = "motor catalogue" if kind == "motor" else "harmonic-drive catalogue"
            raise _bad(where, f"the {label} is empty: give {hint}", self.source)
        if value == "catalogue":
            return tuple(sorted(catalogue, key=size))
        if not isinstance(value, (list, tuple)) or not value:
            raise _bad(
                where,
                f'must be "catalogue" or a non-empty list of catalogue names, got {value!r}',
                self.source,
            )
        for name in value:
            if name not in catalogue:
                label = "catalogue motor" if kind == "motor" else "harmonic drive"
                err = NameNotFound(label, name, list(catalogue))
                raise _bad(where, str(err), self.source)
        return tuple(sorted(value, key=size))

    def _check_prices(self, variables: Sequence[Variable]) -> None:
        """The criterion ``"cost"`` needs the price of every catalogue entry it may choose."""
        found = missing_prices(variables, self.base_drives, self.catalogue, self.harmonic_drives)
        if found is not None:
            raise _bad(found[0], "the criterion 'cost' needs the price of every entry it may "
                       f"choose; without a price: {found[1]} (give each a price = ...)",
                       self.source)  # fmt: skip

    # -- building a candidate
    def drives_of(self, design: Mapping[str, Any]) -> dict[str, Drive]:
        """The drives of a design (the varied joints; the others as given). A partial design
        (see :attr:`Problem.groups`) leaves out the varied joints it does not name."""
        drives = dict(self.base_drives)
        absent = self._absent(design)
        for joint, fixed in self.fixed.items():
            if joint in absent:
                drives.pop(joint, None)
                continue
            base = drives.get(joint)
            motor = base.actuator if base is not None else None
            if f"{joint}.motor" in design:
                motor = self.catalogue[design[f"{joint}.motor"]].motor
            if f"{joint}.harmonic_drive" in design:
                entry = self.harmonic_drives[design[f"{joint}.harmonic_drive"]]
                drives[joint] = Drive(motor, entry.transmission)
                continue
            transmission = base.transmission if base is not None else None
            ratio = design.get(f"{joint}.ratio", fixed.get("ratio"))
            if ratio is None:
                ratio = transmission.ratio if transmission is not None else 1.0
            stiffness = design.get(f"{joint}.stiffness", fixed.get("stiffness"))
            damping = design.get(f"{joint}.damping", fixed.get("damping"))
            if isinstance(transmission, ElasticTransmission):
                changes = {"ratio": ratio, "stiffness": stiffness, "damping": damping}
                transmission = dataclasses.replace(
                    transmission, **{k: float(v) for k, v in changes.items() if v is not None}
                )
            elif stiffness is not None:
                transmission = ElasticTransmission(float(ratio), float(stiffness), float(damping))
            elif isinstance(transmission, Gear):
                changes = {"ratio": ratio, "efficiency": fixed.get("efficiency")}
                transmission = dataclasses.replace(
                    transmission, **{k: float(v) for k, v in changes.items() if v is not None}
                )
            else:
                transmission = Gear(float(ratio), efficiency=fixed.get("efficiency", 1.0))
            drives[joint] = Drive(motor, transmission)
        return drives

    def limits_of(self, design: Mapping[str, Any]) -> dict[str, DriveLimits]:
        """The limits of a design: the chosen motors' ratings, overridden by ``limits``."""
        out: dict[str, DriveLimits] = {}
        joints = set(self.limit_overrides) | {
            j for j in self.fixed if f"{j}.motor" in design or f"{j}.harmonic_drive" in design
        }
        for joint in sorted(joints - self._absent(design)):
            ratings: dict[str, Any] = {}
            if f"{joint}.motor" in design:
                ratings = dict(self.catalogue[design[f"{joint}.motor"]].limits.__dict__)
            if f"{joint}.harmonic_drive" in design:
                entry = self.harmonic_drives[design[f"{joint}.harmonic_drive"]]
                ratings["gear_rated_torque"] = entry.rated_torque
                ratings["gear_peak_torque"] = entry.peak_torque
            ratings.update(self.limit_overrides.get(joint, {}))
            out[joint] = DriveLimits(**ratings)
        return out

    def robot_of(self, design: Mapping[str, Any]) -> Any:
        """The robot of a design: its link sections and its payload (the problem's robot
        itself when neither is given)."""
        if not self.sections and self.payload is None:
            return self.robot
        if self.sections:
            from ..robot import load_urdf

            specs = {spec.link: spec for spec in self.robot.flexible}
            specs.update({link: s.flexible(design) for link, s in self.sections.items()})
            robot = load_urdf(
                self.robot.path, flexible=list(specs.values()), extensions=self.extensions
            )
        else:
            robot = dataclasses.replace(
                self.robot, model=self.robot.model.copy(), rigid_model=self.robot.rigid_model.copy()
            )
        if self.payload is not None:
            self.payload.add_to(robot, design)
        return robot

    def _joint_side(self, samples: int, design: Mapping[str, Any] | None = None) -> Any:
        """The drives' joint side of the motion for a design's robot (computed once per
        robot: the last few kept)."""
        design = design or {}
        key = (samples, tuple((n, design.get(n)) for n in self.structural))
        if key in self._sides:
            return self._sides[key]
        robot = self.robot_of(design)
        if self.min_natural_frequency is not None:
            self._frequency.prepare(key[1], robot)
        moduli = dict(self.section_modulus)
        moduli.update({link: s.section_modulus(design) for link, s in self.sections.items()})
        side = _joint_side(
            robot, self.motion, gravity=self.gravity,
            section_modulus=moduli, samples=samples,
        )  # fmt: skip
        if len(self._sides) >= 4:
            self._sides.pop(next(iter(self._sides)))
        self._sides[key] = side
        return side

    def report_of(self, design: Mapping[str, Any], samples: int | None = None) -> DriveReport:
        """The :class:`~pinext.planning.DriveReport` of a design."""
        side = self._joint_side(self.samples if samples is None else samples, design)
        return _assemble(side, self.drives_of(design))

    def check_of(
        self, design: Mapping[str, Any], samples: int | None = None
    ) -> tuple[DriveReport, DesignCheck]:
        """(report, :class:`~pinext.planning.DesignCheck`) of a design."""
        report = self.report_of(design, samples)
        return report, self._check(report, design)

    def _check(self, report: DriveReport, design: Mapping[str, Any]) -> DesignCheck:
        """The limits of a design checked; the first natural frequency of its robot."""
        check = check_design(report, self.limits_of(design), self.link_limits)
        if self.min_natural_frequency is not None:  # motors held, the design's springs
            key = tuple((n, design.get(n)) for n in self.structural)
            robot = lambda: self.robot_of(design)  # noqa: E731
            check.rows.append(self._frequency.row(key, robot, self.drives_of(design)))
        return check

    def _parts(self, design: Mapping[str, Any], drives: Mapping[str, Drive]) -> list[Any]:
        """The catalogue entries of a design: its motors (chosen, or a specification's motor
        found in the catalogue) and its harmonic drives."""
        parts: list[Any] = []
        for joint, drive in drives.items():
            if f"{joint}.motor" in design:
                parts.append(self.catalogue[design[f"{joint}.motor"]])
            else:
                parts += [e for e in self.catalogue.values() if e.motor == drive.actuator][:1]
            if f"{joint}.harmonic_drive" in design:
                parts.append(self.harmonic_drives[design[f"{joint}.harmonic_drive"]])
        return parts

    def _evaluate(self, design: dict[str, Any]) -> Evaluation:
        drives = self.drives_of(design)
        report = _assemble(self._joint_side(self.samples, design), drives)
        check = self._check(report, design)
        margins = {
            f"{r.name}: {r.quantity}": -math.inf if math.isnan(r.margin) else float(r.margin)
            for r in check.rows
        }
        for section in self.sections.values():
            margins.update(section.margins(design))
        parts = self._parts(design, drives)
        motors = [e for e in parts if isinstance(e, CatalogueMotor)]
        driven = np.array([joint in drives for joint in report.joints])
        finite = driven & np.isfinite(report.copper_loss).all(axis=0)
        copper = float(np.trapezoid(report.copper_loss[:, finite], report.t, axis=0).sum())
        electric = report.voltage[:, finite] * report.current[:, finite]
        energy = float(np.trapezoid(np.maximum(electric, 0.0), report.t, axis=0).sum())
        criteria = {
            "motor_mass": float(sum(e.mass for e in motors)),
            "drive_mass": float(sum(e.mass for e in parts)),
            "link_mass": float(sum(s.mass(design) for s in self.sections.values())),
            "negative_payload": -self.payload.mass_of(design) if self.payload else 0.0,
            "peak_motor_torque": float(report.peak_motor_torque[driven].sum()),
            "rms_motor_torque": float(report.rms_motor_torque[driven].sum()),
            "copper_loss": copper,
            "energy": energy,
        }
        if all(e.price is not None for e in parts):  # else "cost" is refused as a criterion
            criteria["cost"] = float(sum(e.price for e in parts))
        return Evaluation(criteria, margins)

    @classmethod
    def from_spec(cls, spec_path: str | Path) -> DriveProblem:
        """Read a ``pinext design`` specification extended with ``[variables]`` and
        ``[objective]`` (everything else as :func:`~pinext.planning.run_design` reads it)::

            catalogue = "dc_motors.toml"
            [variables.shoulder_lift]
            motor = "catalogue"                # or ["DC32-48V-120W", "DC40-48V-150W"]
            ratio = [30, 50, 80, 100, 120, 160]    # or { low = 10, high = 300 }
            efficiency = 0.85
            [objective]
            minimize = "motor_mass"            # or ["motor_mass", "copper_loss"]: a front
            weights = [1.0, 0.05]              # optional: a weighted sum
            [verify]                           # optional: ElasticTracking.from_table

        Raises:
            FileFormatError: The file, with the key that is wrong and what is valid.
        """
        design = read_design(spec_path, extra=("variables", "objective", "harmonic_drives",
                                               "payload", "verify"))  # fmt: skip
        path = design.path
        table = design.table
        harmonic = table.get("harmonic_drives")
        if harmonic is not None and not isinstance(harmonic, str):
            raise FileFormatError(str(path), "harmonic_drives",
                                  f"must be a file name, got {harmonic!r}")  # fmt: skip
        extensions = table.get("extensions")
        if isinstance(extensions, str):
            extensions = path.parent / extensions
        variables = table.get("variables")
        if not isinstance(variables, dict) or not variables:
            raise FileFormatError(str(path), "variables",
                                  "needs [variables.JOINT] tables (motor, ratio, ...)")  # fmt: skip
        if "payload" in table:  # a fixed payload, added to each design's robot
            if "payload" in variables:
                raise FileFormatError(str(path), "payload", "give [payload] or "
                                      "[variables.payload], not both")  # fmt: skip
            variables = {**variables, "payload": table["payload"]}
        objective = table.get("objective", {"minimize": "motor_mass"})
        if not isinstance(objective, dict):
            raise FileFormatError(str(path), "objective", "must be a table [objective]")
        _unknown(path, "objective", objective, OBJECTIVE_KEYS)
        try:
            problem = cls(
                design.robot,
                design.motion,
                variables,
                catalogue=design.catalogue,
                harmonic_drives=None
                if harmonic is None
                else load_harmonic_drives(path.parent / harmonic),
                drives=design.drives,
                limits=table.get("limits", {}),
                link_limits=design.link_limits,
                section_modulus=design.section_modulus,
                min_natural_frequency=design.min_natural_frequency,
                minimize=objective.get("minimize", "motor_mass"),
                weights=objective.get("weights"),
                gravity=design.gravity,
                samples=design.samples,
                extensions=extensions,
                title=design.title,
                source=path,
            )
        except NameNotFound as err:  # a joint of [variables] that the robot does not have
            raise FileFormatError(str(path), "variables", str(err)) from None
        except InvalidParameter as err:  # [objective]: its weights, its number of criteria
            raise FileFormatError(str(path), "objective", str(err)) from None
        if "verify" in table:  # simulation with elastic transmissions of the best candidates
            from .elastic_tracking import ElasticTracking

            try:
                problem.verify = ElasticTracking.from_table(problem, table["verify"])
            except InvalidParameter as err:
                raise FileFormatError(str(path), "verify", str(err)) from None
        return problem
