"""Prescribed motion: a joint driven kinematically, with the driving torque as an output."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..exceptions import InvalidParameter, NameNotFound
from ..simulation.component import Component, ConstraintRows, RowKind, Step
from ..validation import callable_of, describe

if TYPE_CHECKING:
    from ..simulation.system import System

#: Step [s] of the central differences used when a law gives positions only.
DIFFERENCE_STEP = 1e-4
#: Two evaluations of a law closer than this [s] are compared for a jump of the position.
JUMP_WINDOW = 1e-3
#: A change of position larger than this factor times the law's speed times the time between
#: the evaluations, plus :data:`JUMP_TOLERANCE` [rad or m], is a jump.
JUMP_FACTOR = 10.0
JUMP_TOLERANCE = 1e-6


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
        callable_of(f"velocity of joint '{joint}'", velocity, "t -> qd [rad/s or m/s]", none=True)
        callable_of(
            f"acceleration of joint '{joint}'",
            acceleration,
            "t -> qdd [rad/s^2 or m/s^2]",
            none=True,
        )
        self.joint = joint
        self.name = name or f"prescribed:{joint}"
        self.law = _checked_law(self.name, _as_law(position_law, velocity, acceleration))

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
        if isinstance(value, (tuple, list)) or (
            isinstance(value, np.ndarray) and value.ndim and value.shape[0] == 3
        ):
            if len(value) != 3:
                raise InvalidParameter(
                    f"the position law returned {describe(value)}; it must return q [rad or m] "
                    "or a triple (q, qd, qdd)"
                )
            q, qd, qdd = (
                _number("the position law's " + w, c)
                for w, c in zip(("q", "qd", "qdd"), value, strict=True)
            )
            return q, qd, qdd
        q = _number("the position law's value", value)
        if velocity is not None:
            qd = _number("velocity(t)", velocity(t))
        else:
            qd = (_number("q", position(t + h)) - _number("q", position(t - h))) / (2 * h)
        if acceleration is not None:
            qdd = _number("acceleration(t)", acceleration(t))
        else:
            qdd = (_number("q", position(t + h)) - 2 * q + _number("q", position(t - h))) / (h * h)
        return q, qd, qdd

    return law


def _checked_law(name: str, law: Any):
    """``law`` with each value checked: three finite numbers (q, qd, qdd)."""

    last: list[tuple[float, float, float]] = []

    def checked(t: float) -> tuple[float, float, float]:
        try:
            values = law(t)
        except InvalidParameter as err:
            raise InvalidParameter(f"{name}: {err} (at t = {t:g} s)") from None
        except (TypeError, ValueError) as err:
            raise InvalidParameter(
                f"{name}: the law gave a value that is not a number at t = {t:g} s ({err}); "
                "it must return q [rad or m] or (q, qd, qdd)"
            ) from None
        q, qd, qdd = values
        if not (np.isfinite(q) and np.isfinite(qd) and np.isfinite(qdd)):
            raise InvalidParameter(
                f"{name}: the law gave non-finite values (q, qd, qdd) = ({q}, {qd}, {qdd}) at "
                f"t = {t:g} s"
            )
        if last:
            _check_continuous(name, last[0], (t, q, qd))
            last[0] = (t, q, qd)
        else:
            last.append((t, q, qd))
        return q, qd, qdd

    return checked


def _number(name: str, value: Any) -> float:
    """One number from a law: a float, or an array with one entry."""
    if isinstance(value, (str, bytes)) or np.size(value) != 1:
        raise InvalidParameter(
            f"{name} must be one number [rad or m] or a triple (q, qd, qdd) of numbers, got "
            f"{describe(value)}"
        )
    return float(np.asarray(value, dtype=float).reshape(-1)[0])


def _check_continuous(
    name: str, before: tuple[float, float, float], now: tuple[float, float, float]
) -> None:
    """Refuse a law whose position jumps: the joint would be teleported with no torque.

    Two evaluations closer than :data:`JUMP_WINDOW` in time must differ by no more than the
    law's own speed allows (the smaller of the two speeds, times :data:`JUMP_FACTOR`, plus
    :data:`JUMP_TOLERANCE`)."""
    (t0, q0, qd0), (t, q, qd) = before, now
    dt = abs(t - t0)
    if 0.0 < dt < JUMP_WINDOW:
        allowed = JUMP_FACTOR * min(abs(qd), abs(qd0)) * dt + JUMP_TOLERANCE
        if abs(q - q0) > allowed:
            raise InvalidParameter(
                f"{name}: the position law jumps by {q - q0:.4g} between t = {t0:.9g} s and "
                f"t = {t:.9g} s while its velocity is {qd0:.4g}; a prescribed motion must be "
                "continuous (a step teleports the joint and does no work): blend the step "
                "over a short time (e.g. pinext.planning.rest_to_rest)"
            )
