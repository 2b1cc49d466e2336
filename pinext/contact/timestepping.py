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

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pinocchio as pin

from ..exceptions import InvalidParameter
from ..model import resolve_frame
from ..simulation.component import STEPPED_KINDS, Phase, stepped_components
from ..simulation.system import System
from .component import _as_contact
from .coordinates import FunctionalCoordinates
from .limits import JointLimit
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
        driven: The work of the prescribed joints' impulses [J] (input work), left out of
            ``dissipated``.
    """

    v: np.ndarray
    q: np.ndarray
    impulses: np.ndarray
    gaps: np.ndarray
    active: np.ndarray
    dissipated: float
    iterations: int
    converged: bool
    driven: float = 0.0


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
        closures: Closures (:class:`pinext.constraints.closure.Closure`: loops, ``<mimic>``
            couplings) whose own rows ``B v⁺ + Θ / h = 0`` (:meth:`Closure.state_kinematics`:
            their residual Θ and Jacobian B) the step holds exactly, closing them at its end;
            the frictional problem is then solved on the mechanism they leave
            (:class:`HeldRows`).
        prescribed: Prescribed joints (:class:`pinext.constraints.prescribed.Prescribed`),
            held the same way on their law at the end of each step.
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
        closures: Sequence[Any] = (),
        prescribed: Sequence[Any] = (),
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
        self.contacts, self.closures = list(contacts), list(closures)
        self.prescribed = list(prescribed)
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
        self.engaged: np.ndarray | None = None  # (limit, lower/upper side) engaged
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
        self.friction = sorted((int(j), float(f)) for j, f in friction if f > 0.0)
        self.friction_model: Any = None
        if self.friction:
            self.friction_torque = np.array([f for _, f in self.friction])
            bound = np.zeros(model.nv)  # the constructor reads the bounds at the joints' dofs
            for j, f in self.friction:
                bound[model.joints[j].idx_v] = f * self.dt
            self.friction_model = pin.JointFrictionConstraintModel(
                model, [j for j, _ in self.friction], -bound, bound
            )
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
        of a limit; return their number. A side that the first step finds violated (a start
        outside the range) engages once the joint is back inside it, as the event-driven
        :class:`pinext.contact.JointLimits` do: its row would otherwise demand the whole
        violation back in one step."""
        if self.limit_model is None:
            return 0
        iq = self.limit_iq
        inside = np.c_[q[iq] >= self.lower[iq], q[iq] <= self.upper[iq]]
        self.engaged = inside if self.engaged is None else self.engaged | inside
        lower, upper = self.lower.copy(), self.upper.copy()
        lower[iq[~self.engaged[:, 0]]] = -1e10
        upper[iq[~self.engaged[:, 1]]] = 1e10
        reach = np.full(self.model.nq, self.margin)
        reach[iq] += 2.0 * self.dt * np.abs(v[self.limit_iv])
        near = (q[iq] - lower[iq] <= reach[iq]) | (upper[iq] - q[iq] <= reach[iq])
        if not near.any():
            return 0
        self.limit_model.setPositionLimitAndMargin(lower, upper, reach)
        self.limit_model.makeSelectionFilteredByLimitProximity(q)
        return int(self.limit_model.residualSize())

    def step(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray, t: float = 0.0) -> StepResult:
        """One step from (q, v) at time t under the efforts ``tau`` [N.m or N] (held over
        the step)."""
        model, data, dt = self.model, self.data, self.dt
        n = len(self.contacts)
        world = pin.Convention.WORLD  # data.oMi and data.v (world axes) for the contact points
        v_free = v + dt * pin.aba(model, data, q, v, tau, world)
        impulses = np.zeros((n, 3))
        positions, gaps, closing = self.points(data)
        active = gaps <= self.margin + 2.0 * dt * np.maximum(closing, 0.0)
        limit_rows = self._select_limits(q, v)
        held = HeldRows(self, q, v, v_free, t) if self.closures or self.prescribed else None
        v_held = v_free if held is None else held.v_free
        if not (active.any() or limit_rows) and self.friction_model is None:
            lost, driven = (0.0, 0.0) if held is None else held.work(v, v_held, 0.0 * v)
            q_next = pin.integrate(model, q, v_held * dt)
            return StepResult(v_held, q_next, impulses, gaps, active, lost, 0, True, driven)
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
        jacobian = pin.getConstraintsJacobian(model, data, models, datas).reshape(-1, model.nv)
        if held is None:
            cholesky = pin.ContactCholeskyDecomposition(model, data, models, datas)
            cholesky.compute(model, data, models, datas, 1e-12)
            delassus = cholesky.getDelassusOperatorCholeskyExpression()
        else:  # on the mechanism the closures leave: J M_c⁻¹ Jᵀ, dense
            delassus = pin.DelassusOperatorDense(jacobian @ held.minv @ jacobian.T)
        g = jacobian @ v_held
        n_rows = 3 * int(active.sum())
        g[2:n_rows:3] += gaps[active] / dt  # rows (t1, t2, n) per contact, in the plane's axes
        if limit_rows:  # then the limits: r = q − lower or upper − q, rows ±1
            limit_data = datas[len(datas) - 1 - (self.friction_model is not None)]
            residual = np.asarray(limit_data.extract().constraint_residual)
            g[n_rows : n_rows + limit_rows] += residual / dt
            self.limit_steps += 1
        converged = bool(self.solver.solve(delassus, g, models, datas, self.settings, self.result))
        lam = np.array(self.result.retrieveConstraintImpulses()).reshape(-1)
        driven = 0.0
        if held is None:
            pin.cholesky.decompose(model, data)
            v_next = v_free + pin.cholesky.solve(model, data, jacobian.T @ lam)
            dissipated = -0.5 * float(lam @ (jacobian @ (v + v_next)))
        else:
            v_next = v_held + held.minv @ (jacobian.T @ lam)
            dissipated, driven = held.work(v, v_next, jacobian.T @ lam)
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
            driven,
        )


class HeldRows:
    """The rows a step holds exactly: the closures' ``B v⁺ + Θ / h = 0`` (their own rows,
    :meth:`pinext.constraints.closure.Closure.state_kinematics`) and the prescribed joints'
    ``v⁺ = (q_ref(t + h) − q) / h`` (their law at the step's end, the angle's difference
    wrapped for a continuous joint), by impulses ``Bᵀ μ``. ``v_free`` is the free velocity
    with them held, ``minv`` the inverse inertia of the mechanism they leave,
    ``M_c⁻¹ = M⁻¹ − W S⁺ Wᵀ`` (``W = M⁻¹ Bᵀ``, ``S = B W``; S⁺ the pseudo-inverse: dependent
    rows, such as a planar loop's rows out of its plane, take no impulse), on which the
    frictional problem is solved: ``v⁺ = v_free + M_c⁻¹ Jᵀ λ``."""

    def __init__(self, stepper: TimeStepper, q, v, v_free, t: float) -> None:
        model, data, h = stepper.model, stepper.data, stepper.dt
        rows = [c.state_kinematics(q, v) for c in stepper.closures]
        b = [k.jacobian for k in rows]
        theta = [k.residual for k in rows]
        for p in stepper.prescribed:
            b.append(p.row)
            angle = np.arctan2(q[p.iq + 1], q[p.iq]) if p.continuous else q[p.iq]
            error = angle - p.law(t + h)[0]
            theta.append([np.angle(np.exp(1j * error)) if p.continuous else error])
        self.b, self.n_closure = np.vstack(b), sum(k.jacobian.shape[0] for k in rows)
        mass = pin.crba(model, data, q)
        self.mass = np.triu(mass) + np.triu(mass, 1).T
        minv = np.linalg.inv(self.mass)
        w = minv @ self.b.T
        self.pinv = np.linalg.pinv(self.b @ w, rcond=1e-10, hermitian=True)
        self.mu = -self.pinv @ (self.b @ v_free + np.concatenate(theta) / h)
        self.v_free_in, self.w = v_free, w
        self.v_free = v_free + w @ self.mu
        self.minv = minv - w @ self.pinv @ w.T

    def work(self, v: np.ndarray, v_next: np.ndarray, contact: np.ndarray) -> tuple[float, float]:
        """(the energy the impulses remove, the prescribed joints' input work) [J], given the
        contacts' ``Jᵀ λ``: the impulses' work is ``½ (M (v⁺ − ṽ))ᵀ (v + v⁺)``, of which
        ``½ μ_pᵀ B_p (v + v⁺)`` (``μ = μ₀ − S⁺ Wᵀ Jᵀ λ``) drives the prescribed joints."""
        total = self.mass @ (v_next - self.v_free_in)
        mu = self.mu - self.pinv @ (self.w.T @ contact)
        driven = 0.5 * float(mu[self.n_closure :] @ (self.b[self.n_closure :] @ (v + v_next)))
        return -0.5 * float(total @ (v + v_next)) + driven, driven


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
        found = [c for comp in stepped_components(system, "contact") for c in comp.contacts]
        specs: Sequence[Any] = found or list(system.robot.extensions.contacts or ())
    else:
        specs = contacts
    return [_as_contact(s) for s in specs]


def point_contacts(system: System, contacts: Sequence[Any] | None = None) -> list[PointContact]:
    """The :class:`PointContact` objects of :func:`contact_specs`."""
    return [PointContact.from_contact(system.model, c) for c in contact_specs(system, contacts)]


def _effort_law(system: System, phase: Phase):
    """``(step, efforts, integrated)``: the phase's acceleration step, ``efforts(t, x, u) ->
    τ`` (the System's generalized efforts without the components the step holds, by their
    :attr:`~pinext.simulation.component.Component.stepped_kind`, and without those whose
    states the steps integrate; the inputs' saturation acts) and the components whose states
    the steps integrate, with their modes (for :class:`ComponentStates`)."""
    step = system.acceleration_step(phase)
    if step.mechanism is not None:
        raise InvalidParameter(
            f"component '{step.mechanism.name}' replaces the mechanism; time stepping "
            "integrates Pinocchio's model only"
        )
    integrated = []
    for comp in system.components:
        if comp.stepped_kind not in (None, *STEPPED_KINDS):
            raise InvalidParameter(
                f"component '{comp.name}' ({type(comp).__name__}) has stepped_kind "
                f"{comp.stepped_kind!r}; valid: None or one of {', '.join(STEPPED_KINDS)}"
            )
        if comp.stepped_kind is not None:
            if comp.states():
                raise InvalidParameter(
                    f"component '{comp.name}' ({type(comp).__name__}) has states of its own "
                    f"({', '.join(name for name, _ in comp.states())}: a compliant tool or "
                    "layer, a dynamic environment), which time stepping does not integrate: "
                    "its contacts are rigid; valid: rigid contacts, or the event-driven simulate"
                )
            continue
        mode = phase.get(comp.name)
        if mode is not None:
            raise InvalidParameter(
                f"component '{comp.name}' ({type(comp).__name__}) has modes ({mode!r} at the "
                "start: a lossy gear's direction of power flow, a backlash's flank) that time "
                "stepping does not switch; valid: lossless gears, elastic drives, or the "
                "event-driven simulate"
            )
        if comp.is_constrained(mode) or (comp.states() and comp.stepped_states() is None):
            raise InvalidParameter(
                f"component '{comp.name}' ({type(comp).__name__}) has its own states (other "
                "than rotors' angles and velocities, motors' currents) or constraint rows, "
                "which time stepping does not integrate; valid: components that add efforts or "
                "inertia, drives (DC motors or torque sources, rigid or behind elastic "
                "transmissions, no backlash nor lossy gears), or the event-driven simulate"
            )
        if comp.states():
            integrated.append((comp, mode))
    own = {id(c) for c, _ in integrated}
    acting = [
        (c, m)
        for c, m in step.acting
        if c.stepped_kind in (None, "saturation") and id(c) not in own
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

    return step, efforts, integrated
