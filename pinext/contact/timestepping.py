"""Time stepping for many contacts: Moreau–Jean with Pinocchio's frictional contact solvers.

The event-driven :func:`pinext.simulate` locates every impact, stick/slip switch and lift-off;
with the four feet of a quadruped or the corners of a box the events cascade. Time stepping
(Moreau 1988; Jean 1999) integrates over them at a fixed step ``h``: the contact impulses of
a step solve one frictional contact problem (Signorini and Coulomb at the velocity level),
impacts included, and the scheme needs no event location.

One step (θ = 1, velocity level), with the efforts ``τ`` of the System (inputs, joint springs
and dampers, components) evaluated at the start of the step:

.. math::

    \\tilde v = v + h\\, M^{-1} (τ - h(q, v)) \\qquad \\text{(Pinocchio's ``aba``)}

    v^+ = \\tilde v + M^{-1} J^T λ, \\qquad q^+ = q \\oplus h\\, v^+

where ``λ`` [N.s] are the contact impulses of the active point contacts, ``J`` their
Jacobian (rows: two tangents and the normal of each contact), solving the nonlinear
complementarity problem (De Saxcé's bipotential form of Coulomb's law)

.. math::

    σ = G λ + g, \\quad g = J \\tilde v + \\begin{bmatrix} 0 & 0 & φ / h \\end{bmatrix}^T,
    \\quad K_μ \\ni λ \\perp σ + μ \\|σ_T\\| e_n \\in K_μ^*

with ``G = J M^{-1} J^T`` the Delassus operator, ``φ`` the gap of each contact [m] and
``K_μ`` its friction cone. The ``φ / h`` term makes the normal condition hold at the end of
the step to first order, ``φ^+ ≈ φ + h σ_n - φ ≥ 0``: a contact closes exactly when it would
otherwise penetrate, and a penetration left by the linearisation is corrected in the next
step. Joint position limits near their bounds join the same problem as one-dimensional rows
(``σ = ±v⁺ + r/h ≥ 0 ⊥ λ ≥ 0``, r the distance to the bound), and Coulomb joint friction
as box-bounded rows (``|λ| ≤ F_c h``). The Delassus operator, its Cholesky factorisation and
the conic solve are Pinocchio's (``PointContactConstraintModel``,
``JointLimitConstraintModel``, ``JointFrictionConstraintModel``,
``ContactCholeskyDecomposition``, ``ADMMConstraintSolver`` / ``PGSConstraintSolver``).
Impacts are plastic (restitution is not modelled); Coulomb friction acts during impacts, as
in the event-driven impulse problem of :mod:`pinext.contact.impulse`.

Energy: the kinetic energy change of a step is
``½ v⁺ᵀ M v⁺ − ½ vᵀ M v = (h f + Jᵀ λ)ᵀ (v + v⁺) / 2`` (``f = τ − h(q, v)`` the smooth forces,
``M = M(q)``), so the contact impulses do the work ``λᵀ J (v + v⁺) / 2``; its negative is
booked as dissipated energy. At a plastic impact of a point mass (``J v⁺ = 0``) the
dissipation is ``½ λ_n |v_n|``, the classical loss ``½ m v_n²``. Independently, the impulse can
only remove kinetic energy from the free update: ``½ v⁺ᵀ M v⁺ − ½ ṽᵀ M ṽ = λᵀ J v⁺ − ½ λᵀ G λ
≤ 0`` whenever ``λᵀ σ ≤ 0`` (complementarity) and the gaps are closed or open (``φ ≥ 0``).

What the step does not conserve is the scheme's own, and it is booked as two terms of the
audit (:func:`step_audit`, :class:`pinext.simulation.trajectory.EnergyBalance`), so that
:meth:`pinext.Trajectory.energy_balance` closes to round-off. With the potential
``V`` (gravity and joint springs, ``∇V = g − τ_el``) and ``c = h(q, v) − g(q)`` the
gyroscopic forces, the exact change of the stored energy ``E = ½ vᵀ M(q) v + V(q)`` over a
step is (the discrete energy identity of the θ-scheme, Acary (2016), for θ = 1 and forces
held at the start of the step)

.. math::

    E^+ - E = W_{in} - D_{damp} - D_{contact} - D_{num} + S_{expl}

    D_{num} = \\tfrac12 h f^T (v^+ - v), \\qquad
    S_{expl} = \\big[V(q^+) - V(q) - h\\, v^{+T} ∇V(q)\\big]
    + \\big[\\tfrac12 v^{+T} (M(q^+) - M(q)) v^+ - h\\, v^{+T} c\\big]

``D_num`` is the numerical dissipation of the implicit (θ = 1) velocity update: the forces
work on the displacement ``h v⁺`` while the kinetic energy receives their trapezoidal work
``h fᵀ (v + v⁺) / 2``. Without an impulse in the step ``h f = M (v⁺ − v)`` and
``D_num = ½ (v⁺ − v)ᵀ M (v⁺ − v) ≥ 0`` (the θ-scheme's ``(θ − ½) ‖Δv‖²_M`` at θ = 1, Acary (2016));
it is zero at rest on the contacts. At a step with an impact it also holds
``½ h fᵀ M⁻¹ Jᵀ λ`` (the smooth forces' impulse over the step, which the midpoint booking of
the contact work counts at the mean velocity): negative, ``−½ h m g |v_n|`` for a point mass
landing, O(h) per impact. ``S_expl`` is the consistency error of evaluating the potential and
gyroscopic forces at the start of the step (symplectic Euler in the position): the second-order
Taylor remainder of ``V`` (``½ h² v⁺ᵀ ∇²V v⁺`` for a spring) and of the kinetic energy in
``q``, of either sign: a pendulum gains energy in some steps and loses it in others, the
bounded energy oscillation of a symplectic scheme. Both are O(h²) per smooth step, so their
sums over a run are O(h) and vanish with h; neither is computed as a remainder of the
balance (the residual stays a check of the step).
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pinocchio as pin
from tqdm.auto import tqdm

from ..exceptions import IntegrationError, InvalidParameter
from ..model import Robot, resolve_frame
from ..simulation.columns import input_columns, state_columns
from ..simulation.component import Phase
from ..simulation.controls import checked_control
from ..simulation.initial_state import as_initial_state
from ..simulation.outputs import output_info
from ..simulation.system import System
from ..simulation.trajectory import (
    AUDIT_EXPLICIT,
    AUDIT_NUMERICAL,
    EventRecord,
    PhaseRecord,
    Trajectory,
)
from ..validation import real, refuse_long_run, thousands
from .component import ContactComponent, _as_contact
from .coordinates import FunctionalCoordinates
from .friction import FrictionalContact
from .joint_friction import JointFriction
from .limits import EffortSaturation, JointLimit, JointLimits
from .scene import SCENE_KEY, contact_scene_items
from .unilateral import Contact

#: Conic solvers of Pinocchio accepted by :func:`simulate_timestepping`.
SOLVERS = ("admm", "pgs")


@dataclass(frozen=True)
class PointContact:
    """A point of a robot frame against a fixed plane, for time stepping.

    Attributes:
        name: Label (the contact's name, by default its frame).
        joint: Index of the joint that carries the point.
        local: Shape (3,). The point in the joint frame [m].
        plane: The plane's frame: origin on the plane, z the normal pointing to the robot.
        friction: Coulomb's coefficient μ ≥ 0.
    """

    name: str
    joint: int
    local: np.ndarray
    plane: pin.SE3
    friction: float

    @classmethod
    def from_contact(cls, model: pin.Model, contact: Contact) -> PointContact:
        """The point contact of a planar :class:`Contact` (``surface = "plane"`` or
        ``"ground"``).

        Raises:
            InvalidParameter: The contact is not a fixed plane.
        """
        c = contact.constraint
        if not (isinstance(c, FunctionalCoordinates) and c.names == ("z",) and c.law is None):
            raise InvalidParameter(
                f"time stepping takes point contacts with fixed planes (surface = 'plane' or "
                f"'ground'); contact '{contact.name}' is {c!r}"
            )
        if contact.restitution > 0.0:
            warnings.warn(
                f"contact '{contact.name}': restitution {contact.restitution} is ignored by "
                "time stepping (Moreau–Jean impacts are plastic)",
                RuntimeWarning,
                stacklevel=3,
            )
        frame = model.frames[resolve_frame(model, c.frame)]
        local = (frame.placement * c.tool).translation
        return cls(
            str(contact.name),
            int(frame.parentJoint),
            local.copy(),
            c.placement.copy(),
            float(contact.friction),
        )


@dataclass
class StepResult:
    """What one time step produced.

    Attributes:
        v: Shape (nv,). Velocity at the end of the step.
        q: Shape (nq,). Configuration at the end of the step.
        impulses: Shape (n_contacts, 3). Contact impulses in world axes [N.s] (zero when
            inactive).
        gaps: Shape (n_contacts,). Gaps at the start of the step [m] (negative: penetration).
        active: Shape (n_contacts,). Contacts in the step's contact problem.
        dissipated: Energy removed by the impulses, minus their work
            ``−λᵀ J (v + v⁺) / 2`` [J] (the contact term of the step's kinetic energy change).
        iterations: Iterations of the conic solver (0 without active contacts).
        converged: Whether the solver met its tolerances.
    """

    v: np.ndarray
    q: np.ndarray
    impulses: np.ndarray
    gaps: np.ndarray
    active: np.ndarray
    dissipated: float
    iterations: int
    converged: bool


class TimeStepper:
    """Moreau–Jean steps of a model with point contacts (see the module docstring).

    Args:
        model: The Pinocchio model (armature included).
        contacts: The :class:`PointContact` objects.
        dt: Step ``h`` [s].
        solver: ``"admm"`` (Pinocchio's ``ADMMConstraintSolver``) or ``"pgs"``
            (``PGSConstraintSolver``).
        tolerance: Absolute feasibility and complementarity tolerance of the solver
            [m/s and N.s].
        max_iterations: Iteration limit of the solver.
        margin: Contacts whose gap is below ``margin`` [m] (plus the distance they can close
            in two steps) enter the contact problem; the same for joints near their limits
            [rad or m].
        limits: Joint position limits (:class:`pinext.contact.JointLimit`) enforced as
            unilateral rows of the same problem (Pinocchio's ``JointLimitConstraintModel``:
            ``σ = ±v⁺ + r / h ≥ 0 ⊥ λ ≥ 0`` with r the distance to the limit).
        friction: Coulomb joint friction, (joint index, torque F_c [N.m or N]) pairs: rows of
            the same problem (Pinocchio's ``JointFrictionConstraintModel``, impulse bounds
            ``|λ| ≤ F_c h``: the joint sticks while that holds it, else slips against v⁺).
    """

    def __init__(
        self,
        model: pin.Model,
        contacts: Sequence[PointContact],
        dt: float,
        *,
        solver: str = "admm",
        tolerance: float = 1e-10,
        max_iterations: int = 500,
        margin: float = 1e-3,
        limits: Sequence[JointLimit] = (),
        friction: Sequence[tuple[int, float]] = (),
    ) -> None:
        if not (np.isfinite(dt) and dt > 0):
            raise InvalidParameter(f"dt must be a finite step > 0 [s], got {dt}")
        if solver not in SOLVERS:
            raise InvalidParameter(
                f"unknown solver {solver!r}; valid solvers: {', '.join(SOLVERS)}"
            )
        if not (tolerance > 0 and max_iterations >= 1 and margin >= 0):
            raise InvalidParameter(
                "tolerance must be > 0, max_iterations >= 1 and margin >= 0, got "
                f"{tolerance}, {max_iterations}, {margin}"
            )
        self.model, self.data = model, model.createData()
        self.contacts = list(contacts)
        self.dt, self.margin = float(dt), float(margin)
        n = len(self.contacts)
        if solver == "admm":
            self.solver: Any = pin.ADMMConstraintSolver(3 * max(n, 1))
            self.settings: Any = pin.ADMMSolverSettings()
            self.result: Any = pin.ADMMSolverResult()
        else:
            self.solver = pin.PGSConstraintSolver(3 * max(n, 1))
            self.settings = pin.PGSSolverSettings()
            self.result = pin.PGSSolverResult()
        self.solver_name = solver
        self.settings.absolute_feasibility_tol = tolerance
        self.settings.absolute_complementarity_tol = tolerance
        self.settings.relative_feasibility_tol = 1e-12
        self.settings.relative_complementarity_tol = 1e-12
        self.settings.max_iterations = int(max_iterations)
        self.limits = [lim for lim in limits if lim.limited]
        self.limit_model: Any = None
        self.limit_steps = 0
        if self.limits:
            nq = model.nq
            self.lower, self.upper = np.full(nq, -1e10), np.full(nq, 1e10)  # finite for Pinocchio
            for lim in self.limits:
                self.lower[lim.iq] = max(lim.lower, -1e10)
                self.upper[lim.iq] = min(lim.upper, 1e10)
            self.limit_iq = np.array([lim.iq for lim in self.limits], dtype=int)
            self.limit_iv = np.array([lim.iv for lim in self.limits], dtype=int)
            joints = sorted({model.getJointId(lim.joint) for lim in self.limits})
            self.limit_model = pin.JointLimitConstraintModel(
                model, joints, self.lower, self.upper, np.full(nq, self.margin)
            )
        self.friction = [(int(j), float(f)) for j, f in friction if f > 0.0]
        self.friction_model: Any = None
        if self.friction:
            self.friction_torque = np.array([f for _, f in self.friction])
            self.friction_model = pin.JointFrictionConstraintModel(
                model, [j for j, _ in self.friction], -self.friction_torque * self.dt,
                self.friction_torque * self.dt,
            )  # fmt: skip
        self.normals = np.array([c.plane.rotation[:, 2] for c in self.contacts]).reshape(n, 3)
        self.origins = np.array([c.plane.translation for c in self.contacts]).reshape(n, 3)
        self.locals = np.array([c.local for c in self.contacts]).reshape(n, 3)
        self.joints = [c.joint for c in self.contacts]

    def points(self, data: pin.Data) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(world positions (n, 3) [m], gaps (n,) [m], normal approach speeds (n,) [m/s]) of
        the contact points, from the joint placements and velocities in ``data`` (computed
        in Pinocchio's WORLD convention)."""
        n = len(self.contacts)
        positions, closing = np.empty((n, 3)), np.empty(n)
        for k, j in enumerate(self.joints):
            m, vj = data.oMi[j], data.v[j]  # spatial velocity in world axes at the origin
            p = m.rotation @ self.locals[k] + m.translation
            positions[k] = p
            w = vj.angular
            cross = (
                w[1] * p[2] - w[2] * p[1],
                w[2] * p[0] - w[0] * p[2],
                w[0] * p[1] - w[1] * p[0],
            )
            closing[k] = -self.normals[k] @ (vj.linear + cross)
        gaps = np.einsum("ij,ij->i", positions - self.origins, self.normals)
        return positions, gaps, closing

    def _select_limits(self, q: np.ndarray, v: np.ndarray) -> int:
        """Select the limit rows of the joints within ``margin`` (plus two steps of travel)
        of a limit; return their number."""
        if self.limit_model is None:
            return 0
        reach = np.full(self.model.nq, self.margin)
        reach[self.limit_iq] += 2.0 * self.dt * np.abs(v[self.limit_iv])
        near = (q[self.limit_iq] - self.lower[self.limit_iq] <= reach[self.limit_iq]) | (
            self.upper[self.limit_iq] - q[self.limit_iq] <= reach[self.limit_iq]
        )
        if not near.any():
            return 0
        self.limit_model.setPositionLimitAndMargin(self.lower, self.upper, reach)
        self.limit_model.makeSelectionFilteredByLimitProximity(q)
        return int(self.limit_model.residualSize())

    def step(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray) -> StepResult:
        """One step from (q, v) under the efforts ``tau`` [N.m or N] (held over the step)."""
        model, data, dt = self.model, self.data, self.dt
        n = len(self.contacts)
        world = pin.Convention.WORLD  # data.oMi and data.v (world axes) for the contact points
        v_free = v + dt * pin.aba(model, data, q, v, tau, world)
        impulses = np.zeros((n, 3))
        positions, gaps, closing = self.points(data)
        active = gaps <= self.margin + 2.0 * dt * np.maximum(closing, 0.0)
        limit_rows = self._select_limits(q, v)
        if not active.any() and not limit_rows and self.friction_model is None:
            return StepResult(
                v_free, pin.integrate(model, q, v_free * dt), impulses, gaps, active, 0.0, 0, True
            )
        pin.crba(model, data, q, world)  # M for the Delassus operator
        models = pin.StdVec_ConstraintModel()
        for k in np.flatnonzero(active).tolist():
            c = self.contacts[k]
            rotation = c.plane.rotation
            on_plane = positions[k] - gaps[k] * self.normals[k]
            joint_rotation = data.oMi[c.joint].rotation
            point = pin.PointContactConstraintModel(
                model,
                0,
                pin.SE3(rotation, on_plane),  # the plane's point under the contact point
                c.joint,
                pin.SE3(joint_rotation.T @ rotation, c.local),  # same axes, on the robot
            )
            point.setFriction(c.friction)
            models.append(pin.ConstraintModel(point))
        if limit_rows:
            models.append(pin.ConstraintModel(self.limit_model))
            data.q_in = q  # the limit rows read the configuration there
        if self.friction_model is not None:  # bounds on the impulse over this step
            self.friction_model.setFrictionLowerLimit(-self.friction_torque * dt)
            self.friction_model.setFrictionUpperLimit(self.friction_torque * dt)
            models.append(pin.ConstraintModel(self.friction_model))
        datas = pin.StdVec_ConstraintData()
        for cm in models:
            datas.append(cm.createData())
            cm.calc(model, data, datas[-1])
        cholesky = pin.ContactCholeskyDecomposition(model, data, models, datas)
        cholesky.compute(model, data, models, datas, 1e-12)
        delassus = cholesky.getDelassusOperatorCholeskyExpression()
        jacobian = pin.getConstraintsJacobian(model, data, models, datas).reshape(-1, model.nv)
        g = jacobian @ v_free
        n_rows = 3 * int(active.sum())
        g[2:n_rows:3] += gaps[active] / dt  # rows (t1, t2, n) per contact, in the plane's axes
        if limit_rows:  # then the limits: r = q − lower or upper − q, rows ±1
            limit_data = datas[len(datas) - 1 - (self.friction_model is not None)]
            g[n_rows : n_rows + limit_rows] += (
                np.asarray(limit_data.extract().constraint_residual) / dt
            )
            self.limit_steps += 1
        converged = bool(self.solver.solve(delassus, g, models, datas, self.settings, self.result))
        lam = np.array(self.result.retrieveConstraintImpulses()).reshape(-1)
        pin.cholesky.decompose(model, data)
        v_next = v_free + pin.cholesky.solve(model, data, jacobian.T @ lam)
        dissipated = -0.5 * float(lam @ (jacobian @ (v + v_next)))
        per_contact = lam[:n_rows].reshape(-1, 3)
        for row, k in enumerate(np.flatnonzero(active).tolist()):
            impulses[k] = self.contacts[k].plane.rotation @ per_contact[row]
        return StepResult(
            v_next,
            pin.integrate(model, q, v_next * dt),
            impulses,
            gaps,
            active,
            float(dissipated),
            int(self.result.iterations),
            converged,
        )


class StepAudit(NamedTuple):
    """The scheme's own energy terms of one time step [J] (see :func:`step_audit`)."""

    #: ``½ h fᵀ (v⁺ − v)``: removed by the implicit (θ = 1) velocity update.
    numerical_dissipation: float
    #: Added by the explicit evaluation of the potential and gyroscopic forces.
    explicit_error: float


def step_audit(
    system: System,
    model: pin.Model,
    data: pin.Data,
    q: np.ndarray,
    v: np.ndarray,
    tau: np.ndarray,
    result: StepResult,
    h: float,
) -> StepAudit:
    """The numerical dissipation and the explicit-evaluation error of one Moreau–Jean step.

    With ``f = τ − h(q, v)`` the smooth forces of the step, ``τ_el`` the joint springs
    (``∇V = g − τ_el`` with the gravity, ``c = h(q, v) − g(q)`` the gyroscopic forces):

    .. math::

        D_{num} = \\tfrac12 h f^T (v^+ - v)

        S_{expl} = E_{mech}(q^+, v^+) - E_{mech}(q, v^+) - h\\, v^{+T} (h(q, v) - τ_{el}(q))

    where ``E_mech(q, v) = ½ vᵀ M(q) v + V(q)`` (:meth:`System.mechanism_energy`); the second
    line is ``[V(q⁺) − V(q) − h v⁺ᵀ ∇V(q)] + [½ v⁺ᵀ (M(q⁺) − M(q)) v⁺ − h v⁺ᵀ c]``, the
    Taylor remainders of the potential and the kinetic energy in ``q`` (the gravity cancels).
    The step's energy identity (module docstring, after Acary (2016)) is then
    ``ΔE = W_in − D_damp − D_contact − D_num + S_expl`` up to round-off. Without an impulse in
    the step ``D_num = ½ (v⁺ − v)ᵀ M (v⁺ − v) ≥ 0``: the implicit velocity update only
    dissipates. With one it also holds ``½ h fᵀ M⁻¹ Jᵀ λ`` (O(h) per impact, negative at a
    landing under gravity); at rest on the contacts it is zero.

    Args:
        system: The System (its energies and joint springs).
        model: The stepper's model (armature included) and a data for it.
        data: Workspace for ``model``.
        q: Shape (nq,). Configuration at the start of the step.
        v: Shape (nv,). Velocity at the start of the step.
        tau: Shape (nv,). Efforts held over the step [N.m or N].
        result: The step (``result.q``, ``result.v``).
        h: Step [s].
    """
    bias = pin.nonLinearEffects(model, data, q, v)
    v_next = result.v
    numerical = 0.5 * h * float((tau - bias) @ (v_next - v))
    springs = system.joint_effort(q, np.zeros_like(v))
    after = sum(system.mechanism_energy(result.q, v_next).values())
    before = sum(system.mechanism_energy(q, v_next).values())
    explicit = after - before - h * float(v_next @ (bias - springs))
    return StepAudit(numerical, float(explicit))


def contact_specs(system: System, contacts: Sequence[Any] | None = None) -> list[Contact]:
    """The contacts of a run: ``contacts`` (Contact objects, constraints or dicts), or the
    contacts of the System's contact components, or else the ``[[contacts]]`` of the robot's
    extension files."""
    if contacts is None:
        found: list[Contact] = []
        for comp in system.components:
            if isinstance(comp, ContactComponent):
                found.extend(comp.contacts)
            elif isinstance(comp, FrictionalContact):
                found.append(comp.contact)
        specs: Sequence[Any] = found or list(system.robot.extensions.contacts or ())
    else:
        specs = contacts
    return [_as_contact(s) for s in specs]


def point_contacts(system: System, contacts: Sequence[Any] | None = None) -> list[PointContact]:
    """The :class:`PointContact` objects of :func:`contact_specs`."""
    return [PointContact.from_contact(system.model, c) for c in contact_specs(system, contacts)]


def _effort_law(system: System, phase: Phase):
    """``efforts(t, x, u) -> (τ, work_rate_efforts)``: the System's generalized efforts
    without the contact rows, and the part of them that is not joint elasticity (for the
    input work)."""
    step = system.acceleration_step(phase)
    if step.mechanism is not None:
        raise InvalidParameter(
            f"component '{step.mechanism.name}' replaces the mechanism; time stepping "
            "integrates Pinocchio's model only"
        )
    for comp in system.components:
        if isinstance(
            comp,
            (ContactComponent, FrictionalContact, JointLimits, EffortSaturation, JointFriction),
        ):
            continue
        mode = phase.get(comp.name)
        if comp.states() or comp.is_constrained(mode):
            raise InvalidParameter(
                f"component '{comp.name}' ({type(comp).__name__}) has its own states or "
                "constraint rows, which time stepping does not integrate; valid: components "
                "that only add efforts or inertia (or use the event-driven simulate)"
            )
    acting = [
        (c, m)
        for c, m in step.acting
        if not isinstance(c, (ContactComponent, FrictionalContact, JointLimits, JointFriction))
    ]
    q_block, v_block = system.layout["q"], system.layout["v"]

    def efforts(t: float, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        q, v = x[q_block], x[v_block]
        tau = system.joint_effort(q, v)
        if system.torque_inputs:
            tau = tau + u
        for comp, mode in acting:
            effort = comp.effort(t, x, q, v, u, mode)
            if effort is not None:
                tau = tau + effort
        return tau

    return step, efforts


def simulate_timestepping(
    system_or_robot: System | Robot,
    t_final: float,
    *,
    dt: float | None = None,
    x0: np.ndarray | None = None,
    q0: np.ndarray | None = None,
    v0: np.ndarray | None = None,
    control: Any = None,
    output_dt: float | None = None,
    progress: bool | None = None,
    contacts: Sequence[Any] | None = None,
    solver: str = "admm",
    tolerance: float = 1e-10,
    max_iterations: int = 500,
    margin: float = 1e-3,
    force: bool = False,
) -> Trajectory:
    """Simulate with Moreau–Jean time stepping (``simulate(..., method="timestepping")``).

    Each step is :meth:`TimeStepper.step`: the free velocity from Pinocchio's ``aba`` under
    the System's efforts (inputs, joint springs and dampers, effort components), then the
    frictional contact and joint-limit impulses from Pinocchio's Delassus operator and conic
    solver, then ``q⁺ = q ⊕ h v⁺``. The System's joint limits (``joint_limits=True``) are
    enforced; loops, prescribed joints and components with their own states (drive
    dynamics) are not integrated by this method (an error names them).

    Args:
        system_or_robot: The :class:`System`, or a :class:`Robot` (its ``[[contacts]]``, e.g.
            ``surface = "ground"`` at the feet, become the point contacts; the System is
            built without event-driven contact components).
        t_final: End time [s].
        dt: Step ``h`` [s] (required).
        x0: Initial public state (see :func:`pinext.simulate`).
        q0: Initial configuration (default: neutral).
        v0: Initial velocity (default: zero).
        control: Inputs: None, a constant vector, a :class:`pinext.Schedule` or ``u(t, x)``,
            held constant over each step.
        output_dt: Sample period [s] (rounded to a multiple of ``dt``); None: every step.
        progress: Show a tqdm progress bar: True from the start, False never, None
            (default) once the run has lasted 2 s.
        contacts: The point contacts (Contact objects, constraints or dicts); default: the
            System's planar contacts, else the robot's ``[[contacts]]``.
        solver: ``"admm"`` or ``"pgs"`` (Pinocchio's conic solvers).
        tolerance: Solver tolerance (absolute feasibility and complementarity).
        max_iterations: Solver iteration limit.
        margin: Activation distance of the contacts [m].
        force: Run even when the first steps' timing estimates more than
            :data:`pinext.validation.LONG_RUN` seconds for the whole run.

    Returns:
        The :class:`Trajectory`. Besides the energies and inputs, its outputs hold, per
        contact, ``contact.force`` (shape (N, n, 3), mean force over the step that starts at
        the sample, world axes [N]), ``contact.residual`` (gap where negative [m]),
        ``contact.closed`` (in the step's contact problem) and ``contact.gap`` [m];
        ``meta["stats"]`` counts steps, solver iterations and unconverged solves (with the
        times of the first 20).
        ``state("dissipated_energy")`` accumulates the contact dissipation plus joint damping;
        the outputs ``audit.numerical_dissipation`` and ``audit.explicit_error`` accumulate
        the scheme's own energy terms (:func:`step_audit`), which
        :meth:`pinext.Trajectory.energy_balance` books, so that its residual is round-off.

    Raises:
        InvalidParameter: Missing or bad ``dt``, unknown solver, or a component that time
            stepping cannot integrate (own states, constraint rows other than contacts).
        IntegrationError: The state became non-finite.
    """
    if dt is None:
        raise InvalidParameter("method='timestepping' needs a step dt [s], e.g. dt=1e-3")
    t_final = real("t_final", t_final, unit="[s]", low=0.0, strict=True)
    dt = real("dt", dt, unit="[s]", low=0.0, strict=True)
    if t_final / dt < MIN_STEPS - 1e-9:
        raise InvalidParameter(
            f"dt = {dt:g} s gives {t_final / dt:.3g} steps for t_final = {t_final:g} s; time "
            f"stepping is first order and needs at least {MIN_STEPS} steps (dt <= "
            f"{t_final / MIN_STEPS:g} s); a typical step is 1e-3 s"
        )
    if isinstance(system_or_robot, System):
        system = system_or_robot
    else:
        system = System(system_or_robot, contacts=())
    specs = contact_specs(system, contacts)
    found = [PointContact.from_contact(system.model, c) for c in specs]
    x = as_initial_state(system, x0, q0, v0)
    if not np.all(np.isfinite(x)):
        raise IntegrationError("non-finite initial state", 0.0, x)
    law = checked_control(control, system, x)
    phase = system.initial_phase(0.0, x, law)
    step, efforts = _effort_law(system, phase)
    stepper = TimeStepper(
        step.model,
        found,
        dt,
        solver=solver,
        tolerance=tolerance,
        max_iterations=max_iterations,
        margin=margin,
        limits=[lim for c in system.components if isinstance(c, JointLimits) for lim in c.limits],
        friction=[
            (system.model.getJointId(name), float(torque))
            for c in system.components
            if isinstance(c, JointFriction)
            for name, torque in zip(c.joints, c.torque, strict=True)
        ],
    )
    n_steps = int(np.ceil(t_final / dt - 1e-9))
    _refuse_penetration(stepper, found, x[system.layout["q"]], x[system.layout["v"]])
    if not force and n_steps > TIMED_ABOVE:
        _refuse_long(stepper, efforts, law, system, x, dt, t_final, n_steps)
    every = 1 if output_dt is None else max(1, int(round(float(output_dt) / dt)))
    q_block, v_block = system.layout["q"], system.layout["v"]
    work_at = system.layout["input_work"].start
    lost_at = system.layout["dissipated_energy"].start
    n = len(found)
    times, states, forces, gaps, closed = [], [], [], [], []
    numerical = explicit = 0.0  # the scheme's own energy terms, accumulated [J]
    audit: list[tuple[float, float]] = []
    audit_data = stepper.model.createData()
    events: list[EventRecord] = []
    iterations = unconverged = 0
    unconverged_at: list[float] = []
    was_closed = np.zeros(n, dtype=bool)
    bar = tqdm(
        total=float(t_final),
        unit="s",
        disable=progress is False,
        delay=2.0 if progress is None else 0.0,
        desc="timestepping",
        bar_format="{l_bar}{bar}| {n:.3f}/{total:.3f} s [{elapsed}<{remaining}]",
    )
    started = time.perf_counter()
    t = 0.0
    try:
        for k in range(n_steps):
            h = min(dt, t_final - t) if k == n_steps - 1 else dt
            if h != stepper.dt:
                stepper.dt = h
            u = np.asarray(law(t, x), dtype=float)
            q, v = x[q_block], x[v_block]
            tau = efforts(t, x, u)
            result = stepper.step(q, v, tau)
            if k % every == 0:
                times.append(t)
                states.append(x.copy())
                forces.append(result.impulses / h)
                gaps.append(result.gaps.copy())
                closed.append(result.active.copy())
                audit.append((numerical, explicit))
            iterations += result.iterations
            if not result.converged:
                unconverged += 1
                if len(unconverged_at) < 20:
                    unconverged_at.append(t)
            touching = np.linalg.norm(result.impulses, axis=1) > 0.0 if n else was_closed
            for i in np.flatnonzero(touching != was_closed):
                kind = "touchdown" if touching[i] else "lift-off"
                events.append(EventRecord(t, f"{kind}:{found[i].name}", {"contact": found[i].name}))
            was_closed = touching
            x_next = x.copy()
            x_next[q_block], x_next[v_block] = result.q, result.v
            x_next[work_at] += float((tau - system.joint_effort(q, v)) @ result.v) * h
            x_next[lost_at] += result.dissipated + float(system.damping * v @ result.v) * h
            terms = step_audit(system, stepper.model, audit_data, q, v, tau, result, h)
            numerical += terms.numerical_dissipation
            explicit += terms.explicit_error
            t = t + h
            x = x_next
            if not np.all(np.isfinite(x)):
                raise IntegrationError("non-finite state", t, states[-1] if states else x)
            if progress is not False:
                bar.update(h)
        times.append(t)
        states.append(x.copy())
        forces.append(np.zeros((n, 3)))
        positions_gaps = stepper.points(_placements(stepper, x[q_block], x[v_block]))[1]
        gaps.append(positions_gaps)
        closed.append(np.zeros(n, dtype=bool))
        audit.append((numerical, explicit))
    finally:
        bar.close()
    wall = time.perf_counter() - started
    traj = _trajectory(system, law, np.array(times), np.array(states), events, t_final)
    traj.outputs["contact.force"] = np.array(forces).reshape(len(times), n, 3)
    gap_array = np.array(gaps).reshape(len(times), n)
    traj.outputs["contact.gap"] = gap_array
    traj.outputs["contact.residual"] = np.minimum(gap_array, 0.0)
    traj.outputs["contact.closed"] = np.array(closed, dtype=float).reshape(len(times), n)
    audit_array = np.array(audit).reshape(len(times), 2)
    traj.outputs[AUDIT_NUMERICAL] = audit_array[:, 0]
    traj.outputs[AUDIT_EXPLICIT] = audit_array[:, 1]
    traj.meta["contact_rows"] = [1] * n
    traj.meta["contact_names"] = [c.name for c in found]
    if specs:
        traj.meta[f"{SCENE_KEY}.contact"] = contact_scene_items(specs, None, component="contact")
    traj.meta["stats"] = {
        "steps": n_steps,
        "dt": dt,
        "solver": solver,
        "solver_iterations": int(iterations),
        "unconverged": int(unconverged),
        "unconverged_at": unconverged_at,
        "limit_steps": stepper.limit_steps,
        "wall_time": wall,
        "method": "timestepping",
    }
    if unconverged:
        warnings.warn(
            f"the contact solver did not converge in {unconverged} of {n_steps} steps "
            f"(tolerance {tolerance:g}, {max_iterations} iterations; first at t = "
            f"{', '.join(f'{t:.4g}' for t in unconverged_at[:3])} s): those steps use its last "
            "iterate; more iterations (max_iterations of pinext.contact.simulate_timestepping) "
            "or a looser tolerance let it converge",
            RuntimeWarning,
            stacklevel=2,
        )
    return traj


#: Fewest steps of a time-stepping run (first order: fewer give an answer off by O(1)).
MIN_STEPS = 10
#: Deepest start below a contact surface accepted [m] (contacts start closed or open, never
#: buried).
START_PENETRATION = 1e-2
#: Steps timed at the start to estimate a long run's wall time, and the number of steps of a
#: run above which they are timed (shorter runs start at once).
TIMED_STEPS = 5
TIMED_ABOVE = 100_000


def _refuse_penetration(stepper: TimeStepper, found, q: np.ndarray, v: np.ndarray) -> None:
    """Refuse a start with a contact point buried below its surface."""
    if not found:
        return
    gaps = stepper.points(_placements(stepper, q, v))[1]
    deepest = int(np.argmin(gaps))
    if gaps[deepest] < -START_PENETRATION:
        raise InvalidParameter(
            f"contact '{found[deepest].name}' starts {-gaps[deepest]:.3g} m below its surface "
            f"(gap {gaps[deepest]:.3g} m; at most {START_PENETRATION:g} m is accepted): start "
            "the robot on or above the surface (q0)"
        )


def _refuse_long(stepper, efforts, law, system, x, dt, t_final, n_steps) -> None:
    """Refuse a run whose first steps, timed, give an estimate above ``LONG_RUN``."""
    q_block, v_block = system.layout["q"], system.layout["v"]
    started = time.perf_counter()
    for _ in range(min(TIMED_STEPS, n_steps)):
        u = np.asarray(law(0.0, x), dtype=float)
        stepper.step(x[q_block], x[v_block], efforts(0.0, x, u))
    per_step = (time.perf_counter() - started) / min(TIMED_STEPS, n_steps)
    refuse_long_run(
        f"dt = {dt:g} s for {t_final:g} s is {thousands(n_steps)} steps",
        n_steps * per_step,
        force=False,
        hint="take a larger dt (1e-3 s is typical)",
    )


def _placements(stepper: TimeStepper, q: np.ndarray, v: np.ndarray) -> pin.Data:
    pin.aba(stepper.model, stepper.data, q, v, np.zeros(stepper.model.nv), pin.Convention.WORLD)
    return stepper.data


def _trajectory(
    system: System, law: Any, t: np.ndarray, x: np.ndarray, events: list, t_final: float
) -> Trajectory:
    """The :class:`Trajectory` of the samples: energies, inputs and the viewer's metadata."""
    outputs: dict[str, list] = {}
    for ti, xi in zip(t, x, strict=True):
        for name, energy in system.energy_terms(xi).items():
            outputs.setdefault(f"energy.{name}", []).append(energy)
        outputs.setdefault("input", []).append(np.asarray(law(ti, xi), dtype=float))
    robot, model = system.robot, system.model
    sidecar = robot.extensions.sources[-1] if robot.extensions.sources else None
    meta: dict[str, Any] = {
        "robot": model.name,
        "urdf": str(Path(robot.path).resolve()) if robot.path else None,
        "nq": model.nq,
        "nv": model.nv,
        "joint_names": list(model.names)[1:],
        "flexible": [
            dataclasses.asdict(f)
            for f in robot.flexible
            if dataclasses.is_dataclass(f) and not isinstance(f, type)
        ],
        "sidecar": str(Path(sidecar).resolve()) if sidecar and sidecar.endswith(".toml") else None,
        "drives": list(system.drives),
        "reductions": {j: float(getattr(d, "ratio", 1.0)) for j, d in system.drives.items()},
        "state_columns": state_columns(system),
        "input_columns": input_columns(system),
        "outputs": output_info(system),
    }
    return Trajectory(
        t=t,
        x=x,
        layout={k: (s.start, s.stop) for k, s in system.layout.items()},
        phase_index=np.zeros(t.size, dtype=int),
        phases=[PhaseRecord(0.0, float(t_final), "timestepping", ())],
        events=events,
        outputs={k: np.asarray(v, dtype=float) for k, v in outputs.items()},
        meta=meta,
    )
