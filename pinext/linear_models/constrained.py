"""A and B of a constrained phase from Pinocchio's RNEA derivatives and the rows' terms.

In a phase with constraint rows the System solves (Vukobratović & Potkonjak (20.88)–(20.89),
McClamroch (1986) (23)–(28); :mod:`pinext.simulation.step`)

.. math::

    M a + h = \\tau + W^T \\lambda, \\qquad J a + C \\lambda + \\gamma = 0,

(W = J except for sliding friction, C the rows' compliance). Differentiating at the solution
``(a_0, λ_0)`` along a state direction gives one KKT solve per column,

.. math::

    \\begin{bmatrix} M & -W^T \\\\ J & C \\end{bmatrix}
    \\begin{bmatrix} \\delta a \\\\ \\delta\\lambda \\end{bmatrix} =
    \\begin{bmatrix} \\delta\\tau - \\delta\\,\\mathrm{RNEA}(q, v, a_0)
        + \\delta W^T \\lambda_0 \\\\ -\\delta J\\, a_0 - \\delta\\gamma \\end{bmatrix},

with ``∂RNEA/∂q, ∂RNEA/∂v`` from Pinocchio's ``computeRNEADerivatives`` (Carpentier &
Mansard 2018) and the rows' own terms ``Wᵀ λ_0`` and ``J a_0 + γ`` (at fixed a_0, λ_0)
differenced centrally: the row components offer no derivatives of their own. Redundant rows
are solved in the least-squares sense (the accelerations are unique; the reactions need not
be).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from ..simulation.controls import as_control

if TYPE_CHECKING:
    from .linearize import _Point

__all__ = ["constrained_matrices"]


def _rows(point: _Point) -> Any:
    """``rows(x) -> (names, J, drift, W, C)`` of the point's phase at public state x."""
    system = point.system
    law = as_control(point.u0, system.n_inputs)
    trial = system.trial(point.t, point.phase, system.components[0], law)

    def rows(x: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        found = trial.rows(x)  # type: ignore[attr-defined]
        names = [name for name, _ in found]
        if not found:
            empty = np.zeros((0, system.model.nv))
            return names, empty, np.zeros(0), empty, np.zeros(0)
        jacobian = np.vstack([r.jacobian for _, r in found])
        drift = np.concatenate([r.drift for _, r in found])
        mapped = np.vstack([r.jacobian if r.force_map is None else r.force_map for _, r in found])
        compliance = np.concatenate(
            [np.zeros(r.m) if r.compliance is None else r.compliance for _, r in found]
        )
        return names, jacobian, drift, mapped, compliance

    return rows


def constrained_matrices(
    point: _Point, terms_x: np.ndarray, terms_u: np.ndarray, jacobian: Any
) -> tuple[np.ndarray, np.ndarray] | None:
    """A and B of the point's constrained phase (module docstring); None when its
    constrained components give no row at the point.

    Args:
        point: The linearization point (its phase has rows).
        terms_x: ``∂[τ; ṡ]/∂δx`` of the efforts and component states, shape (nv + ns, n).
        terms_u: ``∂[τ; ṡ]/∂δu``, shape (nv + ns, m).
        jacobian: :func:`pinext.linear_models.central_jacobian`.
    """
    system, t, nv, n = point.system, point.t, point.nv, point.n
    step = system.acceleration_step(point.phase)
    x0, u0 = point.x0, point.u0
    solved = step(t, x0, u0)
    q0, v0 = system.split(x0)
    rows = _rows(point)
    names, j0, _, w0, c0 = rows(x0)
    if not names:
        return None
    lam0 = np.concatenate([np.asarray(solved.forces[name], dtype=float) for name in names])
    a0 = np.asarray(solved.a, dtype=float)
    m = lam0.size

    def row_terms(dx: np.ndarray) -> np.ndarray:
        _, j, drift, w, _ = rows(point.state(dx))
        return np.concatenate((w.T @ lam0, j @ a0 + drift))

    g = jacobian(row_terms, np.zeros(n), point.scales())
    dtau_dq, dtau_dv, _ = pin.computeRNEADerivatives(step.model, step.data, q0, v0, a0)
    mass = pin.crba(step.model, step.data, q0)
    mass = np.triu(mass) + np.triu(mass, 1).T
    kkt = np.block([[mass, -w0.T], [j0, np.diag(c0)]])
    rhs_x = np.zeros((nv + m, n))
    rhs_x[:nv] = terms_x[:nv] + g[:nv]
    rhs_x[:nv, :nv] -= dtau_dq
    rhs_x[:nv, nv : 2 * nv] -= dtau_dv
    rhs_x[nv:] = -g[nv:]
    rhs_u = np.zeros((nv + m, u0.size))
    rhs_u[:nv] = terms_u[:nv]
    solution = np.linalg.lstsq(kkt, np.hstack((rhs_x, rhs_u)), rcond=1e-12)[0]
    a = np.zeros((n, n))
    a[nv : 2 * nv] = solution[:nv, :n]
    a[2 * nv :] = terms_x[nv:]
    b = np.zeros((n, u0.size))
    b[nv : 2 * nv] = solution[:nv, n:]
    b[2 * nv :] = terms_u[nv:]
    return a, b
