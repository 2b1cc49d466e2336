"""Closures: bilateral holonomic constraints that hold in every phase (loops, mimic couplings).

McClamroch (1986) writes a constrained robot system as the singular system (23)

.. math::

    M(x)\\ddot x + G(x, \\dot x) = u + B^T(x)\\lambda,\\qquad \\Theta(x) = 0

and reduces it to index one with the multipliers of (24)–(26). A :class:`Closure` is one block
of Θ: it gives its residual Θ_i(q), its rows B_i = ∂Θ_i/∂q (in velocity coordinates) and the
drift ``Ḃ_i v``; the System's acceleration step stacks the blocks of every closure with the
other components' rows and solves (24) once. Drift of the position constraint is stabilised
with Baumgarte's term ``-2ω Θ̇ - ω² Θ``, and consistent initial conditions ((32), (39)) come
from :func:`close_loops`.
"""

from __future__ import annotations

import abc
import logging
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ..contact.constrained import (
    RedundantConstraintWarning,
    baumgarte,
    is_rank_deficient,
    stack,
)
from ..contact.coordinates import ConstraintKinematics
from ..exceptions import ConstraintError, InconsistentInitialConditions
from ..simulation.component import Component, ConstraintRows, RowKind
from ..validation import integer, real, vector

if TYPE_CHECKING:
    from ..simulation.system import System

LOGGER = logging.getLogger(__name__)

#: Largest residual [m or rad] and closure velocity [m/s or rad/s] accepted at the start of a
#: run; beyond it the run stops with a :class:`ConstraintError` pointing to :func:`close_loops`.
START_TOLERANCE = 1e-8


class Closure(Component):
    """A bilateral holonomic constraint block Θ_i(q) = 0 that is closed in every phase.

    Subclasses implement :meth:`kinematics`. The rows enter the acceleration step as
    ``B a + Ḃ v - 2ω Θ̇ - ω² Θ = 0`` (Baumgarte, ω = :attr:`stabilization`); the reactions
    λ are the multipliers of McClamroch (1986) (23), returned in the step under the
    component's name. Ideal scleronomic constraints do no work, so the energy audit needs no
    term of theirs.

    Outputs (``Trajectory.outputs["<name>.<signal>"]``): ``residual`` Θ_i [m or rad],
    ``closed`` (ones, one per row, for :meth:`pinext.Trajectory.constraint_residual`) and
    whatever the subclass adds.
    """

    stepped_kind = "closure"
    #: Baumgarte natural frequency ω [1/s]; None or 0 for the pure index-1 system.
    stabilization: float | None = 20.0

    @abc.abstractmethod
    def kinematics(
        self, model: pin.Model, data: pin.Data, q: np.ndarray, t: float
    ) -> ConstraintKinematics:
        """Θ_i, B_i, ``Ḃ_i v`` (and a zero bias) at configuration q, from a data on which
        ``pin.computeAllTerms(q, v)`` was called."""

    def bind(self, system: System) -> None:
        self.model = system.model
        self.data = self.model.createData()
        closures = [c for c in system.components if isinstance(c, Closure)]
        self._first = closures[0] is self
        self._closures = closures
        self._checked = b""

    def state_kinematics(self, q: np.ndarray, v: np.ndarray, t: float = 0.0):
        """:meth:`kinematics` at (q, v) (calls ``pin.computeAllTerms`` on its own data)."""
        pin.computeAllTerms(self.model, self.data, q, v)
        return self.kinematics(self.model, self.data, q, t)

    def is_constrained(self, mode: Any) -> bool:
        return True

    def constraint_rows(self, t, x, q, v, mode, data) -> ConstraintRows:
        kin = self.kinematics(self.model, data, q, t)
        drift = kin.drift - baumgarte(kin, v, self.stabilization)
        return ConstraintRows(kin.jacobian, drift, None, RowKind.BILATERAL)

    def initial_mode(self, t, x, trial) -> None:
        """Check that the closure holds at the start of a run; the first closure of the
        System also warns when the closures together are redundant (once per start
        configuration, so once per run however often the run's start is evaluated)."""
        nq, nv = self.model.nq, self.model.nv
        q, v = x[:nq], x[nq : nq + nv]
        kin = self.state_kinematics(q, v, t)
        residual = float(np.abs(kin.residual).max(initial=0.0))
        rate = float(np.abs(kin.rate(v)).max(initial=0.0))
        if residual > START_TOLERANCE or rate > START_TOLERANCE:
            quantity = "residual" if residual > START_TOLERANCE else "velocity"
            raise InconsistentInitialConditions(
                f"{self.describe()} is open at the start: residual {residual:.3g}, closure "
                f"velocity {rate:.3g} (tolerance {START_TOLERANCE:g}); start from "
                "pinext.close_loops(system, q, v)",
                {self.describe(): residual if quantity == "residual" else rate},
                quantity,
            )
        if self._first and q.tobytes() != self._checked:  # once per run (its start state)
            self._checked = q.tobytes()
            kins = [c.state_kinematics(q, v, t) for c in self._closures]
            jacobian = np.vstack([k.jacobian for k in kins])
            if is_rank_deficient(jacobian):
                self._report_redundancy(q, [k.jacobian for k in kins])
        return None

    def planar_rank(self, normal: np.ndarray) -> int | None:
        """The rank of this closure's rows when every body it involves moves in planes normal
        to ``normal`` (world, unit), away from a singular configuration; None: unknown (its
        redundancy is then never expected)."""
        return None

    def _report_redundancy(self, q: np.ndarray, jacobians: list[np.ndarray]) -> None:
        """Say that the closures' rows are dependent: once at INFO through the ``pinext``
        logger when the dependency is the expected one of a planar mechanism (a planar point
        loop: 3 rows of rank 2), else a :class:`RedundantConstraintWarning`."""
        jacobian = np.vstack(jacobians)
        scale = float(np.abs(jacobian).max(initial=0.0)) or 1.0
        rank = int(np.linalg.matrix_rank(jacobian, tol=1e-10 * scale))
        involved = dependent_closures(self._closures, jacobians)
        blocks = [b for c, b in zip(self._closures, jacobians, strict=True) if c in involved]
        rows = sum(b.shape[0] for b in blocks)
        block_rank = np.linalg.matrix_rank(np.vstack(blocks), tol=1e-10 * scale)
        names = ", ".join(c.describe() for c in involved)
        normal = planar_normal(self.model, q, np.flatnonzero(np.any(jacobian != 0.0, axis=0)))
        if normal is not None:
            ranks = [c.planar_rank(normal) for c in self._closures]
            if None not in ranks and sum(ranks) == rank:  # type: ignore[arg-type]
                LOGGER.info(
                    "%s: the mechanism is planar (normal %s), so %d of the %d rows hold by "
                    "themselves (expected); the reactions out of the plane are the "
                    "minimum-norm ones (zero)",
                    names,
                    np.array2string(normal, precision=3, suppress_small=True),
                    rows - block_rank,
                    rows,
                )
                return
        warnings.warn(
            f"redundant closures (B M⁻¹ Bᵀ is singular): the {rows} rows of {names} have rank "
            f"{block_rank}; their reactions are the minimum-norm solution",
            RedundantConstraintWarning,
            stacklevel=5,
        )

    def outputs(self, t, x, q, v, u, mode, step) -> dict[str, np.ndarray]:
        kin = self.state_kinematics(q, v, t)
        return {"residual": kin.residual, "closed": np.ones(kin.residual.size)}

    def output_info(self) -> dict[str, tuple[str, str]]:
        """Units and descriptions of :meth:`outputs`."""
        return self.signals(
            {
                "residual": ("m or rad", f"residual Θ of each row of {self.describe()}"),
                "closed": ("-", "1 per row: the closure holds in every phase"),
            }
        )

    def describe(self) -> str:
        """How errors name the closure."""
        return f"closure '{self.name}'"


def planar_normal(model: pin.Model, q: np.ndarray, columns: np.ndarray) -> np.ndarray | None:
    """The normal n (world, unit) of the planes in which the joints ``columns`` (velocity
    indices) move every body at configuration q: each one's spatial motion (Pinocchio's
    world-frame joint Jacobian) turns about n and translates normal to it; None when they do
    not (or only translate: no single plane)."""
    data = model.createData()
    jacobian = pin.computeJointJacobians(model, data, np.asarray(q, dtype=float))[:, columns]
    linear, angular = jacobian[:3], jacobian[3:]
    scale = float(np.abs(jacobian).max(initial=0.0))
    if not scale or float(np.abs(angular).max(initial=0.0)) <= 1e-9 * scale:
        return None
    normal = angular[:, int(np.argmax(np.linalg.norm(angular, axis=0)))]
    normal = normal / np.linalg.norm(normal)
    turns = np.abs(np.cross(angular.T, normal)).max(initial=0.0)
    slides = np.abs(normal @ linear).max(initial=0.0)
    return normal if max(turns, slides) <= 1e-9 * scale else None


def dependent_closures(closures: list[Closure], jacobians: list[np.ndarray]) -> list[Closure]:
    """The closures whose rows are linearly dependent: those with a share in a left null
    vector of the stacked B (a λ with Bᵀλ = 0, the direction in which B M⁻¹ Bᵀ is singular).

    Args:
        closures: The closures, in the order of their rows.
        jacobians: Each one's B_i, shape (m_i, nv).
    """
    jacobian = np.vstack(jacobians)
    scale = float(np.abs(jacobian).max(initial=0.0)) or 1.0
    u, s, _ = np.linalg.svd(jacobian / scale)
    rank = int(np.sum(s > 1e-10))
    null = u[:, rank:]  # left null space, shape (m, m - rank)
    involved, start = [], 0
    for closure, block in zip(closures, jacobians, strict=True):
        rows = slice(start, start + block.shape[0])
        start += block.shape[0]
        if null.size and float(np.abs(null[rows]).max(initial=0.0)) > 1e-8:
            involved.append(closure)
    return involved


def _held_dofs(system: System) -> np.ndarray:
    """Velocity indices of the joints the System prescribes (:class:`pinext.Prescribed`)."""
    model = system.model
    dofs = [
        np.arange(model.joints[j].idx_v, model.joints[j].idx_v + model.joints[j].nv)
        for comp in system.components
        for j in map(model.getJointId, comp.prescribed_joints())
    ]
    return np.concatenate([np.zeros(0, dtype=int), *dofs])


def close_loops(
    system: System,
    q: np.ndarray,
    v: np.ndarray | None = None,
    *,
    t: float = 0.0,
    tol: float = 1e-12,
    max_iter: int = 50,
) -> np.ndarray:
    """The public initial state with (q, v) projected onto every closure of the System.

    Consistent initial conditions, McClamroch (1986) (32), (39): the configuration by
    Gauss–Newton steps ``q ← integrate(q, -B⁺ Θ)`` until ``|Θ| < tol``, the velocity by the
    kinetic-metric projection ``v ← v - M⁻¹Bᵀ (B M⁻¹ Bᵀ)⁺ B v`` (the velocity after a plastic
    impact on the closures). Prescribed joints (:class:`pinext.Prescribed`) are givens: they
    are set to their law at time t and held there, and only the other joints move (B and M
    restricted to the other DOFs).

    Args:
        system: The System (its :class:`Closure` components: loops, mimic couplings).
        q: Configuration guess, shape (nq,).
        v: Velocity guess, shape (nv,); default zero.
        t: Time [s] (the prescribed joints' laws are read at t).
        tol: Residual tolerance [m or rad].
        max_iter: Gauss–Newton steps at most.

    Returns:
        The public state (``system.initial_state(q, v)`` of the projected pair).

    Raises:
        InconsistentInitialConditions: The closures cannot be reached; the message names each
            open one with its residual (also in its ``residuals``).
    """
    closures = [c for c in system.components if isinstance(c, Closure)]
    model = system.model
    data = model.createData()
    q = vector("q", q, model.nq, what="the configuration guess")
    v = np.zeros(model.nv) if v is None else vector("v", v, model.nv, what="the velocity guess")
    t = real("t", t, unit="[s]")
    tol = real("tol", tol, unit="[m or rad]", low=0.0, strict=True)
    max_iter = integer("max_iter", max_iter, low=1)
    q, v = system.split(system.impose(t, system.initial_state(q, v)))
    q, v = np.array(q, dtype=float), np.array(v, dtype=float)
    if not closures:
        return system.initial_state(q, v)
    held = _held_dofs(system)
    free = np.setdiff1d(np.arange(model.nv), held)
    for _ in range(max_iter):
        pin.computeAllTerms(model, data, q, v)
        kins = [c.kinematics(model, data, q, t) for c in closures]
        kin = stack(kins)
        if float(np.abs(kin.residual).max(initial=0.0)) < tol:
            break
        step = np.zeros(model.nv)
        step[free] = np.linalg.lstsq(kin.jacobian[:, free], -kin.residual, rcond=None)[0]
        q = pin.integrate(model, q, step)
    else:
        open_ = [
            f"{c.describe()} (residual {np.abs(k.residual).max():.3g})"
            for c, k in zip(closures, kins, strict=True)
            if np.abs(k.residual).max() >= tol
        ]
        residuals = {
            c.describe(): float(np.abs(k.residual).max())
            for c, k in zip(closures, kins, strict=True)
            if np.abs(k.residual).max() >= tol
        }
        given = [j for comp in system.components for j in comp.prescribed_joints()]
        held_note = (
            f" (with the prescribed joints {', '.join(repr(j) for j in given)} held at their "
            f"law's value at t = {t:g} s)"
            if given
            else ""
        )
        raise InconsistentInitialConditions(
            f"cannot close {', '.join(open_)} after {max_iter} Gauss-Newton steps from the "
            f"given configuration{held_note}: is the closure reachable (link lengths, "
            "placement, the prescribed positions), or is the guess on another branch?",
            residuals,
        )
    mass = np.triu(data.M) + np.triu(data.M, 1).T
    jacobian = kin.jacobian[:, free]
    try:
        minv_jt = np.linalg.solve(mass[np.ix_(free, free)], jacobian.T)
    except np.linalg.LinAlgError:
        raise ConstraintError(
            "the mass matrix is singular, so the velocity cannot be projected onto "
            f"{', '.join(c.describe() for c in closures)}: a joint moves no mass (a link "
            "without mass and inertia at the end of a chain)"
        ) from None
    multipliers = np.linalg.lstsq(jacobian @ minv_jt, kin.jacobian @ v, rcond=None)[0]
    v[free] -= minv_jt @ multipliers
    return system.initial_state(q, v)
