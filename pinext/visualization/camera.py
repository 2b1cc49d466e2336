"""Framing: where the camera looks from and where the floor grid lies.

The camera frames the box that the robot's frames (and bodies) sweep over the trajectory. A
joint that runs away (a finger sliding off past its limits, a blow-up) would shrink the robot to
a speck, so the parts carried by a joint count only while that joint stays within its *reach*
of its parent: the link offset plus the travel of a prismatic joint within its limits
(:func:`reach`, :func:`robot_points`). The camera then stands back along a fixed oblique
direction far enough for the sphere around the box to fit in the field of view. The floor grid
lies at the floor, z = 0, or under the robot when it reaches below (a hanging arm); it spans a
few robot sizes and stays in front of the camera.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pinocchio as pin

__all__ = ["FIELD_OF_VIEW", "VIEW_DIRECTION", "Framing", "frame_points", "reach", "robot_points"]

#: meshcat's camera: vertical field of view [deg].
FIELD_OF_VIEW = 75.0
#: Direction from the target to the camera (z up): raised, oblique, from the front right.
VIEW_DIRECTION = np.array([1.0, -1.3, 0.9])
#: Size of meshcat's floor grid [m] and its number of cells per side.
GRID_SIZE, GRID_CELLS = 20.0, 40


@dataclasses.dataclass(frozen=True)
class Framing:
    """Camera and floor of a scene (z up, metres).

    Attributes:
        eye: Camera position [m], shape (3,).
        target: The point the camera looks at [m], shape (3,).
        lower: Lower corner of the framed box [m], shape (3,).
        upper: Upper corner of the framed box [m], shape (3,).
        floor: Height of the floor grid [m].
        grid_cell: Edge of a grid cell [m].
        grid_center: (x, y) of the grid's centre [m], a multiple of ``grid_cell``.
    """

    eye: np.ndarray
    target: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    floor: float
    grid_cell: float
    grid_center: np.ndarray

    def grid_transform(self) -> np.ndarray:
        """4×4 transform of meshcat's ``/Grid`` node (20 m, 40 cells) to this floor and cell."""
        scale = self.grid_cell * GRID_CELLS / GRID_SIZE
        matrix = np.diag([scale, scale, scale, 1.0])
        matrix[:3, 3] = [self.grid_center[0], self.grid_center[1], self.floor]
        return matrix


def reach(model: pin.Model) -> np.ndarray:
    """How far each joint can be from its parent joint [m].

    The offset of its placement in the parent, plus the travel of a prismatic (or other
    translating) joint within its position limits; infinite for a joint below the universe
    (a floating base moves freely) and for unbounded translations.

    Args:
        model: The Pinocchio model.

    Returns:
        Shape (njoints,); entry 0 (the universe) is 0.
    """
    translating = ("JointModelP", "JointModelFreeFlyer", "JointModelTransl")
    out = np.zeros(model.njoints)
    for j in range(1, model.njoints):
        joint = model.joints[j]
        travel = 0.0
        if model.parents[j] == 0:
            travel = np.inf
        elif joint.shortname().startswith(translating):
            lo = model.lowerPositionLimit[joint.idx_q : joint.idx_q + joint.nq]
            hi = model.upperPositionLimit[joint.idx_q : joint.idx_q + joint.nq]
            bound = np.abs(np.concatenate([lo, hi]))
            travel = float(bound.max()) if np.all(bound < 1e10) else np.inf
        out[j] = float(np.linalg.norm(model.jointPlacements[j].translation)) + travel
    return out


def robot_points(
    model: pin.Model,
    configurations: np.ndarray,
    visual_model: pin.GeometryModel | None = None,
    *,
    slack: float = 0.05,
) -> np.ndarray:
    """Frame and body origins of the robot over configurations, runaway parts removed.

    In each configuration a joint has *run away* when it is farther from its parent joint than
    its :func:`reach` plus ``slack`` times the robot's size (at least 1 cm), or when its parent
    has; the frames and bodies it carries are left out.

    Args:
        model: The Pinocchio model.
        configurations: Shape (n, nq).
        visual_model: Bodies whose origins count too (optional).
        slack: Tolerance on the reach, relative to the robot's size (a joint slightly past its
            limit is not a runaway).

    Returns:
        The kept points [m], shape (m, 3).
    """
    allowed = reach(model)
    finite = allowed[np.isfinite(allowed)]
    allowed = allowed + max(slack * float(finite.sum()), 0.01)
    data = model.createData()
    geoms = list(visual_model.geometryObjects) if visual_model is not None else []
    gdata = visual_model.createData() if visual_model is not None else None
    owners = np.array([f.parentJoint for f in model.frames] + [g.parentJoint for g in geoms])
    kept = []
    for q in np.atleast_2d(configurations):
        pin.forwardKinematics(model, data, q)
        pin.updateFramePlacements(model, data)
        away = np.zeros(model.njoints, dtype=bool)
        for j in range(1, model.njoints):
            parent = model.parents[j]
            gap = np.linalg.norm(data.oMi[j].translation - data.oMi[parent].translation)
            away[j] = away[parent] or not gap <= allowed[j]
        origins = [f.translation for f in data.oMf]
        if geoms and gdata is not None:
            pin.updateGeometryPlacements(model, data, visual_model, gdata)
            origins += [g.translation for g in gdata.oMg]
        points = np.array(origins)
        ok = np.isfinite(points).all(axis=1) & ~away[owners]
        kept.append(points[ok])
    return np.vstack(kept) if kept else np.zeros((0, 3))


def _nice(length: float) -> float:
    """The number among 1, 2, 2.5, 5 times a power of ten nearest below ``length``."""
    power = 10.0 ** np.floor(np.log10(length))
    return float(power * max(m for m in (1.0, 2.0, 2.5, 5.0) if m * power <= length * (1 + 1e-12)))


def frame_points(
    points: np.ndarray,
    *,
    direction: np.ndarray = VIEW_DIRECTION,
    field_of_view: float = FIELD_OF_VIEW,
    aspect: float = 1.0,
    margin: float = 0.1,
    min_size: float = 0.2,
) -> Framing:
    """Camera and floor that frame a cloud of points (the robot's frames over a trajectory).

    Args:
        points: Shape (n, 3) [m].
        direction: From the target towards the camera.
        field_of_view: Vertical field of view [deg].
        aspect: Width / height of the view; the narrower angle limits.
        margin: Extra radius, relative, around the box (for the bodies around the frames).
        min_size: Smallest framed diameter [m].

    Returns:
        The :class:`Framing`.
    """
    points = np.asarray(points, dtype=float).reshape(-1, 3)
    points = points[np.isfinite(points).all(axis=1)]
    if len(points) == 0:
        points = np.zeros((1, 3))
    lower, upper = points.min(axis=0), points.max(axis=0)
    target = (lower + upper) / 2
    radius = max(float(np.linalg.norm(upper - lower)), min_size) / 2 * (1 + margin)
    vertical = np.radians(field_of_view) / 2
    horizontal = np.arctan(aspect * np.tan(vertical))
    distance = radius / np.sin(min(vertical, horizontal))
    unit = np.asarray(direction, dtype=float) / np.linalg.norm(direction)
    eye = target + distance * unit
    extent = float(max(np.ptp(np.vstack([lower, upper]), axis=0).max(), min_size))
    reach_down = float(lower[2])
    floor = 0.0 if reach_down >= -0.01 * extent else reach_down - 0.02 * extent
    # The grid (40 x 40 cells) spans up to 6 robot sizes but stays wholly in front of the
    # camera: a line that passes behind it is dropped by some renderers (SwiftShader), which
    # left only a far band of the grid on screen.
    forward = (target - eye) / distance
    side = 6.0 * extent
    while True:
        cell = _nice(side / GRID_CELLS)
        center = np.round(target[:2] / cell) * cell
        half = cell * GRID_CELLS / 2
        corners = np.array(
            [[center[0] + a * half, center[1] + b * half, floor] for a in (-1, 1) for b in (-1, 1)]
        )
        if ((corners - eye) @ forward).min() >= 0.1 * distance or cell <= 1e-3 * extent:
            break
        side = 0.8 * side
    return Framing(eye, target, lower, upper, floor, cell, center)
