"""The acceleration step: where every effect of a System meets.

In a phase, the components contribute efforts τ_c, added inertia Δ (diagonal), constraint rows
``J a + C λ + γ = 0`` and, at most one of them, the mechanism's own ``(M, h)``. One constrained
problem is solved per evaluation (Vukobratović & Potkonjak (20.88)–(20.89), (20.92)–(20.94);
McClamroch (1986) (23)–(28)):

.. math::

    (M + \\Delta)\\, a + h = \\tau + J^T \\lambda, \\qquad J a + C \\lambda + \\gamma = 0

with ``τ = u - K (q - q_0) - D v + Σ τ_c``. Without rows, added inertia or a replaced
mechanism it is one ``pin.aba``; with added inertia only, ``pin.aba`` on a copy of the model
whose armature carries it; otherwise the mass matrix and bias of ``pin.computeAllTerms`` (which
also gives the components their Jacobians) and one Cholesky solve of M, then of the Delassus
matrix ``J M⁻¹ Jᵀ + C``. Redundant rows get the minimum-norm reactions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin
from scipy.linalg import cho_factor, cho_solve

from ..exceptions import InvalidParameter
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
        if self.added is not None and not self.dense:
            self.model, self.data = system.model_with_inertia(self.added)

    def efforts(self, t: float, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Every generalized force but the reactions: the System's own and the components'."""
        system = self.system
        q, v = system.split(x)
        tau = system.joint_effort(q, v)
        if system.torque_inputs:
            tau = tau + u
        for comp, mode in self.modes:
            effort = comp.effort(t, x, q, v, u, mode)
            if effort is not None:
                tau = tau + effort
        return tau

    def __call__(self, t: float, x: np.ndarray, u: np.ndarray) -> Step:
        tau = self.efforts(t, x, u)
        return self.solve(t, x, tau, u)

    def solve(self, t: float, x: np.ndarray, tau: np.ndarray, u: Any) -> Step:
        """The accelerations and reactions for the efforts ``tau`` at (t, x)."""
        system = self.system
        q, v = system.split(x)
        if not self.dense:
            return Step(pin.aba(self.model, self.data, q, v, tau), tau, u, {})
        model, data = self.model, self.data
        if self.constrained:
            pin.computeAllTerms(model, data, q, v)
        if self.mechanism is not None:
            mass, bias = self.mechanism.mechanism(q, v)
            mass = np.array(mass, dtype=float)
        else:
            if not self.constrained:
                pin.crba(model, data, q)
                pin.nonLinearEffects(model, data, q, v)
            mass = np.triu(data.M) + np.triu(data.M, 1).T
            bias = data.nle
        if self.added is not None:
            mass[np.diag_indices_from(mass)] += self.added
        factor = cho_factor(mass)
        a_free = cho_solve(factor, tau - bias)
        if not self.constrained:
            return Step(a_free, tau, u, {})
        rows = [(c, c.constraint_rows(t, x, q, v, m, data)) for c, m in self.constrained]
        rows = [(c, r) for c, r in rows if r is not None and r.m]
        if not rows:
            return Step(a_free, tau, u, {})
        jacobian = np.vstack([r.jacobian for _, r in rows])
        drift = np.concatenate([r.drift for _, r in rows])
        minv_jt = cho_solve(factor, jacobian.T)
        delassus = jacobian @ minv_jt
        if any(r.compliance is not None for _, r in rows):
            delassus[np.diag_indices_from(delassus)] += np.concatenate(
                [np.zeros(r.m) if r.compliance is None else r.compliance for _, r in rows]
            )
        lam = _solve_delassus(delassus, -(jacobian @ a_free + drift))
        forces: dict[str, np.ndarray] = {}
        k = 0
        for comp, r in rows:
            forces[comp.name] = lam[k : k + r.m]
            k += r.m
        return Step(a_free + minv_jt @ lam, tau, u, forces)


def _solve_delassus(delassus: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """λ of ``G λ = rhs``: Cholesky for a positive-definite G, else the minimum-norm solution."""
    try:
        factor = cho_factor(delassus)
        if np.min(np.abs(np.diag(factor[0]))) ** 2 > RANK_TOLERANCE * np.max(np.diag(delassus)):
            return cho_solve(factor, rhs)
    except np.linalg.LinAlgError:
        pass
    return np.linalg.lstsq(delassus, rhs, rcond=RANK_TOLERANCE)[0]
