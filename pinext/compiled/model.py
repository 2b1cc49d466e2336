"""A Pinocchio model packed into plain arrays that Numba kernels can read.

:func:`pack` turns a ``pin.Model`` into a :class:`PackedModel`: a ``NamedTuple`` of float64 and
int64 numpy arrays only, so it can be passed to ``@njit`` functions. Per-joint arrays are indexed
with Pinocchio's joint index (row 0, the universe, is unused); per-dof arrays with the velocity
index. The packed model also carries the kernels' workspace, so that they allocate nothing: a
packed model must not be shared between threads.

Every supported joint has a constant motion subspace S in its own frame and a zero bias
c_J = Ṡ q̇ (Featherstone (2008), ch. 4), which keeps the kernels short.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pinocchio as pin

from pinext.exceptions import UnsupportedModel

__all__ = ["JOINT_CODES", "PackedModel", "pack"]

#: Joint type codes stored in :attr:`PackedModel.jtype`.
REVOLUTE = 0  # q = θ, rotation about ``axis``
REVOLUTE_UNBOUNDED = 1  # q = (cos θ, sin θ)
PRISMATIC = 2  # q = d, translation along ``axis``
FREE_FLYER = 3  # q = (x, y, z, qx, qy, qz, qw), v = (linear, angular) in the child frame
SPHERICAL = 4  # q = (qx, qy, qz, qw), v = angular velocity in the child frame
TRANSLATION = 5  # q = (x, y, z)
PLANAR = 6  # q = (x, y, cos θ, sin θ), v = (vx, vy, ωz) in the child frame

_E = np.eye(3)

#: Pinocchio joint type -> (code, axis or None for the joint's own ``axis``).
JOINT_CODES: dict[str, tuple[int, np.ndarray | None]] = {
    "JointModelRX": (REVOLUTE, _E[0]),
    "JointModelRY": (REVOLUTE, _E[1]),
    "JointModelRZ": (REVOLUTE, _E[2]),
    "JointModelRevoluteUnaligned": (REVOLUTE, None),
    "JointModelRUBX": (REVOLUTE_UNBOUNDED, _E[0]),
    "JointModelRUBY": (REVOLUTE_UNBOUNDED, _E[1]),
    "JointModelRUBZ": (REVOLUTE_UNBOUNDED, _E[2]),
    "JointModelRevoluteUnboundedUnaligned": (REVOLUTE_UNBOUNDED, None),
    "JointModelPX": (PRISMATIC, _E[0]),
    "JointModelPY": (PRISMATIC, _E[1]),
    "JointModelPZ": (PRISMATIC, _E[2]),
    "JointModelPrismaticUnaligned": (PRISMATIC, None),
    "JointModelFreeFlyer": (FREE_FLYER, _E[2]),
    "JointModelSpherical": (SPHERICAL, _E[2]),
    "JointModelTranslation": (TRANSLATION, _E[2]),
    "JointModelPlanar": (PLANAR, _E[2]),
}


class PackedModel(NamedTuple):
    """A Pinocchio model as plain arrays, plus the kernels' workspace.

    nj = model.njoints (row 0 is the universe), nv = model.nv.
    """

    parent: np.ndarray
    """Parent joint index. Shape (nj,), int64."""
    jtype: np.ndarray
    """Joint type code (see :data:`JOINT_CODES`). Shape (nj,), int64."""
    idx_q: np.ndarray
    """First configuration index. Shape (nj,), int64."""
    idx_v: np.ndarray
    """First velocity index. Shape (nj,), int64."""
    nq: np.ndarray
    """Configuration size. Shape (nj,), int64."""
    nv: np.ndarray
    """Velocity size (degrees of freedom). Shape (nj,), int64."""
    axis: np.ndarray
    """Unit axis of revolute and prismatic joints. Shape (nj, 3)."""
    placement_rotation: np.ndarray
    """Rotation of the joint placement (parent joint frame -> joint frame). Shape (nj, 3, 3)."""
    placement_translation: np.ndarray
    """Translation of the joint placement [m]. Shape (nj, 3)."""
    mass: np.ndarray
    """Body mass [kg]. Shape (nj,)."""
    lever: np.ndarray
    """Centre of mass in the joint frame [m]. Shape (nj, 3)."""
    rotational_inertia: np.ndarray
    """Rotational inertia about the centre of mass [kg.m²]. Shape (nj, 3, 3)."""
    inertia: np.ndarray
    """Spatial inertia at the joint origin, (linear, angular) order. Shape (nj, 6, 6)."""
    inertia_parameters: np.ndarray
    """Each body's inertia as (m, m c, I_o) with I_o its rotational inertia about the joint
    origin, upper triangle (xx, yy, zz, xy, xz, yz) [kg, kg.m, kg.m²]. Shape (nj, 10)."""
    motion_subspace: np.ndarray
    """Row k is the column of S for dof k, in the joint frame. Shape (nv, 6)."""
    dof_axis: np.ndarray
    """For dof k, the index of the one nonzero (= 1) entry of row k of S, or −1 when the row
    has several (unaligned axes); lets the kernels skip products by S. Shape (nv,), int64."""
    dof_parent: np.ndarray
    """Parent dof λ(k) of the kinematic tree over dofs (previous dof of the same joint, else
    the last dof of the parent joint, −1 at the root), for the LTDL factorisation.
    Shape (nv,), int64."""
    armature: np.ndarray
    """Armature (rotor inertia) added to the diagonal of the joint-space inertia. Shape (nv,)."""
    gravity: np.ndarray
    """Gravity as a spatial acceleration (linear, angular) [m/s²]. Shape (6,)."""
    zeros: np.ndarray
    """Zeros (a null velocity and a null gravity for the kernels). Shape (max(nv, 6),)."""
    # --- workspace (overwritten by every kernel call) ---
    ws_rotation: np.ndarray
    """Rotation of parent -> joint frame at the current q. Shape (nj, 3, 3)."""
    ws_translation: np.ndarray
    """Translation of parent -> joint frame at the current q [m]. Shape (nj, 3)."""
    ws_velocity: np.ndarray
    """Body spatial velocities. Shape (nj, 6)."""
    ws_bias: np.ndarray
    """Velocity-product accelerations c_i. Shape (nj, 6)."""
    ws_acceleration: np.ndarray
    """Body spatial accelerations (gravity included). Shape (nj, 6)."""
    ws_articulated_inertia: np.ndarray
    """Articulated-body inertias. Shape (nj, 6, 6)."""
    ws_composite: np.ndarray
    """Composite-rigid-body inertias, as :attr:`inertia_parameters`. Shape (nj, 10)."""
    ws_bias_force: np.ndarray
    """Articulated bias forces. Shape (nj, 6)."""
    ws_u_matrix: np.ndarray
    """Row k is U = I^A S for dof k. Shape (nv, 6)."""
    ws_d_inverse: np.ndarray
    """Inverse of D = Sᵀ U + armature, block of each joint (rows idx_v..). Shape (nv, 6)."""
    ws_u: np.ndarray
    """u = τ − Sᵀ p^A. Shape (nv,)."""
    ws_matrix: np.ndarray
    """Scratch 6 × 6 matrices. Shape (3, 6, 6)."""
    ws_vector: np.ndarray
    """Scratch 6-vectors. Shape (4, 6)."""
    ws_joint_rotation: np.ndarray
    """Scratch rotation of one joint. Shape (1, 3, 3)."""
    ws_mass_matrix: np.ndarray
    """Joint-space inertia M (or its LTDL factors). Shape (nv, nv)."""
    ws_momentum: np.ndarray
    """Body momenta h_i = I_i v_i, summed over subtrees by the momentum kernel. Shape (nj, 6)."""
    ws_gravity_force: np.ndarray
    """Forces I_i a_i of gravity alone, summed over subtrees. Shape (nj, 6)."""


def _joint_code(model: pin.Model, i: int) -> tuple[int, np.ndarray]:
    joint = model.joints[i]
    name = joint.shortname()
    if name not in JOINT_CODES:
        raise UnsupportedModel(model.names[i], name, JOINT_CODES)
    code, axis = JOINT_CODES[name]
    if axis is None:  # an unaligned axis: read it from S (not every such joint exposes .axis)
        data = joint.createData()
        joint.calc(data, pin.neutral(model))
        column = np.asarray(data.S, dtype=float).reshape(6)
        axis = column[:3] if code == PRISMATIC else column[3:]
        axis = axis / np.linalg.norm(axis)
    return code, np.array(axis, dtype=float)


def _motion_subspace(code: int, axis: np.ndarray) -> np.ndarray:
    """The columns of S (as rows), Featherstone (2008) Table 4.1, in Pinocchio's order."""
    eye = np.eye(6)
    if code in (REVOLUTE, REVOLUTE_UNBOUNDED):
        return np.r_[np.zeros(3), axis][None, :]
    if code == PRISMATIC:
        return np.r_[axis, np.zeros(3)][None, :]
    if code == FREE_FLYER:
        return eye
    if code == SPHERICAL:
        return eye[3:]
    if code == TRANSLATION:
        return eye[:3]
    return eye[[0, 1, 5]]  # PLANAR


def pack(model: pin.Model, angles: bool = False) -> PackedModel:
    """Pack a Pinocchio model for the compiled kernels.

    Args:
        model: A Pinocchio model whose joints are all of the types in :data:`JOINT_CODES`.
        angles: Read the configuration in the angle chart of a flat model
            (:class:`pinext.simulation.chart.Angles`): ``nv`` coordinates, an unbounded
            revolute joint's angle θ at its velocity index instead of (cos θ, sin θ).

    Returns:
        The packed model, with its own workspace.

    Raises:
        UnsupportedModel: A joint of another type (helical, composite, mimic, spherical ZYX,
            ...); the error names it, so callers can fall back to Pinocchio.
    """
    nj, nv = model.njoints, model.nv
    parent = np.zeros(nj, dtype=np.int64)
    jtype = np.full(nj, -1, dtype=np.int64)
    idx_q = np.zeros(nj, dtype=np.int64)
    idx_v = np.zeros(nj, dtype=np.int64)
    nqs = np.zeros(nj, dtype=np.int64)
    nvs = np.zeros(nj, dtype=np.int64)
    axis = np.zeros((nj, 3))
    rot = np.zeros((nj, 3, 3))
    rot[0] = np.eye(3)
    trans = np.zeros((nj, 3))
    mass = np.zeros(nj)
    lever = np.zeros((nj, 3))
    rotational = np.zeros((nj, 3, 3))
    inertia = np.zeros((nj, 6, 6))
    parameters = np.zeros((nj, 10))
    subspace = np.zeros((nv, 6))
    for i in range(1, nj):
        code, ax = _joint_code(model, i)
        joint = model.joints[i]
        parent[i] = model.parents[i]
        if angles and code == REVOLUTE_UNBOUNDED:
            code = REVOLUTE
        jtype[i] = code
        idx_q[i], idx_v[i] = (joint.idx_v if angles else joint.idx_q), joint.idx_v
        nqs[i], nvs[i] = (joint.nv if angles else joint.nq), joint.nv
        axis[i] = ax
        placement = model.jointPlacements[i]
        rot[i] = placement.rotation
        trans[i] = placement.translation
        body = model.inertias[i]
        mass[i] = body.mass
        lever[i] = body.lever
        rotational[i] = body.inertia
        inertia[i] = body.matrix()
        about_origin = body.inertia + body.mass * (body.lever @ body.lever * np.eye(3))
        about_origin -= body.mass * np.outer(body.lever, body.lever)  # parallel axes
        upper = about_origin[[0, 1, 2, 0, 0, 1], [0, 1, 2, 1, 2, 2]]
        parameters[i] = np.r_[body.mass, body.mass * body.lever, upper]
        subspace[joint.idx_v : joint.idx_v + joint.nv] = _motion_subspace(code, ax)
    dof_parent = np.full(nv, -1, dtype=np.int64)
    for i in range(1, nj):
        first = idx_v[i]
        dof_parent[first + 1 : first + nvs[i]] = np.arange(first, first + nvs[i] - 1)
        if parent[i] > 0:
            dof_parent[first] = idx_v[parent[i]] + nvs[parent[i]] - 1
    gravity = np.r_[model.gravity.linear, model.gravity.angular].astype(float)
    return PackedModel(
        parent=parent,
        jtype=jtype,
        idx_q=idx_q,
        idx_v=idx_v,
        nq=nqs,
        nv=nvs,
        axis=axis,
        placement_rotation=rot,
        placement_translation=trans,
        mass=mass,
        lever=lever,
        rotational_inertia=rotational,
        inertia=inertia,
        inertia_parameters=parameters,
        motion_subspace=subspace,
        dof_axis=np.array(
            [
                int(np.argmax(row)) if np.count_nonzero(row) == 1 and row.max() == 1.0 else -1
                for row in subspace
            ],
            dtype=np.int64,
        ).reshape(nv),
        dof_parent=dof_parent,
        armature=np.array(model.armature, dtype=float).copy(),
        gravity=gravity,
        zeros=np.zeros(max(nv, 6)),
        ws_rotation=np.zeros((nj, 3, 3)),
        ws_translation=np.zeros((nj, 3)),
        ws_velocity=np.zeros((nj, 6)),
        ws_bias=np.zeros((nj, 6)),
        ws_acceleration=np.zeros((nj, 6)),
        ws_articulated_inertia=np.zeros((nj, 6, 6)),
        ws_composite=np.zeros((nj, 10)),
        ws_bias_force=np.zeros((nj, 6)),
        ws_u_matrix=np.zeros((nv, 6)),
        ws_d_inverse=np.zeros((nv, 6)),
        ws_u=np.zeros(nv),
        ws_matrix=np.zeros((3, 6, 6)),
        ws_vector=np.zeros((4, 6)),
        ws_joint_rotation=np.zeros((1, 3, 3)),
        ws_mass_matrix=np.zeros((nv, nv)),
        ws_momentum=np.zeros((nj, 6)),
        ws_gravity_force=np.zeros((nj, 6)),
    )
