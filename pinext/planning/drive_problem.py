"""The drive-sizing problem of an optimal design (Vukobratović & Potkonjak, §20.4.1): the
motors and gears of a robot's drives chosen for a prescribed motion, each candidate screened by
inverse dynamics against the catalogue ratings and the designer's limits.

A :class:`DriveProblem` is built from a ``pinext design`` specification with ``[variables]``
and ``[objective]`` tables (:meth:`DriveProblem.from_spec`), or in Python.
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
from .catalogue import CatalogueMotor
from .design import _unknown, read_design
from .design_check import DesignCheck, DriveLimits, LinkLimits, check_design
from .drive_sizing import DriveReport, _assemble, _joint_side
from .optimize_problem import Choice, Continuous, Evaluation, Problem, Variable

__all__ = ["DRIVE_CRITERIA", "DriveProblem"]

#: Criteria of a :class:`DriveProblem` (summed over the joints) with their units.
DRIVE_CRITERIA = {
    "motor_mass": "total motor mass [kg] (the catalogue's masses)",
    "peak_motor_torque": "Σ peak |T_em| [N.m]",
    "rms_motor_torque": "Σ RMS T_em [N.m]",
    "copper_loss": "Σ ∫ R i² dt over the motion [J]",
    "energy": "Σ ∫ max(u i, 0) dt, electrical energy drawn over the motion [J]",
}
#: Keys of a ``[variables.JOINT]`` table.
VARIABLE_KEYS = ("motor", "ratio", "stiffness", "damping", "efficiency")
#: Keys of the ``[objective]`` table.
OBJECTIVE_KEYS = ("minimize", "weights")


def _bad(where: str, message: str, path: Path | None) -> Exception:
    if path is not None:
        return FileFormatError(str(path), where, message)
    return InvalidParameter(f"{where}: {message}")


class DriveProblem(Problem):
    """Motors and gears of a robot's drives chosen for a prescribed motion, screened by
    inverse dynamics against the catalogue ratings and the designer's limits.

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
            (a number: the gear's).
        catalogue: Name -> :class:`~pinext.planning.CatalogueMotor`.
        drives: Joint name -> the drive of the joints that are not varied, and the starting
            drive (motor, transmission kind) of those that are.
        limits: Joint name -> :class:`~pinext.planning.DriveLimits`, overriding the
            catalogue's ratings key by key.
        link_limits: Flexible link name -> :class:`~pinext.planning.LinkLimits`.
        section_modulus: Flexible link name -> W [m^3].
        minimize: Criterion or criteria of :data:`DRIVE_CRITERIA`.
        weights: See :class:`Problem`.
        gravity: Include gravity.
        samples: Samples of the motion.
        verify: See :class:`Problem`; it receives the design and may call
            :meth:`drives_of` to build the drives.
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
        drives: Mapping[str, Drive] | None = None,
        limits: Mapping[str, Mapping[str, Any] | DriveLimits] | None = None,
        link_limits: Mapping[str, LinkLimits] | None = None,
        section_modulus: Mapping[str, Any] | None = None,
        minimize: str | Sequence[str] = "motor_mass",
        weights: Sequence[float] | None = None,
        gravity: bool = True,
        samples: int = 801,
        verify: Callable[[dict[str, Any]], Mapping[str, float]] | None = None,
        title: str = "optimal drives",
        source: str | Path | None = None,
    ) -> None:
        self.source = None if source is None else Path(source)
        self.robot = robot
        self.motion = motion
        self.catalogue = dict(catalogue or {})
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
        for joint, table in variables.items():
            if joint not in joints:
                raise NameNotFound("joint", joint, joints)
            if not isinstance(table, Mapping):
                raise _bad(f"variables.{joint}", f"must be a table, got {table!r}", self.source)
            unknown = [k for k in table if k not in VARIABLE_KEYS]
            if unknown:
                raise _bad(
                    f"variables.{joint}",
                    f"unknown keys {unknown}; valid keys: {', '.join(VARIABLE_KEYS)}",
                    self.source,
                )
            fixed: dict[str, Any] = {}
            for key, value in table.items():
                name, where = f"{joint}.{key}", f"variables.{joint}.{key}"
                try:
                    if key == "motor":
                        parsed.append(Choice(name, self._motors(value, where)))
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
                    "no motor: give motor = [catalogue names] or a [drives."
                    f"{joint}] table with the motor",
                    self.source,
                )
            if ("stiffness" in table) != ("damping" in table) and not (
                joint in self.base_drives
                and isinstance(self.base_drives[joint].transmission, ElasticTransmission)
            ):
                raise _bad(
                    f"variables.{joint}",
                    "an elastic transmission needs both stiffness and damping",
                    self.source,
                )
            self.fixed[joint] = fixed
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
        groups = list(self.varied.values())
        super().__init__(parsed, self._evaluate, criteria, weights, verify, title, groups)
        self._side: Any = None

    def _absent(self, design: Mapping[str, Any]) -> set[str]:
        """Varied joints of which ``design`` holds no variable (a group's partial design)."""
        return {
            joint
            for joint, names in self.varied.items()
            if not any(name in design for name in names)
        }

    def _motors(self, value: Any, where: str) -> tuple[str, ...]:
        """The catalogue names of a ``motor`` variable, lightest first."""
        if not self.catalogue:
            raise _bad(
                where,
                'the motor catalogue is empty: give catalogue = "FILE.toml" with [[motor]] '
                "tables (e.g. examples/dc_motors.toml)",
                self.source,
            )
        by_mass = sorted(self.catalogue, key=lambda n: (self.catalogue[n].mass, n))
        if value == "catalogue":
            return tuple(by_mass)
        if not isinstance(value, (list, tuple)) or not value:
            raise _bad(
                where,
                f'must be "catalogue" or a non-empty list of catalogue names, got {value!r}',
                self.source,
            )
        for name in value:
            if name not in self.catalogue:
                err = NameNotFound("catalogue motor", name, list(self.catalogue))
                raise _bad(where, str(err), self.source)
        return tuple(sorted(value, key=lambda n: (self.catalogue[n].mass, n)))

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
        joints = set(self.limit_overrides) | {j for j in self.fixed if f"{j}.motor" in design}
        for joint in sorted(joints - self._absent(design)):
            ratings: dict[str, Any] = {}
            if f"{joint}.motor" in design:
                ratings = dict(self.catalogue[design[f"{joint}.motor"]].limits.__dict__)
            ratings.update(self.limit_overrides.get(joint, {}))
            out[joint] = DriveLimits(**ratings)
        return out

    def _joint_side(self, samples: int) -> Any:
        """The drives' joint side of the motion (computed once for the problem's samples)."""
        if samples == self.samples and self._side is not None:
            return self._side
        side = _joint_side(
            self.robot, self.motion, gravity=self.gravity,
            section_modulus=self.section_modulus, samples=samples,
        )  # fmt: skip
        if samples == self.samples:
            self._side = side
        return side

    def report_of(self, design: Mapping[str, Any], samples: int | None = None) -> DriveReport:
        """The :class:`~pinext.planning.DriveReport` of a design."""
        side = self._joint_side(self.samples if samples is None else samples)
        return _assemble(side, self.drives_of(design))

    def check_of(
        self, design: Mapping[str, Any], samples: int | None = None
    ) -> tuple[DriveReport, DesignCheck]:
        """(report, :class:`~pinext.planning.DesignCheck`) of a design."""
        report = self.report_of(design, samples)
        return report, check_design(report, self.limits_of(design), self.link_limits)

    def _evaluate(self, design: dict[str, Any]) -> Evaluation:
        drives = self.drives_of(design)
        report = _assemble(self._joint_side(self.samples), drives)
        check = check_design(report, self.limits_of(design), self.link_limits)
        margins = {
            f"{r.name}: {r.quantity}": -math.inf if math.isnan(r.margin) else float(r.margin)
            for r in check.rows
        }
        mass = 0.0
        for joint, drive in drives.items():
            if f"{joint}.motor" in design:
                mass += self.catalogue[design[f"{joint}.motor"]].mass
            else:  # a motor of the specification: its catalogue entry, if it has one
                mass += next(
                    (e.mass for e in self.catalogue.values() if e.motor == drive.actuator), 0.0
                )
        driven = np.array([joint in drives for joint in report.joints])
        finite = driven & np.isfinite(report.copper_loss).all(axis=0)
        copper = float(np.trapezoid(report.copper_loss[:, finite], report.t, axis=0).sum())
        electric = report.voltage[:, finite] * report.current[:, finite]
        energy = float(np.trapezoid(np.maximum(electric, 0.0), report.t, axis=0).sum())
        criteria = {
            "motor_mass": mass,
            "peak_motor_torque": float(report.peak_motor_torque[driven].sum()),
            "rms_motor_torque": float(report.rms_motor_torque[driven].sum()),
            "copper_loss": copper,
            "energy": energy,
        }
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

        Raises:
            FileFormatError: The file, with the key that is wrong and what is valid.
        """
        design = read_design(spec_path, extra=("variables", "objective"))
        path = design.path
        table = design.table
        variables = table.get("variables")
        if not isinstance(variables, dict) or not variables:
            raise FileFormatError(
                str(path), "variables", "needs [variables.JOINT] tables (motor, ratio, ...)"
            )
        objective = table.get("objective", {"minimize": "motor_mass"})
        if not isinstance(objective, dict):
            raise FileFormatError(str(path), "objective", "must be a table [objective]")
        _unknown(path, "objective", objective, OBJECTIVE_KEYS)
        try:
            return cls(
                design.robot,
                design.motion,
                variables,
                catalogue=design.catalogue,
                drives=design.drives,
                limits=table.get("limits", {}),
                link_limits=design.link_limits,
                section_modulus=design.section_modulus,
                minimize=objective.get("minimize", "motor_mass"),
                weights=objective.get("weights"),
                gravity=design.gravity,
                samples=design.samples,
                title=design.title,
                source=path,
            )
        except NameNotFound as err:  # a joint of [variables] that the robot does not have
            raise FileFormatError(str(path), "variables", str(err)) from None
        except InvalidParameter as err:  # [objective]: its weights, its number of criteria
            raise FileFormatError(str(path), "objective", str(err)) from None
