"""Prescribed motion: a joint driven kinematically, with the driving torque as an output."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..exceptions import InvalidParameter, NameNotFound
from ..simulation.component import Component, ConstraintRows, RowKind, Step

if TYPE_CHECKING:
    from ..simulation.system import System

#: Step [s] of the central differences used when a law gives positions only.
DIFFERENCE_STEP = 1e-4


class Prescribed(Component):
    """A joint whose position is a given function of time: a rheonomic constraint row.

    The joint coordinate is not free: in every evaluation the System sets it, and its velocity,
    from the law, and the acceleration step contains the row

    .. math::

        \\ddot q_j = \\ddot q_j^{ref}(t)

    whose reaction is the driving torque (or force) τ_j that realises the motion together with
    everything else in the System (McClamroch (1986): the reaction of a rheonomic constraint;
    Vukobratović & Potkonjak §20.4: the drive torque of a prescribed motion). The torque's
    power ``τ_j q̇_j`` is booked as input work, so the energy audit stays closed.

    Args:
        joint: Name of a one-DOF joint: revolute, prismatic or continuous (Pinocchio's
            unbounded revolute, configuration (cos θ, sin θ): the law gives the angle θ).
        position_law: The law of the joint position [rad or m]: a callable ``t -> q`` (then
            ``velocity`` and ``acceleration`` may be given, else central differences with step
            :data:`DIFFERENCE_STEP` are used), a callable ``t -> (q, qd, qdd)`` (e.g. a
            :class:`pinext.planning` spline), or a scipy spline (``CubicSpline``, ``PPoly``,
            ``BSpline``: derivatives from ``.derivative()``).
        velocity: Optional ``t -> qd`` [rad/s or m/s].
        acceleration: Optional ``t -> qdd`` [rad/s^2 or m/s^2].
        name: Component name (default ``"prescribed:<joint>"``).

    Outputs (``Trajectory.outputs["<name>.<signal>"]``): ``torque`` [N.m or N] (the driving
    effort), ``position``, ``velocity``, ``acceleration`` of the law.
    """

    def __init__(
        self,
        joint: str,
        position_law: Any,
        velocity: Callable[[float], float] | None = None,
        acceleration: Callable[[float], float] | None = None,
        *,
        name: str | None = None,
    ) -> None:
        super().__init__()
        if not callable(position_law):
            raise InvalidParameter(
                f"position_law of joint '{joint}' must be callable (t -> q, t -> (q, qd, qdd) "
                f"or a scipy spline), got {type(position_law).__name__}"
            )
        self.joint = joint
        self.name = name or f"prescribed:{joint}"
        self.law = _as_law(position_law, velocity, acceleration)

    def bind(self, system: System) -> None:
        model = system.model
        names = list(model.names)[1:]
        if self.joint not in names:
            raise NameNotFound("joint", self.joint, names)
        jmodel = model.joints[model.getJointId(self.joint)]
        if jmodel.nv != 1 or jmodel.nq not in (1, 2):
            raise InvalidParameter(
                f"joint '{self.joint}' has nq = {jmodel.nq}, nv = {jmodel.nv}; prescribed motion "
                "needs a revolute, continuous or prismatic joint (one DOF)"
            )
        self.iq, self.iv, self.nq = jmodel.idx_q, jmodel.idx_v, model.nq
        self.continuous = jmodel.nq == 2  # unbounded revolute: q = (cos θ, sin θ)
        self.row = np.zeros((1, model.nv))
        self.row[0, self.iv] = 1.0

    def impose(self, t: float, x: np.ndarray) -> None:
        q, qd, _ = self.law(t)
        if self.continuous:
            x[self.iq : self.iq + 2] = np.cos(q), np.sin(q)
        else:
            x[self.iq] = q
        x[self.nq + self.iv] = qd

    def prescribed_joints(self) -> list[str]:
        return [self.joint]

    def is_constrained(self, mode: Any) -> bool:
        return True

    def constraint_rows(self, t, x, q, v, mode, data) -> ConstraintRows:
        return ConstraintRows(self.row, np.array([-self.law(t)[2]]), None, RowKind.BILATERAL)

    def power(self, t, x, q, v, u, mode, step: Step | None) -> tuple[float, float]:
        if step is None:
            return 0.0, 0.0
        return float(step.force(self.name, 1)[0] * v[self.iv]), 0.0

    def outputs(self, t, x, q, v, u, mode, step: Step) -> dict[str, np.ndarray]:
        q_ref, qd_ref, qdd_ref = self.law(t)
        return {
            "torque": np.array([step.force(self.name, 1)[0]]),
            "position": np.array([q_ref]),
            "velocity": np.array([qd_ref]),
            "acceleration": np.array([qdd_ref]),
        }

    def __repr__(self) -> str:
        return f"Prescribed({self.joint!r})"


def _as_law(position: Any, velocity: Any, acceleration: Any):
    """``law(t) -> (q, qd, qdd)`` from the forms :class:`Prescribed` accepts."""
    if hasattr(position, "derivative"):  # scipy splines
        first, second = position.derivative(1), position.derivative(2)

        def spline(t: float) -> tuple[float, float, float]:
            return float(position(t)), float(first(t)), float(second(t))

        return spline
    h = DIFFERENCE_STEP

    def law(t: float) -> tuple[float, float, float]:
        value = position(t)
        if np.ndim(value) and np.size(value) == 3:
            q, qd, qdd = (float(np.asarray(c).reshape(-1)[0]) for c in value)
            return q, qd, qdd
        q = float(value)
        if velocity is not None:
            qd = float(velocity(t))
        else:
            qd = (float(position(t + h)) - float(position(t - h))) / (2 * h)
        if acceleration is not None:
            qdd = float(acceleration(t))
        else:
            qdd = (float(position(t + h)) - 2 * q + float(position(t - h))) / (h * h)
        return q, qd, qdd

    return law
