"""Constrained robot systems as one model: several robots, free bodies (McClamroch (1986) §2).

McClamroch (1986) models a gripped load (1)–(5) and two robots holding one load (12)–(19) as
the robots' equations, the load's own equation ``m p̈ = -f - m g`` and the constraints
``p = H(q)``. pinext builds the same system as one Pinocchio model — the robots side by side
(:func:`assemble`, through ``pin.appendModel``) and the load as a body of its own
(:func:`free_body`) — and the constraints as :class:`pinext.Loop` closures, so that the
acceleration step solves (24)–(28) (and (29)–(31), (36)–(38)) for the multipliers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import pinocchio as pin

from .exceptions import InvalidParameter, NameNotFound
from .model import Robot
from .urdf_extensions import Extensions
from .validation import as_placement, real


def free_body(
    robot: Robot | pin.Model,
    name: str,
    mass: float,
    inertia: np.ndarray | pin.Inertia | None = None,
    placement: pin.SE3 | None = None,
) -> Robot:
    """A new Robot whose model has one more body, free in space.

    Without ``inertia`` the body is McClamroch's point mass (1)–(5): three translations
    (``JointModelTranslation``, q = the displacement from ``placement`` in its axes [m]).
    With ``inertia`` it is a rigid body on a free-flyer joint (q = position [m] and unit
    quaternion of the body relative to ``placement``).

    Args:
        robot: The robot (or a bare ``pin.Model``) to add the body to; it is not changed.
        name: Name of the body's frame; its joint is ``"<name>_joint"``.
        mass: Mass m [kg], > 0.
        inertia: Rotational inertia about the centre of mass [kg.m^2]: a (3, 3) matrix, a
            ``pin.Inertia`` (then its mass and centre of mass are used and ``mass`` must
            agree), or None for a point mass.
        placement: The body's placement in the world at its neutral configuration.

    Returns:
        The new :class:`Robot` (drives, joint stiffness and damping of the old one kept; the
        body's DOFs are free: no stiffness, no damping).

    Raises:
        InvalidParameter: A non-positive mass or a bad inertia tensor, or a name in use.
    """
    base = robot if isinstance(robot, Robot) else Robot.from_model(robot)
    if not isinstance(name, str) or not name.strip() or "/" in name:
        raise InvalidParameter(f"free body name must be a nonempty text without '/', got {name!r}")
    mass = real(f"the mass of free body '{name}'", mass, unit="[kg]", low=0.0, strict=True)
    placement = as_placement(f"placement of free body '{name}'", placement, none=True)
    if base.model.existFrame(name) or base.model.existJointName(f"{name}_joint"):
        raise InvalidParameter(
            f"free body name '{name}' is in use; frames: "
            + ", ".join(f.name for f in base.model.frames)
        )
    if inertia is None:
        joint, body = pin.JointModelTranslation(), pin.Inertia(mass, np.zeros(3), np.zeros((3, 3)))
    else:
        joint = pin.JointModelFreeFlyer()
        if isinstance(inertia, pin.Inertia):
            body = inertia.copy()
            if abs(body.mass - mass) > 1e-12 * mass:
                raise InvalidParameter(
                    f"free body '{name}': mass {mass} kg differs from the inertia's {body.mass} kg"
                )
        else:
            try:
                tensor = np.asarray(inertia, dtype=float)
            except (TypeError, ValueError):
                tensor = np.full(1, np.nan)
            if (
                tensor.shape != (3, 3)
                or not np.all(np.isfinite(tensor))
                or not np.allclose(tensor, tensor.T)
            ):
                raise InvalidParameter(
                    f"the inertia of free body '{name}' must be a symmetric (3, 3) matrix [kg.m^2]"
                )
            moments = np.linalg.eigvalsh(tensor)
            if moments.min() < 0:
                raise InvalidParameter(
                    f"the inertia of free body '{name}' is not positive semi-definite"
                )
            largest = int(np.argmax(moments))
            if moments[largest] > moments.sum() - moments[largest] + 1e-12 * moments.sum():
                raise InvalidParameter(
                    f"the inertia of free body '{name}' breaks the triangle inequality: its "
                    f"principal moments {np.array2string(moments, precision=4)} kg.m^2 must "
                    "satisfy I1 <= I2 + I3 (no rigid body has them; load_urdf rejects them too)"
                )
            body = pin.Inertia(mass, np.zeros(3), tensor)
    placement = pin.SE3.Identity() if placement is None else placement

    def add(model: pin.Model) -> pin.Model:
        model = model.copy()
        jid = model.addJoint(0, joint, placement, f"{name}_joint")
        model.appendBodyToJoint(jid, body, pin.SE3.Identity())
        frame = model.addJointFrame(jid, 0)
        model.addBodyFrame(name, jid, pin.SE3.Identity(), frame)
        return model

    model = add(base.model)
    nv = joint.nv
    visual = base.visual_model.copy()
    visual.addGeometryObject(_body_geometry(model, name, body))
    return Robot(
        model=model,
        rigid_model=add(base.rigid_model),
        visual_model=visual,
        collision_model=base.collision_model.copy(),
        joint_stiffness=np.concatenate([base.joint_stiffness, np.zeros(nv)]),
        joint_damping=np.concatenate([base.joint_damping, np.zeros(nv)]),
        drives=dict(base.drives),
        transmissions=dict(base.transmissions),
        flexible=list(base.flexible),
        extensions=base.extensions,
        path=None,
        free_bodies=[*base.free_bodies, f"{name}_joint"],
    )


#: Radius [m] of the sphere that shows a point mass.
POINT_RADIUS = 0.03


def _body_geometry(model: pin.Model, name: str, body: pin.Inertia) -> pin.GeometryObject:
    """What the viewer draws for a free body: a small sphere for a point mass, else the
    uniform box of the same mass and principal moments (on its principal axes)."""
    import coal

    jid = model.getJointId(f"{name}_joint")
    frame = model.getFrameId(name)
    moments, axes = np.linalg.eigh(body.inertia)
    sides = 6.0 * (moments.sum() - 2.0 * moments) / body.mass  # squared box sides
    if moments.max() <= 0.0 or sides.min() <= 0.0:
        shape, placement = coal.Sphere(POINT_RADIUS), pin.SE3(np.eye(3), body.lever)
    else:
        if np.linalg.det(axes) < 0:
            axes[:, 0] = -axes[:, 0]
        shape, placement = coal.Box(*np.sqrt(sides)), pin.SE3(axes, body.lever)
    geometry = pin.GeometryObject(name, jid, frame, placement, shape)
    geometry.meshColor = np.array([0.85, 0.55, 0.2, 1.0])
    return geometry


def _prefixed(model: pin.Model, prefix: str) -> pin.Model:
    """A copy of the model with ``prefix/`` before every joint and frame name (not the
    universe's)."""
    model = model.copy()
    model.name = prefix
    for i in range(1, model.njoints):
        model.names[i] = f"{prefix}/{model.names[i]}"
    for i in range(1, model.nframes):
        frame = model.frames[i]
        frame.name = f"{prefix}/{frame.name}"
        model.frames[i] = frame
    return model


def _prefixed_geometry(geometry: pin.GeometryModel, prefix: str) -> pin.GeometryModel:
    geometry = geometry.copy()
    for obj in geometry.geometryObjects:
        obj.name = f"{prefix}/{obj.name}"
    return geometry


def _renamed_link(link: Any, prefix: str) -> Any:
    """A flexible-link specification with its link name prefixed."""
    if dataclasses.is_dataclass(link) and not isinstance(link, type) and hasattr(link, "link"):
        return dataclasses.replace(link, link=f"{prefix}/{link.link}")  # type: ignore[type-var]
    return link


def assemble(
    robots: Mapping[str, Robot | pin.Model],
    placements: Mapping[str, pin.SE3] | None = None,
) -> Robot:
    """Several robots in one model, side by side (McClamroch (1986) (12)–(13), (19)).

    The models are appended with ``pin.appendModel`` in the mapping's order, each robot's base
    at its placement in the world; every joint, frame and geometry name gets the robot's key
    as prefix (``"left/elbow"``). The mass matrix of the result is block diagonal, one block
    per robot, as in (19); coupling comes only from loops (:class:`pinext.Loop`), e.g. two
    weld loops on a :func:`free_body` load.

    Args:
        robots: Prefix -> robot (a :class:`Robot` or a bare ``pin.Model``).
        placements: Prefix -> placement of that robot's base in the world (default identity).

    Returns:
        The assembled :class:`Robot`: joint stiffness and damping, drives (keyed by the
        prefixed joint names), transmissions, mimic couplings and flexible links of each
        robot kept (the other extension tables, contacts and environment, are not).

    Raises:
        InvalidParameter: No robot, or a prefix that is empty or contains ``/``.
        NameNotFound: A placement for a prefix that is not among the robots.
    """
    if not robots:
        raise InvalidParameter("assemble needs at least one robot")
    placements = dict(placements or {})
    for key in placements:
        if key not in robots:
            raise NameNotFound("robot", key, list(robots))
        placements[key] = as_placement(f"placements[{key!r}]", placements[key])
    model = pin.Model()
    model.name = "+".join(robots)
    visual, collision = pin.GeometryModel(), pin.GeometryModel()
    rigid = pin.Model()
    parts = []
    for prefix, robot in robots.items():
        if not prefix or "/" in prefix:
            raise InvalidParameter(
                f"robot prefix must be a nonempty name without '/', got {prefix!r}"
            )
        robot = robot if isinstance(robot, Robot) else Robot.from_model(robot)
        where = placements.get(prefix, pin.SE3.Identity())
        before, child = model, _prefixed(robot.model, prefix)
        model, visual = pin.appendModel(
            before, child, visual, _prefixed_geometry(robot.visual_model, prefix), 0, where
        )
        collision = pin.appendModel(
            before, child, collision, _prefixed_geometry(robot.collision_model, prefix), 0, where
        )[1]
        rigid = pin.appendModel(rigid, _prefixed(robot.rigid_model, prefix), 0, where)
        parts.append((prefix, robot))
    stiffness, damping = np.zeros(model.nv), np.zeros(model.nv)
    drives, transmissions, flexible, mimic, free = {}, {}, [], {}, []
    for prefix, robot in parts:
        for jid in range(1, robot.model.njoints):
            old = robot.model.joints[jid]
            new = model.joints[model.getJointId(f"{prefix}/{robot.model.names[jid]}")]
            src = slice(old.idx_v, old.idx_v + old.nv)
            dst = slice(new.idx_v, new.idx_v + new.nv)
            stiffness[dst] = np.asarray(robot.joint_stiffness)[src]
            damping[dst] = np.asarray(robot.joint_damping)[src]
        drives.update({f"{prefix}/{j}": d for j, d in robot.drives.items()})
        transmissions.update(
            {
                f"{prefix}/{j}": dataclasses.replace(t, joint=f"{prefix}/{t.joint}")
                for j, t in robot.transmissions.items()
            }
        )
        free += [f"{prefix}/{j}" for j in robot.free_bodies]
        mimic.update(
            {
                f"{prefix}/{j}": dataclasses.replace(
                    m, joint=f"{prefix}/{m.joint}", leader=f"{prefix}/{m.leader}"
                )
                for j, m in robot.extensions.mimic.items()
            }
        )
        flexible += [_renamed_link(f, prefix) for f in robot.flexible]
    return Robot(
        model=model,
        rigid_model=rigid,
        visual_model=visual,
        collision_model=collision,
        joint_stiffness=stiffness,
        joint_damping=damping,
        drives=drives,
        transmissions=transmissions,
        flexible=flexible,
        extensions=Extensions(mimic=mimic),
        path=None,
        free_bodies=free,
    )
