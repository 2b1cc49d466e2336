"""Robot: a Pinocchio model plus what pinext adds to it, and checks of its mass matrix.

The model layer of pinext (docs/architecture.md, "Layers"): it imports no plug-in and nothing
of the simulation. :func:`pinext.load_urdf` (in :mod:`pinext.robot`) builds a :class:`Robot`
from a URDF and its extensions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from .exceptions import InvalidParameter, NameNotFound
from .urdf_extensions import Extensions, TransmissionSpec


class FreshData:
    """Pickled and copied without its Pinocchio ``Data`` workspaces: every attribute that
    holds a ``pin.Data`` is made anew from ``self.model`` on its first use after the object
    is unpickled or deep-copied. A pickled ``Data`` comes back from Pinocchio (4.1) without
    its constraint workspaces (``lambda_c`` of size 0), and ``forwardDynamics`` on it
    crashes the process: a System sent to a Dask worker with a contact did. Its contents
    are scratch space between calls, so a fresh one is the same object for every
    computation, and a copy that never uses one never pays for it."""

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        fresh = dict.fromkeys(state.pop("_fresh_data", ()))
        fresh.update((name, None) for name, value in state.items() if isinstance(value, pin.Data))
        for name in fresh:
            state.pop(name, None)
        return {**state, "_fresh_data": tuple(fresh)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            # Called only when ``name`` is not an attribute: a Data left behind by a copy.
            if name in self.__dict__.get("_fresh_data", ()):
                data = self.model.createData()
                setattr(self, name, data)
                return data
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


@dataclass
class Robot(FreshData):
    """A robot as pinext sees it.

    Attributes:
        model: Pinocchio model after flexible links were split into sublinks.
        data: A Pinocchio data of ``model``.
        rigid_model: The model exactly as the URDF gives it.
        visual_model: Visual geometries of ``model``.
        collision_model: Collision geometries of ``model``.
        joint_stiffness: Shape (nv,). Stiffness of each DOF [N.m/rad or N/m]; nonzero at the
            elastic sublink joints.
        joint_damping: Shape (nv,). Viscous damping [N.m.s/rad or N.s/m]: the URDF's
            ``<dynamics damping>`` and the damping of elastic joints.
        drives: Joint name -> drive (``pinext.Drive``).
        transmissions: Joint name -> the URDF's ``<transmission>``.
        flexible: The flexible links applied.
        extensions: Everything read from the URDF's extensions and sidecar.
        path: The URDF file, if loaded from one.
        free_bodies: Joints of the bodies added by :func:`pinext.free_body` (unactuated).
        support: The :class:`pinext.ElasticSupport` the robot stands on (its passive joints
            come first in the model), or None.
    """

    model: pin.Model
    rigid_model: pin.Model
    visual_model: pin.GeometryModel = field(default_factory=pin.GeometryModel)
    collision_model: pin.GeometryModel = field(default_factory=pin.GeometryModel)
    joint_stiffness: np.ndarray | None = None
    joint_damping: np.ndarray | None = None
    drives: dict[str, Any] = field(default_factory=dict)
    transmissions: dict[str, TransmissionSpec] = field(default_factory=dict)
    flexible: list[Any] = field(default_factory=list)
    extensions: Extensions = field(default_factory=Extensions)
    path: str | None = None
    free_bodies: list[str] = field(default_factory=list)
    support: Any = None

    def __post_init__(self) -> None:
        self.data = self.model.createData()
        nv = self.model.nv
        if self.joint_stiffness is None:
            self.joint_stiffness = np.zeros(nv)
        if self.joint_damping is None:
            self.joint_damping = np.array(self.model.damping, dtype=float)
        self.joint_stiffness = np.asarray(self.joint_stiffness, dtype=float).reshape(nv)
        self.joint_damping = np.asarray(self.joint_damping, dtype=float).reshape(nv)

    @classmethod
    def from_model(
        cls,
        model: pin.Model | pin.RobotWrapper,
        visual_model: pin.GeometryModel | None = None,
        collision_model: pin.GeometryModel | None = None,
    ) -> Robot:
        """Wrap a Pinocchio model built elsewhere (no flexible links, no drives).

        Args:
            model: A ``pin.Model``, or a ``pin.RobotWrapper`` (its model and geometry models
                are taken; the wrapper itself is not kept).
            visual_model: Visual geometries; default: the wrapper's, or none.
            collision_model: Collision geometries; default: the wrapper's, or none.

        Raises:
            InvalidParameter: ``model`` is neither a Pinocchio model nor a RobotWrapper.
        """
        if isinstance(model, pin.RobotWrapper):
            visual_model = visual_model or model.visual_model
            collision_model = collision_model or model.collision_model
            model = model.model
        if not isinstance(model, pin.Model):
            raise InvalidParameter(
                f"expected a pinext.Robot, a pin.Model or a pin.RobotWrapper, got "
                f"{type(model).__name__}; load a URDF with pinext.load_urdf(path) or "
                "pinext.load_robot(name)"
            )
        return cls(
            model=model,
            rigid_model=model.copy(),
            visual_model=visual_model or pin.GeometryModel(),
            collision_model=collision_model or pin.GeometryModel(),
        )

    def __repr__(self) -> str:
        from .summary import robot_repr

        return robot_repr(self)

    @property
    def name(self) -> str:
        """The URDF robot name."""
        return self.model.name

    @property
    def nq(self) -> int:
        """Size of the configuration vector."""
        return self.model.nq

    @property
    def nv(self) -> int:
        """Number of degrees of freedom."""
        return self.model.nv

    def neutral(self) -> np.ndarray:
        """The neutral configuration (rest position of every elastic joint)."""
        return pin.neutral(self.model)

    def joint_id(self, name: str) -> int:
        """Index of a joint in ``model``; unknown names list the existing ones."""
        if not self.model.existJointName(name):
            raise NameNotFound("joint", name, list(self.model.names)[1:])
        return self.model.getJointId(name)

    def frame_id(self, name: str) -> int:
        """Index of a frame in ``model``; unknown names list the existing ones."""
        if not self.model.existFrame(name):
            raise NameNotFound("frame", name, [f.name for f in self.model.frames])
        return self.model.getFrameId(name)

    def link_names(self) -> list[str]:
        """Names of the links (body frames) of the rigid model."""
        return [f.name for f in self.rigid_model.frames if f.type == pin.FrameType.BODY]

    def velocity_index(self, joint: str) -> int:
        """Index in v of a one-DOF joint."""
        return self.model.joints[self.joint_id(joint)].idx_v

    def stiffness_matrix(self) -> np.ndarray:
        """Shape (nv, nv). The joint stiffness as a matrix: ``diag(joint_stiffness)`` plus the
        off-diagonal coupling of an elastic support [N.m/rad, N/m, N/rad]."""
        return stiffness_matrix(self, self.model)

    def damping_matrix(self) -> np.ndarray:
        """Shape (nv, nv). ``diag(joint_damping)`` plus a support's damping coupling."""
        return stiffness_matrix(self, self.model, damping=True)

    def elastic_dofs(self) -> np.ndarray:
        """Indices in v of the DOFs that have a stiffness."""
        if self.joint_stiffness is None:
            raise InvalidParameter("the robot has no joint_stiffness (None after construction)")
        return np.flatnonzero(self.joint_stiffness)


def massless_joints(model: pin.Model, q: np.ndarray | None = None) -> list[tuple[str, str]]:
    """The joints that move nothing: their link and everything after it are massless.

    Such a joint has a zero diagonal entry in the mass matrix (with ``model.armature``), so
    Pinocchio's ``aba`` returns NaN or infinite accelerations. Massless links on fixed joints
    are usual in URDFs and fine.

    Args:
        model: The model.
        q: Configuration, shape (nq,); default neutral.

    Returns:
        (joint name, link name) of each such joint, in model order.
    """
    q = pin.neutral(model) if q is None else q
    diagonal = np.diag(pin.crba(model, model.createData(), q)).copy()
    diagonal += np.asarray(model.armature, dtype=float)
    scale = max(float(np.abs(diagonal).max(initial=0.0)), 1e-300)
    found = []
    for jid in range(1, model.njoints):
        joint = model.joints[jid]
        if joint.nv == 0 or diagonal[joint.idx_v : joint.idx_v + joint.nv].min() > 1e-14 * scale:
            continue
        bodies = [
            f.name for f in model.frames if f.parentJoint == jid and f.type == pin.FrameType.BODY
        ]
        found.append((model.names[jid], bodies[0] if bodies else model.names[jid]))
    return found


def massless_message(joint: str, link: str) -> str:
    """What is wrong with a joint of :func:`massless_joints`, and what to do."""
    return (
        f"link '{link}' has zero mass and inertia, and so has everything after it: joint "
        f"'{joint}' moves nothing (its mass-matrix entry is 0), so its acceleration is "
        "undefined; give the link a <mass> and <inertia>, a drive with rotor inertia, or make "
        "the joint fixed"
    )


def singular_inertia(
    model: pin.Model, q: np.ndarray | None = None, data: pin.Data | None = None
) -> str | None:
    """What is wrong when the mass matrix (with ``model.armature``) is singular at q although
    every joint moves mass: several joints turn links that have mass but no rotational inertia
    (a point mass that three neck joints turn about itself has two directions of motion, not
    three), so one combination of their accelerations is undefined. None when M is regular
    (smallest eigenvalue above 1e-14 of the largest, the bound of :func:`massless_joints`).

    Args:
        model: The model.
        q: Configuration, shape (nq,); default neutral.
        data: A scratch data of the model for the mass matrix; default a new one.

    Returns:
        The message naming the joints of the singular direction and the links without
        rotational inertia after them, or None.
    """
    q = pin.neutral(model) if q is None else q
    mass = pin.crba(model, model.createData() if data is None else data, q)
    mass = np.triu(mass) + np.triu(mass, 1).T + np.diag(np.asarray(model.armature, dtype=float))
    if model.nv == 0:
        return None
    values = np.linalg.eigvalsh(mass)  # the vectors only for the message
    if values[0] > 1e-14 * max(values[-1], 1e-300):
        return None
    values, vectors = np.linalg.eigh(mass)
    direction = np.abs(vectors[:, 0])
    dofs = np.flatnonzero(direction > 0.1 * direction.max())
    joints = [
        j
        for j in range(1, model.njoints)
        if model.joints[j].nv
        and any(
            model.joints[j].idx_v <= d < model.joints[j].idx_v + model.joints[j].nv for d in dofs
        )
    ]
    after = {j for j in range(1, model.njoints) if any(s in joints for s in model.supports[j])}
    points = [
        next(
            (f.name for f in model.frames if f.parentJoint == j and f.type == pin.FrameType.BODY),
            model.names[j],
        )
        for j in sorted(after)
        if model.inertias[j].mass > 0
        and np.abs(model.inertias[j].inertia).max() <= 1e-12 * model.inertias[j].mass
    ]
    return (
        f"the mass matrix is singular (smallest eigenvalue {values[0]:.3g} against "
        f"{values[-1]:.3g}) along joints {', '.join(repr(model.names[j]) for j in joints)}: "
        "one combination of their accelerations moves no inertia, so it is undefined"
        + (
            f"; links {', '.join(repr(n) for n in points)} have mass but no rotational inertia"
            if points
            else ""
        )
        + "; give the links an <inertia> (a point mass turned about itself has none)"
    )


def resolve_frame(model: pin.Model, frame: str | int) -> int:
    """Frame index of a name or index; unknown names and indices outside the model raise
    :class:`NameNotFound` listing the frames."""
    if isinstance(frame, (int, np.integer)):
        if not 0 <= int(frame) < model.nframes:
            raise NameNotFound("frame", str(frame), [f.name for f in model.frames])
        return int(frame)
    if not model.existFrame(frame):
        raise NameNotFound("frame", frame, [f.name for f in model.frames])
    return model.getFrameId(frame)


def stiffness_matrix(robot: Any, model: pin.Model, damping: bool = False) -> np.ndarray:
    """The (nv, nv) stiffness (or damping) matrix of a robot: its diagonal joint stiffness
    with the support's coupling."""
    values = getattr(robot, "joint_damping" if damping else "joint_stiffness", None)
    values = np.zeros(model.nv) if values is None else np.asarray(values, dtype=float)
    matrix = np.diag(values)
    support = getattr(robot, "support", None)
    if support is not None:
        dofs = support.dofs(model)
        full = support.damping_matrix if damping else support.stiffness_matrix
        matrix[np.ix_(dofs, dofs)] += full - np.diag(np.diag(full))
    return matrix


def expand_configuration(rigid_model: pin.Model, model: pin.Model, q_rigid: np.ndarray) -> Any:
    """A configuration of the rigid model as one of the flexible model (elastic joints at rest).

    Args:
        rigid_model: The model before :func:`pinext.flexible.expand_flexible`.
        model: The model after it.
        q_rigid: Shape (rigid nq,).

    Returns:
        Shape (nq,): the same values joint by joint (matched by name), neutral elsewhere.
    """
    q = pin.neutral(model)
    q_rigid = np.asarray(q_rigid, dtype=float)
    for j in range(1, rigid_model.njoints):
        old = rigid_model.joints[j]
        jn = model.joints[model.getJointId(rigid_model.names[j])]
        q[jn.idx_q : jn.idx_q + jn.nq] = q_rigid[old.idx_q : old.idx_q + old.nq]
    return q
