"""Natural frequencies, mode shapes and static deflection of robots with elastic joints.

The linearised equations about a configuration :math:`q_0` are

.. math::

    M(q_0)\\,\\ddot{x} + \\Big(K + \\frac{\\partial g}{\\partial q}(q_0)\\Big)\\, x = 0,

with :math:`M` from Pinocchio's CRBA (it includes ``model.armature``), :math:`K` the joint
stiffness (Celentano 2008, (67)–(69); diagonal, plus the coupling of an elastic support,
:mod:`pinext.support`) and the gravity Hessian only with ``gravity=True``. The
natural frequencies solve :math:`K x = \\omega^2 M x` (Celentano 2008, §5.2, (72)–(73)).

Kinetic energy models (Celentano 2008, Remark 5 and (65)): ``kinetic_energy="exact"`` uses the
sublink chain as it is; ``"undeformed"`` evaluates the mass matrix with every elastic angle set to
zero, i.e. it neglects the deformation angles in the kinetic energy, so that :math:`M` depends on
the angles of motion only, as in (65)–(66).

Every function accepts any object with ``model`` (a ``pin.Model``) and ``joint_stiffness``
(shape (nv,)), e.g. :class:`pinext.Robot`; ``joint_damping`` is used where damping matters.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any, NamedTuple

import numpy as np
import pinocchio as pin
from scipy.linalg import eigh

from ..exceptions import InvalidParameter, NameNotFound, PinextError
from ..model import resolve_frame, stiffness_matrix

__all__ = [
    "ModalResult",
    "forward_dynamics",
    "mass_matrix",
    "mode_shapes",
    "natural_frequencies",
    "static_deflection",
    "undeformed_bias",
]

KINETIC_ENERGY = ("exact", "undeformed")


class ModalResult(NamedTuple):
    """Natural frequencies and mode shapes about one configuration."""

    frequencies: np.ndarray
    """Shape (n,). Natural frequencies [Hz], ascending; rigid-body modes are 0 and unstable
    directions (with gravity) negative, −√(−λ)/2π."""
    shapes: np.ndarray
    """Shape (nv, n). Mass-normalised mode shapes (xᵀ M x = 1); locked DOFs are zero."""
    dofs: np.ndarray
    """Shape (n,). Indices in v of the DOFs kept (the others are locked)."""
    q: np.ndarray
    """Shape (nq,). The configuration of the linearisation."""


def _model(robot: Any) -> pin.Model:
    model = getattr(robot, "model", None)
    if not isinstance(model, pin.Model):
        raise InvalidParameter("robot must have a 'model' attribute holding a pinocchio.Model")
    return model


def _stiffness(robot: Any, model: pin.Model) -> np.ndarray:
    stiffness = getattr(robot, "joint_stiffness", None)
    if stiffness is None:
        return np.zeros(model.nv)
    stiffness = np.asarray(stiffness, dtype=float)
    if stiffness.shape != (model.nv,):
        raise InvalidParameter(
            f"joint_stiffness has shape {stiffness.shape}, expected ({model.nv},)"
        )
    return stiffness


def _stiffness_matrix(robot: Any, model: pin.Model) -> np.ndarray:
    """The (nv, nv) stiffness: diag(joint_stiffness) plus an elastic support's coupling
    (:mod:`pinext.support`)."""
    _stiffness(robot, model)  # checks the shape
    return stiffness_matrix(robot, model)


def _configuration(model: pin.Model, q: np.ndarray | None) -> np.ndarray:
    if q is None:
        return pin.neutral(model)
    q = np.asarray(q, dtype=float)
    if q.shape != (model.nq,):
        raise InvalidParameter(f"q has shape {q.shape}, expected ({model.nq},)")
    return q


def elastic_joint_ids(model: pin.Model, stiffness: np.ndarray) -> list[int]:
    """Joints whose DOFs all have a nonzero stiffness."""
    ids = []
    for j in range(1, model.njoints):
        jm = model.joints[j]
        if jm.nv and np.all(stiffness[jm.idx_v : jm.idx_v + jm.nv] != 0.0):
            ids.append(j)
    return ids


def _undeformed(model: pin.Model, stiffness: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``q`` with every elastic joint at its neutral value."""
    q_bar = q.copy()
    neutral = pin.neutral(model)
    for j in elastic_joint_ids(model, stiffness):
        jm = model.joints[j]
        q_bar[jm.idx_q : jm.idx_q + jm.nq] = neutral[jm.idx_q : jm.idx_q + jm.nq]
    return q_bar


def _free_dofs(model: pin.Model, locked_joints: Sequence[str]) -> np.ndarray:
    if isinstance(locked_joints, str):
        locked_joints = (locked_joints,)
    locked = np.zeros(model.nv, dtype=bool)
    names = list(model.names)
    for name in locked_joints:
        if name not in names[1:]:
            raise NameNotFound("joint", name, names[1:])
        jm = model.joints[model.getJointId(name)]
        locked[jm.idx_v : jm.idx_v + jm.nv] = True
    return np.flatnonzero(~locked)


def _check_kinetic(kinetic_energy: str) -> None:
    if kinetic_energy not in KINETIC_ENERGY:
        raise InvalidParameter(
            f"kinetic_energy must be one of {', '.join(KINETIC_ENERGY)}, got {kinetic_energy!r}"
        )


def mass_matrix(
    robot: Any, q: np.ndarray | None = None, *, kinetic_energy: str = "exact"
) -> np.ndarray:
    """Joint-space inertia matrix with the rotor inertias, exact or with undeformed geometry.

    .. math::

        M(q) = \\mathrm{CRBA}(q) \\;(\\text{Pinocchio adds } \\mathrm{diag}(\\text{armature})),
        \\qquad M_\\text{undeformed}(q) = M(\\bar q),

    where :math:`\\bar q` is ``q`` with the elastic angles set to zero (Celentano 2008, (65)).

    Args:
        robot: Object with ``model`` and ``joint_stiffness``.
        q: Configuration, shape (nq,); default neutral.
        kinetic_energy: ``"exact"`` or ``"undeformed"``.

    Returns:
        Shape (nv, nv), symmetric [kg.m^2, kg.m, kg].
    """
    _check_kinetic(kinetic_energy)
    model = _model(robot)
    q = _configuration(model, q)
    if kinetic_energy == "undeformed":
        q = _undeformed(model, _stiffness(robot, model), q)
    data = model.createData()
    mass = pin.crba(model, data, q)
    return np.triu(mass) + np.triu(mass, 1).T


def _reduced_problem(
    robot: Any,
    q: np.ndarray | None,
    locked_joints: Sequence[str],
    gravity: bool,
    kinetic_energy: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    model = _model(robot)
    q = _configuration(model, q)
    stiffness_matrix = _stiffness_matrix(robot, model)
    mass = mass_matrix(robot, q, kinetic_energy=kinetic_energy)
    if gravity:
        data = model.createData()
        hessian = pin.computeGeneralizedGravityDerivatives(model, data, q)
        stiffness_matrix = stiffness_matrix + 0.5 * (hessian + hessian.T)
    dofs = _free_dofs(model, locked_joints)
    return mass[np.ix_(dofs, dofs)], stiffness_matrix[np.ix_(dofs, dofs)], dofs, q


def mode_shapes(
    robot: Any,
    q: np.ndarray | None = None,
    *,
    locked_joints: Sequence[str] = (),
    gravity: bool = False,
    kinetic_energy: str = "exact",
) -> ModalResult:
    """Natural frequencies and mass-normalised mode shapes, :math:`K x = \\omega^2 M x`.

    Args:
        robot: Object with ``model`` and ``joint_stiffness`` (e.g. :class:`pinext.Robot`).
        q: Configuration of the linearisation, shape (nq,); default neutral. With
            ``gravity=True`` it should be a static equilibrium (see :func:`static_deflection`).
        locked_joints: Joint names whose DOFs are held (removed from the problem), e.g. the
            hub joint for a clamped-free beam.
        gravity: Add the gravity Hessian ∂g/∂q (Pinocchio's gravity derivatives) to K.
        kinetic_energy: ``"exact"`` or ``"undeformed"`` (Celentano 2008, Remark 5, (65)).

    Returns:
        :class:`ModalResult`.

    Raises:
        NameNotFound: An unknown joint in ``locked_joints``.
        PinextError: The mass matrix is singular on the kept DOFs.
    """
    mass, stiffness, dofs, q = _reduced_problem(robot, q, locked_joints, gravity, kinetic_energy)
    if len(dofs) == 0:
        return ModalResult(np.zeros(0), np.zeros((_model(robot).nv, 0)), dofs, q)
    try:
        values, vectors = eigh(stiffness, mass)
    except np.linalg.LinAlgError as err:
        raise PinextError(f"modal analysis failed: {err}") from None
    scale = max(np.abs(values).max(), 1e-300)
    values[np.abs(values) <= 1e-10 * scale] = 0.0
    frequencies = np.sign(values) * np.sqrt(np.abs(values)) / (2.0 * np.pi)
    shapes = np.zeros((_model(robot).nv, len(dofs)))
    shapes[dofs] = vectors
    return ModalResult(frequencies, shapes, dofs, q)


def natural_frequencies(
    robot: Any,
    q: np.ndarray | None = None,
    v: np.ndarray | None = None,
    *,
    locked_joints: Sequence[str] = (),
    gravity: bool = False,
    kinetic_energy: str = "exact",
) -> np.ndarray:
    """Natural frequencies [Hz], ascending, rigid-body modes as 0 (Celentano 2008, (72)–(73)).

    About a configuration (``v`` None): :math:`K x = \\omega^2 M x`, see :func:`mode_shapes`.

    About a steady motion (``v`` given, e.g. a hub spinning at Ω): the equations of motion
    :math:`M(q)\\ddot q + b(q, \\dot q) + g(q) + K q = \\tau` linearised about
    :math:`(q, v, \\ddot q = 0)` on the free DOFs give

    .. math::

        M \\ddot x + G \\dot x + \\Big(K + \\frac{\\partial\\,\\mathrm{rnea}}{\\partial q}
        \\Big) x = 0, \\qquad G = \\frac{\\partial\\,\\mathrm{rnea}}{\\partial v},

    with Pinocchio's ``computeRNEADerivatives`` (gravity only with ``gravity=True``):
    :math:`\\partial\\mathrm{rnea}/\\partial q` carries the centrifugal stiffening (and
    softening), :math:`G` the gyroscopic (Coriolis) coupling. The frequencies are
    :math:`|\\operatorname{Im}\\lambda|/2\\pi` of the first-order eigenproblem; a real pair
    :math:`\\pm\\sigma` (divergence) is reported as :math:`-\\sigma/2\\pi`. Lock the joints
    whose speed is prescribed (the hub): their DOFs are not perturbed. ``q`` should be a steady
    equilibrium of that motion (for a beam spinning about an axis through its root, the
    straight beam). Damping is not included.

    Args:
        robot: Object with ``model`` and ``joint_stiffness`` (e.g. :class:`pinext.Robot`).
        q: Configuration, shape (nq,); default neutral.
        v: Velocity of the steady motion, shape (nv,) [rad/s or m/s]; None: about rest.
        locked_joints: Joint names held (prescribed motion).
        gravity: Include gravity (its Hessian).
        kinetic_energy: ``"exact"`` or ``"undeformed"`` (the latter only about rest).

    Returns:
        Shape (number of free DOFs,).

    Raises:
        InvalidParameter: ``kinetic_energy="undeformed"`` with ``v``, or wrong shapes.
    """
    if v is not None:
        return _rotating_frequencies(robot, q, v, locked_joints, gravity, kinetic_energy)
    mass, stiffness, dofs, _ = _reduced_problem(robot, q, locked_joints, gravity, kinetic_energy)
    if len(dofs) == 0:
        return np.zeros(0)
    try:
        values = eigh(stiffness, mass, eigvals_only=True)
    except np.linalg.LinAlgError as err:
        raise PinextError(f"modal analysis failed: {err}") from None
    scale = max(np.abs(values).max(), 1e-300)
    values[np.abs(values) <= 1e-10 * scale] = 0.0
    return np.sign(values) * np.sqrt(np.abs(values)) / (2.0 * np.pi)


def _rotating_frequencies(
    robot: Any,
    q: np.ndarray | None,
    v: np.ndarray,
    locked_joints: Sequence[str],
    gravity: bool,
    kinetic_energy: str,
) -> np.ndarray:
    """Frequencies of the linearisation about a steady motion (see natural_frequencies)."""
    _check_kinetic(kinetic_energy)
    if kinetic_energy != "exact":
        raise InvalidParameter(
            "natural frequencies about a steady motion (v given) use kinetic_energy='exact'"
        )
    model = _model(robot).copy()
    q = _configuration(model, q)
    v = np.asarray(v, dtype=float)
    if v.shape != (model.nv,):
        raise InvalidParameter(f"v has shape {v.shape}, expected ({model.nv},)")
    if not gravity:
        model.gravity = pin.Motion.Zero()
    data = model.createData()
    dtau_dq, dtau_dv, _ = pin.computeRNEADerivatives(model, data, q, v, np.zeros(model.nv))
    mass = mass_matrix(SimpleNamespace(model=model), q)
    stiffness = _stiffness_matrix(robot, model) + dtau_dq
    dofs = _free_dofs(model, locked_joints)
    n = len(dofs)
    if n == 0:
        return np.zeros(0)
    sub = np.ix_(dofs, dofs)
    m_inv = np.linalg.inv(mass[sub])
    state = np.block(
        [[np.zeros((n, n)), np.eye(n)], [-m_inv @ stiffness[sub], -m_inv @ dtau_dv[sub]]]
    )
    eigenvalues = np.linalg.eigvals(state)
    scale = max(np.abs(eigenvalues).max(), 1e-300)
    tol = 1e-7 * scale
    oscillating = np.sort(eigenvalues.imag[eigenvalues.imag > tol])
    diverging = np.sort(
        eigenvalues.real[(np.abs(eigenvalues.imag) <= tol) & (eigenvalues.real > tol)]
    )
    values = np.concatenate([-diverging[::-1], oscillating])
    values = np.concatenate([np.zeros(max(n - values.size, 0)), values])[-n:]
    return np.sort(values) / (2.0 * np.pi)


def static_deflection(
    robot: Any,
    q: np.ndarray | None,
    *,
    frame: str | int,
    wrench: np.ndarray,
    locked_joints: Sequence[str] = (),
    linear: bool = True,
    gravity: bool | None = None,
    tol: float = 1e-12,
    max_iterations: int = 50,
) -> np.ndarray:
    """Equilibrium configuration under a wrench, with the rigid joints held (Celentano 2008,
    (74)–(76)).

    Linear (``linear=True``): :math:`\\Delta q_e = K_e^{-1}\\,(J^T w - g)_e` with the Jacobian at
    ``q`` (gravity only if ``gravity=True``). Nonlinear: Newton iterations on the elastic DOFs

    .. math::

        r(q) = K (q - \\bar q)_e + g_e(q) - (J(q)^T w)_e = 0,

    with the tangent :math:`K + \\partial g/\\partial q - \\partial(J^T w)/\\partial q`; the gravity
    part from Pinocchio's derivatives, the load part by central differences. The wrench keeps its
    world direction and acts at the frame origin (a dead load).

    Args:
        robot: Object with ``model`` and ``joint_stiffness``.
        q: Configuration of the rigid joints (the elastic angles in ``q`` are the starting
            point; their rest value is zero); None: neutral.
        frame: Frame name (or index) where the wrench acts.
        wrench: Shape (6,). [force (3) [N], torque (3) [N.m]] in the world frame at the frame
            origin (Pinocchio's LOCAL_WORLD_ALIGNED).
        locked_joints: Elastic joints to hold rigid as well.
        linear: Linear (small deflection) or nonlinear (Newton) equilibrium.
        gravity: Include the model's gravity; default False when linear, True otherwise.
        tol: Newton tolerance on the step norm [rad].
        max_iterations: Newton iteration limit.

    Returns:
        Shape (nq,): the deflected configuration.

    Raises:
        NameNotFound: Unknown frame or joint.
        PinextError: Newton did not converge (e.g. buckling under a compressive load).
    """
    model = _model(robot)
    q = _configuration(model, q).copy()
    stiffness = _stiffness(robot, model)
    wrench = np.asarray(wrench, dtype=float).reshape(6)
    fid = resolve_frame(model, frame)
    gravity = (not linear) if gravity is None else bool(gravity)
    free = set(_free_dofs(model, locked_joints).tolist())
    elastic = []
    for j in elastic_joint_ids(model, stiffness):
        jm = model.joints[j]
        if jm.nq == 1 and jm.nv == 1 and jm.idx_v in free:
            elastic.append((jm.idx_q, jm.idx_v))
    if not elastic:
        return q
    iq = np.array([e[0] for e in elastic])
    iv = np.array([e[1] for e in elastic])
    k = _stiffness_matrix(robot, model)[np.ix_(iv, iv)]
    data = model.createData()
    rest = pin.neutral(model)[iq]

    def load(qq: np.ndarray) -> np.ndarray:
        jac = pin.computeFrameJacobian(model, data, qq, fid, pin.LOCAL_WORLD_ALIGNED)
        tau = jac.T @ wrench
        if gravity:
            tau = tau - pin.computeGeneralizedGravity(model, data, qq)
        return tau[iv]

    if linear:
        q[iq] = rest + np.linalg.solve(k, load(q))
        return q
    q_k = q.copy()
    for _ in range(max_iterations):
        residual = k @ (q_k[iq] - rest) - load(q_k)
        tangent = k.copy()
        if gravity:
            tangent = (
                tangent + pin.computeGeneralizedGravityDerivatives(model, data, q_k)[np.ix_(iv, iv)]
            )
        h = 1e-6
        jac_load = np.zeros((len(iv), len(iv)))
        for c, idx in enumerate(iq):
            plus, minus = q_k.copy(), q_k.copy()
            plus[idx] += h
            minus[idx] -= h
            difference = _wrench_torque(model, data, plus, fid, wrench) - _wrench_torque(
                model, data, minus, fid, wrench
            )
            jac_load[:, c] = difference[iv] / (2 * h)
        tangent = tangent - jac_load
        step = np.linalg.solve(tangent, -residual)
        q_k[iq] += step
        if np.linalg.norm(step) < tol * max(1.0, float(np.linalg.norm(q_k[iq]))):
            return q_k
    raise PinextError(
        f"static_deflection: Newton did not converge in {max_iterations} iterations "
        f"(last step {np.linalg.norm(step):.3g} rad)"
    )


def _wrench_torque(
    model: pin.Model, data: pin.Data, q: np.ndarray, fid: int, wrench: np.ndarray
) -> np.ndarray:
    jac = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)
    return jac.T @ wrench


def undeformed_bias(robot: Any, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Velocity terms of the kinetic energy with undeformed geometry (Celentano 2008, (65)–(66)).

    With :math:`\\bar T(q, v) = \\tfrac12 v^T M(\\bar q) v` and :math:`\\bar q = P q` (elastic
    angles zeroed, :math:`P` the diagonal selector of the other coordinates), Lagrange's
    equations give :math:`M(\\bar q)\\dot v + \\bar b = \\tau`, with

    .. math::

        \\bar b = \\dot M(\\bar q)\\,v - \\frac{\\partial \\bar T}{\\partial q}
              = \\big(C(\\bar q, Pv) + C(\\bar q, Pv)^T\\big) v - P\\,C(\\bar q, v)^T v,

    using Pinocchio's Coriolis matrix, for which :math:`\\dot M = C + C^T` and
    :math:`\\partial T/\\partial q = C^T v`. Gravity is not included.

    Args:
        robot: Object with ``model`` and ``joint_stiffness``.
        q: Shape (nq,).
        v: Shape (nv,).

    Returns:
        Shape (nv,).
    """
    model = _model(robot)
    stiffness = _stiffness(robot, model)
    q_bar = _undeformed(model, stiffness, np.asarray(q, dtype=float))
    rigid = np.ones(model.nv)
    for j in elastic_joint_ids(model, stiffness):
        jm = model.joints[j]
        rigid[jm.idx_v : jm.idx_v + jm.nv] = 0.0
    v = np.asarray(v, dtype=float)
    data = model.createData()
    c_motion = pin.computeCoriolisMatrix(model, data, q_bar, rigid * v).copy()
    c_full = pin.computeCoriolisMatrix(model, data, q_bar, v)
    return (c_motion + c_motion.T) @ v - rigid * (c_full.T @ v)


def forward_dynamics(
    robot: Any,
    q: np.ndarray,
    v: np.ndarray,
    tau: np.ndarray | None = None,
    *,
    kinetic_energy: str = "exact",
    damping: bool = True,
) -> np.ndarray:
    """Acceleration of a robot with elastic joints, exact or with undeformed kinetic energy.

    .. math::

        M \\dot v + b + g(q) = \\tau - K (q - q_0) - D v,

    exact: Pinocchio's ABA (with ``model.armature``); ``"undeformed"``:
    :math:`M(\\bar q)` and :func:`undeformed_bias` (Celentano 2008, Remark 5, (65)–(66)); the
    elastic and gravity forces always use the actual ``q``.

    Args:
        robot: Object with ``model``, ``joint_stiffness`` and optionally ``joint_damping``.
        q: Shape (nq,).
        v: Shape (nv,).
        tau: Shape (nv,), joint torques [N.m]; default zero.
        kinetic_energy: ``"exact"`` or ``"undeformed"``.
        damping: Apply ``joint_damping``.

    Returns:
        Shape (nv,) [rad/s^2].
    """
    _check_kinetic(kinetic_energy)
    model = _model(robot)
    stiffness = _stiffness(robot, model)
    q = np.asarray(q, dtype=float)
    v = np.asarray(v, dtype=float)
    tau = np.zeros(model.nv) if tau is None else np.asarray(tau, dtype=float)
    deflection = pin.difference(model, pin.neutral(model), q)
    tau = tau - stiffness * deflection
    if damping and getattr(robot, "joint_damping", None) is not None:
        tau = tau - np.asarray(robot.joint_damping, dtype=float) * v
    data = model.createData()
    if kinetic_energy == "exact":
        return pin.aba(model, data, q, v, tau)
    mass = mass_matrix(robot, q, kinetic_energy="undeformed")
    rhs = tau - undeformed_bias(robot, q, v) - pin.computeGeneralizedGravity(model, data, q)
    return np.linalg.solve(mass, rhs)
