"""Generated geometry: skeletons for robots without visual geometry and for bare flexible
sublinks, arrow heads, frame triads; the colours of the viewer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import meshcat.geometry as mg
import numpy as np
import pinocchio as pin

__all__ = ["COLORS", "Cone", "characteristic_length", "skeleton_geometry", "visual_model_for"]

COLORS: dict[str, Any] = {
    "force": 0xD62728,
    "impulse": 0xFF7F0E,
    "trail": 0x1F77B4,
    "surface": 0x8C8C8C,
    "environment": 0x8C564B,
    "layer": 0x2CA02C,
    "loop": 0x9467BD,
    "stick": 0x2CA02C,
    "slip": 0xFF7F0E,
    "skeleton": np.array([0.35, 0.45, 0.6, 1.0]),
    "joint": np.array([0.9, 0.55, 0.15, 1.0]),
    "flexible": np.array([0.55, 0.6, 0.7, 1.0]),
}
#: End points and colours of a unit frame triad (x red, y green, z blue).
AXES = np.array([[0, 0, 0], [1, 0, 0], [0, 0, 0], [0, 1, 0], [0, 0, 0], [0, 0, 1]], float).T
AXES_COLORS = np.array(
    [[1, 0, 0], [1, 0.6, 0], [0, 1, 0], [0.6, 1, 0], [0, 0, 1], [0, 0.6, 1]], float
).T


class Cone(mg.Geometry):
    """A three.js cone (along y), for arrow heads."""

    def __init__(self, radius: float, height: float) -> None:
        super().__init__()
        self.radius = radius
        self.height = height

    def lower(self, object_data: Any) -> dict:
        """The three.js JSON of the geometry."""
        return {
            "uuid": self.uuid,
            "type": "ConeGeometry",
            "radius": self.radius,
            "height": self.height,
            "radialSegments": 16,
        }


def rotation_to(axis: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """A rotation taking unit ``axis`` to ``direction``."""
    norm = np.linalg.norm(direction)
    if norm < 1e-12:
        return np.eye(3)
    return pin.Quaternion.FromTwoVectors(axis, direction / norm).toRotationMatrix()


def _cylinder_between(
    name: str, joint: int, a: np.ndarray, b: np.ndarray, radius: float, color: np.ndarray
) -> pin.GeometryObject | None:
    import coal

    length = float(np.linalg.norm(b - a))
    if length < 1e-9:
        return None
    placement = pin.SE3(rotation_to(np.array([0.0, 0.0, 1.0]), b - a), (a + b) / 2)
    geom = pin.GeometryObject(name, joint, placement, coal.Cylinder(radius, length))
    geom.meshColor = np.asarray(color, dtype=float)
    return geom


def _sphere(name: str, joint: int, radius: float, color: np.ndarray) -> pin.GeometryObject:
    import coal

    geom = pin.GeometryObject(name, joint, pin.SE3.Identity(), coal.Sphere(radius))
    geom.meshColor = np.asarray(color, dtype=float)
    return geom


def _segments(model: pin.Model, joint: int) -> list[np.ndarray]:
    """End points (in the joint frame) of the segments that draw joint ``joint``'s body."""
    ends = [
        model.jointPlacements[c].translation.copy()
        for c in range(1, model.njoints)
        if model.parents[c] == joint
    ]
    for frame in model.frames:
        if frame.parentJoint == joint and frame.type in (
            pin.FrameType.OP_FRAME,
            pin.FrameType.BODY,
        ):
            ends.append(frame.placement.translation.copy())
    return [e for e in ends if np.linalg.norm(e) > 1e-9]


def characteristic_length(model: pin.Model) -> float:
    """Largest extent of the frame origins at the neutral configuration [m] (at least 0.1)."""
    data = model.createData()
    pin.framesForwardKinematics(model, data, pin.neutral(model))
    points = np.array([f.translation for f in data.oMf])
    return float(max(np.ptp(points, axis=0).max(), 0.1))


def skeleton_geometry(
    model: pin.Model,
    joints: Sequence[int] | None = None,
    *,
    radius: float | None = None,
    color: np.ndarray | None = None,
    prefix: str = "skeleton",
) -> list[pin.GeometryObject]:
    """Cylinders from each joint to its children (and frames), and a sphere at each joint.

    Args:
        model: The Pinocchio model.
        joints: Joint indices to draw (default: all but the universe).
        radius: Cylinder radius [m] (default 1.5 % of the robot's size, at least 5 mm).
        color: RGBA of the cylinders.
        prefix: Name prefix of the geometry objects.

    Returns:
        Geometry objects attached to the joints, in each joint's frame.
    """
    size = characteristic_length(model)
    radius = radius if radius is not None else max(0.005, 0.015 * size)
    color = COLORS["skeleton"] if color is None else color
    joints = range(1, model.njoints) if joints is None else joints
    out = []
    for j in joints:
        out.append(_sphere(f"{prefix}/{model.names[j]}/joint", j, 1.6 * radius, COLORS["joint"]))
        for k, end in enumerate(_segments(model, j)):
            geom = _cylinder_between(
                f"{prefix}/{model.names[j]}/{k}", j, np.zeros(3), end, radius, color
            )
            if geom is not None:
                out.append(geom)
    return out


def visual_model_for(robot: Any) -> pin.GeometryModel:
    """The robot's visual model, completed with generated geometry where it has none."""
    model = robot.model
    visual = robot.visual_model.copy() if robot.visual_model is not None else pin.GeometryModel()
    if visual.ngeoms == 0:
        for geom in skeleton_geometry(model):
            visual.addGeometryObject(geom)
        return visual
    drawn = {g.parentJoint for g in visual.geometryObjects}
    flexible = [getattr(f, "link", None) for f in getattr(robot, "flexible", [])]
    bare = [
        j
        for j in range(1, model.njoints)
        if j not in drawn
        and any(model.names[j].startswith(f"{link}_elastic_") for link in flexible if link)
    ]
    if bare:
        for geom in skeleton_geometry(model, bare, color=COLORS["flexible"], prefix="sublink"):
            visual.addGeometryObject(geom)
    return visual
