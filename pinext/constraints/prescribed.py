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
#: The first evaluation of a law is compared with one this much later [s] for a jump.
JUMP_WINDOW = 1e-3
#: A change of position larger than this factor times the law's speed times the time between
#: the evaluations, plus :data:`JUMP_TOLERANCE` [rad or m], is a jump.
JUMP_FACTOR = 10.0
JUMP_TOLERANCE = 1e-6
#: Two evaluations this close in time [s] (relative to t beyond 1 s) that still differ by more
#: than the law's speed allows locate a jump.
JUMP_RESOLUTION = 1e-10
#: Relative mismatch accepted between a law's rates and the forward differences of its
#: values at its first evaluation (:func:`_check_rates`), and an absolute floor [rad/s or m/s,
#: rad/s^2 or m/s^2].
RATE_TOLERANCE = 1e-3
RATE_FLOOR = 1e-6


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
        position_law: The law of the joint position [rad or m]: a callable ``t -> q`` that
            returns one number (then ``velocity`` and ``acceleration`` may be given, else
            central differences with step :data:`DIFFERENCE_STEP` are used), a callable
            ``t -> (q, qd, qdd)`` that returns a *tuple* (a NamedTuple too; e.g. a
            :class:`pinext.planning` spline), or a scipy spline (``CubicSpline``, ``PPoly``,
            ``BSpline``: derivatives from ``.derivative()``). A list or an array of several
            numbers is refused as ambiguous (one joint's triple, or several joints?). At the
            first evaluation the rates must be those of the position (qd = dq/dt,
            qdd = dqd/dt, to :data:`RATE_TOLERANCE`), and the position must not jump.
        velocity: Optional ``t -> qd`` [rad/s or m/s].
        acceleration: Optional ``t -> qdd`` [rad/s^2 or m/s^2].
        name: Component name (default ``"prescribed:<joint>"``).

    Outputs (``Trajectory.outputs["<name>.<signal>"]``): ``torque`` [N.m or N] (the driving
    effort), ``position``, ``velocity``, ``acceleration`` of the law.
    """

    stepped_kind = "prescribed"

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

    def output_info(self) -> dict[str, tuple[str, str]]:
        """Units and descriptions of :meth:`outputs`."""
        j = self.joint
        return self.signals(
            {
                "torque": ("N.m or N", f"driving effort on '{j}' that realises the law"),
                "position": ("rad or m", f"position of '{j}' given by the law"),
                "velocity": ("rad/s or m/s", f"velocity of '{j}' given by the law"),
                "acceleration": ("rad/s^2 or m/s^2", f"acceleration of '{j}' given by the law"),
            }
        )

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
        if isinstance(value, (list, np.ndarray)) and np.size(value) != 1:
            raise InvalidParameter(
                f"the position law returned {describe(value)}: a list or an array of several "
                "numbers is ambiguous (one joint's (q, qd, qdd), or positions of several "
                "joints?); it must return q [rad or m] (one number) or a tuple (q, qd, qdd)"
            )
        if isinstance(value, tuple):
            if len(value) != 3:
                raise InvalidParameter(
                    f"the position law returned {describe(value)}; it must return q [rad or m] "
                    "(one number) or a tuple (q, qd, qdd)"
                )
            q, qd, qdd = (
                _number("the position law's " + w, c)
                for w, c in zip(("q", "qd", "qdd"), value, strict=True)
            )
            law.differences = False  # type: ignore[attr-defined]  # the law gives its rates
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

    law.differences = velocity is None  # type: ignore[attr-defined]
    return law


def _checked_law(name: str, law: Any):
    """``law`` with each value checked: three finite numbers (q, qd, qdd), and a position
    that does not jump between two evaluations (:func:`_find_jump`); the first evaluation
    also checks the law around it (a step at the start of a run)."""

    last: list[tuple[float, float, float]] = []

    def evaluate(t: float) -> tuple[float, float, float]:
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
        return q, qd, qdd

    def checked(t: float) -> tuple[float, float, float]:
        q, qd, qdd = evaluate(t)
        if last:
            differences = getattr(law, "differences", False)
            _check_continuous(name, evaluate, last[0], (t, q, qd), differences)
            last[0] = (t, q, qd)
        else:
            _check_start(name, evaluate, (t, q, qd), getattr(law, "differences", False))
            last.append((t, q, qd))
        return q, qd, qdd

    return checked


def _number(name: str, value: Any) -> float:
    """One number from a law: a float, or an array with one entry (None is not one: numpy
    would read it as NaN)."""
    if value is None or isinstance(value, (str, bytes)) or np.size(value) != 1:
        raise InvalidParameter(
            f"{name} must be one number [rad or m] or a triple (q, qd, qdd) of numbers, got "
            f"{describe(value)}"
        )
    return float(np.asarray(value, dtype=float).reshape(-1)[0])


def _consistent(a: tuple[float, float, float], b: tuple[float, float, float]) -> bool:
    """Whether the positions of two evaluations ``(t, q, qd)`` differ by no more than the
    law's speed allows: :data:`JUMP_FACTOR` times the larger of the two speeds times the time
    between them, plus :data:`JUMP_TOLERANCE`."""
    dt = abs(b[0] - a[0])
    return abs(b[1] - a[1]) <= JUMP_FACTOR * max(abs(a[2]), abs(b[2])) * dt + JUMP_TOLERANCE


def _find_jump(
    evaluate: Callable[[float], tuple[float, float, float]],
    a: tuple[float, float, float],
    b: tuple[float, float, float],
) -> tuple[tuple[float, float, float], tuple[float, float, float]] | None:
    """Two evaluations ``(t, q, qd)`` of a law, less than :data:`JUMP_RESOLUTION` apart, whose
    positions differ by more than its speed allows (:func:`_consistent`): a jump, searched
    between ``a`` and ``b`` by bisection, keeping the half over which the position changes
    most. A continuous law's change shrinks with the interval (None once it is below
    :data:`JUMP_TOLERANCE`); a jump's does not, whatever speed central differences give it."""
    if a[0] > b[0]:
        a, b = b, a
    while b[0] - a[0] > JUMP_RESOLUTION * max(1.0, abs(b[0])):
        if abs(b[1] - a[1]) <= JUMP_TOLERANCE:
            return None
        t = 0.5 * (a[0] + b[0])
        middle = (t, *evaluate(t)[:2])
        a, b = (a, middle) if abs(middle[1] - a[1]) >= abs(b[1] - middle[1]) else (middle, b)
    return None if _consistent(a, b) else (a, b)


def _refuse_jump(name: str, found: tuple, differences: bool) -> None:
    (t0, q0, qd0), (t1, q1, qd1) = found
    how = (
        "central differences turn the step into a spike of velocity and acceleration"
        if differences
        else f"the law's velocity there is {max(abs(qd0), abs(qd1)):.4g} [rad/s or m/s]"
    )
    raise InvalidParameter(
        f"{name}: the position law jumps by {q1 - q0:.4g} [rad or m] at t = {t1:.9g} s "
        f"while {how}; a prescribed motion must be continuous (a step teleports the joint: "
        "the loops and contacts cannot follow, and no torque does it): blend the step over "
        "a short time (e.g. pinext.planning.rest_to_rest), or start the run after it"
    )


def _check_continuous(
    name: str,
    evaluate: Callable[[float], tuple[float, float, float]],
    before: tuple[float, float, float],
    now: tuple[float, float, float],
    differences: bool = False,
) -> None:
    """Refuse a law whose position jumps between two evaluations ``(t, q, qd)``: the joint
    would be teleported with no torque. Evaluations that differ by more than the law's own
    speed allows (:func:`_consistent`) are searched for the jump (:func:`_find_jump`)."""
    if before[0] != now[0] and not _consistent(before, now):
        found = _find_jump(evaluate, before, now)
        if found is not None:
            _refuse_jump(name, found, differences)


def _check_start(
    name: str,
    evaluate: Callable[[float], tuple[float, float, float]],
    start: tuple[float, float, float],
    differences: bool,
) -> None:
    """The first evaluation of a law: no jump within :data:`JUMP_WINDOW` after it, nor, for
    a law whose rates are central differences, within :data:`DIFFERENCE_STEP` before it
    (they would carry the step into the start velocity and acceleration)."""
    t = start[0]
    _check_rates(name, evaluate, t)
    found = _find_jump(evaluate, start, (t + JUMP_WINDOW, *evaluate(t + JUMP_WINDOW)[:2]))
    if found is None and differences:
        try:
            before = (t - DIFFERENCE_STEP, *evaluate(t - DIFFERENCE_STEP)[:2])
        except InvalidParameter:  # the law is not defined before the start
            return
        found = _find_jump(evaluate, before, start)
    if found is not None:
        _refuse_jump(name, found, differences)


def _check_rates(
    name: str, evaluate: Callable[[float], tuple[float, float, float]], t: float
) -> None:
    """The law's (q, qd, qdd) at its first evaluation t against each other: qd must be the
    rate of q, and qdd the rate of qd, to :data:`RATE_TOLERANCE` of their size (forward
    differences over :data:`DIFFERENCE_STEP`, whose error the bound allows for); a law that
    holds q while it gives a velocity (``(0.3, 7, -2)``) is refused."""
    h = DIFFERENCE_STEP
    q0, qd0, qdd0 = evaluate(t)
    q1, qd1, qdd1 = evaluate(t + h)
    checks = (
        ("velocity qd", "position q", "[rad/s or m/s]", qd0, (q1 - q0) / h, abs(qd1 - qd0)),
        (
            "acceleration qdd",
            "velocity qd",
            "[rad/s^2 or m/s^2]",
            qdd0,
            (qd1 - qd0) / h,
            abs(qdd1 - qdd0),
        ),
    )
    for what, of, unit, given, rate, change in checks:
        bound = RATE_TOLERANCE * (abs(given) + abs(rate)) + change + RATE_FLOOR
        if abs(given - rate) > bound:
            raise InvalidParameter(
                f"{name}: the law's {what} = {given:.6g} {unit} at t = {t:g} s is not the rate "
                f"of its {of}, {rate:.6g} {unit} (forward difference over {h:g} s): a law "
                "returns q [rad or m] alone, or the tuple (q, qd, qdd) with qd = dq/dt and "
                "qdd = dqd/dt"
            )
