"""The linear model of a constrained System in independent coordinates (McClamroch 1986).

In a phase with constraint rows ``J(q) a + γ = 0`` (loops, held contacts, mimic couplings,
prescribed joints), the linearization in the full coordinates carries the directions that the
rows forbid: their poles are the drift stabilization's, not the robot's. About a rest state
(v0 = 0, a0 = 0), the linearized rows read ``J δq = 0, J δv = 0, J δa = 0``; with the columns
of J split into m dependent ones (Householder QR with column pivoting picks the best
conditioned) and the others independent, as McClamroch (1986) (24)–(28) partitions the
coordinates,

.. math::

    \\delta q = N\\,\\delta q_i, \\qquad N = P^T \\begin{bmatrix} I \\\\ -J_d^{-1} J_i
    \\end{bmatrix},

and the reduced model on ``ξ = [δq_i, δv_i, δs]`` is ``A_r = S A T``, ``B_r = S B``,
``C_r = C T`` with ``T = diag(N, N, I)`` and S the selection of the independent rows
(``S T = I``): exact because ``δa`` lies in the range of N.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.linalg

from ..exceptions import InvalidParameter
from ..simulation.controls import as_control

if TYPE_CHECKING:
    from ..simulation.system import System

__all__ = ["independent_coordinates"]

#: Relative pivot of the QR factorization below which a row counts as redundant.
RANK_TOLERANCE = 1e-10


def _rows(system: System, phase: Any, x: np.ndarray, u: np.ndarray, t: float) -> np.ndarray:
    """The Jacobian of every constraint row of the phase at x, shape (m, nv)."""
    if not system.components:
        return np.zeros((0, system.model.nv))
    law = as_control(u, system.n_inputs)
    found = system.trial(t, phase, system.components[0], law).rows(x)  # type: ignore[attr-defined]
    if not found:
        return np.zeros((0, system.model.nv))
    return np.vstack([r.jacobian for _, r in found])


def independent_coordinates(
    system: System,
    phase: Any,
    x0: np.ndarray,
    u0: np.ndarray,
    t: float,
    matrices: tuple[np.ndarray, np.ndarray, np.ndarray],
    state_names: list[str],
    state_units: list[str],
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], list[str], list[str], str | None]:
    """``(A_r, B_r, C_r)``, the kept state names and units, and a note (module docstring);
    the model unchanged and no note when the phase has no rows.

    Raises:
        InvalidParameter: The state is not at rest (v0 ≠ 0): the reduction holds about rest.
    """
    nv = system.model.nv
    jacobian = _rows(system, phase, x0, u0, t)
    if jacobian.shape[0] == 0:
        return matrices, state_names, state_units, None
    v0 = x0[system.layout["v"]]
    if np.abs(v0).max() > 0.0:
        raise InvalidParameter(
            "coordinates='independent' reduces the model about a rest state (v0 = 0); x0 "
            f"moves (|v0| = {np.abs(v0).max():.3g}): use coordinates='full'"
        )
    _, r, pivots = scipy.linalg.qr(jacobian, mode="economic", pivoting=True)
    diagonal = np.abs(np.diag(r))
    rank = int(np.sum(diagonal > RANK_TOLERANCE * diagonal.max())) if diagonal.size else 0
    dependent = np.sort(pivots[:rank])
    free = np.setdiff1d(np.arange(nv), dependent)
    basis = np.zeros((nv, free.size))
    basis[free, np.arange(free.size)] = 1.0
    basis[dependent] = -np.linalg.solve(
        jacobian[np.ix_(_independent_rows(jacobian[:, dependent], rank), dependent)],
        jacobian[np.ix_(_independent_rows(jacobian[:, dependent], rank), free)],
    )
    a, b, c = matrices
    n = a.shape[0]
    ns = n - 2 * nv
    k = free.size
    expand = np.zeros((n, 2 * k + ns))  # T
    expand[:nv, :k] = basis
    expand[nv : 2 * nv, k : 2 * k] = basis
    expand[2 * nv :, 2 * k :] = np.eye(ns)
    keep = np.concatenate((free, nv + free, np.arange(2 * nv, n)))  # S
    names = [state_names[i] for i in keep]
    units = [state_units[i] for i in keep]
    dropped = ", ".join(state_names[i] for i in dependent)
    note = (
        f"in independent coordinates (McClamroch 1986): {dropped} follow from the "
        f"{jacobian.shape[0]} constraint rows"
    )
    return (a[keep] @ expand, b[keep], c @ expand), names, units, note


def _independent_rows(block: np.ndarray, rank: int) -> np.ndarray:
    """``rank`` rows of ``block`` that are independent (QR with pivoting of its transpose)."""
    if block.shape[0] == rank:
        return np.arange(rank)
    _, _, pivots = scipy.linalg.qr(block.T, mode="economic", pivoting=True)
    return np.sort(pivots[:rank])
