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
Mansard 2018). The rows' own terms ``Wᵀ λ_0`` and ``J a_0 + γ`` (at fixed a_0, λ_0):

* rows with a constant Jacobian over one-DOF joints (their compiled form
  :class:`~pinext.simulation.forms.JointRows`: joints on their stops, mimic couplings, stuck
  joints) in closed form: ``δW = δJ = 0`` and Baumgarte's ``γ = 2ω J v + ω² φ`` with
  ``∂φ/∂q = J``, so ``∂(J a_0 + γ)/∂(q, v) = [ω² J, 2ω J]``;
* every other row (loops, contacts: :class:`~pinext.simulation.forms.FrameRows` or no compiled
  form) by central differences of those rows alone (one ``computeAllTerms`` and the rows
  per evaluation, no dynamics), over the state entries they read: q and v for rows between
  frames of the mechanism, every entry for a contact on an environment's mass or layer and
  for rows without a compiled form.

Redundant rows are solved in the least-squares sense (the accelerations are unique; the
reactions need not be).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pinocchio as pin

from ..simulation.caches import cache as engine_cache
from ..simulation.forms import FRAME_NORMAL, FRAME_POINT, FRAME_ROWS, FrameRows, JointRows
from ..simulation.step import RANK_TOLERANCE, _well_conditioned

if TYPE_CHECKING:
    from ..simulation.component import Component, ConstraintRows
    from ..simulation.system import System
    from .linearize import _Point

__all__ = ["constrained_matrices"]


class _Block(NamedTuple):
    """The rows of one constrained component at the point."""

    name: str  # the component's
    jacobian: np.ndarray  # (m_b, nv): J
    drift: np.ndarray  # (m_b,): γ
    force_map: np.ndarray | None  # (m_b, nv): W when W ≠ J
    compliance: np.ndarray | None  # (m_b,): C's diagonal
    start: int  # first row in the stacked rows
    closed: np.ndarray | None  # ∂(J a_0 + γ)/∂(δq, δv) of rows in closed form; else None
    columns: np.ndarray | None  # deviation entries the rows read, to difference; else None
    gradient: np.ndarray | None  # (m_b,): Baumgarte's ω of rows with J = ∇φ; else None

    @property
    def rows(self) -> slice:
        """The block's rows in the stacked rows."""
        return slice(self.start, self.start + self.jacobian.shape[0])


def _evaluate(
    point: _Point, x: np.ndarray, model: pin.Model, data: pin.Data
) -> list[tuple[Component, Any, ConstraintRows]]:
    """Every constrained component's rows at the public state x, in the System's order (as
    the acceleration step forms them), after ``computeAllTerms`` on (model, data)."""
    system, phase = point.system, point.phase
    q, v = system.split(x)
    pin.computeAllTerms(model, data, q, v)
    found = []
    for comp in system.components:
        mode = phase.get(comp.name)
        if comp.is_constrained(mode):
            r = comp.constraint_rows(point.t, x, q, v, mode, data)
            if r is not None and r.m:
                found.append((comp, mode, r))
    return found


def _closed_form(point: _Point, form: JointRows, rows: ConstraintRows) -> bool:
    """Whether rows are the :class:`JointRows` ``form`` over one-DOF joints (q[iq] the joint's
    own coordinate, so ``∂φ/∂δq = J``) with W = J."""
    if rows.force_map is not None or form.m != rows.m:
        return False
    coordinate = _coordinates(point.system)
    entries = zip(form.iq.tolist(), form.iv.tolist(), strict=True)
    if any(coordinate.get(iv) != iq for iq, iv in entries):
        return False
    return bool(np.array_equal(form.jacobian(point.nv), rows.jacobian))


def _treatment(
    point: _Point, comp: Component, mode: Any, rows: ConstraintRows
) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """``([ω² J, 2ω J], None, None)``, ``∂(J a_0 + γ)/∂(δq, δv)`` of a component's rows in
    closed form (:func:`_closed_form`; Baumgarte's ``γ = 2ω J v + ω² φ`` with ``∂φ/∂δq = J``
    and ``δJ = 0``), else ``(None, columns, gradient)``: the columns to difference and, for
    rows whose Jacobian is the gradient of their residual (:func:`_gradient_rows`), their ω
    (None otherwise); once per component and mode (kept in the engine's cache of the
    System)."""
    found = engine_cache(point.system, "linear_models")
    key = ("rows", comp.name, getattr(mode, "structure", mode))
    if key not in found:
        form = comp.compiled_rows(mode)
        if isinstance(form, JointRows) and _closed_form(point, form, rows):
            omega = form.omega[:, None]
            closed = np.hstack((omega**2 * rows.jacobian, 2.0 * omega * rows.jacobian))
            found[key] = (closed, None, None)
        elif isinstance(form, FrameRows) and _gradient_rows(point, form, rows):
            omega = np.repeat(form.omega, [FRAME_ROWS[k] for k in form.kind.tolist()])
            found[key] = (None, np.arange(point.nv), omega)
        else:
            found[key] = (None, _columns(point, form), None)
    return found[key]


def _gradient_rows(point: _Point, form: FrameRows, rows: ConstraintRows) -> bool:
    """Whether the rows are :class:`FrameRows` whose Jacobian is the gradient of their
    residual on a Euclidean model: points joined (``FRAME_POINT``) or a point on a fixed
    plane (``FRAME_NORMAL`` on the world, no environment's mass or layer), with W = J. Then
    ``J̇ v = vᵀ ∇²φ v`` and ``∂(J̇ v)/∂v = 2 ∂(J v_0)/∂q`` (the Hessian is symmetric), so the
    rows' terms need differences over q alone."""
    kinds = form.kind.tolist()
    return bool(
        point.system.euclidean
        and rows.force_map is None
        and form.m == rows.m
        and np.all(form.env < 0)
        and np.all(form.layer < 0)
        and all(
            k == FRAME_POINT or (k == FRAME_NORMAL and j == 0)
            for k, j in zip(kinds, form.joint_b.tolist(), strict=True)
        )
    )


def _coordinates(system: System) -> dict[int, int]:
    """Velocity entry -> configuration entry of the System's one-DOF joints (kept in the
    engine's cache of the System: Pinocchio's index vectors are slow to read)."""
    found = engine_cache(system, "linear_models")
    if "coordinates" not in found:
        model = system.model
        found["coordinates"] = {
            int(j.idx_v): int(j.idx_q) for j in model.joints[1:] if j.nq == 1 and j.nv == 1
        }
    return found["coordinates"]


def _columns(point: _Point, form: Any) -> np.ndarray:
    """The deviation entries a block's rows read: q and v for :class:`FrameRows` between
    frames of the mechanism; every entry for rows on an environment's mass or layer or
    without a compiled form."""
    if isinstance(form, FrameRows) and np.all(form.env < 0) and np.all(form.layer < 0):
        return np.arange(2 * point.nv)
    return np.arange(point.n)


def _blocks(point: _Point, q0: np.ndarray, v0: np.ndarray) -> list[_Block]:
    """The rows at the point, with M and h in the point's step data.

    Once every row of the phase was found in closed form (its compiled
    :class:`~pinext.simulation.forms.JointRows`, whose Jacobian and γ equalled the component's
    own rows), the rows come from the forms (their γ, the Jacobian kept) beside CRBA and the
    nonlinear effects alone: constant rows read no kinematics (the compiled path evaluates
    them so too). Otherwise from ``computeAllTerms`` and the components' ``constraint_rows``."""
    step = point.step
    found = engine_cache(point.system, "linear_models")
    key = ("joint rows", point.structure)
    plan = found.get(key)
    if plan is not None:
        pin.crba(step.model, step.data, q0)
        pin.nonLinearEffects(step.model, step.data, q0, v0)
        blocks, start = [], 0
        for name, form, jac, closed in plan:
            drift = form.drift(q0, v0)
            blocks.append(_Block(name, jac, drift, None, None, start, closed, None, None))
            start += jac.shape[0]
        return blocks
    blocks, start, entries = [], 0, []
    for comp, mode, r in _evaluate(point, point.x0, step.model, step.data):
        closed, columns, gradient = _treatment(point, comp, mode, r)
        blocks.append(
            _Block(comp.name, r.jacobian, r.drift, r.force_map, r.compliance, start, closed,
                   columns, gradient)
        )  # fmt: skip
        start += r.m
        form = comp.compiled_rows(mode)
        if (
            isinstance(form, JointRows)
            and closed is not None
            and r.compliance is None
            and np.array_equal(form.drift(q0, v0), r.drift)
        ):
            entries.append((comp.name, form, r.jacobian.copy(), closed))
    if blocks and len(entries) == len(blocks):
        found[key] = entries
    return blocks


def _row_terms(
    point: _Point,
    blocks: list[_Block],
    a0: np.ndarray,
    lam0: np.ndarray,
    jacobian: Any,
    rhs: np.ndarray,
) -> list[str]:
    """Add ``∂(Wᵀλ_0)/∂δx`` to ``rhs[:nv]`` and ``−∂(J a_0 + γ)/∂δx`` to ``rhs[nv:]`` (its
    first n columns), at fixed (a_0, λ_0); the names of the components whose rows were
    differenced."""
    system, nv, n = point.system, point.nv, point.n
    m = lam0.size
    differenced = [b for b in blocks if b.columns is not None]
    for b in blocks:
        if b.closed is not None:  # δW = 0
            rhs[nv + b.start : nv + b.rows.stop, : 2 * nv] = -b.closed
    if not differenced:
        return []
    columns = np.unique(np.concatenate([b.columns for b in differenced]))  # type: ignore[misc]
    names = {b.name: b for b in differenced}
    rows = np.concatenate(
        [np.arange(nv)] + [nv + np.arange(b.start, b.rows.stop) for b in differenced]
    )
    # rows with J = ∇φ: over q alone, with J(q) v_0 for ∂(J̇ v)/∂v = 2 ∂(J v_0)/∂q
    gradient = all(b.gradient is not None for b in differenced)
    v0 = point.x0[point.nq : point.nq + nv]

    def terms(dz: np.ndarray) -> np.ndarray:
        dx = np.zeros(n)
        dx[columns] = dz
        out = np.zeros(nv + 2 * m if gradient else nv + m)
        for comp, _, r in _evaluate(point, point.state(dx), system.model, system.data):
            if comp.name in names:
                b = names[comp.name]
                w = r.jacobian if r.force_map is None else r.force_map
                out[:nv] += w.T @ lam0[b.rows]
                out[nv + b.start : nv + b.rows.stop] = -(r.jacobian @ a0 + r.drift)
                if gradient:
                    out[nv + m + b.start : nv + m + b.rows.stop] = r.jacobian @ v0
        return out

    jac = jacobian(terms, np.zeros(columns.size), point.scales()[columns])
    rhs[np.ix_(rows, columns)] += jac[rows]
    if gradient:  # −∂(J̇ v + 2ω J v)/∂v = −2 ∂(J v_0)/∂q − 2ω J
        for b in differenced:
            rate = jac[nv + m + b.start : nv + m + b.rows.stop]
            block = slice(nv + b.start, nv + b.rows.stop)
            rhs[block, nv : 2 * nv] -= 2.0 * rate + 2.0 * b.gradient[:, None] * b.jacobian  # type: ignore[index]
    return sorted(names)


def _delassus_inverse(delassus: np.ndarray, mapped: bool) -> np.ndarray:
    """G⁻¹, or for redundant rows the pseudo-inverse that gives the minimum-norm reactions,
    as :func:`pinext.simulation.step._solve_delassus` solves (W ≠ J: the inverse)."""
    if delassus.shape[0] == 1 and not mapped:
        g = delassus[0, 0]
        return np.array([[1.0 / g if g > 0.0 else 0.0]])
    if mapped or _well_conditioned(delassus):
        return np.linalg.inv(delassus)
    return np.linalg.pinv(delassus, rcond=RANK_TOLERANCE)


def constrained_matrices(
    point: _Point, terms_x: np.ndarray, terms_u: np.ndarray, tau0: np.ndarray, jacobian: Any
) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
    """A and B of the point's constrained phase (module docstring) and the names of the
    components whose rows' terms were differenced; None when its constrained components give
    no row at the point.

    The point's own ``(a_0, λ_0)`` and every column come from one factorization: M's sparse
    Cholesky (Pinocchio's, as the acceleration step's) and the Delassus matrix
    ``G = J M⁻¹ Wᵀ + C`` of the Schur complement, ``G δλ = r_λ − J M⁻¹ r_a``,
    ``δa = M⁻¹ (r_a + Wᵀ δλ)``, solved as :mod:`pinext.simulation.step` solves it (the
    minimum-norm reactions for redundant rows; the accelerations are unique).

    Args:
        point: The linearization point (its phase has rows).
        terms_x: ``∂[τ; ṡ]/∂δx`` of the efforts and component states, shape (nv + ns, n).
        terms_u: ``∂[τ; ṡ]/∂δu``, shape (nv + ns, m).
        tau0: Shape (nv,). Every effort but the reactions at the point [N.m or N].
        jacobian: :func:`pinext.linear_models.central_jacobian`.
    """
    system, nv, n = point.system, point.nv, point.n
    step, u0 = point.step, point.u0
    q0, v0 = system.split(point.x0)
    blocks = _blocks(point, q0, v0)
    if not blocks:
        return None
    effort = tau0 - step.data.nle  # τ − h at the point
    pin.cholesky.decompose(step.model, step.data)
    inverse = pin.cholesky.computeMinv(step.model, step.data)  # a copy
    if len(blocks) == 1:
        j0, drift, w0 = blocks[0].jacobian, blocks[0].drift, blocks[0].force_map
    else:
        j0 = np.vstack([b.jacobian for b in blocks])
        drift = np.concatenate([b.drift for b in blocks])
        w0 = None
        if any(b.force_map is not None for b in blocks):
            w0 = np.vstack([b.jacobian if b.force_map is None else b.force_map for b in blocks])
    mapped = w0 is not None
    minv_wt = inverse @ (j0 if w0 is None else w0).T
    delassus = j0 @ minv_wt
    for block in blocks:
        if block.compliance is not None:
            k = np.arange(block.start, block.rows.stop)
            delassus[k, k] += block.compliance
    delassus_inverse = _delassus_inverse(delassus, mapped)
    # a = P (τ − h) − K γ, λ = G⁻¹ (−γ − J M⁻¹ (τ − h)) with K = M⁻¹ Wᵀ G⁻¹ and
    # P = M⁻¹ − K J M⁻¹ (J M⁻¹ = (M⁻¹ Jᵀ)ᵀ when W = J); the columns: δa = P r_a + K r_λ
    gain = minv_wt @ delassus_inverse
    projector = inverse - gain @ (j0 @ inverse if mapped else minv_wt.T)
    a0 = projector @ effort - gain @ drift
    lam0 = np.zeros(j0.shape[0])  # read by differenced rows only (δW = 0 for the others)
    if any(block.columns is not None for block in blocks):
        lam0 = delassus_inverse @ (-drift - j0 @ (inverse @ effort))
    rhs = np.zeros((nv + lam0.size, n + u0.size))  # columns [δx, δu]
    rhs[:nv, :n] = terms_x[:nv]
    rhs[:nv, n:] = terms_u[:nv]
    differenced = _row_terms(point, blocks, a0, lam0, jacobian, rhs)
    dtau_dq, dtau_dv, _ = pin.computeRNEADerivatives(step.model, step.data, q0, v0, a0)
    rhs[:nv, :nv] -= dtau_dq
    rhs[:nv, nv : 2 * nv] -= dtau_dv
    accelerations = projector @ rhs[:nv] + gain @ rhs[nv:]
    a = np.concatenate((np.zeros((nv, n)), accelerations[:, :n], terms_x[nv:]))
    b = np.concatenate((np.zeros((nv, u0.size)), accelerations[:, n:], terms_u[nv:]))
    return a, b, differenced
