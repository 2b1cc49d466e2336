"""Coulomb friction at a planar contact: stick and slip as modes, their switches as events.

A :class:`pinext.contact.Contact` with ``friction = μ > 0`` on a plane becomes a
:class:`FrictionalContact`. With the plane's object frame (z the normal, x and y in the plane),
its modes are

* ``free`` — the impact event is the gap crossing zero (the separation test of
  :func:`pinext.simulation.events.leaving_distance` after a lift-off);
* ``stick`` — three rows: the normal (Baumgarte stabilised) and the two tangential velocities
  (``ẋ = ẏ = 0`` at the acceleration level, Vukobratović & Potkonjak (20.88)–(20.89) with
  s^c = [x, y, z]); it ends when the tangential reaction leaves the cone,
  ``|λ_t| = μ λ_n`` (a dynamic event, then slip along ``-λ_t``), or when λ_n would pull;
* ``slip`` — one row, the normal, whose reaction acts along ``W = J_n − μ t̂ᵀ J_t``
  (Coulomb: the friction force ``−μ λ_n t̂`` opposes the sliding velocity
  ``t̂ = ṡ_t / |ṡ_t|``, the slip direction of the mode when it starts from rest); it ends when
  the sliding velocity along the mode's direction crosses zero (then stick if the cone holds
  the reaction, else slip again) or when λ_n would pull;
* ``held`` — at rest, with the tangential motion held by other rows (a joint limit, a loop):
  the normal row only and no friction force, chosen when sticking would need a tangential
  reaction outside the cone that the other rows take instead (the split between redundant
  rows is otherwise arbitrary); it chooses again at the next event of another component,
  as a gear held by other constraints (:class:`pinext.drives.modes.GearMode`).

Friction dissipates ``μ λ_n t̂ · ṡ_t`` [W] (``μ λ_n |ṡ_t|`` once sliding;
:meth:`FrictionalContact.power`), booked in the energy audit. An impact is Coulomb's cone at
the impulse level (De Saxcé's form) (:func:`pinext.contact.impulse.frictional_impulse`): one
problem with every engaged row of the System (the other frictional contacts, each with its
own cone, frictionless contacts, joint limits, loops), so a rocking block's new corner
sticks while the old one lifts off in the same impulse. The contact sticks after a plastic
impact whose impulse stays in the cone, slides when it leaves it, and bounces with Stronge's
(1990) energetic e > 0 (scaled down when it would create energy). Each contact of a System
is its own component (``friction:<name>``) with its own modes and events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin
from scipy.optimize import root_scalar

from ..exceptions import InvalidParameter
from ..simulation.component import Component, ConstraintRows, Event, ModeState, RowKind, Step, Trial
from ..simulation.events import approach
from .component import GAP_TOLERANCE, VELOCITY_TOLERANCE, _as_contact
from .constrained import baumgarte
from .coordinates import FunctionalCoordinates
from .impulse import FrictionalImpulseResult, solve_impact
from .unilateral import Contact, bounces

if TYPE_CHECKING:
    from ..simulation.system import System


class FrictionState(ModeState):
    """The state of a frictional contact."""

    FREE = "free"
    STICK = "stick"
    HELD = "held"
    """At rest with the tangential motion held by other rows (a joint limit, another
    contact): the normal row only, no friction force (statically indeterminate otherwise)."""
    SLIP = "slip"


FREE, STICK, SLIP = FrictionState.FREE, FrictionState.STICK, FrictionState.SLIP
HELD = FrictionState.HELD


@dataclass(frozen=True)
class FrictionMode:
    """The mode of a :class:`FrictionalContact`.

    Attributes:
        state: :class:`FrictionState`.
        direction: Unit slip direction (x, y) in the plane's frame (slip), else (0, 0).
        leaving: (t0 [s], gap at t0 [m]) after a lift-off, else None.
        started: The time [s] a slide started from rest (slip), else None: its stop event
            is then the separation test of the sliding speed (:meth:`FrictionalContact.
            _stop_function`).
    """

    state: FrictionState
    direction: tuple[float, float] = (0.0, 0.0)
    leaving: tuple[float, float] | None = None
    started: float | None = None

    def __str__(self) -> str:
        return str(self.state)


class FrictionalContact(Component):
    """A planar contact with Coulomb friction (stick/slip modes).

    Args:
        contact: A :class:`Contact` on a plane (``plane(frame, point, normal)``) with
            ``friction`` = μ > 0.
    """

    stepped_kind = "contact"

    def __init__(self, contact: Contact) -> None:
        super().__init__()
        c = contact.constraint
        if not (
            isinstance(c, FunctionalCoordinates) and c.names == ("z",) and c.law is None
        ) or not (contact.friction > 0.0):
            raise InvalidParameter(
                f"friction needs a fixed plane contact (plane(frame, point, normal)) and "
                f"friction > 0; got {c!r} with friction {contact.friction}"
            )
        self.contact = contact
        self.contacts = [contact]
        self.mu = float(contact.friction)
        self.name = f"friction:{contact.name}"
        self.normal = c
        self.tangent = FunctionalCoordinates(c.frame, c.placement, ("x", "y"), tool=c.tool)

    # -- kinematics ----------------------------------------------------------------------------
    def bind(self, system: System) -> None:
        self.model = system.model
        self.data = self.model.createData()
        self.normal.bind(self.model)
        self.tangent.bind(self.model)
        self.nq, self.nv = self.model.nq, self.model.nv

    def _kinematics(self, t: float, x: np.ndarray, data: pin.Data | None = None):
        """(normal kinematics, tangential kinematics) at x (computeAllTerms when no data)."""
        if data is None:
            data = self.data
            pin.computeAllTerms(self.model, data, x[: self.nq], x[self.nq : self.nq + self.nv])
        return self.normal.evaluate(self.model, data, t), self.tangent.evaluate(self.model, data, t)

    def _slip_velocity(self, t: float, x: np.ndarray) -> np.ndarray:
        return self._kinematics(t, x)[1].rate(x[self.nq : self.nq + self.nv])

    # -- modes ---------------------------------------------------------------------------------
    def initial_mode(self, t: float, x: np.ndarray, trial: Trial) -> FrictionMode:
        pin.framesForwardKinematics(self.model, self.data, x[: self.nq])
        gap = self.normal.approach_gap(self.model, self.data, t)
        if gap > GAP_TOLERANCE:
            return FrictionMode(FREE)
        normal, tangent = self._kinematics(t, x)
        v = x[self.nq : self.nq + self.nv]
        if abs(float(normal.rate(v)[0])) > VELOCITY_TOLERANCE:
            raise InvalidParameter(
                f"contact '{self.contact.name}' starts on its plane with a normal velocity "
                f"{float(normal.rate(v)[0]):.3g} m/s; start above it or at rest on it"
            )
        slip = tangent.rate(v)
        if np.linalg.norm(slip) > VELOCITY_TOLERANCE:
            return self._settle(t, x, FrictionMode(SLIP, _unit(slip)), trial)
        return self._settle(t, x, FrictionMode(STICK), trial)

    def _touching(self, t: float, x: np.ndarray, approaching: bool) -> bool:
        """Whether the point is on its surface (|gap| ≤ GAP_TOLERANCE) and approaches it
        (``approaching``), or does not separate from it."""
        pin.framesForwardKinematics(self.model, self.data, x[: self.nq])
        if abs(self.normal.approach_gap(self.model, self.data, t)) > GAP_TOLERANCE:
            return False
        rate = float(self._kinematics(t, x)[0].rate(x[self.nq : self.nq + self.nv])[0])
        return rate < 0.0 if approaching else rate <= VELOCITY_TOLERANCE

    def settle_mode(self, t: float, x: np.ndarray, mode: Any, trial: Trial) -> FrictionMode:
        """After another component's event: a free contact that touches without separating
        (it closed in the other's impulse problem) closes; a sliding contact that another
        row's impact brought to rest sticks if the cone holds it."""
        if mode.state is FREE and mode.leaving is None and self._touching(t, x, False):
            slip = self._slip_velocity(t, x)
            if np.linalg.norm(slip) > VELOCITY_TOLERANCE:
                return self._settle(t, x, FrictionMode(SLIP, _unit(slip)), trial)
            return self._settle(t, x, FrictionMode(STICK), trial)
        if mode.state is SLIP and np.linalg.norm(self._slip_velocity(t, x)) <= VELOCITY_TOLERANCE:
            mode = FrictionMode(STICK)
        return self._settle(t, x, mode, trial)

    def _settle(self, t: float, x: np.ndarray, mode: FrictionMode, trial: Trial) -> FrictionMode:
        """Stick → slip when the cone cannot hold the reaction; free when λ_n would pull."""
        if mode.state is FREE:
            return mode
        normal, tangent = self._kinematics(t, x)
        v = x[self.nq : self.nq + self.nv]
        if float(normal.rate(v)[0]) > VELOCITY_TOLERANCE:  # separating after another impact
            return self._leave(t, x)
        slip = tangent.rate(v)
        if mode.state is HELD:  # at rest: choose again
            mode = FrictionMode(STICK)
        if mode.state is STICK and np.linalg.norm(slip) > VELOCITY_TOLERANCE:
            mode = FrictionMode(SLIP, _unit(slip))  # set sliding by another row's impact
        if mode.state is STICK:
            force = trial(x, mode).force(self.name, 3)
            if force[0] < 0.0:
                return self._leave(t, x)
            if np.linalg.norm(force[1:]) > self.mu * force[0]:
                held = FrictionMode(HELD)
                step = trial(x, held)
                a_t = tangent.jacobian @ step.a + tangent.drift
                if step.force(self.name, 1)[0] >= 0.0 and np.abs(a_t).max() <= 1e-9 * (
                    1.0 + np.abs(step.a).max()
                ):
                    return held  # other rows hold it: the cone needs to take nothing
                start = self._slip_direction(t, x, _unit(-force[1:]), trial)
                return self._settle(t, x, FrictionMode(SLIP, start, started=t), trial)
            return mode
        force = trial(x, mode).force(self.name, 1)
        return self._leave(t, x) if force[0] < 0.0 else mode

    def _leave(self, t: float, x: np.ndarray) -> FrictionMode:
        pin.framesForwardKinematics(self.model, self.data, x[: self.nq])
        gap = self.normal.approach_gap(self.model, self.data, t)
        return FrictionMode(FREE, leaving=(t, min(gap, 0.0)))

    # -- rows ----------------------------------------------------------------------------------
    def is_constrained(self, mode: FrictionMode) -> bool:  # noqa: D102
        return mode is not None and mode.state is not FREE

    def constraint_rows(self, t, x, q, v, mode, data):  # noqa: D102
        normal, tangent = self._kinematics(t, x, data)
        omega = self.contact.stabilization or 0.0
        drift_n = normal.drift - baumgarte(normal, v, omega)
        if mode.state is STICK:
            drift_t = tangent.drift + omega * tangent.rate(v)  # velocity-level stabilisation
            jacobian = np.vstack([normal.jacobian, tangent.jacobian])
            return ConstraintRows(
                jacobian, np.concatenate([drift_n, drift_t]), None, RowKind.BILATERAL
            )
        if mode.state is HELD:
            return ConstraintRows(normal.jacobian, drift_n, None, RowKind.UNILATERAL)
        direction = self._direction(tangent.rate(v), mode)
        force_map = normal.jacobian - self.mu * (direction @ tangent.jacobian)[None, :]
        return ConstraintRows(normal.jacobian, drift_n, None, RowKind.UNILATERAL, force_map)

    def impulse_rows(self, t, x, q, v, mode, data):  # noqa: D102
        if mode is None or (mode.state is FREE and not self._touching(t, x, approaching=True)):
            return None
        normal, tangent = self._kinematics(t, x, data)
        jacobian = np.vstack([normal.jacobian, tangent.jacobian])
        return ConstraintRows(
            jacobian, np.zeros(3), None, RowKind.UNILATERAL, None, friction=self.mu
        )

    @staticmethod
    def _direction(slip: np.ndarray, mode: FrictionMode) -> np.ndarray:
        """t̂: the direction of ``ṡ + ε d`` (ε = :data:`VELOCITY_TOLERANCE`, d the mode's
        direction). Once the contact slides this is ṡ/|ṡ| to within ε/|ṡ| rad; while it
        starts sliding from rest (its speed within ε of rest, where ṡ/|ṡ| is the direction
        of the rounding of the first steps, not of the slide) it is the mode's d. It is
        continuous in ṡ: a switch from d to ṡ/|ṡ| at |ṡ| = ε made the friction force jump
        wherever ṡ is not along d, and Radau's steps collapsed there (the six-DOF arm's pen
        slipping again from rest: "Required step size is less than spacing between
        numbers")."""
        d = np.asarray(mode.direction, dtype=float)
        w = slip + VELOCITY_TOLERANCE * d
        norm = float(np.linalg.norm(w))
        return w / norm if norm > 0.0 else d

    # -- energy, outputs and scene -------------------------------------------------------------
    def power(self, t, x, q, v, u, mode, step):  # noqa: D102
        if mode is None or mode.state is not SLIP:
            return 0.0, 0.0
        normal_force = float(step.force(self.name, 1)[0])
        slip = self._slip_velocity(t, x)  # the power of the force −μ λ_n t̂ (_direction)
        return 0.0, self.mu * normal_force * float(self._direction(slip, mode) @ slip)

    def outputs(self, t, x, q, v, u, mode, step):  # noqa: D102
        slip = self._slip_velocity(t, x)
        normal_force, friction = 0.0, np.zeros(2)
        if mode.state is STICK:
            force = step.force(self.name, 3)
            normal_force, friction = float(force[0]), force[1:].copy()
        elif mode.state is HELD:
            normal_force = float(step.force(self.name, 1)[0])
        elif mode.state is SLIP:
            normal_force = float(step.force(self.name, 1)[0])
            friction = -self.mu * normal_force * self._direction(slip, mode)
        state = {FREE: 0.0, STICK: 1.0, HELD: 1.0, SLIP: 2.0}[mode.state]
        return {
            "normal_force": np.array([normal_force]),
            "friction_force": friction,
            "slip_velocity": slip,
            "force": np.concatenate([[normal_force], friction]),
            "state": np.array([state]),
        }

    def output_info(self) -> dict[str, tuple[str, str]]:
        """Units and descriptions of :meth:`outputs`."""
        return self.signals(
            {
                "normal_force": ("N", "normal reaction of the plane (0 when free)"),
                "friction_force": ("N", "tangential friction force, plane's x and y axes"),
                "slip_velocity": ("m/s", "sliding velocity in the plane, its x and y axes"),
                "force": ("N", "[normal, friction x, friction y] in the plane's frame"),
                "state": ("-", "0 free, 1 sticking (or held), 2 slipping"),
            }
        )

    def metadata(self) -> dict[str, Any]:
        """The scene item a viewer draws: the plane, the force arrow (output ``force`` =
        [λ_n, λ_x, λ_y] in the plane's frame), the friction cone of half-angle atan μ
        coloured by the output ``state`` (0 free, 1 stick or held, 2 slip)."""
        from .scene import contact_scene_items

        (item,) = contact_scene_items([self.contact], component=self.name)
        item["force"]["rows"] = [[0, [0.0, 0.0, 1.0]], [1, [1.0, 0.0, 0.0]], [2, [0.0, 1.0, 0.0]]]
        item["friction"] = self.mu
        item["state"] = f"{self.name}.state"
        return {f"scene.{self.name}": [item]}

    # -- events --------------------------------------------------------------------------------
    def events(self, mode: FrictionMode) -> list[Event]:  # noqa: D102
        name = self.contact.name
        if mode.state is FREE:
            return [Event(f"contact:{name}", self._gap_function(mode), -1.0, self._impact)]
        lift = Event(f"lift-off:{name}", self._normal_function(mode), -1.0, self._lift_off, True)
        if mode.state is STICK:
            return [lift, Event(f"slip:{name}", self._cone_function(), -1.0, self._slip, True)]
        if mode.state is HELD:  # chooses again when the rows that hold it change
            return [lift]
        return [lift, Event(f"stick:{name}", self._stop_function(mode), -1.0, self._stop)]

    def _gap_function(self, mode: FrictionMode):
        def g(t: float, x: np.ndarray) -> float:
            pin.framesForwardKinematics(self.model, self.data, x[: self.nq])
            gap = self.normal.approach_gap(self.model, self.data, t)
            return float(approach(gap, t, *(mode.leaving or (-np.inf, 0.0))))

        return g

    def _normal_function(self, mode: FrictionMode):
        size = 3 if mode.state is STICK else 1

        def g(t: float, x: np.ndarray, step: Step) -> float:
            return float(step.force(self.name, size)[0])

        return g

    def _cone_function(self):
        def g(t: float, x: np.ndarray, step: Step) -> float:
            force = step.force(self.name, 3)
            return float(self.mu * force[0] - np.linalg.norm(force[1:]))

        return g

    def _stop_function(self, mode: FrictionMode):
        """The sliding speed along the mode's direction; for a slide that started from rest
        at t0, that speed over ``t − t0`` (1 at t ≤ t0): the same roots after t0, and
        positive from the start (the acceleration along the direction, :meth:`_slip_direction`)
        where the speed itself starts at zero or a rounding error below it, which the event
        would take for a stop at once."""
        direction = np.asarray(mode.direction)
        started = mode.started

        def g(t: float, x: np.ndarray) -> float:
            rate = float(direction @ self._slip_velocity(t, x))
            if started is None:
                return rate
            return 1.0 if t <= started else rate / (t - started)

        return g

    def _impact(self, t: float, x: np.ndarray, mode: FrictionMode, trial: Trial):
        x = x.copy()
        q, v = x[: self.nq], x[self.nq : self.nq + self.nv]
        normal, tangent = self._kinematics(t, x)
        approach = float(normal.rate(v)[0])
        info: dict[str, Any] = {"contact": self.contact.name, "approach_velocity": approach}
        if approach >= 0.0:  # separation test: no impulse on a contact that does not approach
            return x, self._settle(t, x, FrictionMode(STICK), trial), info
        rows = trial.rows(x, FrictionMode(STICK), impulse=True)  # type: ignore[attr-defined]
        starts = np.cumsum([0] + [r.m for _, r in rows])
        own = [k for k, (name, _) in enumerate(rows) if name == self.name][0]
        restitution = np.zeros(int(starts[-1]))
        bounce = bounces(self.contact, approach)
        if bounce:
            restitution[starts[own]] = self.contact.restitution
        result = solve_impact(
            self.model,
            self.data,
            q,
            v,
            rows,
            restitution=restitution,
            rest_velocity=self.contact.rest_velocity,
        )
        x[self.nq : self.nq + self.nv] = result.v_plus
        info["impulse"] = np.asarray(result.impulse[starts[own] : starts[own + 1]])
        if isinstance(result, FrictionalImpulseResult):
            cones = result.cones
            k = sum(1 for name, r in rows[:own] if r.friction > 0.0)
            info["cone"] = cones[k]
            info["restitution_scale"] = result.restitution_scale
        normal, _ = self._kinematics(t, x)
        rebound = float(normal.rate(result.v_plus)[0])
        info["bounce"] = bool(bounce and rebound > VELOCITY_TOLERANCE)
        if info["bounce"]:
            return x, self._leave(t, x), info
        slip = self._slip_velocity(t, x)
        if np.linalg.norm(slip) > VELOCITY_TOLERANCE:
            return x, self._settle(t, x, FrictionMode(SLIP, _unit(slip)), trial), info
        return x, self._settle(t, x, FrictionMode(STICK), trial), info

    def _lift_off(self, t: float, x: np.ndarray, mode: FrictionMode, trial: Trial):
        return x.copy(), self._leave(t, x), {"contact": self.contact.name}

    def _slip(self, t: float, x: np.ndarray, mode: FrictionMode, trial: Trial):
        force = trial(x, mode).force(self.name, 3)
        start = self._slip_direction(t, x, _unit(-force[1:]), trial)
        slip = FrictionMode(SLIP, start, started=t)
        return x.copy(), self._settle(t, x, slip, trial), {"contact": self.contact.name}

    def _slip_direction(
        self, t: float, x: np.ndarray, start: tuple[float, float], trial: Trial
    ) -> tuple[float, float]:
        """The direction d in which a contact at rest starts to slide: the point's tangential
        acceleration ``a_t(d)`` under the friction force ``−μ λ_n d`` must point along d
        (Coulomb's law from rest, at the acceleration level). The stick reaction's ``−λ_t``
        (``start``) is that direction only where the contact's tangential Delassus operator
        is isotropic (a free block); at an arm's tip the two differ, and a slide started
        along ``−λ_t`` may decelerate at once (the stop event at its start, then the cone
        again: a Zeno cascade). The angle φ of d solves ``d(φ) × a_t(d(φ)) = 0`` (scipy's
        secant from −λ_t and the direction of its acceleration; the plain fixed-point
        iteration ``d ← a_t/|a_t|`` diverges at the six-DOF arm's tip at μ = 0.3)."""
        _, tangent = self._kinematics(t, x)

        def acceleration(phi: float) -> tuple[np.ndarray, np.ndarray]:
            d = np.array([np.cos(phi), np.sin(phi)])
            step = trial(x, FrictionMode(SLIP, (float(d[0]), float(d[1]))))
            return d, tangent.jacobian @ step.a + tangent.drift

        def cross(phi: float) -> float:
            d, a_t = acceleration(phi)
            return float(d[0] * a_t[1] - d[1] * a_t[0]) / (1e-300 + float(np.linalg.norm(a_t)))

        phi0 = float(np.arctan2(start[1], start[0]))
        _, a0 = acceleration(phi0)
        phi1 = float(np.arctan2(a0[1], a0[0]))
        if abs(phi1 - phi0) > 1e-13:
            found = root_scalar(cross, x0=phi0, x1=phi1, method="secant", xtol=1e-13)
            phi0 = float(found.root) if found.converged else phi0
        d, a_t = acceleration(phi0)
        if d @ a_t <= 0.0:  # no consistent slide found: the stick reaction's direction
            return start
        return (float(d[0]), float(d[1]))

    def _stop(self, t: float, x: np.ndarray, mode: FrictionMode, trial: Trial):
        x = x.copy()
        slip = self._slip_velocity(t, x)
        info = {"contact": self.contact.name, "slip_speed": float(np.linalg.norm(slip))}
        if np.linalg.norm(slip) > VELOCITY_TOLERANCE:  # turned without stopping (2D slip)
            return x, self._settle(t, x, FrictionMode(SLIP, _unit(slip)), trial), info
        return x, self._settle(t, x, FrictionMode(STICK), trial), info


def _unit(vector: np.ndarray) -> tuple[float, float]:
    norm = float(np.linalg.norm(vector))
    if norm == 0.0:
        return (1.0, 0.0)
    return (float(vector[0] / norm), float(vector[1] / norm))


def build_frictional_contacts(robot: Any, options: dict[str, Any]) -> list[Component] | None:
    """The System's frictional contacts (``Contact(..., friction=μ)`` with μ > 0), one
    component each."""
    contacts = options.get("contacts")
    if contacts is None:
        contacts = robot.extensions.contacts
    frictional = [c for c in (_as_contact(s) for s in contacts or ()) if c.friction > 0.0]
    if not frictional:
        return None
    names = [c.name for c in frictional]
    if len(set(names)) != len(names):
        raise InvalidParameter(f"contact names must be unique, got {names}")
    return [FrictionalContact(c) for c in frictional]
