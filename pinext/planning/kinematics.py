"""Matrix-exponential (product-of-exponentials) kinematics of Negrean et al. (2009), §1.

Negrean et al. (2009), *New formulations on serial robots dynamics*, §1, eqs. (1)–(13), write
the forward kinematics and the Jacobian of a serial robot from the *nominal geometry* only: the
unit vector :math:`\\bar k_i` of each driving axis, a point :math:`\\bar\\rho_i` on it and the
operator :math:`\\Delta_i` (1 for a revolute joint, 0 for a prismatic one), all in the base
frame at the zero configuration. In screw form (Lynch & Park, *Modern Robotics*, §4.1) the axis
of joint :math:`i` is the twist

.. math::

    S_i = \\begin{bmatrix} v_i \\\\ \\omega_i \\end{bmatrix}
        = \\begin{bmatrix} -\\Delta_i\\, \\bar k_i \\times \\bar\\rho_i + (1-\\Delta_i)\\,\\bar k_i
          \\\\ \\Delta_i\\, \\bar k_i \\end{bmatrix},

(Pinocchio's ``[linear, angular]`` order), and the placement of a frame and its spatial
Jacobian are products of matrix exponentials, eqs. (1)–(5):

.. math::

    T(q) = e^{[S_1] q_1} \\cdots e^{[S_n] q_n}\\, T(0), \\qquad
    J_s^{(i)}(q) = \\mathrm{Ad}_{e^{[S_1] q_1} \\cdots e^{[S_{i-1}] q_{i-1}}}\\, S_i .

Here the screw axes are read from the Pinocchio model at its neutral configuration (the joint
placements and each joint's motion subspace), the exponentials are Pinocchio's ``exp6``; the
results are cross-checked in the tests against Pinocchio's ``updateFramePlacements`` and
``getFrameJacobian``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pinocchio as pin

from ..exceptions import InvalidParameter
from ..model import resolve_frame

__all__ = ["ScrewAxes", "poe_forward_kinematics", "poe_jacobian", "screw_axes"]


class ScrewAxes(NamedTuple):
    """The nominal geometry of a model as screw axes at its neutral configuration."""

    axes: np.ndarray
    """Shape (njoints, 6). Screw axis S_i = [v, ω] of joint i in the base frame at the neutral
    configuration (row 0, the universe, is zero)."""
    home: list[pin.SE3]
    """Placement T(0) of every frame of the model at the neutral configuration."""
    revolute: np.ndarray
    """Shape (njoints,). The operator Δ_i: True for a rotation, False for a translation."""
    model: pin.Model
    """The model they were read from."""


def _angle(joint: pin.JointModel, q: np.ndarray) -> float:
    """The joint displacement [rad or m] of a one-DOF joint (continuous joints: atan2)."""
    if joint.nq == 1:
        return float(q[joint.idx_q])
    return float(np.arctan2(q[joint.idx_q + 1], q[joint.idx_q]))


def screw_axes(model: pin.Model) -> ScrewAxes:
    """The screw axes and home placements of every joint and frame (Negrean et al. 2009, (1)).

    .. math::

        S_i = \\mathrm{Ad}_{{}^0M_i(q_0)}\\; \\mathcal S_i,

    with :math:`{}^0M_i(q_0)` the joint placement at the neutral configuration and
    :math:`\\mathcal S_i` the joint's motion subspace (Pinocchio's ``data.joints[i].S``).

    Args:
        model: A Pinocchio model of one-DOF joints (revolute, prismatic, continuous, on any
            axis).

    Returns:
        :class:`ScrewAxes`.

    Raises:
        InvalidParameter: A joint with more than one DOF (free flyer, spherical, planar...).
    """
    data = model.createData()
    q0 = pin.neutral(model)
    pin.forwardKinematics(model, data, q0)
    pin.updateFramePlacements(model, data)
    axes = np.zeros((model.njoints, 6))
    revolute = np.zeros(model.njoints, dtype=bool)
    for j in range(1, model.njoints):
        joint = model.joints[j]
        if joint.nv != 1:
            raise InvalidParameter(
                f"joint '{model.names[j]}' ({joint.shortname()}) has {joint.nv} DOFs; "
                "product-of-exponentials kinematics takes one-DOF joints only "
                "(revolute, prismatic, continuous)"
            )
        local = np.asarray(data.joints[j].S).reshape(6)
        axes[j] = data.oMi[j].toActionMatrix() @ local
        revolute[j] = bool(np.linalg.norm(local[3:]) > 0.0)
    home = [pin.SE3(data.oMf[f]) for f in range(model.nframes)]
    return ScrewAxes(axes, home, revolute, model)


def _chain(model: pin.Model, fid: int) -> list[int]:
    """Joint ids from the root to the frame's parent joint (universe excluded)."""
    return [j for j in model.supports[model.frames[fid].parentJoint] if j > 0]


def _check_q(model: pin.Model, q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, dtype=float)
    if q.shape != (model.nq,):
        raise InvalidParameter(f"q has shape {q.shape}, expected ({model.nq},)")
    return q


def _exponentials(screws: ScrewAxes, chain: list[int], q: np.ndarray) -> list[pin.SE3]:
    """Partial products e^{[S_1]q_1} ... e^{[S_k]q_k} for k = 0..len(chain)."""
    model = screws.model
    products = [pin.SE3.Identity()]
    for j in chain:
        twist = pin.Motion(screws.axes[j] * _angle(model.joints[j], q))
        products.append(products[-1] * pin.exp6(twist))
    return products


def poe_forward_kinematics(
    model: pin.Model, q: np.ndarray, frame: str | int, *, screws: ScrewAxes | None = None
) -> pin.SE3:
    """Placement of a frame as a product of matrix exponentials (Negrean et al. 2009, (1)–(5)).

    .. math::

        {}^0T_f(q) = \\prod_{i \\in \\text{chain}(f)} e^{[S_i] q_i}\\; {}^0T_f(q_0).

    Args:
        model: The Pinocchio model (one-DOF joints).
        q: Configuration, shape (nq,).
        frame: Frame name or index.
        screws: The model's :func:`screw_axes` (computed when omitted).

    Returns:
        The frame placement in the world frame.
    """
    screws = screw_axes(model) if screws is None else screws
    q = _check_q(model, q)
    fid = resolve_frame(model, frame)
    return _exponentials(screws, _chain(model, fid), q)[-1] * screws.home[fid]


def poe_jacobian(
    model: pin.Model,
    q: np.ndarray,
    frame: str | int,
    reference: pin.ReferenceFrame = pin.LOCAL_WORLD_ALIGNED,
    *,
    screws: ScrewAxes | None = None,
) -> np.ndarray:
    """Frame Jacobian from the screw axes (Negrean et al. 2009, (1)–(3), (12)–(13)).

    The spatial (world) Jacobian has one column per joint of the frame's chain,

    .. math::

        J_s^{(i)} = \\mathrm{Ad}_{e^{[S_1]q_1}\\cdots e^{[S_{i-1}]q_{i-1}}}\\, S_i ,

    and is then expressed in the requested reference frame: ``WORLD`` (velocity of the body
    point at the world origin), ``LOCAL_WORLD_ALIGNED`` (at the frame origin, world axes: the
    operational velocities of (13)) or ``LOCAL`` (frame axes), as Pinocchio's
    ``getFrameJacobian``.

    Args:
        model: The Pinocchio model (one-DOF joints).
        q: Configuration, shape (nq,).
        frame: Frame name or index.
        reference: ``pin.WORLD``, ``pin.LOCAL_WORLD_ALIGNED`` or ``pin.LOCAL``.
        screws: The model's :func:`screw_axes` (computed when omitted).

    Returns:
        Shape (6, nv) [m/rad, -; -, rad/rad]: rows [linear, angular].
    """
    screws = screw_axes(model) if screws is None else screws
    q = _check_q(model, q)
    fid = resolve_frame(model, frame)
    chain = _chain(model, fid)
    products = _exponentials(screws, chain, q)
    jac = np.zeros((6, model.nv))
    for k, j in enumerate(chain):
        jac[:, model.joints[j].idx_v] = products[k].toActionMatrix() @ screws.axes[j]
    if reference == pin.WORLD:
        return jac
    placement = products[-1] * screws.home[fid]
    if reference == pin.LOCAL_WORLD_ALIGNED:
        shift = pin.SE3(np.eye(3), placement.translation)
        return shift.inverse().toActionMatrix() @ jac
    if reference == pin.LOCAL:
        return placement.inverse().toActionMatrix() @ jac
    raise InvalidParameter(
        f"reference must be pin.WORLD, pin.LOCAL_WORLD_ALIGNED or pin.LOCAL, got {reference!r}"
    )
