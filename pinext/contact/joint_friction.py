"""Coulomb friction in the joints: stick and slip as modes, with the machinery of a gear's
self-locking (:class:`pinext.drives.modes.GearMode`).

A joint with a Coulomb friction torque ``F_c > 0`` (the URDF's ``<dynamics friction>``, which
Pinocchio reads into ``model.friction``, or the extension format's ``[joint_friction]`` table /
``<joint_friction joint=... friction=.../>`` element) is, per joint, in one of the states

* **slip** (``+`` or ``-``): the joint moves with the sign σ of its velocity and receives
  the torque ``−F_c σ`` (Coulomb); it dissipates ``F_c |q̇_i|`` [W], booked in the energy
  audit. The event ``<joint>.friction_stops`` is ``q̇_i`` crossing zero; there the joint
  chooses again from rest;
* **stick** (``S``): a modal row ``a_i = 0`` (:attr:`RowKind.MODAL`, as a stuck gear) whose
  reaction λ is the friction torque that holds the joint; it holds while ``|λ| ≤ F_c``. The
  dynamic events ``<joint>.friction_slips_low/high`` are ``λ = ∓F_c``: the joint then slips
  with ``σ = −sign λ``;
* **held** (``H``): at rest and held by other rows (a joint limit, a closed contact, a stuck
  gear): no friction torque; it chooses again when those rows change.

From rest a joint is held when, without its own row, the other rows already keep it at rest;
else it sticks when the reaction of its row lies within ``±F_c``, else it slips.

An impact faster than its rest velocity (the Zeno cut of the component that hits:
``rest_velocity`` of :class:`~pinext.contact.JointLimits` or of a contact) passes through the
stuck joints: a finite torque transmits no impulse. A slower one leaves them stuck, at rest
(their rows take part in the impulse problem with ``J q̇⁺ = 0``): its impulse is of the order
of that speed, and the friction of an impact of finite duration holds it. Without this, a
finger that settles on its stop at 1e-7 rad/s sets the stuck joints of the arm creeping at
that order of speed, each of which slips and stops again within nanoseconds: thousands of
events for nothing (tiago_dual from its neutral pose).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..exceptions import InvalidParameter, NameNotFound
from ..simulation.component import (
    REST_SPEED,
    Component,
    ConstraintRows,
    Distances,
    Event,
    JointRows,
    ModeState,
    Reaction,
    RowKind,
    Step,
    Trial,
)

if TYPE_CHECKING:
    import pinocchio as pin

    from ..simulation.system import System

#: Relative acceleration below which a joint at rest counts as held by other rows.
HELD_TOLERANCE = 1e-10
#: A slip from rest contradicts its acceleration when the joint accelerates against σ by more
#: than this fraction of the largest acceleration [-]: a slip that starts at its cone's edge
#: starts with no acceleration, signed by the rounding of the step's solve (1.8e-10 of it
#: seen on a pendulum with a continuous joint); a contradicted slip is far past it (4e-2 on
#: the real Panda from a seeded random pose, tests/test_real_panda_drives.py).
CONTRADICTED = 1e-6


class JointFrictionState(ModeState):
    """The state of one joint with Coulomb friction."""

    SLIP_UP = "+"
    """Moving with q̇ > 0: torque −F_c."""
    SLIP_DOWN = "-"
    """Moving with q̇ < 0: torque +F_c."""
    STICK = "S"
    """At rest, held by friction: the row a_i = 0 with |λ| ≤ F_c."""
    HELD = "H"
    """At rest, held by other rows: no friction torque."""

    @property
    def sign(self) -> float:
        """σ: +1, −1 while slipping, 0 at rest."""
        return {"+": 1.0, "-": -1.0}.get(self.value, 0.0)


UP, DOWN = JointFrictionState.SLIP_UP, JointFrictionState.SLIP_DOWN
STICK, HELD = JointFrictionState.STICK, JointFrictionState.HELD


@dataclass(frozen=True)
class JointFrictionModes:
    """The mode of a :class:`JointFriction`: one state per joint with friction."""

    states: tuple[JointFrictionState, ...]
    names: tuple[str, ...] = field(default=(), compare=False)

    def replace(self, k: int, state: JointFrictionState) -> JointFrictionModes:
        """A copy with joint k in ``state``."""
        states = list(self.states)
        states[k] = state
        return JointFrictionModes(tuple(states), self.names)

    def __getitem__(self, k: int) -> JointFrictionState:
        return self.states[k]

    def __str__(self) -> str:
        return "friction:" + "".join(s.value for s in self.states)

    @functools.cached_property
    def signs(self) -> np.ndarray:
        """σ of every joint (read-only)."""
        out = np.array([s.sign for s in self.states], dtype=float)
        out.flags.writeable = False
        return out


class JointFriction(Component):
    """Coulomb friction torques in one-DOF joints, with stick/slip modes.

    Args:
        model: Pinocchio model (the System's).
        friction: Joint name -> Coulomb torque F_c [N.m or N] (> 0 to have an effect);
            default: ``model.friction`` (the URDF's ``<dynamics friction>``).
        name: Component name.
    """

    stepped_kind = "friction"

    def __init__(
        self,
        model: pin.Model,
        friction: Mapping[str, float] | None = None,
        *,
        name: str = "joint_friction",
    ) -> None:
        super().__init__()
        self.name = name
        joints: list[tuple[str, int, float]] = []
        if friction is None:
            for j in range(1, model.njoints):
                joint = model.joints[j]
                value = float(model.friction[joint.idx_v]) if joint.nv else 0.0
                if joint.nv == 1 and value > 0.0:
                    joints.append((model.names[j], joint.idx_v, value))
        else:
            for joint_name, value in friction.items():
                if joint_name not in model.names:
                    raise NameNotFound("joint", joint_name, list(model.names[1:]))
                j = model.getJointId(joint_name)
                if model.joints[j].nv != 1:
                    raise InvalidParameter(
                        f"joint friction needs a one-DOF joint; '{joint_name}' has "
                        f"{model.joints[j].nv} velocities"
                    )
                if not float(value) >= 0.0:
                    raise InvalidParameter(
                        f"joint friction of '{joint_name}' must be >= 0 [N.m or N], got {value}"
                    )
                if float(value) > 0.0:
                    joints.append((joint_name, model.joints[j].idx_v, float(value)))
        self.joints = [j[0] for j in joints]
        self.iv = np.array([j[1] for j in joints], dtype=int)
        self.iq = np.array([model.joints[model.getJointId(j[0])].idx_q for j in joints], dtype=int)
        self.torque = np.array([j[2] for j in joints], dtype=float)

    def bind(self, system: System) -> None:
        self.nq, self.nv = system.model.nq, system.model.nv

    # -- modes -----------------------------------------------------------------------------
    def _v(self, x: np.ndarray, k: int) -> float:
        return float(x[self.nq + self.iv[k]])

    def initial_mode(self, t: float, x: np.ndarray, trial: Trial) -> JointFrictionModes:
        mode = JointFrictionModes((HELD,) * len(self.joints), tuple(self.joints))
        for _ in range(2):
            for k in range(len(self.joints)):
                v = self._v(x, k)
                if v != 0.0:
                    mode = mode.replace(k, UP if v > 0 else DOWN)
                else:
                    mode = mode.replace(k, self._from_rest(x, mode, k, trial))
        return mode

    def settle_mode(self, t: float, x: np.ndarray, mode: Any, trial: Trial) -> Any:
        """After another component's event: joints at rest choose again, moving ones take the
        sign of their velocity (an impact may have reversed it)."""
        for k, state in enumerate(mode.states):
            v = self._v(x, k)
            if state in (UP, DOWN) and v * state.sign > REST_SPEED:
                continue
            if abs(v) > REST_SPEED:
                mode = mode.replace(k, UP if v > 0 else DOWN)
            else:  # at rest (REST_SPEED: a plastic impact on a stop leaves a rounding-level speed)
                mode = mode.replace(k, self._from_rest(x, mode, k, trial))
        return self._unstick(x, mode, trial)

    def _from_rest(
        self, x: np.ndarray, mode: JointFrictionModes, k: int, trial: Trial
    ) -> JointFrictionState:
        """Joint k at rest: held by the other rows, stuck by friction, or slipping."""
        step = trial(x, mode.replace(k, HELD))
        a = step.a
        if abs(a[self.iv[k]]) <= HELD_TOLERANCE * (1.0 + np.abs(a).max()):
            return HELD
        stuck = mode.replace(k, STICK)
        force = self._reactions(stuck, trial(x, stuck))[k]
        if self._past_cone(force, k) <= 0.0:
            return STICK
        return DOWN if force > 0.0 else UP

    def _past_cone(self, force: float, k: int) -> float:
        """How far joint k's stuck friction torque lies outside its cone |τ| ≤ F_c (rounding
        allowed): > 0 when it cannot stick [N.m or N]."""
        return abs(force) - self.torque[k] * (1.0 + 1e-12)

    def _unstick(self, x: np.ndarray, mode: JointFrictionModes, trial: Trial):
        """The mode with no stuck joint past its cone and no joint slipping from rest against
        its acceleration. A joint that sticks or slips changes the reactions of the joints
        stuck before it, which may then need more than F_c: the one furthest past its cone
        slips, one at a time (each slip changes the others'). It also changes the
        acceleration of a joint that chose its slip from rest before it: a slip whose joint
        then accelerates the other way (its friction pushing it along) chooses again."""
        for _ in range(2 * len(self.joints)):
            stuck = [k for k, s in enumerate(mode.states) if s is STICK]
            step = trial(x, mode)
            if stuck:
                force = self._reactions(mode, step)
                excess = [self._past_cone(force[k], k) for k in stuck]
                worst = int(np.argmax(excess))
                if excess[worst] > 0.0:
                    k = stuck[worst]
                    mode = mode.replace(k, DOWN if force[k] > 0.0 else UP)
                    continue
            a = step.a
            against = [
                k
                for k, s in enumerate(mode.states)
                if s in (UP, DOWN)
                and self._v(x, k) == 0.0
                and a[self.iv[k]] * s.sign < -CONTRADICTED * (1.0 + np.abs(a).max())
            ]
            if not against:
                break
            k = against[0]
            mode = mode.replace(k, self._from_rest(x, mode.replace(k, HELD), k, trial))
        return mode

    # -- efforts, rows, energy -------------------------------------------------------------
    def _signs(self, mode: JointFrictionModes | None) -> np.ndarray:
        """σ of every joint (zeros before the mode is chosen: no friction torque)."""
        return np.zeros(len(self.joints)) if mode is None else mode.signs

    def effort(self, t, x, q, v, u, mode):  # noqa: D102
        tau = np.zeros(self.nv)
        tau[self.iv] = -self.torque * self._signs(mode)
        return tau

    def linear(self, mode: JointFrictionModes | None) -> bool:
        """Always: constant torques on the slipping joints (their power F_c σ q̇ is bilinear in
        q̇ and 1), and the stuck joints' rows in compiled form."""
        return True

    def is_constrained(self, mode: JointFrictionModes | None) -> bool:  # noqa: D102
        return mode is not None and STICK in mode.states

    def compiled_rows(self, mode: JointFrictionModes | None) -> JointRows:
        """The stuck joints' rows ``a_i = 0`` (no stabilisation: a joint sticks at rest, its
        velocity set to 0 where it stopped)."""
        stuck = [] if mode is None else [k for k, s in enumerate(mode.states) if s is STICK]
        return JointRows.build(
            [[(int(self.iq[k]), int(self.iv[k]), 1.0)] for k in stuck],
            [0.0] * len(stuck),
            [0.0] * len(stuck),
        )

    def constraint_rows(self, t, x, q, v, mode, data):
        """The rows of :meth:`compiled_rows`, evaluated at (q, v) (γ = 0: ω = 0)."""
        rows = self.compiled_rows(mode)
        return ConstraintRows(rows.jacobian(self.nv), rows.drift(q, v), None, RowKind.MODAL)

    def impulse_rows(self, t, x, q, v, mode, data):
        """The stuck joints' rows, held through impacts slower than their rest velocity only
        (the module's docstring)."""
        if not self.is_constrained(mode):
            return None
        rows = self.constraint_rows(t, x, q, v, mode, data)
        return replace(rows, slow_only=True)

    def _reactions(self, mode: JointFrictionModes, step: Step) -> np.ndarray:
        """The friction torque of every joint [N.m or N] in a step."""
        out = -self.torque * self._signs(mode)
        if mode is None:
            return out
        stuck = [k for k, s in enumerate(mode.states) if s is STICK]
        if stuck:
            out[stuck] = step.force(self.name, len(stuck))
        return out

    def power(self, t, x, q, v, u, mode, step):  # noqa: D102
        # F_c σ q̇ = F_c |q̇| while slipping (σ = sign q̇): bilinear, so the phase stays linear
        return 0.0, float(self.torque @ (v[self.iv] * self._signs(mode)))

    def outputs(self, t, x, q, v, u, mode, step):  # noqa: D102
        return {
            "torque": self._reactions(mode, step),
            "stick": np.array([float(s in (STICK, HELD)) for s in mode.states])
            if mode is not None
            else np.zeros(len(self.joints)),
        }

    def output_info(self) -> dict[str, tuple[str, str]]:
        """Units and descriptions of :meth:`outputs` (one entry per joint of
        ``meta["friction_joints"]``)."""
        return self.signals(
            {
                "torque": ("N.m or N", "Coulomb friction effort on each joint with friction"),
                "stick": ("-", "1 while the joint sticks (or is held), 0 while it slips"),
            }
        )

    def metadata(self) -> dict[str, Any]:
        """The joints with friction and their Coulomb torques."""
        return {"friction_joints": list(self.joints), "friction_torques": self.torque.tolist()}

    # -- events ----------------------------------------------------------------------------
    def events(self, mode: JointFrictionModes | None) -> list[Event]:  # noqa: D102
        if mode is None:
            return []
        events = []
        row = {k: r for r, k in enumerate(k for k, s in enumerate(mode.states) if s is STICK)}
        for k, state in enumerate(mode.states):
            joint = self.joints[k]
            if state in (UP, DOWN):  # σ q̇ falls through zero where the slipping joint stops
                index = self.nq + int(self.iv[k])
                stops = Distances(np.array([index]), np.array([state.sign]), np.zeros(1))
                events.append(
                    Event(
                        f"{joint}.friction_stops",
                        stops.value,
                        -1.0,
                        self._stop_action(k),
                        compiled=stops,
                    )
                )
            elif state is STICK:  # the cone's edges: F_c ± λ falls through zero
                for low in (True, False):
                    edge = Reaction(row[k], 1.0 if low else -1.0, float(self.torque[k]))
                    events.append(
                        Event(
                            f"{joint}.friction_slips_{'low' if low else 'high'}",
                            edge.function(self.name),
                            -1.0,
                            self._slip_action(k, low),
                            dynamic=True,
                            compiled=edge,
                        )
                    )
        return events

    def _stop_action(self, k: int):
        def action(t, x, mode, trial):
            x = x.copy()
            x[self.nq + self.iv[k]] = 0.0
            mode = self._unstick(x, mode.replace(k, self._from_rest(x, mode, k, trial)), trial)
            return x, mode, {"joint": self.joints[k], "mode": str(mode)}

        return action

    def _slip_action(self, k: int, low: bool):
        def action(t, x, mode, trial):
            # low: λ reached −F_c, so the joint slips with σ = −sign λ = +1; high: σ = −1
            mode = self._unstick(x, mode.replace(k, UP if low else DOWN), trial)
            return x.copy(), mode, {"joint": self.joints[k]}

        return action


def build_joint_friction(robot: Any, options: dict[str, Any]) -> JointFriction | None:
    """The System's joint friction (``joint_friction=True``, the default): the URDF's
    ``<dynamics friction>`` and the extension format's ``[joint_friction]``, or a mapping."""
    spec = options.get("joint_friction", True)
    if spec is False or spec is None:
        return None
    if not (spec is True or isinstance(spec, Mapping)):
        raise InvalidParameter(
            "joint_friction must be True (the URDF's <dynamics friction> and the [joint_friction] "
            "table), False, or a mapping joint name -> Coulomb friction [N.m or N]; got "
            f"{spec!r} ({type(spec).__name__})"
        )
    model = robot.model
    if spec is True:
        table = dict(getattr(getattr(robot, "extensions", None), "joint_friction", {}) or {})
        if table:
            merged = {
                model.names[j]: float(model.friction[model.joints[j].idx_v])
                for j in range(1, model.njoints)
                if model.joints[j].nv == 1
            }
            merged.update(table)
            comp = JointFriction(model, merged)
        else:
            comp = JointFriction(model)
    else:
        comp = JointFriction(model, dict(spec))
    return comp if comp.joints else None
