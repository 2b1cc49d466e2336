"""What the task-space controllers share: the target, the pose error, the task-space dynamics
of the controlled frame and the map to the System's inputs.

Conventions (pinext's, Pinocchio's ``LOCAL_WORLD_ALIGNED``): twists ``V = [ṗ, ω]`` of the
frame's origin in world axes, accelerations ``V̇ = [p̈, ω̇]`` (classical), wrenches
``F = [f, m]`` about the frame's origin in world axes. The pose error is

.. math::

    e = \\begin{bmatrix} p_d - p \\\\ \\log_3(R_d R^T) \\end{bmatrix},\\qquad
    \\dot e \\approx V_d - V

(the rotation error in world axes; its rate is ``ω_d − ω`` to first order in the error).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ..dynamics.task_space import SINGULAR_THRESHOLD, TaskSpaceDynamics, evaluate
from ..exceptions import InvalidParameter, NameNotFound
from ..model import resolve_frame
from ..validation import describe, real, vector
from .actuation import MOTOR_BANDWIDTH, Actuation
from .base import Controller
from .drive_reference import as_system

if TYPE_CHECKING:
    from ..simulation.system import System

#: A moving target: ``target(t) -> (pose, twist, acceleration)``, the desired placement of
#: the frame (``pin.SE3``, world), its twist ``[ṗ, ω]`` and its acceleration ``[p̈, ω̇]``
#: (shape (6,) each, world axes).
Target = Callable[[float], tuple[pin.SE3, np.ndarray, np.ndarray]]

_ZERO6 = np.zeros(6)


def as_target(target: pin.SE3 | Target) -> Target:
    """A :data:`Target` from a fixed ``pin.SE3`` or a function of time; a function is called
    once at t = 0 here, and each of its values is checked (:func:`target_value`)."""
    if isinstance(target, pin.SE3):
        pose = _finite_pose(target, "target")
        return lambda t: (pose, _ZERO6, _ZERO6)
    if not callable(target):
        raise InvalidParameter(
            "target must be a pin.SE3 (a fixed pose) or a function t -> (pin.SE3, twist (6,), "
            f"acceleration (6,)), got {describe(target)}"
        )

    def checked(t: float) -> tuple[pin.SE3, np.ndarray, np.ndarray]:
        return target_value(target(t), t)

    checked(0.0)
    return checked


def _finite_pose(pose: pin.SE3, name: str) -> pin.SE3:
    if not np.all(np.isfinite(pose.homogeneous)):
        raise InvalidParameter(f"{name} must be a finite pose, got\n{pose.homogeneous}")
    return pose.copy()


def target_value(value: Any, t: float) -> tuple[pin.SE3, np.ndarray, np.ndarray]:
    """``(pose, twist, acceleration)`` of a target function at ``t`` [s], checked: a
    ``pin.SE3`` and two finite (6,) vectors."""
    form = "(pin.SE3, twist (6,) [m/s, rad/s], acceleration (6,) [m/s^2, rad/s^2])"
    if not isinstance(value, (tuple, list)) or len(value) != 3:
        raise InvalidParameter(
            f"target(t) must return {form}; at t = {t:g} s it returned {describe(value)}"
        )
    pose, twist, acceleration = value
    if not isinstance(pose, pin.SE3):
        raise InvalidParameter(
            f"target(t) must return {form}; at t = {t:g} s its pose is {describe(pose)}"
        )
    _finite_pose(pose, f"target({t:g}) pose")
    return (
        pose,
        vector(f"target({t:g}) twist", twist, 6, what="[ṗ, ω] [m/s, rad/s]"),
        vector(f"target({t:g}) acceleration", acceleration, 6, what="[p̈, ω̇] [m/s^2, rad/s^2]"),
    )


def gains(value: Any, name: str, unit: str) -> np.ndarray:
    """A 6×6 symmetric positive semi-definite gain from a scalar, a (6,) diagonal or a 6×6
    matrix."""
    forms = f"a number, a (6,) diagonal or a 6x6 matrix {unit}"
    if isinstance(value, (str, bytes, bool, np.bool_)) or value is None:
        raise InvalidParameter(f"{name} must be {forms}, got {describe(value)}")
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise InvalidParameter(f"{name} must be {forms}, got {describe(value)}") from None
    if arr.ndim == 0:
        arr = np.full(6, float(arr))
    if arr.shape == (6,):
        arr = np.diag(arr)
    if arr.shape != (6, 6):
        raise InvalidParameter(f"{name} must be {forms}, got shape {np.shape(value)}")
    if not np.all(np.isfinite(arr)):
        raise InvalidParameter(f"{name} must be finite {unit}, got {value!r}")
    scale = 1e-12 * (1 + np.abs(arr).max())
    asymmetry = np.abs(arr - arr.T).max()
    if asymmetry > scale:
        raise InvalidParameter(
            f"{name} must be symmetric positive semi-definite {unit}, got a matrix whose "
            f"largest |{name}[i, j] - {name}[j, i]| is {asymmetry:.3g}: {value!r}"
        )
    lowest = np.linalg.eigvalsh(arr)[0]
    if lowest < -scale:
        raise InvalidParameter(
            f"{name} must be symmetric positive semi-definite {unit} (a negative gain "
            f"pushes away from the target), got {value!r}, of smallest eigenvalue {lowest:.3g}"
        )
    return arr


def pose_error(pose: pin.SE3, target: pin.SE3) -> np.ndarray:
    """Shape (6,). ``[p_d − p, log3(R_d Rᵀ)]`` in world axes [m, rad]."""
    return np.concatenate(
        [target.translation - pose.translation, pin.log3(target.rotation @ pose.rotation.T)]
    )


class TaskSpaceController(Controller):
    """Base of the controllers of one frame's motion (and force) in the task space.

    Subclasses implement :meth:`wrench`; the law applies ``τ = Jᵀ F`` plus a damping of the
    null-space motion of redundant arms, ``(I − Jᵀ J̄ᵀ)(−d_n q̇)`` (Khatib 1987), and turns τ
    into the System's inputs (:class:`pinext.control.actuation.Actuation`: joint torques,
    drive voltages, or motor-angle servos behind elastic transmissions).

    Args:
        system: The System to control (its model, with the drives' armature, is the
            controller's model: an exact model of the mechanism), or a Robot, wrapped as
            :func:`pinext.simulate` wraps it (joint torques as its inputs).
        frame: The controlled frame.
        target: A fixed ``pin.SE3`` or a :data:`Target`.
        null_damping: d_n [N.m.s/rad] on the null-space motion (redundant arms).
        actuated: The joints that receive torque (default: all); others get none (e.g. the
            elastic sublink joints of a flexible link).
        motor_bandwidth: ω_m [rad/s] of the motor-angle loops of elastic drives.
        reference_damping: δ for the damped Λ near singularities (None: a
            :class:`~pinext.exceptions.SingularConfiguration` there).
    """

    def __init__(
        self,
        system: System,
        frame: str,
        target: pin.SE3 | Target,
        *,
        null_damping: float = 1.0,
        actuated: Sequence[str] | None = None,
        motor_bandwidth: float = MOTOR_BANDWIDTH,
        reference_damping: float | None = None,
    ) -> None:
        system = as_system(system)  # a Robot as simulate wraps it; anything else refused
        self.actuation = Actuation(system, motor_bandwidth)
        # the mechanism as the law sees it: elastic drives' rotors move with their links
        self.model = system.model.copy()
        self.model.armature = np.asarray(system.model.armature) + self.actuation.reflected_inertia
        self.data = self.model.createData()
        self.frame = self.model.frames[resolve_frame(self.model, frame)].name
        self.frame_id = self.model.getFrameId(self.frame)
        self.target = as_target(target)
        self.null_damping = real("null_damping", null_damping, unit="[N.m.s/rad]", low=0.0)
        self.reference_damping = real(
            "reference_damping", reference_damping, unit="[m/rad or rad/rad]", low=0.0, none=True
        )
        self.mask = np.ones(self.model.nv)
        if actuated is not None:
            names = list(self.model.names)[1:]
            self.mask[:] = 0.0
            for joint in actuated:
                if joint not in names:
                    raise NameNotFound("joint", joint, names)
                j = self.model.joints[self.model.getJointId(joint)]
                self.mask[j.idx_v : j.idx_v + j.nv] = 1.0

    def wrench(self, t: float, rec: TaskSpaceDynamics, pose: pin.SE3, target: tuple) -> np.ndarray:
        """Shape (6,). The task wrench F the joints apply through ``τ = Jᵀ F``."""
        raise NotImplementedError

    def torque(self, t: float, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The joint torques the law asks for [N.m or N] and the joint accelerations of the
        target's motion ``q̈_ref = J̄ (V̇_d − J̇ q̇)`` [rad/s^2 or m/s^2], shapes (nv,)."""
        rec = evaluate(
            self.model,
            self.data,
            q,
            v,
            self.frame_id,
            "world",
            self.reference_damping,
            False,
            SINGULAR_THRESHOLD,
        )
        pose = self.data.oMf[self.frame_id]
        target = self.target(t)
        force = self.wrench(t, rec, pose, target)
        tau = rec.torque(force)
        if self.null_damping and self.model.nv > 6:
            tau -= rec.null_space_projector() @ (self.null_damping * v)
        planned = rec.consistent_inverse @ (np.asarray(target[2], dtype=float) - rec.drift)
        return tau * self.mask, planned

    def __call__(
        self, t: float, q: np.ndarray, v: np.ndarray, sensors: dict[str, np.ndarray]
    ) -> np.ndarray:
        tau, planned = self.torque(t, q, v)
        return self.actuation(q, v, sensors, tau, planned)
