"""ContactComponent: the three-phase contact task inside :func:`pinext.simulate`.

Phases (the component's mode, one word per contact joined by ``","``):

* ``"free"`` — approach (or flight after a bounce / lift-off): ``pin.aba``; the event
  ``contact:<name>`` is the downward zero crossing of the approach gap, located by
  solve_ivp's root finder on the dense output;
* the event's map is the impact (:func:`plastic_impact`, with the environment mass for model
  (c)); a bounce keeps ``"free"``, otherwise
* ``"constrained"`` — (20.88)–(20.89), or the coupled motion (20.92)–(20.94) with a dynamic
  environment of model (c); the event ``lift-off:<name>`` is the reaction crossing zero;
* ``"spring"`` — model (d): the massless layer pushes, no impact; the layer's force
  crossing zero ends it.

Recorded outputs (``Trajectory.outputs["contact.<name>"]``): ``force`` (reactions of all
contacts, zero when free) [N or N.m], ``gap`` (approach gaps) [m], ``residual`` (s^c of every
contact) [m or rad], and with an environment ``deformation`` (s_e) [m], ``deformation_rate``
[m/s] and ``layer`` (w, model (d)) [m]. Event infos hold ``impulse`` [N.s], ``approach_velocity``
[m/s], ``bounce``, ``force``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ..exceptions import ConstraintError, InvalidParameter
from ..simulation.component import Component, Event, Phase
from .constrained import (
    InconsistentInitialConditionsWarning,
    baumgarte,
    project_consistent,
    solve_constrained,
    stack,
)
from .coordinates import Constraint
from .environment import DynamicEnvironment
from .impact import plastic_impact
from .unilateral import Contact, bounces, pulls

if TYPE_CHECKING:
    from ..simulation.system import System

FREE, CONSTRAINED, SPRING = "free", "constrained", "spring"
#: Position tolerance [m] for a contact to count as closed at the start of a run.
GAP_TOLERANCE = 1e-9
#: Velocity tolerance [m/s] for a closed contact at the start of a run.
VELOCITY_TOLERANCE = 1e-9


def _as_contact(spec: Any) -> Contact:
    if isinstance(spec, Contact):
        return spec
    if isinstance(spec, Constraint):
        return Contact(spec)
    if isinstance(spec, dict):
        return Contact.from_dict(spec)
    raise InvalidParameter(
        f"a contact must be a pinext.contact.Contact, a Constraint or a dict, got {type(spec)}"
    )


class ContactComponent(Component):
    """Contacts of a robot with rigid surfaces or one dynamic environment.

    Args:
        contacts: :class:`Contact` objects (or constraints / dicts, see
            :meth:`Contact.from_dict`).
        environment: None (rigid surfaces) or a :class:`DynamicEnvironment` behind a single
            one-row contact.
        name: Component name (state and output prefix).
    """

    def __init__(
        self,
        contacts: Sequence[Any],
        environment: DynamicEnvironment | None = None,
        *,
        name: str = "contact",
    ) -> None:
        super().__init__()
        self.name = name
        self.contacts = [_as_contact(c) for c in contacts]
        if not self.contacts:
            raise InvalidParameter("a contact component needs at least one contact")
        names = [c.name for c in self.contacts]
        if len(set(names)) != len(names):
            raise InvalidParameter(f"contact names must be unique, got {names}")
        if isinstance(environment, dict):
            environment = DynamicEnvironment.from_dict(environment)
        self.environment = environment
        single = len(self.contacts) == 1 and self.contacts[0].constraint.m == 1
        if environment is not None and not single:
            raise InvalidParameter(
                "a DynamicEnvironment acts behind exactly one surface-type contact (m = 1)"
            )
        self.layered = environment is not None and environment.model == "d"
        self.rows = np.cumsum([0] + [c.constraint.m for c in self.contacts])
        self._cache: tuple | None = None
        self.system: System | None = None

    # -- Component interface -----------------------------------------------------------------
    def states(self) -> list[tuple[str, int]]:
        if self.environment is None:
            return []
        return [("environment", 3 if self.layered else 2)]

    def bind(self, system: System) -> None:
        self.system = system
        self.model = system.model
        self.data = self.model.createData()
        for c in self.contacts:
            c.constraint.bind(self.model)

    def initial_state(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        if self.environment is None:
            return np.zeros(0)
        if not self.layered:
            return np.zeros(2)
        gap = self.contacts[0].constraint.gap(self.model, self.data, q)
        return np.array([0.0, 0.0, max(0.0, -gap)])

    def _env(self, x: np.ndarray) -> tuple[float, float, float]:
        s = x[self.layout.slices["environment"]]
        return float(s[0]), float(s[1]), float(s[2]) if self.layered else 0.0

    def initial_mode(self, t: float, x: np.ndarray) -> str:
        q, v = self._split(x)
        pin.computeAllTerms(self.model, self.data, q, v)
        modes = []
        for c in self.contacts:
            gap = self._gap(c, t, x)
            if gap > GAP_TOLERANCE:
                modes.append(FREE)
                continue
            if self.layered:
                modes.append(SPRING)
                continue
            kin = c.constraint.evaluate(self.model, self.data, t)
            rate = kin.rate(v)
            if self.environment is not None:
                rate = rate - self._env(x)[1]
            residual = kin.residual - (self._env(x)[0] if self.environment is not None else 0.0)
            if c.unilateral and float(rate[0]) > VELOCITY_TOLERANCE and gap > -GAP_TOLERANCE:
                modes.append(FREE)  # leaving the surface
            elif (
                np.abs(residual).max() <= GAP_TOLERANCE and np.abs(rate).max() <= VELOCITY_TOLERANCE
            ):
                modes.append(CONSTRAINED)
            else:
                raise ConstraintError(
                    f"inconsistent initial conditions for contact '{c.name}': residual "
                    f"{np.abs(residual).max():.3g}, constrained velocity {np.abs(rate).max():.3g} "
                    "(start above the surface, or project with "
                    "pinext.contact.consistent_initial_state)"
                )
        mode = ",".join(modes)
        # a unilateral contact that would pull at the start is free
        if CONSTRAINED in modes:
            force = self._force_at(t, x, mode)
            for i, c in enumerate(self.contacts):
                if modes[i] == CONSTRAINED and pulls(c, force[self.rows[i] : self.rows[i + 1]]):
                    modes[i] = FREE
        return ",".join(modes)

    def effort(self, t, x, q, v, u, mode):  # noqa: D102
        if not self.layered or mode != SPRING:
            return None
        force, J = self._layer(t, x, q, v)
        return J[0] * force

    def constrained_acceleration(self, t, x, q, v, tau, mode):  # noqa: D102
        if CONSTRAINED not in mode:
            return None
        a, force, sdd = self._solve(t, x, q, v, tau, mode.split(","))
        self._cache = (t, v.copy(), force, sdd)
        return a

    def _cached(self, t: float, v: np.ndarray):
        if self._cache is not None and self._cache[0] == t and np.array_equal(self._cache[1], v):
            return self._cache[2], self._cache[3]
        return None

    def derivative(self, t, x, q, v, u, mode, out):  # noqa: D102
        if self.environment is None:
            return
        env = self.environment
        s_e, sd_e, w = self._env(x)
        sl = self.layout.slices["environment"]
        force = 0.0
        wdot = 0.0
        if mode == CONSTRAINED:
            cached = self._cached(t, v)
            if cached is None:
                tau = self._tau(t, x, q, v, u)
                _, f, sdd = self._solve(t, x, q, v, tau, [mode])
            else:
                f, sdd = cached
            out[sl.start] = sd_e
            out[sl.start + 1] = sdd
            return
        if self.layered:
            force, wdot = self._layer_rates(t, x, q, v, mode)
            out[sl.start + 2] = wdot
        out[sl.start] = sd_e
        out[sl.start + 1] = env.acceleration(s_e, sd_e, force)

    def energy(self, x, q, v):  # noqa: D102
        if self.environment is None:
            return 0.0
        return self.environment.energy(*self._env(x))

    def power(self, t, x, q, v, u, mode):  # noqa: D102
        p_in = 0.0
        if any(c.constraint.__dict__.get("law") is not None for c in self.contacts):
            force = self._forces(t, x, q, v, u, mode)
            pin.computeAllTerms(self.model, self.data, q, v)
            bias = np.concatenate(
                [c.constraint.evaluate(self.model, self.data, t).bias for c in self.contacts]
            )
            p_in = -float(force @ bias)
        if self.environment is None:
            return p_in, 0.0
        _, sd_e, _ = self._env(x)
        wdot = self._layer_rates(t, x, q, v, mode)[1] if self.layered else 0.0
        return p_in, self.environment.dissipation(sd_e, wdot)

    def events(self, mode) -> list[Event]:  # noqa: D102
        modes = mode.split(",")
        events = []
        for i, c in enumerate(self.contacts):
            if modes[i] == FREE:
                events.append(
                    Event(f"contact:{c.name}", self._gap_function(c), -1.0, self._impact_action(i))
                )
            elif modes[i] == CONSTRAINED and c.unilateral:
                events.append(
                    Event(
                        f"lift-off:{c.name}",
                        self._force_function(i, mode),
                        -1.0,
                        self._lift_off_action(i),
                    )
                )
            elif modes[i] == SPRING:
                events.append(
                    Event(
                        f"lift-off:{c.name}", self._layer_function(), -1.0, self._lift_off_action(i)
                    )
                )
        return events

    def metadata(self) -> dict[str, Any]:
        """Contact names and their numbers of constrained rows (for the residual audit)."""
        return {
            "contact_names": [c.name for c in self.contacts],
            "contact_rows": [int(c.constraint.m) for c in self.contacts],
        }

    def outputs(self, t, x, q, v, u, mode):  # noqa: D102
        force = self._forces(t, x, q, v, u, mode)
        pin.computeAllTerms(self.model, self.data, q, v)
        out = {
            "force": force,
            "gap": np.array([self._gap(c, t, x) for c in self.contacts]),
            "residual": np.concatenate(
                [c.constraint.evaluate(self.model, self.data, t).residual for c in self.contacts]
            ),
        }
        if self.environment is not None:
            s_e, sd_e, w = self._env(x)
            out["deformation"] = np.array([s_e])
            out["deformation_rate"] = np.array([sd_e])
            if self.layered:
                out["layer"] = np.array([w])
        return out

    # -- physics -----------------------------------------------------------------------------
    def _split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        nq, nv = self.model.nq, self.model.nv
        return x[:nq], x[nq : nq + nv]

    def _gap(self, c: Contact, t: float, x: np.ndarray) -> float:
        """Approach gap (data must hold the placements)."""
        gap = c.constraint.approach_gap(self.model, self.data, t)
        if self.environment is not None:
            s_e, _, w = self._env(x)
            gap = gap - s_e + w
        return gap

    def _tau(
        self, t: float, x: np.ndarray, q: np.ndarray, v: np.ndarray, u: np.ndarray | None = None
    ) -> np.ndarray:
        """Everything but the reactions, as simulate's right-hand side forms it."""
        system = self.system
        if u is None:
            law = getattr(system, "control", None)
            u = law(t, x) if law is not None else np.zeros(system.n_inputs)
        tau = system.joint_effort(q, v)
        if system.torque_inputs:
            tau = tau + u
        phase: Phase | None = getattr(system, "phase", None)
        for comp in system.components:
            mode = phase.get(comp.name) if phase is not None else None
            if comp is self:
                continue
            effort = comp.effort(t, x, q, v, u, mode)
            if effort is not None:
                tau = tau + effort
        return tau

    def _solve(self, t, x, q, v, tau, modes):
        """(a, forces of all contacts, s̈_e) in a phase with constrained contacts."""
        model, data = self.model, self.data
        pin.computeAllTerms(model, data, q, v)
        active = [i for i, m in enumerate(modes) if m == CONSTRAINED]
        force = np.zeros(self.rows[-1])
        if self.environment is not None:
            env = self.environment
            c = self.contacts[0]
            kin = c.constraint.evaluate(model, data, t)
            s_e, sd_e, _ = self._env(x)
            M = np.triu(data.M) + np.triu(data.M, 1).T
            J = kin.jacobian
            Minv_JT = np.linalg.solve(M, J.T)
            a_free = np.linalg.solve(M, tau - data.nle)
            gap = kin.residual[0] - s_e
            gap_rate = kin.rate(v)[0] - sd_e
            omega = c.stabilization or 0.0
            ref = -2.0 * omega * gap_rate - omega * omega * gap
            f = env.coupled_force(
                (J @ Minv_JT).item(), (J @ a_free).item(), float(kin.drift[0]), s_e, sd_e, ref
            )
            force[0] = f
            return a_free + Minv_JT[:, 0] * f, force, env.acceleration(s_e, sd_e, f)
        kins = []
        gammas = []
        for i in active:
            c = self.contacts[i]
            kin = c.constraint.evaluate(model, data, t)
            kins.append(kin)
            gammas.append(kin.drift - baumgarte(kin, v, c.stabilization))
        kin = stack(kins)
        a, f = solve_constrained(model, data, tau, kin.jacobian, np.concatenate(gammas))
        k = 0
        for i in active:
            m = self.contacts[i].constraint.m
            force[self.rows[i] : self.rows[i + 1]] = f[k : k + m]
            k += m
        return a, force, 0.0

    def _layer(self, t, x, q, v) -> tuple[float, np.ndarray]:
        """Model (d): layer force and J (calls computeAllTerms)."""
        pin.computeAllTerms(self.model, self.data, q, v)
        kin = self.contacts[0].constraint.evaluate(self.model, self.data, t)
        _, sd_e, w = self._env(x)
        wdot = -(kin.rate(v)[0] - sd_e)
        return self.environment.layer_force(w, wdot), kin.jacobian

    def _layer_rates(self, t, x, q, v, mode) -> tuple[float, float]:
        env = self.environment
        _, sd_e, w = self._env(x)
        if mode == SPRING:
            pin.computeAllTerms(self.model, self.data, q, v)
            kin = self.contacts[0].constraint.evaluate(self.model, self.data, t)
            wdot = -(kin.rate(v)[0] - sd_e)
            return env.layer_force(w, wdot), wdot
        if env.contact_damping > 0:
            return 0.0, -env.contact_stiffness * w / env.contact_damping
        return 0.0, 0.0

    def _force_at(self, t: float, x: np.ndarray, mode: str) -> np.ndarray:
        q, v = self._split(x)
        return self._forces(t, x, q, v, None, mode)

    def _forces(self, t, x, q, v, u, mode) -> np.ndarray:
        if mode is None:
            return np.zeros(self.rows[-1])
        if CONSTRAINED in mode:
            return self._solve(t, x, q, v, self._tau(t, x, q, v, u), mode.split(","))[1]
        if self.layered and mode == SPRING:
            return np.array([self._layer(t, x, q, v)[0]])
        return np.zeros(self.rows[-1])

    # -- events ------------------------------------------------------------------------------
    def _gap_function(self, c: Contact):
        def g(t: float, x: np.ndarray) -> float:
            pin.framesForwardKinematics(self.model, self.data, self._split(x)[0])
            return self._gap(c, t, x)

        return g

    def _force_function(self, i: int, mode: str):
        def g(t: float, x: np.ndarray) -> float:
            return float(self._force_at(t, x, mode)[self.rows[i]])

        return g

    def _layer_function(self):
        def g(t: float, x: np.ndarray) -> float:
            q, v = self._split(x)
            return float(self._layer(t, x, q, v)[0])

        return g

    def _impact_action(self, i: int):
        contact = self.contacts[i]

        def action(t: float, x: np.ndarray, phase: Phase):
            modes = phase.get(self.name).split(",")
            x = x.copy()
            q, v = self._split(x)
            if self.layered:  # model (d): no impact, the layer starts to push
                modes[i] = SPRING
                return x, phase.replace(self.name, ",".join(modes)), {"contact": contact.name}
            model, data = self.model, self.data
            pin.computeAllTerms(model, data, q, v)
            engaged = [k for k, m in enumerate(modes) if m == CONSTRAINED] + [i]
            kins = [self.contacts[k].constraint.evaluate(model, data, t) for k in engaged]
            kin = stack(kins)
            kin_i = kins[-1]
            rel = kin_i.rate(v)
            env_velocity = -kin.bias
            env_mass = None
            if self.environment is not None:
                s_e, sd_e, _ = self._env(x)
                rel = rel - sd_e
                env_velocity = env_velocity + sd_e
                env_mass = None if np.isinf(self.environment.mass) else self.environment.mass
            approach = float(rel[0]) if contact.constraint.m == 1 else float(np.min(rel))
            bounce = bounces(contact, approach)
            result = plastic_impact(
                model,
                data,
                q,
                v,
                kin.jacobian,
                environment_mass=env_mass,
                restitution=contact.restitution if bounce else 0.0,
                environment_velocity=env_velocity,
            )
            x[self.model.nq : self.model.nq + self.model.nv] = result.v_plus
            if self.environment is not None:
                sl = self.layout.slices["environment"]
                x[sl.start + 1] = sd_e - float(result.impulse[-1]) * self.environment.inverse_mass
            if not bounce:
                modes[i] = CONSTRAINED
                mode = ",".join(modes)
                self._sync_phase(phase.replace(self.name, mode))
                force = self._force_at(t, x, mode)
                if pulls(contact, force[self.rows[i] : self.rows[i + 1]]):
                    modes[i] = FREE
            info = {
                "contact": contact.name,
                "impulse": np.asarray(result.impulse[-contact.constraint.m :]),
                "approach_velocity": approach,
                "bounce": bounce,
            }
            return x, phase.replace(self.name, ",".join(modes)), info

        return action

    def _lift_off_action(self, i: int):
        contact = self.contacts[i]

        def action(t: float, x: np.ndarray, phase: Phase):
            modes = phase.get(self.name).split(",")
            modes[i] = FREE
            x = x.copy()
            if self.layered and self.environment.contact_damping == 0.0:
                x[self.layout.slices["environment"].start + 2] = 0.0  # w = 0 when F = k_c w = 0
            return x, phase.replace(self.name, ",".join(modes)), {"contact": contact.name}

        return action

    def _sync_phase(self, phase: Phase) -> None:
        if self.system is not None:
            self.system.phase = phase


def contact_component(
    robot: Any, contacts: Sequence[Any], environment: Any = None
) -> ContactComponent:
    """The :class:`ContactComponent` that :class:`pinext.System` assembles.

    Args:
        robot: The robot (unused beyond validation; frames resolve at ``bind``).
        contacts: :class:`Contact`, :class:`Constraint` or dict specifications (the
            ``[[contacts]]`` table / ``<contact/>`` element; keys in
            :meth:`Contact.from_dict`). An empty list with an environment takes the
            robot's file contacts.
        environment: None, a :class:`DynamicEnvironment` or a dict (``[environment]`` table:
            mass, stiffness, damping, contact_stiffness, contact_damping).
    """
    contacts = list(contacts)
    if not contacts:
        contacts = list(getattr(getattr(robot, "extensions", None), "contacts", []) or [])
    if isinstance(environment, dict):
        environment = DynamicEnvironment.from_dict(environment)
    return ContactComponent(contacts, environment)


def consistent_initial_state(
    system: System,
    q: np.ndarray,
    v: np.ndarray | None = None,
    *,
    t: float = 0.0,
    engage: float = 1e-6,
) -> np.ndarray:
    """The public initial state with q, v projected onto the contacts that are closed.

    Every rigid contact whose approach gap is at most ``engage`` [m] is taken as closed:
    (q, v) are projected onto its constraint (:func:`project_consistent`), with an
    :class:`InconsistentInitialConditionsWarning` when they moved by more than 1e-12.
    """
    comp = next((c for c in system.components if isinstance(c, ContactComponent)), None)
    q = np.array(q, dtype=float)
    v = np.zeros(system.model.nv) if v is None else np.array(v, dtype=float)
    if comp is None:
        return system.initial_state(q, v)
    closed = [
        c.constraint
        for c in comp.contacts
        if c.constraint.gap(comp.model, comp.data, q, t) <= engage
    ]
    if closed and not comp.layered:
        q_new, v_new = project_consistent(comp.model, comp.data, q, v, closed, t=t)
        moved = max(np.abs(pin.difference(comp.model, q, q_new)).max(), np.abs(v_new - v).max())
        if moved > 1e-12:
            warnings.warn(
                f"initial state projected onto {len(closed)} closed contact(s) "
                f"(moved by {moved:.3g})",
                InconsistentInitialConditionsWarning,
                stacklevel=2,
            )
        q, v = q_new, v_new
    return system.initial_state(q, v)
