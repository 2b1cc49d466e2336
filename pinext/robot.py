"""Robot: a URDF turned into a Pinocchio model plus what pinext adds to it."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin

from .exceptions import ExtensionError, FileFormatError, InvalidParameter, NameNotFound
from .urdf_extensions import (
    ROOT_JOINTS,
    Extensions,
    TransmissionSpec,
    check_inertial_elements,
    parse_urdf_xml,
    read_extensions,
)


@dataclass
class Robot:
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
        from .support import stiffness_matrix

        return stiffness_matrix(self, self.model)

    def damping_matrix(self) -> np.ndarray:
        """Shape (nv, nv). ``diag(joint_damping)`` plus a support's damping coupling."""
        from .support import stiffness_matrix

        return stiffness_matrix(self, self.model, damping=True)

    def elastic_dofs(self) -> np.ndarray:
        """Indices in v of the DOFs that have a stiffness."""
        if self.joint_stiffness is None:
            raise InvalidParameter("the robot has no joint_stiffness (None after construction)")
        return np.flatnonzero(self.joint_stiffness)


def _package_dirs(path: Path, given: Sequence[str] | str | None) -> list[str]:
    """The given package dirs plus the URDF's ancestors, so ``package://`` URIs resolve."""
    dirs = [given] if isinstance(given, str) else list(given or [])
    dirs += [str(p) for p in list(path.resolve().parents)[:5]]
    return dirs


#: URDF elements whose attributes are numbers: element tag -> attributes.
_NUMERIC = {
    "dynamics": ("friction", "damping"),
    "limit": ("lower", "upper", "effort", "velocity"),
    "mass": ("value",),
    "inertia": ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"),
    "origin": ("xyz", "rpy"),
    "axis": ("xyz",),
}


def _diagnose(path: Path) -> str | None:
    """The first numeric attribute of the URDF that is not finite numbers (urdfdom only says
    "not a valid URDF model"), named with its joint or link; None when all are."""
    import math
    import xml.etree.ElementTree as ET

    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as err:
        return f"not well-formed XML: {err}"
    for owner in root:
        if owner.tag not in ("joint", "link"):
            continue
        for element in owner.iter():
            for attribute in _NUMERIC.get(element.tag, ()):
                text = element.get(attribute)
                if text is None:
                    continue
                try:
                    values = [float(v) for v in text.split()]
                except ValueError:
                    values = [math.nan]
                if not values or not all(math.isfinite(v) for v in values):
                    return (
                        f"{owner.tag} '{owner.get('name')}': <{element.tag} {attribute}="
                        f'"{text}"> must be finite numbers'
                    )
    return None


def _build_models(path: Path, package_dirs: list[str], root_joint: Any):
    """Pinocchio's URDF parser and geometry loaders, errors re-raised as pinext errors."""
    args = (root_joint,) if root_joint is not None else ()
    try:
        model = pin.buildModelFromUrdf(str(path), *args)
    except (RuntimeError, ValueError) as err:
        raise FileFormatError(str(path), "URDF", _diagnose(path) or str(err)) from None
    geometry = []
    for kind in (pin.GeometryType.VISUAL, pin.GeometryType.COLLISION):
        try:
            geometry.append(
                pin.buildGeomFromUrdf(model, str(path), kind, package_dirs=package_dirs)
            )
        except (RuntimeError, ValueError) as err:
            warnings.warn(
                f"{path}: {kind.name.lower()} geometry not loaded ({err}); "
                "pass package_dirs= to locate the meshes",
                stacklevel=3,
            )
            geometry.append(pin.GeometryModel())
    return model, geometry[0], geometry[1]


def load_urdf(
    path: str | Path,
    *,
    package_dirs: Sequence[str] | str | None = None,
    flexible: Sequence[Any] = (),
    drives: Mapping[str, Any] | None = None,
    extensions: str | Path | bool | None = None,
    root_joint: Any = None,
    support: Any = None,
    joints: Mapping[str, Mapping[str, float]] | None = None,
) -> Robot:
    """Load a URDF with its transmissions and pinext extensions.

    Args:
        path: The URDF file.
        package_dirs: Where ``package://`` meshes are found; the URDF's parent folders are
            always searched too.
        flexible: :class:`pinext.FlexibleLink` specifications; they override the file's ones
            for the same link.
        drives: Joint name -> :class:`pinext.Drive`; they override the file's ones.
        extensions: Sidecar TOML file; None looks for ``<stem>.pinext.toml`` beside the URDF;
            False ignores every pinext extension (the URDF's ``<transmission>`` elements are
            still read).
        root_joint: A joint between the world and the URDF's root link: a Pinocchio joint
            model (``pin.JointModelFreeFlyer()``) or one of ``"freeflyer"``, ``"planar"``,
            ``"fixed"``; default: the extensions' ``root_joint``, else fixed.
        support: An elastic support under the robot's base (:class:`pinext.ElasticSupport`
            or its table); default: the extensions' ``[support]``; False: none.
        joints: Joint name -> ``{"stiffness": ..., "damping": ...}``: springs and dampers in
            joints (:func:`pinext.support.joint_springs`); they override the extensions'
            ``[joints.NAME]`` tables key by key.

    Returns:
        The :class:`Robot`.

    Raises:
        FileFormatError: The URDF or sidecar is malformed (the message names file and element),
            an ``<inertial>`` value is not a finite number, or an extension value is invalid
            (:class:`pinext.exceptions.ExtensionError`, also an ``InvalidParameter``).
        InvalidParameter: A negative mass, an inertia tensor that is not positive
            semi-definite, or a joint that moves no mass (its link and subtree are massless).
        NameNotFound: An extension names a link or joint that the URDF does not have.
    """
    path = Path(path)
    if not path.is_file():
        raise FileFormatError(str(path), "file", "URDF file not found")
    ext = read_extensions(path, extensions)
    check_inertial_elements(parse_urdf_xml(path), path)
    if root_joint is None:
        root_joint = ext.root_joint
    model, visual_model, collision_model = _build_models(
        path, _package_dirs(path, package_dirs), _root_joint_model(root_joint)
    )
    _check_inertias(model, path)
    robot = Robot(
        model=model,
        rigid_model=model.copy(),
        visual_model=visual_model,
        collision_model=collision_model,
        transmissions=ext.transmissions,
        extensions=ext,
        path=str(path),
    )
    names = list(model.names)[1:]
    for joint in list(ext.drives) + list(drives or {}):
        if joint not in names:
            raise NameNotFound("joint", joint, names)

    if ext.environment is not None:
        from .contact.environment import DynamicEnvironment

        with _naming_source(ext, "environment"):
            DynamicEnvironment.from_dict(ext.environment)

    links = _flexible_links(ext, flexible)
    if links:
        from .flexible.sublinks import expand_flexible

        expansion = expand_flexible(model, visual_model, collision_model, links)
        robot.model = expansion.model
        robot.data = expansion.model.createData()
        robot.visual_model = expansion.visual_model
        robot.collision_model = expansion.collision_model
        robot.joint_stiffness = np.asarray(expansion.joint_stiffness, dtype=float)
        robot.joint_damping = np.asarray(expansion.joint_damping, dtype=float) + np.array(
            expansion.model.damping, dtype=float
        )
        robot.flexible = links

    springs = {j: dict(p) for j, p in ext.joints.items()}
    for joint, params in (joints or {}).items():
        springs.setdefault(joint, {}).update(params)
    if springs:
        from .support import joint_springs

        for joint, params in springs.items():
            with _naming_source(ext, f"joints.{joint}"):
                joint_springs(robot, {joint: params})
    if support is None:
        support = ext.support
    if support is not None and support is not False:
        from .support import add_support

        with _naming_source(ext, "support"):
            robot = add_support(robot, support)

    if any("tool_mass" in c for c in ext.contacts):
        from .contact.deformation import compliant_tool

        for i, spec in enumerate(ext.contacts):
            if "tool_mass" not in spec:
                continue
            with _naming_source(ext, f"contacts[{i}]"):
                robot = compliant_tool(
                    robot,
                    spec["frame"],
                    stiffness=spec.get("tool_stiffness", float("nan")),
                    mass=spec["tool_mass"],
                    damping=spec.get("tool_damping", 0.0),
                    axis=spec.get("tool_axis", (0.0, 0.0, 1.0)),
                )
            # the tool's spring is in the model now: the contact touches the tool's body
            keys = ("tool_mass", "tool_stiffness", "tool_damping", "tool_axis")
            ext.contacts[i] = {k: v for k, v in spec.items() if k not in keys}
            ext.contacts[i]["frame"] = f"{spec['frame']}_tool"
            ext.contacts[i].setdefault("name", spec["frame"])

    if ext.drives or drives:
        from .drives import drive_from_spec

        for joint, parts in ext.drives.items():
            with _naming_source(ext, f"drives.{joint}"):
                robot.drives[joint] = drive_from_spec(joint, parts, ext.transmissions.get(joint))
        robot.drives.update(drives or {})
    _check_moving_mass(robot, path)
    return robot


@contextmanager
def _naming_source(ext: Extensions, table: str):
    """Re-raise a parameter error of an extension table naming the file it came from."""
    try:
        yield
    except ExtensionError:
        raise
    except (InvalidParameter, TypeError, ValueError) as err:
        source = ext.origins.get(table) or (ext.sources[-1] if ext.sources else "extensions")
        raise ExtensionError(source, table, str(err)) from None


def _root_joint_model(root_joint: Any) -> Any:
    """A Pinocchio joint model for ``root_joint`` (None or "fixed": no root joint)."""
    if (
        root_joint is None
        or isinstance(root_joint, pin.JointModel)
        or not isinstance(root_joint, str)
    ):
        return root_joint
    kind = root_joint.lower().replace("_", "").replace("-", "")
    if kind == "fixed":
        return None
    if kind in ("freeflyer", "floating", "free"):
        return pin.JointModelFreeFlyer()
    if kind == "planar":
        return pin.JointModelPlanar()
    raise InvalidParameter(
        f"unknown root_joint {root_joint!r}; valid: {', '.join(ROOT_JOINTS)} or a Pinocchio "
        "joint model such as pin.JointModelFreeFlyer()"
    )


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


def singular_inertia(model: pin.Model, q: np.ndarray | None = None) -> str | None:
    """What is wrong when the mass matrix (with ``model.armature``) is singular at q although
    every joint moves mass: several joints turn links that have mass but no rotational inertia
    (a point mass that three neck joints turn about itself has two directions of motion, not
    three), so one combination of their accelerations is undefined. None when M is regular
    (smallest eigenvalue above 1e-14 of the largest, the bound of :func:`massless_joints`).

    Args:
        model: The model.
        q: Configuration, shape (nq,); default neutral.

    Returns:
        The message naming the joints of the singular direction and the links without
        rotational inertia after them, or None.
    """
    q = pin.neutral(model) if q is None else q
    mass = pin.crba(model, model.createData(), q)
    mass = np.triu(mass) + np.triu(mass, 1).T + np.diag(np.asarray(model.armature, dtype=float))
    values, vectors = np.linalg.eigh(mass)
    if model.nv == 0 or values[0] > 1e-14 * max(values[-1], 1e-300):
        return None
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


def _check_moving_mass(robot: Robot, path: Path) -> None:
    """Warn about joints that move nothing and links whose missing rotational inertia makes
    the mass matrix singular (fine for kinematics; :func:`pinext.simulate` rejects them)."""
    massless = [(j, link) for j, link in massless_joints(robot.model) if j not in robot.drives]
    for joint, link in massless:
        warnings.warn(f"{path}: {massless_message(joint, link)}", RuntimeWarning, stacklevel=3)
    singular = None if massless else singular_inertia(robot.model)
    if singular is not None:
        warnings.warn(f"{path}: at the neutral pose {singular}", RuntimeWarning, stacklevel=3)


def _check_inertias(model: pin.Model, path: Path) -> None:
    """Reject negative masses and inertia tensors that are not positive semi-definite."""
    for jid in range(1, model.njoints):
        inertia = model.inertias[jid]
        bodies = [
            f.name for f in model.frames if f.parentJoint == jid and f.type == pin.FrameType.BODY
        ]
        where = f"link '{bodies[0] if bodies else model.names[jid]}'"
        if inertia.mass < 0:
            raise InvalidParameter(f"{path}: {where} has a negative mass {inertia.mass} kg")
        if np.linalg.eigvalsh(inertia.inertia).min() < -1e-12 * max(
            1.0, abs(inertia.inertia).max()
        ):
            raise InvalidParameter(
                f"{path}: {where} has an inertia tensor that is not positive semi-definite"
            )


def _flexible_links(ext: Extensions, given: Sequence[Any]) -> list[Any]:
    """File flexible links, overridden by the ones given in Python (same link name)."""
    if not ext.flexible and not given:
        return []
    from .flexible.sublinks import FlexibleLink

    by_link = {}
    for spec in ext.flexible:
        with _naming_source(ext, f"flexible.{spec['link']}"):
            by_link[spec["link"]] = FlexibleLink.from_dict(spec)
    by_link.update({link.link: link for link in given})
    return list(by_link.values())


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
