"""Hybrid motion–force control (Raibert & Craig 1981), in the constrained-dynamics form of
Lynch & Park (ch. 8 and 11) on the task-space dynamics of Khatib (1987).

The constraint frame (axes ``R_c``, world) splits the six task directions: ``A`` (k×6) are the
rows of ``R̄_cᵀ = diag(R_c, R_c)ᵀ`` along which the tool pushes (Raibert–Craig's selection
``I − S``), the others are followed in motion. With the task inertia Λ and bias η of
:func:`pinext.task_space_dynamics`, and P the projection of Lynch & Park ch. 8 written in the
task space (:func:`pinext.constraints.projection.projector` with M → Λ),

.. math::

    P = I - A^T (A \\Lambda^{-1} A^T)^{-1} A \\Lambda^{-1},

    F = P\\,\\Lambda\\,\\Omega\\,(\\dot V_d + K_d \\dot e + K_p e)
        + (I - P)\\,A^T (f_d - D_f A V) + \\eta,\\qquad \\tau = J^T F,

Ω = I − AᵀA the motion directions. Against a rigid constraint along A the task acceleration
in the motion directions is exactly the commanded ``Ω V̇* = Ω(V̇_d + K_d ė + K_p e)`` (so
``ë + K_d ė + K_p e = 0`` for the translations, and for the rotations to first order in the
error), and the tool pushes with f_d exactly. No force sensor is used: the force is applied
in feedforward, with the damping D_f along A (Whitney's (1977) damping control) so that the
free approach ends at the speed ``f_d / D_f`` and the normal motion on a compliant, massive
surface settles. At rest against any surface (rigid,
compliant, massive) the force is exactly f_d, whatever the surface's stiffness.

Against a moving surface (a massive, compliant environment) the normal acceleration s̈_n of
the tool couples into the motion directions (derived in the docs of
:meth:`HybridForceMotionController.coupling`):

.. math::

    \\ddot e + K_d \\dot e + K_p e = -\\Omega \\Lambda^{-1} A^T (A \\Lambda^{-1} A^T)^{-1}
    \\ddot s_n ,

so with ``K_p = ω²``, ``K_d = 2ω`` (critical damping, an impulse response ``t e^{-ωt} ≥ 0``
of area 1/ω²), the motion error from rest stays below
``max |c_i| max |s̈_n| / ω²`` in each motion direction i, ``c = Ω Λ⁻¹ Aᵀ (A Λ⁻¹ Aᵀ)⁻¹``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ..constraints.projection import projector
from ..contact.coordinates import COORDINATE_NAMES
from ..dynamics.task_space import TaskSpaceDynamics
from ..exceptions import InvalidParameter
from .actuation import MOTOR_BANDWIDTH
from .task import Target, TaskSpaceController, pose_error

if TYPE_CHECKING:
    from ..simulation.system import System

#: Largest speed [m/s or rad/s] of the free approach ``|f_d| / D_f`` accepted.
APPROACH_SPEED = 10.0


class HybridForceMotionController(TaskSpaceController):
    """Motion along the free directions of a constraint frame, force along the others.

    Args:
        system: The System (any; see :class:`~pinext.control.task.TaskSpaceController`).
        frame: The controlled frame (the tool).
        target: A fixed ``pin.SE3`` or ``target(t) -> (pose, twist, acceleration)``; its
            components along the force directions are ignored.
        force: f_d, the force [N] (moment [N.m]) the tool applies to the environment along
            each of ``force_axes`` (a number for one axis).
        constraint_frame: The constraint frame's orientation ``R_c`` (3×3, columns its axes
            in world axes) or a ``pin.SE3``; default the world's axes.
        force_axes: The force-controlled axes of the constraint frame, among
            ``x y z roll pitch yaw`` (default ``("z",)``: a surface normal to z).
        bandwidth: ω [rad/s] of the motion directions (``K_p = ω²``, ``K_d = 2ω``), a number
            or one per task direction (6,).
        force_damping: D_f [N.s/m or N.m.s/rad] along the force axes (a number or one per
            axis), > 0, with ``|f_d| / D_f`` (the speed of the free approach) at most
            :data:`APPROACH_SPEED`.
        null_damping, actuated, motor_bandwidth, reference_damping: As
            :class:`~pinext.control.task.TaskSpaceController`.
    """

    def __init__(
        self,
        system: System,
        frame: str,
        target: pin.SE3 | Target,
        force: Any,
        *,
        constraint_frame: Any = None,
        force_axes: Sequence[str] = ("z",),
        bandwidth: Any = 40.0,
        force_damping: Any = 200.0,
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
        if isinstance(force_axes, str):
            force_axes = force_axes.split()
        unknown = [a for a in force_axes if a not in COORDINATE_NAMES]
        if unknown or not force_axes or len(set(force_axes)) != len(force_axes):
            raise InvalidParameter(
                f"force_axes must be distinct names among {', '.join(COORDINATE_NAMES)}, "
                f"got {list(force_axes)}"
            )
        rotation = np.eye(3) if constraint_frame is None else constraint_frame
        if isinstance(rotation, pin.SE3):
            rotation = rotation.rotation
        rotation = np.asarray(rotation, dtype=float)
        if rotation.shape != (3, 3) or not np.allclose(rotation.T @ rotation, np.eye(3), atol=1e-9):
            raise InvalidParameter("constraint_frame must be a rotation matrix (3x3) or a pin.SE3")
        axes = np.zeros((6, 6))
        axes[:3, :3] = axes[3:, 3:] = rotation
        self.axes = list(force_axes)
        self.selection = axes[:, [COORDINATE_NAMES.index(a) for a in self.axes]].T  # A (k×6)
        self.motion = np.eye(6) - self.selection.T @ self.selection  # Ω
        k = len(self.axes)
        per = f"one per force axis: {', '.join(self.axes)}"
        self.force = self._per(force, k, "force", "[N or N.m]", positive=False, per=per)
        self.force_damping = self._per(
            force_damping, k, "force_damping", "[N.s/m or N.m.s/rad]", per=per
        )
        self._approach(self.axes, self.force, self.force_damping)
        omega = self._per(
            bandwidth, 6, "bandwidth", "[rad/s]", per="one per " + ", ".join(COORDINATE_NAMES)
        )
        self.kp, self.kd = np.diag(omega**2), np.diag(2.0 * omega)

    @staticmethod
    def _per(
        value: Any, n: int, name: str, unit: str, positive: bool = True, per: str = ""
    ) -> np.ndarray:
        kind = "a finite number >= 0" if positive else "a finite number"
        several = f" or {n} of them ({per})" if n > 1 else ""
        message = f"{name} must be {kind}{several} {unit}, got {value!r}"
        try:
            if isinstance(value, (str, bytes, bool, np.bool_)):
                raise TypeError
            arr = np.array(value, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise InvalidParameter(message) from None
        if arr.size == 1:
            arr = np.full(n, float(arr[0]))
        if arr.shape != (n,) or not np.all(np.isfinite(arr)) or (positive and np.any(arr < 0)):
            raise InvalidParameter(message)
        return arr

    @staticmethod
    def _approach(axes: list[str], force: np.ndarray, damping: np.ndarray) -> None:
        """Refuse a free approach without a bounded speed: the tool reaches the surface at
        ``|f_d| / D_f``; a zero ``force_damping`` or a speed above :data:`APPROACH_SPEED`
        makes the contact a cascade of impacts."""
        for axis, f, d in zip(axes, force, damping, strict=True):
            if d <= 0:
                raise InvalidParameter(
                    f"HybridForceMotionController: force_damping along '{axis}' must be > 0 "
                    f"[N.s/m or N.m.s/rad], got {d:g}: the free approach of the tool ends at "
                    "the speed force / force_damping, and with no damping the tool accelerates "
                    "into the surface (a cascade of impacts); e.g. force_damping=200"
                )
            if abs(f) / d > APPROACH_SPEED:
                raise InvalidParameter(
                    f"HybridForceMotionController: force = {f:g} with force_damping = {d:g} "
                    f"along '{axis}' approaches the surface at |force| / force_damping = "
                    f"{abs(f) / d:.3g} m/s (or rad/s), above {APPROACH_SPEED:g}: the tool hits "
                    "it in a cascade of impacts; lower force or raise force_damping to at "
                    f"least {abs(f) / APPROACH_SPEED:.3g}"
                )

    def coupling(self, rec: TaskSpaceDynamics) -> np.ndarray:
        """Shape (6, k). ``c = Ω Λ⁻¹ Aᵀ (A Λ⁻¹ Aᵀ)⁻¹``: the motion-direction acceleration that
        a unit acceleration of the tool along the force directions causes.

        With the law's wrench F, ``V̇ = Λ⁻¹(F − η − F_tip)`` and the environment's reaction
        ``F_tip = Aᵀ f`` along the force directions, the motion directions get
        ``Ω V̇ = Ω V̇* + Ω Λ⁻¹ Aᵀ (f_c − f)`` with ``f_c`` the commanded force; the force
        directions ``A V̇ = A Λ⁻¹ Aᵀ (f_c − f) = s̈_n``, hence ``Ω V̇ − Ω V̇* = c s̈_n``."""
        inv = np.linalg.inv(rec.inertia)
        at = self.selection.T
        return self.motion @ inv @ at @ np.linalg.inv(self.selection @ inv @ at)

    def wrench(self, t: float, rec: TaskSpaceDynamics, pose: pin.SE3, target: tuple) -> np.ndarray:
        """``F = P Λ Ω (V̇_d + K_d ė + K_p e) + (I − P) Aᵀ (f_d − D_f A V) + η``."""
        goal, twist, acceleration = target
        error = pose_error(pose, goal)
        rate = np.asarray(twist, dtype=float) - rec.velocity
        desired = self.motion @ (acceleration + self.kd @ rate + self.kp @ error)
        a = self.selection
        proj = projector(a, np.linalg.solve(rec.inertia, a.T))[0]
        push = a.T @ (self.force - self.force_damping * (a @ rec.velocity))
        return proj @ (rec.inertia @ desired) + (np.eye(6) - proj) @ push + rec.bias
