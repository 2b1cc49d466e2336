"""load_urdf: a URDF and its pinext extensions turned into a :class:`Robot`.

The loader builds what the extension tables describe with the plug-ins that own them
(flexible links, joint springs, an elastic support, compliant tools, drives), so it sits above
them; :class:`Robot` and the checks of its mass matrix are in :mod:`pinext.model`, below every
plug-in (docs/architecture.md, "Layers"), and are importable from here too.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin

from .exceptions import ExtensionError, FileFormatError, InvalidParameter, NameNotFound
from .model import Robot, massless_joints, massless_message, singular_inertia
from .model import resolve_frame as resolve_frame  # pinext.robot.resolve_frame, as before
from .urdf_extensions import (
    ROOT_JOINTS,
    Extensions,
    check_inertial_elements,
    parse_urdf_xml,
    read_extensions,
)


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
