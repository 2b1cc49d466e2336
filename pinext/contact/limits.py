"""Joint limits: the URDF's position limits as unilateral rows with impacts (McClamroch (1986)
§6 (40)–(42); Vukobratović & Potkonjak (20.90)–(20.91)).

A limited joint (one position coordinate, one velocity: revolute, prismatic) with
``lower ≤ q ≤ upper`` is, per side, a unilateral constraint ``φ(q) ≥ 0`` with
``φ = q − lower`` or ``φ = upper − q``:

* **free** while the joint is inside its range; the event ``limit:<joint>`` is the downward
  zero crossing of φ, or after the joint left the limit on its surface (bounce, separation,
  lift-off) of :func:`~pinext.simulation.events.leaving_distance` (the separation test: no
  event at the start of a flight, and an impact only with an approaching joint);
* the event's map is the impact on the unit row ``±e_i`` (restitution e, 0 by default:
  the plastic impact (20.90)–(20.91)), solved together with every other engaged row
  (:func:`pinext.contact.impulse.impact_impulse`); the joint then rests at the limit, or
  bounces when ``e |q̇⁻|`` exceeds ``rest_velocity``;
* **at the limit** the row ``±a_i + γ = 0`` (Baumgarte stabilised) joins the System's
  acceleration step with a reaction that may only push; the dynamic event
  ``limit-off:<joint>`` is the reaction crossing zero (it would pull, by more than
  :data:`LIFT_OFF` of the joint's effort limit: not on its rounding): free again.

Joints without limits stay free: continuous joints (two position coordinates), free
flyers, and the "no limit" encodings (±inf, magnitudes above :data:`NO_LIMIT`, lower ≥ upper).
The URDF's velocity limits are watched: after a run, one :class:`VelocityLimitWarning` per
joint that exceeded its limit names the joint and the first time it did (:meth:`report`).
With ``saturate_efforts`` the joint-torque inputs are clipped to the effort limits
(:class:`EffortSaturation`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .._stack import user_stacklevel
from ..exceptions import ConstraintError, InvalidParameter, NameNotFound
from ..simulation.component import (
    Component,
    ConstraintRows,
    Distances,
    Event,
    JointRows,
    Leaving,
    ModeState,
    Reaction,
    RowKind,
    Step,
    Trial,
)
from .impulse import contact_forces, solve_impact
from .unilateral import REST_VELOCITY, rebounds

if TYPE_CHECKING:
    import pinocchio as pin

    from ..simulation.system import System

#: Limit magnitudes at or above this [rad or m] mean "no limit" (URDF writers use 1e10, 1e308).
NO_LIMIT = 1e9
#: Position tolerance [rad or m] for a joint to count as at its limit at the start of a run.
LIMIT_TOLERANCE = 1e-9
#: Velocity tolerance [rad/s or m/s] for a joint at rest on its limit at the start of a run.
VELOCITY_TOLERANCE = 1e-9
#: A stop lets go once its reaction pulls by this fraction of the joint's effort limit (of
#: 1 N.m or N without one) [-]: a reaction that starts at zero (the Panda's fingers on their
#: stops at pin.neutral, gravity across their axis) carries only its rounding's sign, which
#: decided alone, at the end of whichever step saw it (2.9e-6 s on one path, 2.8e-4 s on the
#: other); the rounding of a reaction is some 1e-16 of the efforts it balances.
LIFT_OFF = 1e-12


class JointLimitWarning(UserWarning):
    """A joint starts outside its position range (its limit engages once it is back inside)."""


class VelocityLimitWarning(UserWarning):
    """A joint exceeded its velocity limit."""


class LimitState(ModeState):
    """The state of one limited joint in a phase."""

    FREE = "free"
    """Inside the range (or moving away from a limit)."""
    LOWER = "lower"
    """Resting on its lower limit: the row ``a_i + γ = 0`` pushes upwards."""
    UPPER = "upper"
    """Resting on its upper limit: the row ``-a_i + γ = 0`` pushes downwards."""


FREE, LOWER, UPPER = LimitState.FREE, LimitState.LOWER, LimitState.UPPER


@dataclass(frozen=True)
class LimitModes:
    """The mode of a :class:`JointLimits` component.

    Attributes:
        states: One :class:`LimitState` per limited joint.
        names: The joints' names (for ``str``; not compared).
        leaving: (index, side, t0 [s], d0 [rad or m]) of the free joints that left their
            limit on its surface (bounce, separation, lift-off): their impact event is
            :func:`~pinext.simulation.events.leaving_distance` (the separation test).
        outside: (index, side) of the joints beyond that side of their range since the start
            of the run: that side is excused (no impact, no row) until the joint is back
            inside (the event ``limit-inside:<joint>``); their other side and every other
            joint's limits act as usual.
    """

    states: tuple[LimitState, ...]
    names: tuple[str, ...] = field(default=(), compare=False)
    leaving: frozenset[tuple[int, LimitState, float, float]] = frozenset()
    outside: frozenset[tuple[int, LimitState]] = frozenset()

    def replace(self, i: int, state: LimitState) -> LimitModes:
        """A copy with joint i in ``state`` (no longer leaving)."""
        states = list(self.states)
        states[i] = state
        leaving = frozenset(item for item in self.leaving if item[0] != i)
        return replace(self, states=tuple(states), leaving=leaving)

    def leave(self, i: int, side: LimitState, t0: float, d0: float) -> LimitModes:
        """A copy with joint i free and leaving its limit ``side`` at time t0 [s] from the
        distance d0 [rad or m] (a bounce, a separation, a lift-off: that side's next impact
        event carries the separation test, :func:`~pinext.simulation.events.leaving_distance`)."""
        free = self.replace(i, LimitState.FREE)
        return replace(free, leaving=free.leaving | {(i, side, float(t0), min(float(d0), 0.0))})

    def inside(self, i: int, side: LimitState, t0: float, d0: float) -> LimitModes:
        """A copy with joint i back inside its range through ``side`` at t0 [s] (no longer
        excused; that side's next impact event carries the separation test)."""
        mode = replace(self, outside=self.outside - {(i, side)})
        return replace(mode, leaving=mode.leaving | {(i, side, float(t0), min(float(d0), 0.0))})

    @property
    def structure(self) -> tuple[LimitState, ...]:
        """The states alone: the rows (``leaving`` and ``outside`` are read by the events)."""
        return self.states

    def __getitem__(self, i: int) -> LimitState:
        return self.states[i]

    def __str__(self) -> str:
        held = [f"{self.names[i]}@{s.value}" for i, s in enumerate(self.states) if s is not FREE]
        return ("limit:" + ",".join(held)) if held else ""


@dataclass(frozen=True)
class JointLimit:
    """The position, velocity and effort limits of one joint (one DOF).

    Attributes:
        joint: Joint name.
        iq: Index of its position coordinate in q.
        iv: Index of its velocity in v.
        lower: Lower position limit [rad or m] (-inf: none).
        upper: Upper position limit [rad or m] (+inf: none).
        velocity: Velocity limit [rad/s or m/s] (inf: none).
        effort: Effort limit [N.m or N] (inf: none).
        restitution: Newton's coefficient e ∈ [0, 1] of an impact on the limit.
    """

    joint: str
    iq: int
    iv: int
    lower: float
    upper: float
    velocity: float
    effort: float
    restitution: float = 0.0

    @property
    def limited(self) -> bool:
        """Whether the position is limited on at least one side."""
        return bool(np.isfinite(self.lower) or np.isfinite(self.upper))


def _bound(value: float) -> float:
    """An upper URDF limit, with the "no limit" encodings (inf, NaN, huge) as +inf."""
    value = float(value)
    return value if np.isfinite(value) and value < NO_LIMIT else np.inf


def joint_limits(
    model: pin.Model, restitution: float | Mapping[str, float] = 0.0
) -> list[JointLimit]:
    """The limits of every one-DOF joint of a model (continuous joints and free flyers have
    none).

    Args:
        model: Pinocchio model (its ``lowerPositionLimit``, ``upperPositionLimit``,
            ``velocityLimit``, ``effortLimit``).
        restitution: e for every joint, or joint name -> e (others 0).

    Raises:
        InvalidParameter: e outside [0, 1]. NameNotFound: a restitution names no joint.
    """
    per_joint = restitution if isinstance(restitution, Mapping) else {}
    common = 0.0 if isinstance(restitution, Mapping) else float(restitution)
    unknown = set(per_joint) - set(model.names)
    if unknown:
        raise NameNotFound("joint", sorted(unknown)[0], list(model.names[1:]))
    limits = []
    for j in range(1, model.njoints):
        joint = model.joints[j]
        if joint.nq != 1 or joint.nv != 1:
            continue
        name = model.names[j]
        iq, iv = joint.idx_q, joint.idx_v
        lower = -_bound(-model.lowerPositionLimit[iq])
        upper = _bound(model.upperPositionLimit[iq])
        if lower >= upper:  # lower >= upper: URDF's "no limit"
            lower, upper = -np.inf, np.inf
        e = float(per_joint.get(name, 0.0)) if per_joint else common
        if not 0.0 <= e <= 1.0:
            raise InvalidParameter(f"restitution of joint '{name}' must be in [0, 1], got {e}")
        limits.append(
            JointLimit(
                name,
                iq,
                iv,
                lower,
                upper,
                _bound(model.velocityLimit[iv]),
                _bound(model.effortLimit[iv]),
                e,
            )
        )
    return limits


class JointLimits(Component):
    """The position limits of a robot's joints as unilateral rows with impact and lift-off.

    Args:
        model: Pinocchio model (the System's).
        restitution: e ∈ [0, 1] for every joint, or joint name -> e (others 0).
        rest_velocity: Rebound velocity [rad/s or m/s] below which a joint rests on its limit
            (the Zeno cut, as :class:`pinext.contact.Contact`).
        stabilization: Baumgarte natural frequency ω [1/s] of the limit rows (None or 0:
            none).
        velocity_limits: Report the first excess of every joint's velocity limit.
        name: Component name.
    """

    stepped_kind = "limits"

    def __init__(
        self,
        model: pin.Model,
        *,
        restitution: float | Mapping[str, float] = 0.0,
        rest_velocity: float = REST_VELOCITY,
        stabilization: float | None = 20.0,
        velocity_limits: bool = True,
        name: str = "joint_limits",
    ) -> None:
        super().__init__()
        self.name = name
        if rest_velocity < 0:
            raise InvalidParameter(f"rest_velocity must be >= 0, got {rest_velocity}")
        self.all_limits = joint_limits(model, restitution)
        self.limits = [lim for lim in self.all_limits if lim.limited]
        self.watched = [
            k
            for k, lim in enumerate(self.all_limits)
            if velocity_limits and np.isfinite(lim.velocity)
        ]
        self.rest_velocity = float(rest_velocity)
        self.omega = float(stabilization or 0.0)
        self.nq = model.nq

    @property
    def joints(self) -> list[str]:
        """The names of the limited joints."""
        return [lim.joint for lim in self.limits]

    # -- geometry of one side ------------------------------------------------------------------
    def _side(self, k: int, state: LimitState, x: np.ndarray) -> tuple[float, float, float]:
        """(sign, distance φ, rate φ̇) of joint k's ``state`` side (φ ≥ 0 inside the range)."""
        lim = self.limits[k]
        q, v = float(x[lim.iq]), float(x[self.nq + lim.iv])
        if state is LOWER:
            return 1.0, q - lim.lower, v
        return -1.0, lim.upper - q, -v

    # -- Component interface -------------------------------------------------------------------
    def bind(self, system: System) -> None:
        self.model = system.model
        self.data = system.model.createData()
        self._nv = system.model.nv
        self.nq = system.model.nq
        # a prescribed joint follows its law: its limits are the law's business
        driven = {j for comp in system.components for j in comp.prescribed_joints()}
        self.limits = [lim for lim in self.limits if lim.joint not in driven]
        self._forms: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._events: dict[tuple, list[Event]] = {}  # by (states, outside), when none leaves
        self._rows: dict[tuple, JointRows] = {}  # by states

    def __getstate__(self) -> dict[str, Any]:
        """Copied and pickled without the caches of events, their forms and the rows (rebuilt
        on demand): a trajectory's private copy of the System is taken at the end of each run."""
        return {**super().__getstate__(), "_forms": {}, "_events": {}, "_rows": {}}

    def start_configuration(self, q: np.ndarray) -> np.ndarray:
        """The default start (``q`` is the neutral pose) moved into the joints' ranges: every
        limited joint outside its range is set on its nearest limit, said once
        (:class:`JointLimitWarning`). A run from an explicit configuration keeps it."""
        q = np.array(q, dtype=float)
        moved = []
        for lim in self.limits:
            value = float(np.clip(q[lim.iq], lim.lower, lim.upper))
            if value != q[lim.iq]:
                moved.append(f"'{lim.joint}' {q[lim.iq]:.6g} -> {value:.6g}")
                q[lim.iq] = value
        if moved:
            warnings.warn(
                "the neutral pose lies outside the joint ranges; the run starts from the nearest "
                f"pose inside them ({', '.join(moved)}); give q0 to start elsewhere",
                JointLimitWarning,
                stacklevel=4,
            )
        return q

    def initial_mode(self, t: float, x: np.ndarray, trial: Trial) -> LimitModes | None:
        states, outside = [], set()
        for k, lim in enumerate(self.limits):
            state = FREE
            for side in (LOWER, UPPER):
                _, distance, rate = self._side(k, side, x)
                if not np.isfinite(distance):
                    continue
                if distance < -LIMIT_TOLERANCE:
                    outside.add((k, side))
                    warnings.warn(
                        f"joint '{lim.joint}' starts at {x[lim.iq]:.6g}, outside its range "
                        f"[{lim.lower:.6g}, {lim.upper:.6g}]; its {side.value} limit engages "
                        "once it is back inside (every other limit acts from the start)",
                        JointLimitWarning,
                        stacklevel=2,
                    )
                elif distance <= LIMIT_TOLERANCE and abs(rate) <= VELOCITY_TOLERANCE:
                    state = side
            states.append(state)
        mode = LimitModes(tuple(states), tuple(self.joints), outside=frozenset(outside))
        return self._compact(self._release(t, x, mode, trial))

    def _free(self) -> LimitModes:
        return LimitModes((FREE,) * len(self.limits), tuple(self.joints))

    def _full(self, mode: LimitModes | None) -> LimitModes:
        """The mode, with None (every joint free: no phase mode) spelled out."""
        return self._free() if mode is None else mode

    def _compact(self, mode: LimitModes) -> LimitModes | None:
        """None when every joint is free and none is leaving a limit (the phase then has no
        mode of this component, as a run that never touches a limit)."""
        if mode.leaving or mode.outside or any(s is not FREE for s in mode.states):
            return mode
        return None

    def linear(self, mode: LimitModes | None) -> bool:  # noqa: D102 - no rows: no effect
        return not self.is_constrained(mode)

    def settle_mode(self, t: float, x: np.ndarray, mode: Any, trial: Trial) -> LimitModes | None:
        mode = self._full(mode)
        for k, state in enumerate(mode.states):  # separating after another row's impact
            if state is not FREE and self._side(k, state, x)[2] > VELOCITY_TOLERANCE:
                mode = self._leave(mode, k, mode[k], t, x)
        return self._compact(self._release(t, x, mode, trial))

    def _engaged(self, x: np.ndarray, mode: LimitModes) -> LimitModes:
        """The mode with every free joint that sits on a limit (within
        :data:`LIMIT_TOLERANCE`) held there: the rows of a simultaneous impact."""
        for k, state in enumerate(mode.states):
            if state is FREE:
                for side in (LOWER, UPPER):
                    if abs(self._side(k, side, x)[1]) <= LIMIT_TOLERANCE:
                        mode = mode.replace(k, side)
        return mode

    def _leave(self, mode: LimitModes, k: int, side: LimitState, t: float, x: np.ndarray):
        """``mode.leave`` from the state x at time t."""
        return mode.leave(k, side, t, self._side(k, side, x)[1])

    def _release(self, t: float, x: np.ndarray, mode: LimitModes, trial: Trial) -> LimitModes:
        """The mode with the held limits that would pull set free: the active set of the
        System's contact problem at the acceleration level (:func:`contact_forces`, every
        unilateral row of every component), else one at a time, the most pulling first."""
        if not any(s is not FREE for s in mode.states):
            return mode
        if hasattr(trial, "dynamics"):
            rows, mass, bias, tau = trial.dynamics(x, mode)
            _, active = contact_forces(rows, mass, bias, tau)
            start = 0
            for owner, r in rows:
                if owner == self.name:
                    held = [k for k, s in enumerate(mode.states) if s is not FREE]
                    for j, k in enumerate(held):
                        if not active[start + j]:
                            mode = self._leave(mode, k, mode[k], t, x)
                start += r.m
            return mode
        while any(s is not FREE for s in mode.states):
            force = self._forces(mode, trial(x, mode))
            k = int(np.argmin(force))
            if force[k] >= 0.0:
                break
            mode = self._leave(mode, k, mode[k], t, x)
        return mode

    def _forces(self, mode: LimitModes, step: Step) -> np.ndarray:
        """The reaction of every limited joint [N.m or N] (zero when free; >= 0 pushes)."""
        held = [k for k, s in enumerate(mode.states) if s is not FREE]
        out = np.zeros(len(self.limits))
        out[held] = step.force(self.name, len(held))
        return out

    def is_constrained(self, mode: LimitModes | None) -> bool:  # noqa: D102
        return mode is not None and any(s is not FREE for s in mode.states)

    def compiled_rows(self, mode: LimitModes | None) -> JointRows | None:
        """The held joints' unit rows ``sign · a[iv] + 2ω sign v[iv] + ω² φ = 0`` with
        ``φ = sign (q[iq] − bound)`` (sign +1 on a lower stop, −1 on an upper one), in the
        order of the joints: the one statement of the rows, which :meth:`constraint_rows`
        evaluates on the Python path."""
        states = self._full(mode).states
        if states not in self._rows:  # each evaluation on the Python path asks
            held = [(k, s) for k, s in enumerate(states) if s is not FREE]
            rows, offsets = [], []
            for k, s in held:
                lim, sign = self.limits[k], 1.0 if s is LOWER else -1.0
                rows.append([(lim.iq, lim.iv, sign)])
                offsets.append(sign * (lim.lower if s is LOWER else lim.upper))
            self._rows[states] = JointRows.build(rows, offsets, [self.omega] * len(held))
        return self._rows[states]

    def constraint_rows(self, t, x, q, v, mode, data):
        """The rows of :meth:`compiled_rows`, evaluated at (q, v)."""
        rows = self.compiled_rows(mode)
        return ConstraintRows(rows.jacobian(self._nv), rows.drift(q, v), None, RowKind.UNILATERAL)

    def events(self, mode: LimitModes | None) -> list[Event]:  # noqa: D102
        mode = self._full(mode)
        if mode.leaving:  # (their events carry the time they left)
            return self._build_events(mode)
        key = (mode.states, mode.outside)
        if key not in self._events:  # every segment asks: built once per set of states
            self._events[key] = self._build_events(mode)
        return list(self._events[key])

    def _build_events(self, mode: LimitModes) -> list[Event]:
        events = []
        held = [k for k, s in enumerate(mode.states) if s is not FREE]  # the rows' order
        approaching: list[tuple[int, LimitState]] = []  # free sides: one event for all
        leaving = {e[:2]: e[2:] for e in mode.leaving}
        for k, lim in enumerate(self.limits):
            state = mode[k]
            if state is FREE:
                for side, bound in ((LOWER, lim.lower), (UPPER, lim.upper)):
                    if not math.isfinite(bound) or (k, side) in mode.outside:
                        continue
                    start = leaving.get((k, side))
                    if start is None:
                        approaching.append((k, side))
                        continue
                    index, sign, bound = self._nearest_form(((k, side),))
                    test = Leaving(
                        int(index[0]), float(sign[0]), float(bound[0]), *start, self.nq + lim.iv
                    )
                    events.append(
                        Event(
                            f"limit:{lim.joint}",
                            test.value,
                            -1.0,
                            self._impact_action(k, side),
                            compiled=test,
                        )
                    )
            else:
                effort = lim.effort if 0.0 < lim.effort < np.inf else 1.0
                lift = Reaction(held.index(k), 1.0, LIFT_OFF * effort)
                events.append(
                    Event(
                        f"limit-off:{lim.joint}",
                        lift.function(self.name),
                        -1.0,
                        self._lift_off_action(k),
                        dynamic=True,
                        compiled=lift,
                    )
                )
        if approaching:
            nearest = Distances(*self._nearest_form(approaching))
            events.append(
                Event(
                    "limit",
                    nearest.value,
                    -1.0,
                    self._nearest_action(approaching, nearest),
                    compiled=nearest,
                    bound=True,
                )
            )
        if mode.outside:  # back inside: -distance falls through zero (one event for all)
            outside = sorted(mode.outside, key=lambda item: (item[0], item[1].value))
            index, sign, bound = self._nearest_form(outside)
            beyond = Distances(index, -sign, bound)
            events.append(
                Event(
                    "limit-inside",
                    beyond.value,
                    -1.0,
                    self._inside_action(outside, beyond),
                    compiled=beyond,
                )
            )
        return events

    def _nearest_form(self, sides: Sequence[tuple[int, LimitState]]):
        """(index, sign, bound): the distance of side j is ``sign[j] (x[index[j]] − bound[j])``
        (built once per set of sides: every segment asks for them; read-only arrays)."""
        key = tuple(sides)
        if key not in self._forms:
            index = np.array([self.limits[k].iq for k, _ in sides], dtype=int)
            sign = np.array([1.0 if side is LOWER else -1.0 for _, side in sides])
            bound = np.array(
                [self.limits[k].lower if s is LOWER else self.limits[k].upper for k, s in sides]
            )
            for array in (index, sign, bound):
                array.flags.writeable = False
            self._forms[key] = index, sign, bound
        return self._forms[key]

    def _inside_action(self, sides: list[tuple[int, LimitState]], beyond: Distances):
        """A joint that started outside its range is back inside (``beyond``: the sides'
        distances, negated): its limit acts from now on (the first of its impact events
        carries the separation test)."""

        def action(t: float, x: np.ndarray, mode: LimitModes, trial: Trial):
            k, side = sides[beyond.nearest(x)]
            distance = self._side(k, side, x)[1]
            joint = self.limits[k].joint
            return (
                x.copy(),
                self._full(mode).inside(k, side, t, distance),
                {"name": f"limit-inside:{joint}", "joint": joint, "side": side.value},
            )

        return action

    def _first_reached(
        self, sides: list[tuple[int, LimitState]], nearest: tuple[int, LimitState], x: np.ndarray
    ) -> tuple[int, LimitState]:
        """The side an event of several stops acts on and is named after. Stops reached at
        one instant (within :data:`LIMIT_TOLERANCE`, as a ``<mimic>`` pair meets its stops)
        are one set, held together by one impact (:meth:`_engaged`): which of them the
        event's root lands nearest is a tie that the rounding decides (another BLAS, another
        order). The first of them in the joints' order that approaches is taken, so that
        every path and machine names the same one; else the nearest."""
        for k, side in sides:
            _, distance, rate = self._side(k, side, x)
            if abs(distance) <= LIMIT_TOLERANCE and rate < 0.0:
                return k, side
        return nearest

    def _nearest_action(self, sides: list[tuple[int, LimitState]], nearest: Distances):
        """The impact on the side that the nearest-limit event (``nearest``) reached."""

        def action(t: float, x: np.ndarray, mode: LimitModes, trial: Trial):
            k, side = self._first_reached(sides, sides[nearest.nearest(x)], x)
            x_new, mode_new, info = self._impact_action(k, side)(t, x, mode, trial)
            return x_new, mode_new, {"name": f"limit:{self.limits[k].joint}", **info}

        return action

    def outputs(self, t, x, q, v, u, mode, step):  # noqa: D102
        mode = self._full(mode)
        distance = np.array(
            [
                min(self._side(k, LOWER, x)[1], self._side(k, UPPER, x)[1])
                for k in range(len(self.limits))
            ]
        )
        return {
            "force": self._forces(mode, step),
            "distance": distance,
            "held": np.array([float(s is not FREE) for s in mode.states]),
        }

    def output_info(self) -> dict[str, tuple[str, str]]:
        """Units and descriptions of :meth:`outputs` (one entry per limited joint, in the
        order of ``meta["limited_joints"]``)."""
        return self.signals(
            {
                "force": ("N.m or N", "reaction of each limited joint's stop (0 when free)"),
                "distance": ("rad or m", "distance of each limited joint to its nearest stop"),
                "held": ("-", "1 while the joint rests on a stop, else 0"),
            }
        )

    def report(self, trajectory: Any) -> None:
        """One :class:`VelocityLimitWarning` per joint whose speed exceeded its velocity limit
        in the run, naming the joint and the first time [s] (interpolated between samples);
        its source line is the user's call (:func:`pinext._stack.user_stacklevel`)."""
        t, v = trajectory.t, trajectory.v
        for lim in (self.all_limits[k] for k in self.watched):
            over = np.flatnonzero(np.abs(v[:, lim.iv]) > lim.velocity)
            if not over.size:
                continue
            i = int(over[0])
            when = float(t[i])
            if i > 0:  # the crossing of |v| = limit between samples i-1 and i
                a, b = abs(v[i - 1, lim.iv]), abs(v[i, lim.iv])
                when = float(t[i - 1] + (lim.velocity - a) / (b - a) * (t[i] - t[i - 1]))
            warnings.warn(
                f"joint '{lim.joint}' exceeds its velocity limit {lim.velocity:g} at "
                f"t = {when:.6g} s (largest speed {np.abs(v[:, lim.iv]).max():.6g})",
                VelocityLimitWarning,
                stacklevel=user_stacklevel(),  # the user's call, not pinext's lines
            )

    def metadata(self) -> dict[str, Any]:
        """The limited joints and their ranges."""
        return {
            "limited_joints": self.joints,
            "limits": [[float(lim.lower), float(lim.upper)] for lim in self.limits],
        }

    # -- events ----------------------------------------------------------------------------------
    def _impact_action(self, k: int, side: LimitState):
        lim = self.limits[k]

        def action(t: float, x: np.ndarray, mode: LimitModes, trial: Trial):
            x = x.copy()
            _, _, rate = self._side(k, side, x)
            info: dict[str, Any] = {"joint": lim.joint, "side": side.value}
            info["approach_velocity"] = rate
            mode = self._full(mode)
            if rate >= 0.0:  # separation test: no impulse on a joint that does not approach
                info |= {"impulse": np.zeros(1), "bounce": False}
                held = self._release(t, x, mode.replace(k, side), trial)
                mode = held if held[k] is side else self._leave(mode, k, side, t, x)
                return x, self._compact(mode), info
            bounce = rebounds(float(lim.restitution), float(self.rest_velocity), float(rate))
            held = self._engaged(x, mode).replace(k, side)
            x, impulse = _impact(x, trial, held, self.name, k, self, bounce)
            if bounce:
                held = self._leave(held, k, side, t, x)
            settled = self.settle_mode(t, x, held, trial)
            info |= {"impulse": impulse, "bounce": bounce}
            return x, settled, info

        return action

    def _lift_off_action(self, k: int):
        """Joint k's reaction turned to pulling: it leaves its stop, and with it every other
        held stop whose reaction pulls at this instant (:meth:`_release`: the active set of
        the System's contact problem). A law that jumps (a control breakpoint) turns several
        reactions at one instant; which of their events the solver meets first is a tie that
        the rounding decides, so the event is the set: named after the first released joint
        in the joints' order, all of them in ``info["joints"]``."""

        def action(t: float, x: np.ndarray, mode: LimitModes, trial: Trial):
            mode = self._full(mode)
            left = self._release(t, x, self._leave(mode, k, mode[k], t, x), trial)
            released = [
                self.limits[j].joint
                for j, (was, now) in enumerate(zip(mode.states, left.states, strict=True))
                if was is not FREE and now is FREE
            ]
            info = {"name": f"limit-off:{released[0]}", "joint": released[0], "joints": released}
            return x.copy(), self._compact(left), info

        return action


def _impact(
    x: np.ndarray,
    trial: Trial,
    mode: Any,
    name: str,
    k: int,
    comp: JointLimits,
    bounce: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """The impact of joint k on its limit, with every other engaged row of the System in one
    impulse problem (:func:`impact_impulse`); returns (x⁺, the joint's impulse)."""
    rows = trial.rows(x, mode, impulse=True)  # type: ignore[attr-defined]
    restitution = np.zeros(sum(r.m for _, r in rows))
    start = 0
    for owner, r in rows:
        if owner == name:
            held = [i for i, s in enumerate(mode.states) if s is not FREE]
            own = start + held.index(k)
            if bounce:
                restitution[own] = comp.limits[k].restitution
        start += r.m
    nq, nv = comp.nq, comp._nv
    try:
        result = solve_impact(
            comp.model,
            comp.data,
            x[:nq],
            x[nq : nq + nv],
            rows,
            restitution=restitution,
            rest_velocity=comp.rest_velocity,
        )
    except ConstraintError as err:
        joint = comp.limits[k].joint
        others = sorted({owner for owner, _ in rows if owner != name})
        raise ConstraintError(
            f"joint '{joint}' reaches its limit, but the rows of {', '.join(others) or 'none'} "
            f"drive it through: {err}. Leave its limit out (System(..., joint_limits=False), "
            "or a JointLimits on a model without it)"
        ) from None
    x[nq : nq + nv] = result.v_plus
    return x, result.impulse[own : own + 1]


class EffortSaturation(Component):
    """Clips joint-torque inputs to the URDF's effort limits: adds ``clip(u) − u``.

    Args:
        model: Pinocchio model (its ``effortLimit`` [N.m or N]; non-finite or huge: none).
        name: Component name.
    """

    stepped_kind = "saturation"

    def __init__(self, model: pin.Model, *, name: str = "effort_saturation") -> None:
        super().__init__()
        self.name = name
        limit = np.array([_bound(e) for e in model.effortLimit], dtype=float)
        self.limit = np.where(limit > 0.0, limit, np.inf)
        self.active = True

    def bind(self, system: System) -> None:
        self.active = bool(system.torque_inputs)  # drives have their own input limits

    def effort(self, t, x, q, v, u, mode):  # noqa: D102
        if not self.active:
            return None
        return np.clip(u, -self.limit, self.limit) - u

    def power(self, t, x, q, v, u, mode, step):  # noqa: D102
        if not self.active:
            return 0.0, 0.0
        return float((np.clip(u, -self.limit, self.limit) - u) @ v), 0.0


def build_joint_limits(robot: Any, options: dict[str, Any]) -> JointLimits | None:
    """The System's joint limits (``joint_limits=True``, the default)."""
    if not options.get("joint_limits", True):
        return None
    comp = JointLimits(robot.model)
    return comp if comp.limits or comp.watched else None


def build_effort_saturation(robot: Any, options: dict[str, Any]) -> EffortSaturation | None:
    """Effort saturation of joint-torque inputs (``saturate_efforts=True``)."""
    if not options.get("saturate_efforts", False):
        return None
    return EffortSaturation(robot.model)
