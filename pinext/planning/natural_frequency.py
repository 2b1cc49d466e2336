"""The first natural frequency as a design limit (Vukobratović & Potkonjak, §20.4.1: the
characteristics of a design checked against "the limits that we impose").

A robot whose drives hold its joints still vibrates in the elastic DOFs of its flexible links
(Celentano (2008) §5, the sublink model). Its first natural frequency, with every joint of the
rigid model locked, is the smallest positive root of

.. math::

    \\det\\big(K_{ee} - \\omega^2 M_{ee}(q)\\big) = 0, \\qquad f_1 = \\frac{\\omega_1}{2\\pi},

(:func:`pinext.natural_frequencies`: Pinocchio's ``crba`` and the sublink joints' stiffness;
no gravity, so the linear structure's frequency), taken at the configurations of the
prescribed motion: :data:`POSES` evenly spaced samples, the lowest value kept. A limit
``min_natural_frequency`` [Hz] gives the margin :math:`f_1/f_\\min - 1`, positive when met.
For a uniform beam clamped at a locked hub this is the Euler–Bernoulli cantilever
:math:`f_1 = (1.8751^2/2\\pi)\\sqrt{EI/(\\rho A L^4)}` (``tests/test_optimize.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pinocchio as pin

from ..exceptions import InvalidParameter
from ..flexible.modal import natural_frequencies
from ..validation import real
from .design_check import CheckRow
from .drive_sizing import _expander
from .motion import as_motion

__all__ = ["POSES", "first_natural_frequency", "frequency_row", "min_frequency_limit"]

#: Configurations of the motion at which the first natural frequency is computed.
POSES = 21
#: Name and quantity of the check row (``"robot: first natural frequency [Hz]"``).
ROW = ("robot", "first natural frequency [Hz]")


def min_frequency_limit(where: str, value: Any) -> float | None:
    """``min_natural_frequency`` [Hz] checked: None, or a finite number > 0.

    Raises:
        InvalidParameter: NaN, inf, zero, negative or not a number; the message names
            ``where``.
    """
    return real(where, value, unit="[Hz]", low=0.0, strict=True, none=True)


def first_natural_frequency(robot: Any, motion: Any = None, *, poses: int = POSES) -> float:
    """The lowest first natural frequency [Hz] of ``robot`` with its rigid model's joints
    locked, over ``poses`` configurations of ``motion`` (module docstring).

    Args:
        robot: A :class:`pinext.Robot` with flexible links.
        motion: The prescribed motion (see :func:`~pinext.planning.drive_requirements`), in
            the joints of the rigid model or of the full model; None: the neutral configuration.
        poses: How many evenly spaced samples of the motion.

    Returns:
        f₁ [Hz] (the smallest positive frequency; the lowest over the poses).

    Raises:
        InvalidParameter: The robot has no elastic DOF once its joints are locked.
    """
    model = robot.model
    rigid = getattr(robot, "rigid_model", model)
    locked = [rigid.names[j] for j in range(1, rigid.njoints) if rigid.names[j] in model.names]
    if model.njoints - 1 == len(locked):
        raise InvalidParameter(
            "min_natural_frequency needs an elastic DOF (a flexible link): with its joints "
            f"held ({', '.join(locked) or 'none'}) this robot has no vibration mode"
        )
    configurations = [None]
    if motion is not None:
        iq = _expander(robot)[0]
        samples = as_motion(motion, samples=poses).q
        configurations = []
        for row in np.unique(np.asarray(samples, dtype=float), axis=0):
            if row.size == model.nq:
                configurations.append(row)
                continue
            if row.size != iq.size:
                raise InvalidParameter(
                    f"the motion has nq = {row.size}; expected the robot's {model.nq} or its "
                    f"rigid model's {iq.size}"
                )
            full = pin.neutral(model)
            full[iq] = row
            configurations.append(full)
    lowest = np.inf
    for q in configurations:
        frequencies = natural_frequencies(robot, q, locked_joints=locked)
        positive = frequencies[frequencies > 0]
        if positive.size:
            lowest = min(lowest, float(positive[0]))
    return lowest


def frequency_row(robot: Any, motion: Any, limit: float, *, poses: int = POSES) -> CheckRow:
    """The check row ``"robot: first natural frequency [Hz]"`` (a lower limit: margin
    :math:`f_1/f_\\min - 1`)."""
    return CheckRow(*ROW, first_natural_frequency(robot, motion, poses=poses), limit, lower=True)
