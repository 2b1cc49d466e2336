"""CartesianPD: a frame held by Cartesian springs and dampers about a rest-to-rest path, with
gravity compensation (the stiffness control of the writing tasks).

.. math::

    \\tau = g(q) + J_p^T\\,[K_p (p_d - p) + D_p (\\dot p_d - \\dot p)]
          + J_\\omega^T\\,[K_r \\log(R_d R^T) - D_r \\omega] - D_q \\dot q

with J the frame's Jacobian in Pinocchio's ``LOCAL_WORLD_ALIGNED`` axes and g(q) the gravity
torque. The path is a start point and straight rest-to-rest moves, each timed by the quintic
``s(τ) = 10τ³ − 15τ⁴ + 6τ⁵``: everything the law reads is data, so that the compiled path
evaluates it in its own loop (:mod:`pinext.compiled.laws`), with no Python per evaluation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pinocchio as pin
from numba.extending import register_jitable

from ..exceptions import InvalidParameter
from ..model import resolve_frame
from ..simulation.controls import KernelForm, own_law
from ..validation import describe, real, vector
from .base import Controller


class QuinticPath(NamedTuple):
    """``p_d(t) = start + Σ_k s((t − t0_k)/(t1_k − t0_k)) delta_k``, s the quintic rest-to-rest
    ramp (0 before t0_k, 1 after t1_k)."""

    start: np.ndarray  # (3,) [m]
    t0: np.ndarray  # (moves,) [s]
    t1: np.ndarray  # (moves,) [s]
    delta: np.ndarray  # (moves, 3) [m]

    @classmethod
    def of(cls, start: Sequence[float], moves: Sequence[tuple[float, float, Sequence[float]]]):
        """The path from ``start`` [m] and moves ``(t0, t1, delta)`` [s, s, m]."""
        point = vector("start", start, 3, what="the path's start point [m]")
        if isinstance(moves, (str, bytes)):
            raise InvalidParameter(f"moves must be (t0, t1, delta) triples, got {describe(moves)}")
        t0s, t1s, deltas = [], [], []
        for k, move in enumerate(moves):
            if not isinstance(move, (tuple, list)) or len(move) != 3:
                raise InvalidParameter(
                    f"moves[{k}] must be a triple (t0 [s], t1 [s], delta (3,) [m]), got "
                    f"{describe(move)}"
                )
            t0 = real(f"moves[{k}] t0", move[0], unit="[s]")
            t1 = real(f"moves[{k}] t1", move[1], unit="[s]")
            if not t1 > t0:
                raise InvalidParameter(
                    f"moves[{k}]: a move must end after it starts, got t0={t0:g}, t1={t1:g} [s]"
                )
            t0s.append(t0)
            t1s.append(t1)
            deltas.append(vector(f"moves[{k}] delta", move[2], 3, what="the move [m]"))
        return cls(
            point,
            np.array(t0s, dtype=float),
            np.array(t1s, dtype=float),
            np.array(deltas, dtype=float).reshape(len(deltas), 3),
        )

    def __call__(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(p_d, ṗ_d) at t [m, m/s] (:func:`desired`)."""
        out = np.empty(6)
        desired(self.start, self.t0, self.t1, self.delta, t, out)
        return out[:3], out[3:]


@register_jitable
def quintic(t, t0, t1):
    """The rest-to-rest ramp (value, rate) from 0 at t0 to 1 at t1."""
    if t <= t0:
        return 0.0, 0.0
    if t >= t1:
        return 1.0, 0.0
    T = t1 - t0
    s = (t - t0) / T
    return s * s * s * (10.0 - 15.0 * s + 6.0 * s * s), 30.0 * s * s * (1.0 - s) * (1.0 - s) / T


@register_jitable
def desired(start, t0, t1, delta, t, out):
    """``out = (p_d, ṗ_d)`` at t [m, m/s]: the point and velocity of a :class:`QuinticPath`
    given as its arrays."""
    for r in range(3):
        out[r] = start[r]
        out[3 + r] = 0.0
    for k in range(t0.size):
        s, ds = quintic(t, t0[k], t1[k])
        for r in range(3):
            out[r] += s * delta[k, r]
            out[3 + r] += ds * delta[k, r]


@register_jitable
def wrench(gains, target, position, rate, error, out):
    """``out = (f, m)``, the law's force and moment on the frame (world axes):
    ``f = K_p (p_d − p) + D_p (ṗ_d − ṗ)``, ``m = K_r e − D_r ω`` with ``gains`` :attr:`CartesianPD.
    gains`, ``target`` (p_d, ṗ_d), ``rate`` the frame's (ṗ, ω) and ``error`` ``e = log(R_d Rᵀ)``.
    The one statement of the law, for :meth:`CartesianPD.__call__` and the compiled loop
    (:func:`pinext.compiled.laws.cartesian_torques`); the torques are
    ``g(q) + Jᵀ (f, m) − D_q q̇``."""
    for r in range(3):
        out[r] = gains[r] * (target[r] - position[r]) + gains[3 + r] * (target[3 + r] - rate[r])
        out[3 + r] = gains[6] * error[r] - gains[7] * rate[3 + r]


def _non_negative(values: np.ndarray, name: str) -> np.ndarray:
    if np.any(values < 0):
        raise InvalidParameter(
            f"{name} must be >= 0 (a negative gain feeds energy in), got {values.tolist()}"
        )
    return values


def _rotation(value: Any) -> np.ndarray:
    """A rotation matrix R_d (3, 3): orthonormal, determinant +1."""
    if isinstance(value, (str, bytes)):
        raise InvalidParameter(f"rotation must be a 3x3 rotation matrix, got {describe(value)}")
    try:
        matrix = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise InvalidParameter(
            f"rotation must be a 3x3 rotation matrix, got {describe(value)}"
        ) from None
    if matrix.shape != (3, 3):
        raise InvalidParameter(f"rotation must be a 3x3 rotation matrix, got shape {matrix.shape}")
    if (
        not np.all(np.isfinite(matrix))
        or not np.allclose(matrix.T @ matrix, np.eye(3), atol=1e-6)
        or np.linalg.det(matrix) < 0
    ):
        raise InvalidParameter(
            "rotation must be a rotation matrix (orthonormal, determinant +1), e.g. "
            f"placement.rotation of a pin.SE3; got\n{matrix}"
        )
    return matrix


class CartesianPD(Controller):
    """Cartesian springs and dampers on a frame about a :class:`QuinticPath`, with gravity
    compensation and joint damping (module docstring).

    Args:
        system: The :class:`pinext.System` (joint torques as its inputs).
        frame: The controlled frame (name or index).
        path: The frame's desired position, a :class:`QuinticPath`.
        rotation: The frame's desired orientation R_d (world), shape (3, 3).
        kp, dp: Translational stiffness [N/m] and damping [N.s/m], three each (world axes),
            >= 0.
        kr, dr: Rotational stiffness [N.m/rad] and damping [N.m.s/rad], >= 0.
        dq: Joint damping [N.m.s/rad], >= 0.

    Raises:
        InvalidParameter: A path that is not a :class:`QuinticPath`, a rotation that is not
            one, a gain that is negative, not finite or not a number.
    """

    def __init__(
        self,
        system: Any,
        frame: str | int,
        path: QuinticPath,
        rotation: np.ndarray,
        kp: Sequence[float] | np.ndarray,
        dp: Sequence[float] | np.ndarray,
        kr: float,
        dr: float,
        dq: float,
    ) -> None:
        self.model = getattr(system, "model", system)
        if not isinstance(self.model, pin.Model):
            raise InvalidParameter(
                f"system must be a pinext.System, a pinext.Robot or a pin.Model, got "
                f"{describe(system)}"
            )
        self.data = self.model.createData()
        self.frame_id = resolve_frame(self.model, frame)
        if not isinstance(path, QuinticPath):
            raise InvalidParameter(
                f"path must be a QuinticPath (QuinticPath.of(start, moves)), got {describe(path)}"
            )
        self.path = path
        self.rotation = _rotation(rotation)
        self.kp = _non_negative(vector("kp", kp, 3, what="the translational stiffness [N/m]"), "kp")
        self.dp = _non_negative(vector("dp", dp, 3, what="the translational damping [N.s/m]"), "dp")
        self.kr = real("kr", kr, unit="[N.m/rad]", low=0.0)
        self.dr = real("dr", dr, unit="[N.m.s/rad]", low=0.0)
        # a negative joint damping feeds energy in (the joints spin up into stop after stop)
        self.dq = real("dq", dq, unit="[N.m.s/rad]", low=0.0)

    def __call__(self, t: float, q: np.ndarray, v: np.ndarray, sensors: Any = None) -> np.ndarray:
        model, data = self.model, self.data
        pin.forwardKinematics(model, data, q, v)
        pin.computeJointJacobians(model, data, q)
        placement = pin.updateFramePlacement(model, data, self.frame_id)
        jac = pin.getFrameJacobian(model, data, self.frame_id, pin.LOCAL_WORLD_ALIGNED)
        vel = pin.getFrameVelocity(model, data, self.frame_id, pin.LOCAL_WORLD_ALIGNED)
        path, target = self.path, np.empty(6)
        desired(path.start, path.t0, path.t1, path.delta, t, target)
        error = pin.log3(self.rotation @ placement.rotation.T)
        out = np.empty(6)
        wrench(self.gains, target, placement.translation, vel.vector, error, out)
        gravity = pin.computeGeneralizedGravity(model, data, q)
        return gravity + jac.T @ out - self.dq * v

    def kernel_form(self, model: pin.Model) -> KernelForm | None:
        """The ``"cartesian_pd"`` form (:class:`~pinext.simulation.controls.KernelForm`):
        the law itself (its frame, path, orientation and gains), on the model it was made
        for; None on another."""
        if not own_law(self, CartesianPD) or model.nv != self.model.nv:
            return None
        return KernelForm("cartesian_pd", law=self)

    @property
    def gains(self) -> np.ndarray:
        """``(K_p (3), D_p (3), K_r, D_r, D_q)``, as :func:`wrench` reads them."""
        return np.r_[self.kp, self.dp, self.kr, self.dr, self.dq].astype(float)
