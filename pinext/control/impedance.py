"""Cartesian impedance control (Hogan 1985), on the task-space dynamics of Lynch & Park ch. 8.

The frame is made to behave as a spring K and damper D about a moving target, keeping the
robot's own task inertia Λ (no force sensor is needed):

.. math::

    F = \\Lambda \\dot V_d + \\eta + K e + D \\dot e,\\qquad \\tau = J^T F,

so that, with the frame applying ``F_tip`` to the environment (``τ = M q̈ + h + Jᵀ F_tip``),

.. math::

    \\Lambda\\,\\ddot e + D\\,\\dot e + K e = F_{tip}.

At rest against an environment the tool pushes with ``F_tip = K e``; against a compliant
surface of stiffness k_e behind which the target lies a depth d, the static normal force is
that of the two springs in series, ``F = d K_n k_e / (K_n + k_e)``. Λ, η, J and J̄ come from
:func:`pinext.task_space_dynamics`.

The default damping makes every mode of ``Λ ë + D ė + K e = 0`` critically damped at the
current Λ: ``D = 2 ζ Λ^{1/2} (Λ^{-1/2} K Λ^{-1/2})^{1/2} Λ^{1/2}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ..dynamics.task_space import TaskSpaceDynamics
from ..validation import real
from .actuation import MOTOR_BANDWIDTH
from .task import Target, TaskSpaceController, gains, pose_error

if TYPE_CHECKING:
    from ..simulation.system import System


def _sqrt_spd(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(A^{1/2}, A^{-1/2}) of a symmetric positive definite matrix."""
    values, vectors = np.linalg.eigh(0.5 * (matrix + matrix.T))
    values = np.maximum(values, 0.0)
    root = np.sqrt(values)
    inv = np.where(root > 0, 1.0 / np.where(root > 0, root, 1.0), 0.0)
    return (vectors * root) @ vectors.T, (vectors * inv) @ vectors.T


def critical_damping(inertia: np.ndarray, stiffness: np.ndarray, ratio: float) -> np.ndarray:
    """Shape (6, 6). ``D = 2 ζ Λ^{1/2} (Λ^{-1/2} K Λ^{-1/2})^{1/2} Λ^{1/2}``: every mode of
    ``Λ ë + D ė + K e = 0`` has damping ratio ζ."""
    root, inv_root = _sqrt_spd(inertia)
    inner = _sqrt_spd(inv_root @ stiffness @ inv_root)[0]
    return 2.0 * ratio * root @ inner @ root


class ImpedanceController(TaskSpaceController):
    """Cartesian impedance ``Λ ë + D ė + K e = F_tip`` about a target (Hogan 1985).

    Args:
        system: The System (any: joint torques, rigid or elastic drives, contacts,
            environments); see :class:`~pinext.control.task.TaskSpaceController`.
        frame: The controlled frame.
        target: A fixed ``pin.SE3`` or ``target(t) -> (pose, twist, acceleration)``.
        stiffness: K, a number, a (6,) diagonal or a 6×6 matrix in world axes
            ``[N/m | N.m/rad]`` (translation then rotation).
        damping: D, same shapes ``[N.s/m | N.m.s/rad]``; None: critically damped at the
            current Λ with ratio ``damping_ratio``.
        damping_ratio: ζ of the default damping.
        null_damping, actuated, motor_bandwidth, reference_damping: As
            :class:`~pinext.control.task.TaskSpaceController`.

    The output is the System's input vector: joint torques ``τ = Jᵀ F`` (plus the null-space
    damping of a redundant arm), or the drives' inputs that produce them
    (:mod:`pinext.control.actuation`).
    """

    def __init__(
        self,
        system: System,
        frame: str,
        target: pin.SE3 | Target,
        stiffness: Any,
        damping: Any = None,
        *,
        damping_ratio: float = 1.0,
        null_damping: float = 1.0,
        actuated: Sequence[str] | None = None,
        motor_bandwidth: float = MOTOR_BANDWIDTH,
        reference_damping: float | None = None,
    ) -> None:
        super().__init__(
            system,
            frame,
            target,
            null_damping=null_damping,
            actuated=actuated,
            motor_bandwidth=motor_bandwidth,
            reference_damping=reference_damping,
        )
        self.stiffness = gains(stiffness, "stiffness", "[N/m | N.m/rad]")
        self.damping = None if damping is None else gains(damping, "damping", "[N.s/m | N.m.s/rad]")
        self.damping_ratio = real("damping_ratio", damping_ratio, unit="[-]", low=0.0, strict=True)

    def wrench(self, t: float, rec: TaskSpaceDynamics, pose: pin.SE3, target: tuple) -> np.ndarray:
        """``F = Λ V̇_d + η + K e + D ė``."""
        goal, twist, acceleration = target
        error = pose_error(pose, goal)
        rate = np.asarray(twist, dtype=float) - rec.velocity
        damping = (
            critical_damping(rec.inertia, self.stiffness, self.damping_ratio)
            if self.damping is None
            else self.damping
        )
        return rec.wrench(acceleration) + self.stiffness @ error + damping @ rate
