"""The first natural frequency as a design limit (Vukobratović & Potkonjak, §20.4.1: the
characteristics of a design checked against "the limits that we impose").

A robot whose drives hold its joints still vibrates in the elastic DOFs of its flexible links
(Celentano (2008) §5, the sublink model) and in its elastic transmissions ((20.98)–(20.99):
the spring c between the motor angle θ/N and the joint angle q). Its first natural frequency
is the smallest positive root of

.. math::

    \\det\\big(K - \\omega^2 M(q)\\big) = 0, \\qquad f_1 = \\frac{\\omega_1}{2\\pi},

with :math:`M` from Pinocchio's ``crba`` and :math:`K` the sublink joints' stiffness
(:func:`pinext.natural_frequencies`; no gravity, so the linear structure's frequency) on the
DOFs that stay free: the elastic DOFs and the joints of the elastic transmissions. A joint of
a rigid gear (or without a drive) is held. The motor of an elastic transmission is

* ``"held"`` (the default: its controller holds θ, the locked-rotor case): the spring ties the
  joint to the ground, :math:`K_{qq} \\mathrel{+}= c`; one joint of load inertia :math:`J_L`
  gives :math:`\\omega^2 = c/J_L`;
* ``"free"`` (no torque from the motor): φ = θ/N is a DOF of inertia :math:`J_m N^2`
  (:attr:`~pinext.drives.Drive.motor_side_inertia`), coupled by c; one joint gives the
  two-mass :math:`\\omega^2 = c\\,(1/J_L + 1/(N^2 J_m))`.

A held motor gives the lower frequency of the two (the spring alone carries the load), so the
limit is checked with held motors unless asked otherwise. The frequency is taken at the
configurations of the prescribed motion: :data:`POSES` evenly spaced samples, the lowest value
kept. A limit ``min_natural_frequency`` [Hz] gives the margin :math:`f_1/f_\\min - 1`, positive
when met. For a uniform beam clamped at a locked hub this is the Euler–Bernoulli cantilever
:math:`f_1 = (1.8751^2/2\\pi)\\sqrt{EI/(\\rho A L^4)}`; both transmission cases are checked
against their closed forms (``tests/test_natural_frequency_drives.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pinocchio as pin
from scipy.linalg import eigh

from ..drives import Drive, ElasticTransmission
from ..exceptions import InvalidParameter, NameNotFound, PinextError
from ..flexible.modal import mass_matrix
from ..model import stiffness_matrix
from ..validation import real
from .design_check import CheckRow
from .drive_sizing import _expander
from .motion import as_motion

__all__ = [
    "MOTORS",
    "POSES",
    "FrequencyLimit",
    "FrequencyRows",
    "elastic_springs",
    "first_natural_frequency",
    "frequency_row",
    "min_frequency_limit",
    "vibrates",
]

#: Configurations of the motion at which the first natural frequency is computed.
POSES = 21
#: What the motor of an elastic transmission does (module docstring).
MOTORS = ("held", "free")
#: Name and quantity of the check row (``"robot: first natural frequency [Hz]"``).
ROW = ("robot", "first natural frequency [Hz]")


def min_frequency_limit(where: str, value: Any) -> float | None:
    """``min_natural_frequency`` [Hz] checked: None, or a finite number > 0.

    Raises:
        InvalidParameter: NaN, inf, zero, negative or not a number; the message names
            ``where``.
    """
    return real(where, value, unit="[Hz]", low=0.0, strict=True, none=True)


def vibrates(robot: Any, drives: Mapping[str, Drive], variables: Mapping[str, Any]) -> bool:
    """Whether a design's robot has a vibration mode with its joints held: a flexible link, or
    an elastic transmission (in ``drives``, or a ``stiffness`` or ``harmonic_drive`` among an
    optimal design's ``variables``: joint name -> its table)."""
    tables = [t for t in variables.values() if isinstance(t, Mapping)]
    return (
        bool(getattr(robot, "flexible", None))
        or any(isinstance(d.transmission, ElasticTransmission) for d in drives.values())
        or any("stiffness" in t or "harmonic_drive" in t for t in tables)
    )


def elastic_springs(
    robot: Any, drives: Mapping[str, Drive] | None
) -> dict[int, tuple[float, float]]:
    """Index in v of each elastic transmission's joint -> (its stiffness c [N.m/rad], its motor
    side's inertia at the joint J N² [kg.m^2]).

    Raises:
        NameNotFound: A drive's joint that the robot does not have.
        InvalidParameter: A drive that is not a :class:`~pinext.drives.Drive`, or an elastic
            transmission on a joint of more than one DOF.
    """
    model = robot.model
    names = list(model.names)[1:]
    springs: dict[int, tuple[float, float]] = {}
    for joint, drive in (drives or {}).items():
        if not isinstance(drive, Drive):
            raise InvalidParameter(f"drives['{joint}'] must be a pinext Drive, got {drive!r}")
        transmission = drive.transmission
        if not isinstance(transmission, ElasticTransmission):
            continue
        if joint not in names:
            raise NameNotFound("joint", joint, names)
        jm = model.joints[model.getJointId(joint)]
        if jm.nv != 1:
            raise InvalidParameter(
                f"the elastic transmission of '{joint}' needs a joint of one DOF, it has {jm.nv}"
            )
        inertia = drive.motor_side_inertia * transmission.ratio**2
        springs[jm.idx_v] = (transmission.stiffness, inertia)
    return springs


def _configurations(robot: Any, motion: Any, poses: int) -> list[np.ndarray]:
    """The distinct configurations of ``poses`` samples of ``motion`` in the full model."""
    model = robot.model
    if motion is None:
        return [pin.neutral(model)]
    iq = _expander(robot)[0]
    out = []
    for row in np.unique(np.asarray(as_motion(motion, samples=poses).q, dtype=float), axis=0):
        if row.size == model.nq:
            out.append(row)
            continue
        if row.size != iq.size:
            raise InvalidParameter(
                f"the motion has nq = {row.size}; expected the robot's {model.nq} or its "
                f"rigid model's {iq.size}"
            )
        full = pin.neutral(model)
        full[iq] = row
        out.append(full)
    return out


class FrequencyLimit:
    """The first natural frequency of a robot for its drives, its mass matrices along the
    motion computed once per robot (a design's drives cost a small eigenproblem per pose).

    Args:
        robot: A :class:`pinext.Robot`.
        motion: The prescribed motion (see :func:`~pinext.planning.drive_requirements`), in
            the joints of the rigid model or of the full model; None: the neutral configuration.
        poses: How many evenly spaced samples of the motion.
    """

    def __init__(self, robot: Any, motion: Any = None, *, poses: int = POSES) -> None:
        self.robot = robot
        model = robot.model
        self.stiffness = stiffness_matrix(robot, model)
        self.masses = [mass_matrix(robot, q) for q in _configurations(robot, motion, poses)]
        rigid = getattr(robot, "rigid_model", model)
        #: Index in v of each joint of the rigid model (held unless its transmission is elastic).
        self.joints: dict[int, str] = {}
        for j in range(1, rigid.njoints):
            if rigid.names[j] in model.names:
                jm = model.joints[model.getJointId(rigid.names[j])]
                self.joints.update({jm.idx_v + k: rigid.names[j] for k in range(jm.nv)})

    def __call__(self, drives: Mapping[str, Drive] | None = None, motors: str = "held") -> float:
        """f₁ [Hz] with ``drives`` (module docstring), the lowest over the poses.

        Raises:
            InvalidParameter: ``motors`` not one of :data:`MOTORS`, or no DOF left free (no
                flexible link and no elastic transmission).
        """
        if motors not in MOTORS:
            raise InvalidParameter(f"motors must be one of {', '.join(MOTORS)}, got {motors!r}")
        springs = elastic_springs(self.robot, drives)
        nv = self.robot.model.nv
        free = np.array([i for i in range(nv) if i not in self.joints or i in springs], dtype=int)
        if free.size == 0:
            held = ", ".join(dict.fromkeys(self.joints.values())) or "none"
            raise InvalidParameter(
                "min_natural_frequency needs an elastic DOF (a flexible link or an elastic "
                f"transmission): with its joints held ({held}) this robot has no vibration mode"
            )
        at = {int(i): k for k, i in enumerate(free)}
        n, extra = free.size, len(springs) if motors == "free" else 0
        stiffness = np.zeros((n + extra, n + extra))
        stiffness[:n, :n] = self.stiffness[np.ix_(free, free)]
        motor_inertia = np.zeros(extra)
        for m, (i, (c, inertia)) in enumerate(springs.items()):
            stiffness[at[i], at[i]] += c
            if motors == "free":  # φ = θ/N, its spring c (φ − q)
                stiffness[n + m, n + m] += c
                stiffness[at[i], n + m] = stiffness[n + m, at[i]] = -c
                motor_inertia[m] = inertia
        lowest = np.inf
        for full in self.masses:
            mass = np.zeros_like(stiffness)
            mass[:n, :n] = full[np.ix_(free, free)]
            mass[n:, n:] = np.diag(motor_inertia)
            try:
                values = eigh(stiffness, mass, eigvals_only=True)
            except np.linalg.LinAlgError as err:
                raise PinextError(f"natural frequency: the modal analysis failed: {err}") from None
            positive = values[values > 1e-10 * max(np.abs(values).max(), 1e-300)]
            if positive.size:
                lowest = min(lowest, float(np.sqrt(positive[0]) / (2.0 * np.pi)))
        return lowest


def first_natural_frequency(
    robot: Any,
    motion: Any = None,
    *,
    drives: Mapping[str, Drive] | None = None,
    motors: str = "held",
    poses: int = POSES,
) -> float:
    """The lowest first natural frequency [Hz] of ``robot`` with its rigid joints held and
    its elastic transmissions' springs in place, over ``poses`` configurations of ``motion``
    (module docstring).

    Args:
        robot: A :class:`pinext.Robot`.
        motion: The prescribed motion (see :func:`~pinext.planning.drive_requirements`), in
            the joints of the rigid model or of the full model; None: the neutral configuration.
        drives: Joint name -> :class:`~pinext.drives.Drive`; default ``robot.drives``. The
            joints of its elastic transmissions are free, held by their springs.
        motors: ``"held"`` (locked rotors) or ``"free"`` (two-mass), see :data:`MOTORS`.
        poses: How many evenly spaced samples of the motion.

    Returns:
        f₁ [Hz] (the smallest positive frequency; the lowest over the poses).

    Raises:
        InvalidParameter: The robot has no elastic DOF once its joints are held, or a bad
            ``motors`` or drive.
        NameNotFound: A drive's joint that the robot does not have.
    """
    if drives is None:
        drives = getattr(robot, "drives", None)
    return FrequencyLimit(robot, motion, poses=poses)(drives, motors)


def frequency_row(
    robot: Any,
    motion: Any,
    limit: float,
    *,
    drives: Mapping[str, Drive] | None = None,
    poses: int = POSES,
) -> CheckRow:
    """The check row ``"robot: first natural frequency [Hz]"`` (a lower limit: margin
    :math:`f_1/f_\\min - 1`), motors held."""
    value = first_natural_frequency(robot, motion, drives=drives, poses=poses)
    return CheckRow(*ROW, value, limit, lower=True)


def elastic_springs_key(drives: Mapping[str, Drive]) -> list[tuple[str, float]]:
    """(joint, stiffness) of the elastic transmissions: what a held-motor frequency depends
    on besides the robot."""
    return [
        (joint, float(d.transmission.stiffness))
        for joint, d in drives.items()
        if isinstance(d, Drive) and isinstance(d.transmission, ElasticTransmission)
    ]


class FrequencyRows:
    """The frequency rows of an optimal design's candidates: a :class:`FrequencyLimit` per
    robot (the last few kept), a row per robot and elastic transmissions.

    Args:
        motion: The prescribed motion.
        limit: ``min_natural_frequency`` [Hz].
    """

    def __init__(self, motion: Any, limit: float) -> None:
        self.motion = motion
        self.limit = limit
        self._robots: dict[Any, FrequencyLimit] = {}
        self._rows: dict[Any, CheckRow] = {}

    def prepare(self, key: Any, robot: Any) -> None:
        """Keep the :class:`FrequencyLimit` of ``robot``, named ``key``."""
        if key not in self._robots:
            if len(self._robots) >= 4:
                self._robots.pop(next(iter(self._robots)))
            self._robots[key] = FrequencyLimit(robot, self.motion)

    def row(self, key: Any, robot: Callable[[], Any], drives: Mapping[str, Drive]) -> CheckRow:
        """The row of the robot named ``key`` (built by ``robot()`` when it is not kept) with
        ``drives``, motors held."""
        springs = tuple(sorted(elastic_springs_key(drives)))
        if (key, springs) in self._rows:
            return self._rows[key, springs]
        if key not in self._robots:
            self.prepare(key, robot())
        row = CheckRow(*ROW, self._robots[key](drives), self.limit, lower=True)
        if len(self._rows) >= 4096:
            self._rows.pop(next(iter(self._rows)))
        self._rows[key, springs] = row
        return row
