"""The acceleration step: where every effect of a System meets.

In a phase, the components contribute efforts τ_c, added inertia Δ (diagonal), constraint rows
``J a + C λ + γ = 0`` and, at most one of them, the mechanism's own ``(M, h)``. One constrained
problem is solved per evaluation (Vukobratović & Potkonjak (20.88)–(20.89), (20.92)–(20.94);
McClamroch (1986) (23)–(28)):

.. math::

    (M + \\Delta)\\, a + h = \\tau + J^T \\lambda, \\qquad J a + C \\lambda + \\gamma = 0

with ``τ = u - K (q - q_0) - D v + Σ τ_c``. Without rows, added inertia or a replaced
mechanism it is one ``pin.aba``; with added inertia, on a copy of the model whose armature
carries it. With rows, Pinocchio's ``computeAllTerms`` (which also gives the components their
Jacobians), its sparse Cholesky factorisation of M and ``M⁻¹``, then one solve of the Delassus
matrix ``J M⁻¹ Jᵀ + C``. Redundant rows get the minimum-norm reactions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ..exceptions import IntegrationError, InvalidParameter
from .component import Phase, Step, overrides

if TYPE_CHECKING:
    from .system import System

#: Relative singular value of the Delassus matrix below which rows count as redundant.
RANK_TOLERANCE = 1e-10


class AccelerationStep:
    """The acceleration step of a System in one phase: ``step(t, x, u) -> Step``.

    Built once per phase (the mode of every component is fixed), called once per evaluation.
    It has no side effects beyond Pinocchio's data caches.

    Args:
        system: The System.
        phase: The phase.
    """

    def __init__(self, system: System, phase: Phase) -> None:
        self.system = system
        self.phase = phase
        model = system.model
        self.modes = [(comp, phase.get(comp.name)) for comp in system.components]
        self.acting = [(c, m) for c, m in self.modes if overrides(c, "effort")]
        self.q_block, self.v_block = system.layout["q"], system.layout["v"]
        self.constrained = [(c, m) for c, m in self.modes if c.is_constrained(m)]
        overriding = [c for c in system.components if overrides(c, "mechanism")]
        if len(overriding) > 1:
            raise InvalidParameter(
                "at most one component may replace the mechanism's mass matrix, got "
                f"{[c.name for c in overriding]}"
            )
        self.mechanism = overriding[0] if overriding else None
        added = np.zeros(model.nv)
        for comp, mode in self.modes:
            extra = comp.added_inertia(mode)
            if extra is not None:
                added += extra
        self.added = added if added.any() else None
        self.dense = bool(self.constrained) or self.mechanism is not None
        self.model, self.data = model, system.data
        if self.added is not None and self.mechanism is None:
            self.model, self.data = system.model_with_inertia(self.added)

    def efforts(self, t: float, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Every generalized force but the reactions: the System's own and the components'."""
        system = self.system
        q, v = x[self.q_block], x[self.v_block]
        tau = system.joint_effort(q, v)
        if system.torque_inputs:
            tau = tau + u
        for comp, mode in self.acting:
            effort = comp.effort(t, x, q, v, u, mode)
            if effort is not None:
                tau = tau + effort
        return tau

    def __call__(self, t: float, x: np.ndarray, u: np.ndarray) -> Step:
        tau = self.efforts(t, x, u)
        return self.solve(t, x, tau, u)

    def solve(self, t: float, x: np.ndarray, tau: np.ndarray, u: Any) -> Step:
        """The accelerations and reactions for the efforts ``tau`` at (t, x)."""
        q, v = x[self.q_block], x[self.v_block]
        model, data = self.model, self.data
        if not self.dense:
            return Step(pin.aba(model, data, q, v, tau), tau, u, {})
        if self.constrained:
            pin.computeAllTerms(model, data, q, v)
        rows = []
        for comp, mode in self.constrained:
            r = comp.constraint_rows(t, x, q, v, mode, data)
            if r is not None and r.m:
                rows.append((comp, r))
        if len(rows) == 1:
            r = rows[0][1]
            jacobian, drift, compliance = r.jacobian, r.drift, r.compliance
        elif rows:
            jacobian = np.vstack([r.jacobian for _, r in rows])
            drift = np.concatenate([r.drift for _, r in rows])
            compliance = None
            if any(r.compliance is not None for _, r in rows):
                compliance = np.concatenate(
                    [np.zeros(r.m) if r.compliance is None else r.compliance for _, r in rows]
                )
        mapped = any(r.force_map is not None for _, r in rows)
        if mapped:  # reactions along W ≠ J (sliding friction): a non-symmetric Delassus matrix
            force_map = np.vstack(
                [r.jacobian if r.force_map is None else r.force_map for _, r in rows]
            )
        if rows and compliance is None and self.mechanism is None and jacobian.shape[0] == 1:
            if jacobian.any() and not mapped:  # one row: Pinocchio's C++ (Cholesky of J M⁻¹ Jᵀ)
                a = pin.forwardDynamics(model, data, tau, jacobian, drift)
                return Step(np.array(a), tau, u, _split_forces(rows, np.array(data.lambda_c)))
        if self.mechanism is not None:
            mass, bias = _mechanism(self.mechanism, q, v)
            if self.added is not None:
                mass[np.diag_indices_from(mass)] += self.added
            inverse = np.linalg.inv(mass)
        else:
            if not self.constrained:
                pin.crba(model, data, q)
                pin.nonLinearEffects(model, data, q, v)
            bias = data.nle
            pin.cholesky.decompose(model, data)
            inverse = pin.cholesky.computeMinv(model, data)
        a_free = inverse @ (tau - bias)
        if not rows:
            return Step(a_free, tau, u, {})
        minv_jt = inverse @ (force_map if mapped else jacobian).T
        delassus = jacobian @ minv_jt
        if compliance is not None:
            delassus[np.diag_indices_from(delassus)] += compliance
        rhs = -(jacobian @ a_free + drift)
        if not (np.all(np.isfinite(delassus)) and np.all(np.isfinite(rhs))):
            raise IntegrationError(_not_finite(rows, x), t, x)
        lam = np.linalg.solve(delassus, rhs) if mapped else _solve_delassus(delassus, rhs)
        forces = _split_forces(rows, lam)
        return Step(a_free + minv_jt @ lam, tau, u, forces)


def _mechanism(comp: Any, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(M, h)`` of the component that replaces the mechanism (a copy of M, to be added to)."""
    result = comp.mechanism(q, v)
    if result is None:
        raise InvalidParameter(f"component '{comp.name}' overrides mechanism() but returned None")
    return np.array(result[0], dtype=float), np.asarray(result[1], dtype=float)


def _not_finite(rows: list, x: np.ndarray) -> str:
    """Why the constrained step has no finite solution: the state, or the rows of which
    components (a LinAlgError of numpy's solvers otherwise)."""
    if not np.all(np.isfinite(x)):
        return "the state became non-finite in a constrained phase"
    names = [
        comp.name
        for comp, r in rows
        if not (np.all(np.isfinite(r.jacobian)) and np.all(np.isfinite(r.drift)))
    ]
    which = ", ".join(names) if names else ", ".join(comp.name for comp, _ in rows)
    return (
        f"the constraint rows of {which} are not finite (or the mass matrix is singular): a "
        "constraint violated by a jump the rows cannot follow, or a parameter out of range"
    )


def _split_forces(rows: list, lam: np.ndarray) -> dict[str, np.ndarray]:
    """Component name -> its block of the reactions λ."""
    if len(rows) == 1:
        return {rows[0][0].name: lam}
    forces, k = {}, 0
    for comp, r in rows:
        forces[comp.name] = lam[k : k + r.m]
        k += r.m
    return forces


def _well_conditioned(delassus: np.ndarray) -> bool:
    """Whether the rows are independent: the Cholesky pivots of G stay above
    :data:`RANK_TOLERANCE` relative to its diagonal."""
    try:
        pivots = np.linalg.cholesky(delassus).diagonal()
    except np.linalg.LinAlgError:
        return False
    return bool(pivots.min() ** 2 > RANK_TOLERANCE * delassus.diagonal().max())


def _solve_delassus(delassus: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """λ of ``G λ = rhs``: a direct solve for independent rows, else the minimum-norm
    least-squares solution (redundant rows)."""
    if delassus.shape[0] == 1:
        g = delassus[0, 0]
        return rhs / g if g > 0.0 else np.zeros(1)
    if _well_conditioned(delassus):
        return np.linalg.solve(delassus, rhs)
    return np.linalg.lstsq(delassus, rhs, rcond=RANK_TOLERANCE)[0]
