"""The viewer: the robot, its surroundings and the forces, live or as a self-contained page.

The robot is drawn by Pinocchio's :class:`pinocchio.visualize.MeshcatVisualizer` from
``robot.visual_model`` (URDF meshes and primitives; the flexible-link expansion already cuts a
link's box or cylinder into one piece per sublink). pinext adds what that class cannot draw:

* generated geometry (:mod:`.geometry`): a skeleton of cylinders and spheres for robots
  without visual geometry, and for flexible sublinks that carry none;
* the scene items that components declare (:mod:`.scene`): contact surfaces, the moving
  environment mass and its contact layer, contact-force arrows and impulse arrows at impacts,
  loop closures (both joined points marked, the loop force as an arrow at frame A);
* end-effector trails (the path of a frame over the whole trajectory) and frame triads.

Two outputs share one scene description:

* :meth:`Viewer.play` streams the poses to a live meshcat server (:mod:`.server`, 127.0.0.1
  only) at the trajectory's pace;
* :meth:`Viewer.export_html` writes one HTML file (:mod:`.html`) holding meshcat's JavaScript
  bundle, the scene and a meshcat animation (play, pause, time scrubber).

Configurations are resampled at ``fps`` frames per second (:mod:`.sampling`); the camera frames
the robot over the trajectory and the floor grid lies at the floor (:mod:`.camera`).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import meshcat
import meshcat.geometry as mg
import numpy as np
import pinocchio as pin
from meshcat.animation import Animation

from ..exceptions import InvalidParameter, NameNotFound
from .camera import Framing, frame_points, robot_points
from .geometry import (
    AXES,
    AXES_COLORS,
    COLORS,
    Cone,
    characteristic_length,
    rotation_to,
    visual_model_for,
)
from .html import RecordingWindow, page
from .sampling import Frames, resample
from .scene import ContactView, items_of_system, loop_views, views
from .server import LiveServer

__all__ = ["Viewer"]

ROOT = "pinocchio"
EXTRA = "pinext"


class Viewer:
    """Meshcat viewer of a robot, its surfaces and environment, forces and trails.

    Args:
        system: A :class:`pinext.System` (the scene items its components declare are drawn:
            contact surfaces, environment, trails), a :class:`pinext.Robot` or a ``pin.Model``
            (drawn with generated geometry).
        trails: Frame names whose path is drawn (default: the contact frames, otherwise the
            last frame of the URDF, i.e. the end effector); ``()`` for none.
        frames: Frame names drawn as triads (x red, y green, z blue).
        force_scale: Arrow length per force [m/N]; default: the largest force of the
            trajectory is drawn 30 % of the robot's size long.
        impulse_scale: Arrow length per impulse [m/(N.s)]; default likewise.
        frame_size: Length of the frame triads [m] (default 10 % of the robot's size).
        deflection_scale: Display factor on the elastic DOFs (flexible sublinks, elastic
            joints): 10 draws the bending ten times larger; 1 (default) draws it as simulated.
        scene: Scene items to draw (see :mod:`pinext.visualization.scene`); default: those the
            System's components declare in their ``metadata()``.

    Attributes:
        camera: (eye, target) of the last framed trajectory [m], or None.
        framing: The last :class:`~pinext.visualization.camera.Framing` (camera and floor).

    The live server starts on first use of :meth:`display` / :meth:`play` / :attr:`url`;
    :meth:`export_html` needs none.
    """

    def __init__(
        self,
        system: Any,
        *,
        trails: Sequence[str] | None = None,
        frames: Sequence[str] = (),
        force_scale: float | None = None,
        impulse_scale: float | None = None,
        frame_size: float | None = None,
        deflection_scale: float = 1.0,
        scene: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        from ..model import Robot

        components: Sequence[Any] = ()
        if isinstance(system, pin.Model):
            robot = Robot.from_model(system)
        elif hasattr(system, "robot") and hasattr(system, "components"):
            robot, components = system.robot, system.components
        else:
            robot = system
        self.robot = robot
        self.model = robot.model
        self.data = self.model.createData()
        self.visual_model = visual_model_for(robot)
        self.visual_data = self.visual_model.createData()
        self.size = characteristic_length(self.model)
        self.frame_size = frame_size or 0.1 * self.size
        self.force_scale = force_scale
        self.impulse_scale = impulse_scale
        self.frames = [self._frame(name) for name in frames]
        self._default_trails = trails is None
        self.trails = [] if trails is None else [self._frame(name) for name in trails]
        self.set_scene(items_of_system(components) if scene is None else scene)
        self.deflection_scale = float(deflection_scale)
        stiffness = getattr(robot, "joint_stiffness", None)
        self.elastic = np.flatnonzero(stiffness) if stiffness is not None else np.zeros(0, int)
        self.camera: tuple[np.ndarray, np.ndarray] | None = None
        self.framing: Framing | None = None
        self._server: LiveServer | None = None
        self._live: Any = None
        self._live_viz: Any = None

    def set_scene(self, items: Sequence[Mapping[str, Any]]) -> None:
        """Draw these scene items (contacts, environment, trails) from now on.

        Args:
            items: Dicts as components declare them (see :mod:`pinext.visualization.scene`).
        """
        self.scene = [dict(item) for item in items]
        self.contacts, self.environment, trails = views(self.model, self.scene)
        self.loops = loop_views(self.model, self.scene)
        if self._default_trails:
            self.trails = (
                trails or sorted({c.frame_id for c in self.contacts}) or [self._end_effector()]
            )
        if getattr(self, "_live", None) is not None:
            self._build(self._live_viz, None)

    # -- names ------------------------------------------------------------------------------
    def _frame(self, name: str) -> int:
        if not self.model.existFrame(name):
            raise NameNotFound("frame", name, [f.name for f in self.model.frames])
        return self.model.getFrameId(name)

    def _end_effector(self) -> int:
        rigid = getattr(self.robot, "rigid_model", self.model)
        for frame in reversed(list(rigid.frames)):
            if frame.type in (pin.FrameType.OP_FRAME, pin.FrameType.BODY) and self.model.existFrame(
                frame.name
            ):
                return self.model.getFrameId(frame.name)
        return self.model.nframes - 1

    def show_frames(self, names: Sequence[str]) -> None:
        """Draw triads at these frames from now on (in live display and exports)."""
        self.frames = [self._frame(name) for name in names]
        if self._live is not None:
            self._build(self._live_viz, None)

    # -- scene ------------------------------------------------------------------------------
    def sample(self, trajectory: Any, fps: float) -> Frames:
        """The trajectory at ``fps`` frames per second, elastic DOFs scaled for display."""
        frames = resample(self.model, trajectory, fps)
        if self.deflection_scale != 1.0 and self.elastic.size:
            rest = pin.neutral(self.model)
            for k, q in enumerate(frames.q):
                dq = pin.difference(self.model, rest, q)
                dq[self.elastic] *= self.deflection_scale
                frames.q[k] = pin.integrate(self.model, rest, dq)
        return frames

    def _scales(self, frames: Frames | None, trajectory: Any) -> tuple[float, float]:
        force_scale, impulse_scale = self.force_scale, self.impulse_scale
        if force_scale is None:
            peak = 0.0
            if frames is not None:
                for c in self.contacts:
                    if c.output in frames.outputs:
                        peak = max(
                            peak, np.abs(frames.outputs[c.output][:, c.rows]).max(initial=0.0)
                        )
                for loop in self.loops:
                    if loop.output in frames.outputs:
                        norms = np.linalg.norm(frames.outputs[loop.output][:, :3], axis=1)
                        peak = max(peak, float(norms.max(initial=0.0)))
            force_scale = 0.3 * self.size / peak if peak > 0 else 0.01
        if impulse_scale is None:
            peak = max(
                (
                    np.abs(np.asarray(e.info.get("impulse", 0.0), float)).max(initial=0.0)
                    for e in getattr(trajectory, "events", [])
                ),
                default=0.0,
            )
            impulse_scale = 0.2 * self.size / peak if peak > 0 else 0.1
        return force_scale, impulse_scale

    def _build(self, vis: Any, frames: Frames | None) -> Any:
        """Load the robot and the extras into a meshcat Visualizer; returns pin's visualizer."""
        from pinocchio.visualize import MeshcatVisualizer

        pviz = MeshcatVisualizer(
            self.model, None, self.visual_model, data=self.data, visual_data=self.visual_data
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            pviz.initViewer(viewer=vis)
            pviz.loadViewerModel(rootNodeName=ROOT)
        extra = vis[EXTRA]
        extra.delete()
        side = 0.6 * self.size
        for c in self.contacts:
            node = extra["surfaces"][c.name]
            if c.kind == "plane":
                node["plate"].set_object(
                    mg.Box([side, side, 0.004 * self.size]),
                    mg.MeshPhongMaterial(color=COLORS["surface"], opacity=0.55, transparent=True),
                )
            else:
                self._triad(node["frame"], 1.5 * self.frame_size)
            node.set_transform(self._surface_placement(c, None, 0).homogeneous)
            c.center = self._plate_center(c, frames)
            node["plate"].set_transform(
                pin.SE3(np.eye(3), c.center + np.array([0, 0, -0.002 * self.size])).homogeneous
            )
            arrow = extra["forces"][c.name]
            self._arrow(arrow, COLORS["force"])
            impulse = extra["impulses"][c.name]
            self._arrow(impulse, COLORS["impulse"])
            if c.friction > 0.0:  # the friction cone, one mesh per state (the other hidden)
                height = self.cone_height
                for state in ("stick", "slip"):
                    extra["cones"][c.name][state].set_object(
                        Cone(c.friction * height, height),
                        mg.MeshPhongMaterial(color=COLORS[state], opacity=0.35, transparent=True),
                    )
        if self.environment is not None and self.contacts:
            c = self.contacts[0]
            mass = extra["environment"]["mass"]
            mass.set_object(
                mg.Box([0.5 * side, 0.5 * side, 0.08 * self.size]),
                mg.MeshPhongMaterial(color=COLORS["environment"]),
            )
            if self.environment.layered:
                extra["environment"]["layer"].set_object(
                    mg.Box([0.5 * side, 0.5 * side, 1.0]),
                    mg.MeshPhongMaterial(color=COLORS["layer"], opacity=0.6, transparent=True),
                )
        for loop in self.loops:
            node = extra["loops"][loop.name]
            material = mg.MeshPhongMaterial(color=COLORS["loop"])
            node["a"].set_object(mg.Sphere(0.02 * self.size), material)
            node["b"].set_object(mg.Sphere(0.012 * self.size), material)
            self._arrow(extra["forces"][loop.name], COLORS["force"])
        for fid in self.frames:
            self._triad(extra["frames"][self.model.frames[fid].name], self.frame_size)
        if frames is not None:
            self._trails(extra, frames)
        return pviz

    def _triad(self, node: Any, length: float) -> None:
        node.set_object(
            mg.LineSegments(
                mg.PointsGeometry(position=length * AXES, color=AXES_COLORS),
                mg.LineBasicMaterial(linewidth=2, vertexColors=True),
            )
        )

    def _arrow(self, node: Any, color: Any) -> None:
        """A unit arrow along +y: shaft (scaled in y) and head (moved to the tip)."""
        r = 0.008 * self.size
        material = mg.MeshPhongMaterial(color=color)
        node["shaft"].set_object(mg.Cylinder(1.0, r), material)
        node["head"].set_object(Cone(2.5 * r, 6 * r), material)
        node.set_property("visible", True)
        for key, value in self._arrow_poses(np.zeros(3), np.zeros(3)).items():
            node[key].set_transform(value)

    def _arrow_poses(self, origin: np.ndarray, vector: np.ndarray) -> dict[str, np.ndarray]:
        """Transforms of the shaft and head of an arrow from ``origin`` along ``vector``."""
        length = float(np.linalg.norm(vector))
        rot = rotation_to(np.array([0.0, 1.0, 0.0]), vector)
        head = 6 * 0.008 * self.size
        shaft_length = max(length - head, 1e-6)
        shaft = np.eye(4)
        shaft[:3, :3] = rot @ np.diag([1.0, shaft_length, 1.0])
        shaft[:3, 3] = origin + rot @ np.array([0.0, shaft_length / 2, 0.0])
        tip = np.eye(4)
        scale = 1.0 if length > head else max(length / head, 1e-6)
        tip[:3, :3] = rot * scale
        tip[:3, 3] = origin + rot @ np.array([0.0, max(length - head / 2 * scale, 0.0), 0.0])
        if length < 1e-9:
            shaft[:3, :3] *= 1e-6
            tip[:3, :3] = rot * 1e-6
        return {"shaft": shaft, "head": tip}

    def _plate_center(self, c: ContactView, frames: Frames | None) -> np.ndarray:
        """Where the contact point meets the surface at the first frame, in the surface frame."""
        q = frames.q[0] if frames is not None else pin.neutral(self.model)
        pin.framesForwardKinematics(self.model, self.data, q)
        point = c.placement.actInv(self.data.oMf[c.frame_id] * c.tool).translation
        return np.array([point[0], point[1], 0.0])

    def _surface_placement(self, c: ContactView, frames: Frames | None, k: int) -> pin.SE3:
        placement = c.placement.copy()
        if self.environment is not None and frames is not None and c is self.contacts[0]:
            s_e = self._env_value(frames, "deformation", k)
            w = self._env_value(frames, "layer", k)
            placement.translation = placement.translation + (s_e - w) * self.environment.normal
        return placement

    def _env_value(self, frames: Frames, name: str, k: int) -> float:
        """The environment's displacement s_e (``"deformation"``) or layer w at frame k [m]."""
        env = self.environment
        if env is None:
            return 0.0
        key = env.displacement if name == "deformation" else env.layer
        return float(frames.outputs[key][k, 0]) if key in frames.outputs else 0.0

    def _trails(self, extra: Any, frames: Frames) -> None:
        for fid in self.trails:
            points = np.empty((len(frames.t), 3))
            for k, q in enumerate(frames.q):
                pin.framesForwardKinematics(self.model, self.data, q)
                points[k] = self.data.oMf[fid].translation
            extra["trails"][self.model.frames[fid].name].set_object(
                mg.Line(
                    mg.PointsGeometry(points.T.astype(np.float32)),
                    mg.LineBasicMaterial(color=COLORS["trail"], linewidth=2),
                )
            )

    def _poses(
        self, frames: Frames, k: int, scales: tuple[float, float], events: Sequence[Any] = ()
    ) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
        """Node path -> (rigid transform, scale or None) at frame k."""
        model, data = self.model, self.data
        q = frames.q[k]
        pin.forwardKinematics(model, data, q)
        pin.updateFramePlacements(model, data)
        pin.updateGeometryPlacements(model, data, self.visual_model, self.visual_data)
        poses: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
        for gid, geom in enumerate(self.visual_model.geometryObjects):
            poses[f"{ROOT}/visuals/{geom.name}"] = (self.visual_data.oMg[gid].homogeneous, None)
        for fid in self.frames:
            poses[f"{EXTRA}/frames/{model.frames[fid].name}"] = (data.oMf[fid].homogeneous, None)
        force_scale, impulse_scale = scales
        for c in self.contacts:
            surface = self._surface_placement(c, frames, k)
            poses[f"{EXTRA}/surfaces/{c.name}"] = (surface.homogeneous, None)
            origin = (data.oMf[c.frame_id] * c.tool).translation
            force = np.zeros(3)
            if c.output in frames.outputs:
                values = frames.outputs[c.output][k]
                for row, direction in c.directions:
                    if row < values.size:
                        force += values[row] * (surface.rotation @ direction)
            self._split_arrow(poses, f"{EXTRA}/forces/{c.name}", origin, force_scale * force)
            impulse = self._impulse_at(c, frames.t[k], events, surface)
            self._split_arrow(poses, f"{EXTRA}/impulses/{c.name}", origin, impulse_scale * impulse)
            if c.friction > 0.0:
                poses.update(self._cone_poses(c, frames, k, origin, surface))
        for loop in self.loops:
            a = data.oMf[loop.frame_a].translation
            b = (data.oMf[loop.frame_b] * loop.placement).translation
            for key, point in (("a", a), ("b", b)):
                pose = np.eye(4)
                pose[:3, 3] = point
                poses[f"{EXTRA}/loops/{loop.name}/{key}"] = (pose, None)
            force = np.zeros(3)
            if loop.output in frames.outputs:
                force = frames.outputs[loop.output][k, :3]
            self._split_arrow(poses, f"{EXTRA}/forces/{loop.name}", a, force_scale * force)
        if self.environment is not None and self.contacts:
            c = self.contacts[0]
            s_e = self._env_value(frames, "deformation", k)
            w = self._env_value(frames, "layer", k)
            n = self.environment.normal
            depth = 0.08 * self.size
            base = c.placement.translation + c.placement.rotation @ c.center + (s_e - w) * n
            mass = np.eye(4)
            mass[:3, :3] = c.placement.rotation
            mass[:3, 3] = base - (0.004 * self.size + depth / 2) * n
            poses[f"{EXTRA}/environment/mass"] = (mass, None)
            if self.environment.layered:
                layer = np.eye(4)
                thickness = max(abs(w), 1e-6)
                layer[:3, :3] = c.placement.rotation
                layer[:3, 3] = base + (w / 2) * n
                poses[f"{EXTRA}/environment/layer"] = (layer, np.array([1.0, 1.0, thickness]))
        return poses

    @property
    def cone_height(self) -> float:
        """Height of the drawn friction cones [m]."""
        return 0.15 * self.size

    def _cone_poses(
        self, c: ContactView, frames: Frames, k: int, origin: np.ndarray, surface: pin.SE3
    ) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
        """The friction cone at the contact point: apex on the point, axis along the surface
        normal, the mesh of the current state (stick or slip) shown, the other (and both when
        the contact is free) shrunk to nothing."""
        state = 0.0
        if c.state in frames.outputs:
            state = float(frames.outputs[c.state][k, 0])
        normal = surface.rotation[:, 2]
        pose = np.eye(4)
        pose[:3, :3] = rotation_to(np.array([0.0, 1.0, 0.0]), -normal)  # three.js apex at +y
        pose[:3, 3] = origin + 0.5 * self.cone_height * normal
        shown = {"stick": state == 1.0, "slip": state == 2.0}
        return {
            f"{EXTRA}/cones/{c.name}/{name}": (pose, np.full(3, 1.0 if on else 1e-6))
            for name, on in shown.items()
        }

    def _impulse_at(
        self, c: ContactView, t: float, events: Sequence[Any], surface: pin.SE3
    ) -> np.ndarray:
        """The impulse of an impact at this contact shown for 0.3 s after it [N.s]."""
        for e in events:
            info = e.info or {}
            if info.get("contact") != c.name or "impulse" not in info:
                continue
            if 0.0 <= t - e.t <= 0.3:
                values = np.asarray(info["impulse"], dtype=float).reshape(-1)
                vector = np.zeros(3)
                for row, direction in c.directions:
                    local = row - c.rows.start
                    if local < values.size:
                        vector += values[local] * (surface.rotation @ direction)
                return vector
        return np.zeros(3)

    def _split_arrow(self, poses: dict, path: str, origin: np.ndarray, vector: np.ndarray) -> None:
        for key, value in self._arrow_poses(origin, vector).items():
            scale = np.linalg.norm(value[:3, :3], axis=0)
            rigid = value.copy()
            rigid[:3, :3] = value[:3, :3] / scale
            poses[f"{path}/{key}"] = (rigid, scale)

    def frame(self, frames: Frames) -> Framing:
        """Camera and floor that frame the robot over resampled frames (:meth:`sample`).

        The framed box holds the frame and body origins of up to 60 configurations spread
        over the trajectory, runaway points removed; see
        :func:`pinext.visualization.camera.robot_points` and
        :func:`~pinext.visualization.camera.frame_points`.
        """
        picked = np.vstack([frames.q[:: max(1, len(frames.q) // 60)], frames.q[-1:]])
        return frame_points(robot_points(self.model, picked, self.visual_model))

    def _camera(self, vis: Any, frames: Frames) -> Framing:
        """Place the camera and the floor grid for these frames (see :meth:`frame`).

        meshcat's orbit controls look at their target (the world origin unless the page sets
        it): the exported page sets it; the live viewer looks at the origin from ``eye``.
        """
        framing = self.frame(frames)
        self.framing = framing
        self.camera = (framing.eye, framing.target)
        eye = framing.eye
        # the camera node's coordinates are three.js's: (x, z, -y) of pinext's z-up world
        vis["/Cameras/default/rotated/<object>"].set_property("position", [eye[0], eye[2], -eye[1]])
        vis["/Grid"].set_transform(framing.grid_transform())
        return framing

    # -- live -------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """URL of the live viewer (starts the server on 127.0.0.1 if needed)."""
        return self._ensure_live().window.web_url

    @property
    def server(self) -> LiveServer:
        """The live meshcat server (started on demand)."""
        self._ensure_live()
        assert self._server is not None  # started by _ensure_live
        return self._server

    def _ensure_live(self) -> Any:
        if self._live_viz is None:
            self._server = LiveServer()
            import contextlib
            import io

            with contextlib.redirect_stdout(io.StringIO()):
                self._live_viz = meshcat.Visualizer(zmq_url=self._server.zmq_url)
            print(f"pinext viewer: {self._live_viz.window.web_url}")
            self._live = self._build(self._live_viz, None)
        return self._live_viz

    def display(self, q: np.ndarray) -> None:
        """Show configuration q in the live viewer."""
        vis = self._ensure_live()
        q = np.asarray(q, dtype=float)
        frames = Frames(np.zeros(1), q[None, :], {}, [""], 1.0)
        self._send_poses(vis, self._poses(frames, 0, (0.0, 0.0)))

    def _send_poses(self, vis: Any, poses: dict) -> None:
        for path, (matrix, scale) in poses.items():
            m = matrix.copy()
            if scale is not None:
                m[:3, :3] = m[:3, :3] * scale
            vis[path].set_transform(m)

    def play(
        self, trajectory: Any, speed: float = 1.0, *, fps: float = 30.0, wait: bool = False
    ) -> None:
        """Play a trajectory in the live viewer at ``speed`` times real time.

        The poses are streamed at ``fps`` frames per second of simulated time; afterwards the
        trajectory stays loaded as a meshcat animation (play, pause, scrub in the browser).

        Args:
            trajectory: A :class:`pinext.Trajectory`.
            speed: Playback speed (1: real time).
            fps: Frames per second of simulated time.
            wait: Wait for a browser to connect before playing.
        """
        if speed <= 0:
            raise InvalidParameter(f"speed must be > 0, got {speed}")
        vis = self._ensure_live()
        frames = self.sample(trajectory, fps)
        scales = self._scales(frames, trajectory)
        self._trails(vis[EXTRA], frames)
        self._camera(vis, frames)
        if wait:
            vis.wait()
        events = getattr(trajectory, "events", [])
        start = time.perf_counter()
        for k in range(len(frames.t)):
            self._send_poses(vis, self._poses(frames, k, scales, events))
            delay = (frames.t[k] - frames.t[0]) / speed - (time.perf_counter() - start)
            if delay > 0:
                time.sleep(delay)
        vis.set_animation(self._animation(vis, frames, scales, events), play=False)

    def close(self) -> None:
        """Stop the live server."""
        if self._server is not None:
            self._server.close()
        self._server = self._live = self._live_viz = None

    # -- export -----------------------------------------------------------------------------
    def _animation(
        self, vis: Any, frames: Frames, scales: tuple[float, float], events: Sequence[Any]
    ) -> Animation:
        anim = Animation(default_framerate=frames.fps)
        for k in range(len(frames.t)):
            with anim.at_frame(vis, k) as frame:
                for path, (matrix, scale) in self._poses(frames, k, scales, events).items():
                    node = frame[path]
                    node.set_transform(matrix)
                    if scale is not None:
                        node.set_property("scale", "vector3", [float(s) for s in scale])
        return anim

    def html(
        self, trajectory: Any, *, fps: float = 30.0, title: str | None = None, autoplay: bool = True
    ) -> str:
        """The self-contained HTML page of a trajectory (see :meth:`export_html`)."""
        window = RecordingWindow()
        vis = meshcat.Visualizer(window=window)
        frames = self.sample(trajectory, fps)
        scales = self._scales(frames, trajectory)
        self._build(vis, frames)
        self._camera(vis, frames)
        events = getattr(trajectory, "events", [])
        self._send_poses(vis, self._poses(frames, 0, scales, events))
        vis.set_animation(
            self._animation(vis, frames, scales, events), play=autoplay, repetitions=1
        )
        title = title or f"pinext: {self.model.name}"
        return page(window.commands, frames, title, trajectory, self.framing)

    def export_html(
        self,
        trajectory: Any,
        path: str | Path,
        *,
        fps: float = 30.0,
        title: str | None = None,
        autoplay: bool = True,
    ) -> Path:
        """Write a self-contained HTML animation of a trajectory (works offline, from disk).

        Args:
            trajectory: A :class:`pinext.Trajectory`.
            path: Output file.
            fps: Frames per second of simulated time.
            title: Page title.
            autoplay: Start playing when opened (unless the URL gives ``#t=...``).

        Returns:
            The path written.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            self.html(trajectory, fps=fps, title=title, autoplay=autoplay), encoding="utf-8"
        )
        return path
