"""Kinematic control functions from the Jacobian (Negrean et al. 2009, §2.1, eqs. (12)–(16)).

A prescribed end-effector motion :math:`x(t)` becomes joint motion by the differential
kinematics (12)–(14):

.. math::

    \\dot q = J(q)^{-1}\\,\\dot x, \\qquad
    \\ddot q = J(q)^{-1}\\big(\\ddot x - \\dot J(q,\\dot q)\\,\\dot q\\big),

with the generalised inverse (15) :math:`J^{-1} = J^T (J J^T)^{-1}` when the task has fewer
rows than the robot has joints (redundancy), for which (16) asks :math:`\\det(J J^T) \\ne 0`.
Here the inverse is the damped right pseudo-inverse :math:`J^+ = J^T (J J^T + \\lambda^2 I)^{-1}`
(λ = 0 unless damping is asked for), and a null-space term :math:`(I - J^+J) z` carries a
secondary motion. To keep the integrated joint motion on the path (closed-loop inverse
kinematics), the task velocity is corrected by the path error:

.. math::

    \\dot q = J^+ u + (I - J^+ J) z, \\quad u = \\dot x_d + K (x_d - x(q)), \\qquad
    \\ddot q = \\dot J^+ u + J^+ \\dot u - (\\dot J^+ J + J^+ \\dot J) z + (I - J^+ J)\\dot z,

where :math:`\\dot J^+ = \\dot J^T W^{-1} - J^T W^{-1}(\\dot J J^T + J \\dot J^T) W^{-1}`,
:math:`W = J J^T + \\lambda^2 I`; on the path (:math:`x = x_d`, λ = 0) this is (14) plus the
null-space part of :math:`\\dot J^+ \\dot x`, so that :math:`\\ddot q` is the exact derivative of
:math:`\\dot q`. Jacobians and their time variation are Pinocchio's (``getFrameJacobian``,
``getFrameJacobianTimeVariation``) in ``LOCAL_WORLD_ALIGNED``, whose rows are
:math:`[\\dot p, \\omega]`.

Singularities: the smallest singular value :math:`\\sigma_{min}` of :math:`J` is tracked along
the path. Without damping, :math:`\\sigma_{min}` below ``singular_threshold`` raises
:class:`~pinext.exceptions.SingularConfiguration` with the time. With ``damping=λ_max`` the
damping grows only near the singularity, :math:`\\lambda^2 = \\lambda_{max}^2 (1 -
(\\sigma_{min}/\\varepsilon)^2)` for :math:`\\sigma_{min} < \\varepsilon` (Chiaverini's
singular-value-based damping): the motion stays finite, leaves the path there, and the
deviation is reported. There λ depends on q; :math:`\\dot\\lambda` is neglected in
:math:`\\ddot q` (exact wherever λ = 0).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import pinocchio as pin
from scipy.integrate import solve_ivp

from ..exceptions import IntegrationError, InvalidParameter, NameNotFound, SingularConfiguration
from ..validation import callable_of, describe, real, vector

__all__ = ["JointMotion", "jacobian_control"]


class JointMotion(NamedTuple):
    """Joint motion computed from an end-effector motion; arrays over the N sample times."""

    t: np.ndarray
    """Shape (N,). Times [s]."""
    q: np.ndarray
    """Shape (N, nq). Joint positions [rad or m]."""
    qd: np.ndarray
    """Shape (N, nv). Joint velocities."""
    qdd: np.ndarray
    """Shape (N, nv). Joint accelerations."""
    min_singular_value: np.ndarray
    """Shape (N,). Smallest singular value of the task Jacobian."""
    deviation: np.ndarray
    """Shape (N,). Norm of the path error x_d − x(q) [m, or m and rad for a pose]."""
    damping: np.ndarray
    """Shape (N,). Damping λ used (0 where the pseudo-inverse is exact)."""

    def max_deviation(self) -> float:
        """Largest path error along the motion."""
        return float(self.deviation.max())


def _robot_model(system_or_robot: Any) -> pin.Model:
    robot = getattr(system_or_robot, "robot", system_or_robot)
    model = getattr(robot, "model", robot)
    if not isinstance(model, pin.Model):
        raise InvalidParameter("expected a System, a Robot or a pinocchio.Model")
    return model


class _Task:
    """Evaluations of the task for one configuration."""

    def __init__(
        self,
        model: pin.Model,
        frame: str,
        path: Callable,
        rows: np.ndarray,
        pose: bool,
        gain: float,
        damping: float,
        threshold: float,
        nullspace: Callable | None,
    ) -> None:
        self.model, self.data = model, model.createData()
        if not model.existFrame(frame):
            raise NameNotFound("frame", frame, [f.name for f in model.frames])
        self.name = frame
        self.fid = model.getFrameId(frame)
        self.path, self.rows, self.pose = path, rows, pose
        self.gain, self.damping, self.threshold = gain, damping, threshold
        self.nullspace = nullspace

    def target(self, t: float) -> tuple[Any, np.ndarray, np.ndarray]:
        """``path(t)``, checked: a triple (x, ẋ, ẍ) of finite values of the task's size."""
        value = self.path(t)
        if not isinstance(value, (tuple, list)) or len(value) != 3:
            raise InvalidParameter(
                f"path(t) must return a triple (x, xd, xdd), got {describe(value)} at t = {t:.9g} s"
            )
        x, xd, xdd = value
        size = 6 if self.pose else self.rows.size
        if self.pose:
            if not isinstance(x, pin.SE3) or not np.all(np.isfinite(x.homogeneous)):
                raise InvalidParameter(
                    f"path(t)[0] must be a finite pin.SE3 (a pose task) at t = {t:.9g} s, got "
                    f"{describe(x)}"
                )
        else:
            x = vector(f"path({t:.9g}) x", x, size, what="the task rows [m]")
        xd = vector(f"path({t:.9g}) xd", xd, size, what="the task rows' rates [m/s, rad/s]")
        xdd = vector(
            f"path({t:.9g}) xdd", xdd, size, what="the task rows' accelerations [m/s^2, rad/s^2]"
        )
        return x, xd, xdd

    def error(self, t: float, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(x_d − x(q), ẋ_d, ẍ_d) in the task rows."""
        x, xd, xdd = self.target(t)
        pin.framesForwardKinematics(self.model, self.data, q)
        placement = self.data.oMf[self.fid]
        if self.pose:
            rotation = x.rotation @ placement.rotation.T
            e = np.concatenate([x.translation - placement.translation, pin.log3(rotation)])
        else:
            e = np.asarray(x, dtype=float) - placement.translation[self.rows]
        return e, np.asarray(xd, dtype=float), np.asarray(xdd, dtype=float)

    def jacobian(self, q: np.ndarray) -> np.ndarray:
        jac = pin.computeFrameJacobian(self.model, self.data, q, self.fid, pin.LOCAL_WORLD_ALIGNED)
        return jac[self.rows]

    def inverse(
        self, jac: np.ndarray, t: float | None = None
    ) -> tuple[np.ndarray, np.ndarray, float, float]:
        """(J⁺, W⁻¹, σ_min, λ); with a time ``t`` and no damping, a singular Jacobian raises
        :class:`SingularConfiguration` (before W = J Jᵀ is inverted)."""
        sigma = np.linalg.svd(jac, compute_uv=False)
        smallest = float(sigma[-1]) if sigma.size == jac.shape[0] else 0.0
        if t is not None and self.damping == 0 and smallest < self.threshold:
            raise SingularConfiguration(t, smallest, self.threshold, self.name)
        lam = 0.0
        if smallest < self.threshold and self.damping > 0:
            lam = self.damping * np.sqrt(1.0 - (smallest / self.threshold) ** 2)
        w_inv = np.linalg.inv(jac @ jac.T + lam**2 * np.eye(jac.shape[0]))
        return jac.T @ w_inv, w_inv, smallest, lam

    def velocity(self, t: float, q: np.ndarray, check: bool = True):
        e, xd, xdd = self.error(t, q)
        jac = self.jacobian(q)
        pinv, w_inv, smallest, lam = self.inverse(jac, t if check else None)
        u = xd + self.gain * e
        z = np.zeros(self.model.nv) if self.nullspace is None else self.nullspace(q)
        qd = pinv @ u + z - pinv @ (jac @ z)
        return qd, (e, xd, xdd, jac, pinv, w_inv, smallest, lam, u, z)

    def acceleration(self, t: float, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple]:
        qd, parts = self.velocity(t, q, check=False)
        e, xd, xdd, jac, pinv, w_inv, smallest, lam, u, z = parts
        pin.computeJointJacobiansTimeVariation(self.model, self.data, q, qd)
        jdot = pin.getFrameJacobianTimeVariation(
            self.model, self.data, self.fid, pin.LOCAL_WORLD_ALIGNED
        )[self.rows]
        pinv_dot = jdot.T @ w_inv - jac.T @ w_inv @ (jdot @ jac.T + jac @ jdot.T) @ w_inv
        u_dot = xdd + self.gain * (xd - jac @ qd)
        qdd = pinv_dot @ u + pinv @ u_dot
        if self.nullspace is not None:
            h = 1e-6
            z_dot = (self.nullspace(q + h * qd) - self.nullspace(q - h * qd)) / (2 * h)
            qdd += -(pinv_dot @ jac + pinv @ jdot) @ z + z_dot - pinv @ (jac @ z_dot)
        return qd, qdd, (np.linalg.norm(e), smallest, lam)


def jacobian_control(
    system_or_robot: Any,
    frame: str,
    path: Callable[[float], tuple[Any, np.ndarray, np.ndarray]],
    q0: np.ndarray,
    *,
    t: np.ndarray,
    rows: Sequence[int] | None = None,
    gain: float = 100.0,
    damping: float | None = None,
    singular_threshold: float = 1e-3,
    nullspace: Callable[[np.ndarray], np.ndarray] | None = None,
    rtol: float = 1e-11,
    atol: float = 1e-12,
) -> JointMotion:
    """Joint control functions from an end-effector motion (Negrean et al. 2009, (12)–(16)).

    See the module docstring for the equations (pseudo-inverse, null space, closed-loop
    correction, singularity handling).

    Args:
        system_or_robot: A :class:`pinext.System`, :class:`pinext.Robot` or ``pin.Model`` with
            nq == nv (revolute and prismatic joints).
        frame: The end-effector frame name.
        path: ``t -> (x, ẋ, ẍ)``. Position task: ``x`` the frame origin's world coordinates in
            ``rows`` (a subset of 0, 1, 2; default all three) [m], ``ẋ``, ``ẍ`` their
            derivatives. Pose task: ``x`` a ``pin.SE3``, ``ẋ = [ṗ, ω]`` and
            ``ẍ = [p̈, ω̇]`` (shape (6,), world axes at the frame origin).
        q0: Start configuration, on the path at ``t[0]`` (or close: the error decays as
            e^{-gain t}).
        t: Shape (N,), increasing output times [s].
        rows: Position rows of the task, e.g. ``(0, 1)`` for a planar arm.
        gain: Closed-loop gain K [1/s] on the path error.
        damping: λ_max of the damped least squares near singularities; None (default) raises
            :class:`~pinext.exceptions.SingularConfiguration` instead.
        singular_threshold: ε, the smallest singular value accepted (undamped) or where the
            damping starts [m/rad].
        nullspace: ``q -> z`` (shape (nv,)), a joint velocity projected on the null space of
            the task (redundant robots), e.g. a gradient toward a preferred posture.
        rtol: Relative tolerance of the integrator (DOP853).
        atol: Absolute tolerance of the integrator.

    Returns:
        :class:`JointMotion`.

    Raises:
        SingularConfiguration: Without damping, σ_min < ``singular_threshold`` along the path.
        InvalidParameter: Bad rows, shapes or model.
        IntegrationError: The integrator failed.
    """
    model = _robot_model(system_or_robot)
    if model.nq != model.nv:
        raise InvalidParameter(
            "jacobian_control needs nq == nv (revolute and prismatic joints); "
            f"the model has nq = {model.nq}, nv = {model.nv}"
        )
    t = vector("t", t, what="the output times [s]")
    if t.size < 2 or np.any(np.diff(t) <= 0):
        raise InvalidParameter("t must be a strictly increasing 1-D array of >= 2 times")
    q0 = vector("q0", q0, model.nq, what="the start configuration")
    callable_of("path", path, "t -> (x, xd, xdd)")
    start = path(float(t[0]))
    if not isinstance(start, (tuple, list)) or len(start) != 3:
        raise InvalidParameter(
            f"path(t) must return a triple (x, xd, xdd), got {describe(start)} at t = {t[0]:g} s"
        )
    x_start = start[0]
    pose = isinstance(x_start, pin.SE3)
    if pose:
        index = np.arange(6)
    else:
        index = np.arange(3) if rows is None else np.asarray(rows, dtype=int).reshape(-1)
        if (
            not index.size
            or not set(index.tolist()) <= {0, 1, 2}
            or len(set(index.tolist())) != index.size
        ):
            raise InvalidParameter(
                f"rows must be distinct position rows among 0, 1, 2 (x, y, z), got {rows!r}; "
                "give x as a pin.SE3 for a pose task"
            )
        if np.asarray(x_start).shape != (index.size,):
            raise InvalidParameter(
                f"path(t)[0] has shape {np.asarray(x_start).shape}, expected ({index.size},)"
            )
        for name, value in zip(("x", "xd", "xdd"), start, strict=True):
            vector(f"path(t[0]) {name}", value, index.size, what="the task rows [m, m/s, m/s^2]")
    singular_threshold = real(
        "singular_threshold", singular_threshold, unit="[m/rad]", low=0.0, strict=True
    )
    lam = real("damping", damping, unit="[m/rad]", low=0.0, none=True) or 0.0
    # a negative gain makes the path error grow as e^{|K| t} instead of decaying
    gain = real("gain", gain, unit="[1/s] (the path error decays as e^{-gain t})", low=0.0)
    real("rtol", rtol, unit="[-]", low=0.0, high=0.1, strict=True)
    real("atol", atol, low=0.0, strict=True)
    callable_of("nullspace", nullspace, "q -> z (nv,) [rad/s or m/s]", none=True)
    task = _Task(model, frame, path, index, pose, gain, lam, singular_threshold, nullspace)

    def rhs(time: float, q: np.ndarray) -> np.ndarray:
        qd = task.velocity(time, q)[0] if np.all(np.isfinite(q)) else q
        if not np.all(np.isfinite(qd)):
            raise IntegrationError(
                f"jacobian_control: non-finite joint velocity of frame '{frame}' (gain = "
                f"{gain:g} 1/s, damping = {lam:g})",
                time,
                q,
            )
        return qd

    solution = solve_ivp(rhs, (t[0], t[-1]), q0, method="DOP853", t_eval=t, rtol=rtol, atol=atol)
    if not solution.success:
        raise IntegrationError(
            f"jacobian_control: {solution.message}", solution.t[-1], solution.y[:, -1]
        )
    q = solution.y.T
    qd = np.zeros((t.size, model.nv))
    qdd = np.zeros((t.size, model.nv))
    info = np.zeros((t.size, 3))
    for k, (time, qk) in enumerate(zip(t, q, strict=True)):
        qd[k], qdd[k], info[k] = task.acceleration(float(time), qk)
    _warn_off_path(info[:, 0], t, frame)
    return JointMotion(t, q, qd, qdd, info[:, 1], info[:, 0], info[:, 2])


#: Task error [m or rad] at the end of a path above which :func:`jacobian_control` warns.
OFF_PATH = 1e-3


def _warn_off_path(error: np.ndarray, t: np.ndarray, frame: str) -> None:
    """Warn when the damped solution ends off the path: the damping held the arm at a
    singular configuration (e.g. stretched, with the path asking to move along the
    direction the arm cannot)."""
    if error[-1] > OFF_PATH and error[-1] >= 0.5 * error.max():
        warnings.warn(
            f"jacobian_control: frame '{frame}' stays {error[-1]:.3g} off the path at t = "
            f"{t[-1]:g} s (largest error {error.max():.3g}): the damped least squares hold it "
            "at a singular configuration; start from a pose away from the singularity, or "
            "change the path",
            RuntimeWarning,
            stacklevel=3,
        )
