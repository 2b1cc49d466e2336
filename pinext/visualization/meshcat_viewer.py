"""Browser playback of trajectories with meshcat: live viewer and self-contained HTML.

The robot is drawn by Pinocchio's :class:`pinocchio.visualize.MeshcatVisualizer` from
``robot.visual_model`` (URDF meshes and primitives; the flexible-link expansion already cuts a
link's box or cylinder into one piece per sublink). pinext adds what that class cannot draw:

* generated geometry: a skeleton of cylinders and spheres for robots without visual geometry,
  and for flexible sublinks that carry none (a link drawn by a single mesh), so that bending is
  visible;
* contact surfaces (a plate for a plane, a triad for other object frames), the moving
  environment mass of a dynamic environment (seed 000 §20.5.3, displaced by ``s_e``) and its
  contact layer (model (d), compressed by ``w``);
* contact-force arrows (``<component>.force`` outputs, world direction from the surface frame)
  and impulse arrows at impact events (``event.info["impulse"]``);
* end-effector trails (the path of a frame over the whole trajectory) and frame triads.

Two outputs share one scene description:

* :meth:`Viewer.play` streams the poses to a live meshcat server at the trajectory's pace; the
  server is started by pinext and listens on 127.0.0.1 only (web and ZeroMQ sockets).
* :meth:`Viewer.export_html` writes one HTML file holding meshcat's JavaScript bundle, the
  scene and a meshcat animation (play, pause, time scrubber). It opens from disk and fetches
  nothing. The URL fragment selects a view: ``#t=1.5`` pauses at 1.5 s, ``controls=0`` hides the
  control panel, ``background=ffffff`` paints a uniform background and hides the grid,
  ``info=0`` hides the time/phase line. ``window.pinextReady`` becomes true once the scene is
  loaded (and seeked).

Configurations are resampled at ``fps`` frames per second with ``pin.interpolate`` (the
samples twice at an event time carry the same q), other outputs linearly.
"""

from __future__ import annotations

import atexit
import base64
import dataclasses
import gzip
import html as html_lib
import json
import struct
import subprocess
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin

from ..exceptions import InvalidParameter, NameNotFound

try:
    import meshcat
    import meshcat.geometry as mg
    import umsgpack
    from meshcat.animation import Animation
except ImportError as _err:  # pragma: no cover - meshcat is a declared dependency
    raise ImportError(
        "pinext.visualization needs meshcat: pip install 'pinext[viz]' (or pip install meshcat)"
    ) from _err

__all__ = ["LiveServer", "Viewer", "export_html", "play"]

#: Host every socket of the live viewer binds to.
HOST = "127.0.0.1"
ROOT = "pinocchio"
EXTRA = "pinext"
COLORS = {
    "force": 0xD62728,
    "impulse": 0xFF7F0E,
    "trail": 0x1F77B4,
    "surface": 0x8C8C8C,
    "environment": 0x8C564B,
    "layer": 0x2CA02C,
    "skeleton": np.array([0.35, 0.45, 0.6, 1.0]),
    "joint": np.array([0.9, 0.55, 0.15, 1.0]),
    "flexible": np.array([0.55, 0.6, 0.7, 1.0]),
}
_AXES = np.array([[0, 0, 0], [1, 0, 0], [0, 0, 0], [0, 1, 0], [0, 0, 0], [0, 0, 1]], float).T
_AXES_COLORS = np.array(
    [[1, 0, 0], [1, 0.6, 0], [0, 1, 0], [0.6, 1, 0], [0, 0, 1], [0, 0.6, 1]], float
).T


# ---------------------------------------------------------------------------------------------
# meshcat plumbing
# ---------------------------------------------------------------------------------------------
class _RecordingWindow:
    """A meshcat window that records the commands instead of sending them to a server."""

    def __init__(self) -> None:
        self.commands: list[bytes] = []
        self.web_url = None

    def send(self, command: Any) -> None:
        self.commands.append(umsgpack.packb(command.lower()))

    def connect_zmq(self) -> None:  # pragma: no cover - meshcat API compatibility
        pass


class _Cone(mg.Geometry):
    """A three.js cone (along y), for arrow heads."""

    def __init__(self, radius: float, height: float) -> None:
        super().__init__()
        self.radius = radius
        self.height = height

    def lower(self, object_data: Any) -> dict:
        return {
            "uuid": self.uuid,
            "type": "ConeGeometry",
            "radius": self.radius,
            "height": self.height,
            "radialSegments": 16,
        }


class LiveServer:
    """A meshcat server (web + ZeroMQ) bound to 127.0.0.1, in a child process.

    meshcat's own ``meshcat-server`` listens for the browser on every interface; this one
    runs the same bridge with the web socket bound to :data:`HOST` only.

    Attributes:
        zmq_url: ``tcp://127.0.0.1:<port>``.
        web_url: ``http://127.0.0.1:<port>/static/``.
        process: The server process.
    """

    def __init__(self) -> None:
        cmd = [sys.executable, "-u", "-m", "pinext.visualization.meshcat_viewer", "--serve"]
        self.process = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True
        )
        urls = {}
        while len(urls) < 2:
            line = self.process.stdout.readline().decode("utf-8").strip()
            if not line and self.process.poll() is not None:
                raise RuntimeError(f"the meshcat server exited with code {self.process.returncode}")
            if "=" in line:
                key, value = line.split("=", 1)
                if key in ("zmq_url", "web_url"):
                    urls[key] = value
        self.zmq_url, self.web_url = urls["zmq_url"], urls["web_url"]
        atexit.register(self.close)

    @property
    def pid(self) -> int:
        """Process id of the server."""
        return self.process.pid

    def close(self) -> None:
        """Stop the server."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:  # pragma: no cover
                self.process.kill()
                self.process.wait()


def _serve() -> None:  # pragma: no cover - runs in the server process
    """Run meshcat's ZMQ/websocket bridge with every socket on 127.0.0.1."""
    from meshcat.servers import zmqserver

    class Bridge(zmqserver.ZMQWebSocketBridge):
        def make_app(self):
            app = super().make_app()
            listen = app.listen
            app.listen = lambda port, **kw: listen(port, address=HOST, **kw)
            return app

    bridge = Bridge(host=HOST)
    print(f"zmq_url={bridge.zmq_url}")
    print(f"web_url={bridge.web_url}")
    sys.stdout.flush()
    bridge.run()


# ---------------------------------------------------------------------------------------------
# geometry
# ---------------------------------------------------------------------------------------------
def _rotation_to(axis: np.ndarray, direction: np.ndarray) -> np.ndarray:
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
    placement = pin.SE3(_rotation_to(np.array([0.0, 0.0, 1.0]), b - a), (a + b) / 2)
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


def _characteristic_length(model: pin.Model) -> float:
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
    size = _characteristic_length(model)
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


def _visual_model_for(robot: Any) -> pin.GeometryModel:
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


# ---------------------------------------------------------------------------------------------
# scene description: contacts, environment
# ---------------------------------------------------------------------------------------------
@dataclasses.dataclass
class _ContactView:
    """What the viewer draws of one contact."""

    name: str
    frame_id: int
    tool: pin.SE3
    placement: pin.SE3
    rows: slice  # rows of the component's force output
    directions: list[tuple[int, np.ndarray]]  # (row, unit direction in the surface frame)
    kind: str  # "plane" or "frame"
    output: str  # name of the force output
    center: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))


@dataclasses.dataclass
class _EnvironmentView:
    normal: np.ndarray
    output: str  # prefix "<component>."
    layered: bool


def _contact_views(model: pin.Model, contacts: Sequence[Any], output: str) -> list[_ContactView]:
    views = []
    row = 0
    for c in contacts:
        constraint = getattr(c, "constraint", c)
        m = int(getattr(constraint, "m", 1))
        frame = getattr(constraint, "frame", None)
        try:
            fid = (
                int(frame)
                if isinstance(frame, (int, np.integer))
                else model.getFrameId(frame)
                if model.existFrame(str(frame))
                else None
            )
        except (TypeError, ValueError):
            fid = None
        placement = getattr(constraint, "placement", None)
        if getattr(constraint, "law", None) is not None:
            placement = constraint.law(0.0)[0]
        placement = placement if isinstance(placement, pin.SE3) else pin.SE3.Identity()
        names = tuple(getattr(constraint, "names", ("z",)))
        directions = [
            (row + k, np.eye(3)[:, "xyz".index(n)])
            for k, n in enumerate(names)
            if n in ("x", "y", "z")
        ]
        kind = "plane" if names == ("z",) else "frame"
        if fid is not None:
            tool = getattr(constraint, "tool", None)
            views.append(
                _ContactView(
                    name=str(getattr(c, "name", None) or frame),
                    frame_id=fid,
                    tool=tool if isinstance(tool, pin.SE3) else pin.SE3.Identity(),
                    placement=placement,
                    rows=slice(row, row + m),
                    directions=directions,
                    kind=kind,
                    output=output,
                )
            )
        row += m
    return views


def _scene_from_components(model: pin.Model, components: Sequence[Any]):
    contacts, environment = [], None
    for comp in components:
        if hasattr(comp, "contacts"):
            views = _contact_views(model, comp.contacts, f"{comp.name}.force")
            contacts += views
            env = getattr(comp, "environment", None)
            if env is not None and views:
                environment = _EnvironmentView(
                    normal=views[0].placement.rotation[:, 2].copy(),
                    output=f"{comp.name}.",
                    layered=bool(getattr(comp, "layered", False)),
                )
    return contacts, environment


def _scene_from_meta(model: pin.Model, meta: dict, outputs: dict) -> tuple[list, Any]:
    """Contacts and environment of a saved trajectory (``meta["contacts"]`` or the task)."""
    specs = meta.get("contacts")
    contacts = []
    if specs:
        try:
            from ..contact import Contact

            contacts = [Contact.from_dict(s) for s in specs]
        except Exception as err:  # noqa: BLE001 - a viewer never fails on a bad spec
            warnings.warn(f"contacts of the trajectory not drawn: {err}", stacklevel=3)
    elif isinstance(meta.get("task"), dict) and "table_height" in meta["task"]:
        task = meta["task"]
        try:
            from ..contact import Contact, plane

            contacts = [
                Contact(
                    plane(
                        task.get("frame", model.frames[-1].name),
                        (0.0, 0.0, float(task["table_height"])),
                    ),
                    name=task.get("contact", "table"),
                )
            ]
        except Exception as err:  # noqa: BLE001
            warnings.warn(f"contact surface of the task not drawn: {err}", stacklevel=3)
    prefix = "contact"
    views = _contact_views(model, contacts, f"{prefix}.force")
    environment = None
    if views and f"{prefix}.deformation" in outputs:
        environment = _EnvironmentView(
            views[0].placement.rotation[:, 2].copy(), f"{prefix}.", f"{prefix}.layer" in outputs
        )
    return views, environment


# ---------------------------------------------------------------------------------------------
# sampling
# ---------------------------------------------------------------------------------------------
@dataclasses.dataclass
class _Frames:
    """A trajectory resampled at a fixed frame rate."""

    t: np.ndarray
    q: np.ndarray
    outputs: dict[str, np.ndarray]
    phase: list[str]
    fps: float


def _resample(model: pin.Model, trajectory: Any, fps: float) -> _Frames:
    t = np.asarray(trajectory.t, dtype=float)
    if fps <= 0:
        raise InvalidParameter(f"fps must be > 0, got {fps}")
    n = max(1, int(np.floor((t[-1] - t[0]) * fps + 1e-9)) + 1)
    times = t[0] + np.arange(n) / fps
    q_all = np.asarray(trajectory.q, dtype=float)
    qs = np.empty((n, model.nq))
    idx = np.clip(np.searchsorted(t, times, side="right") - 1, 0, len(t) - 1)
    nxt = np.minimum(idx + 1, len(t) - 1)
    dt = t[nxt] - t[idx]
    alpha = np.where(dt > 0, (times - t[idx]) / np.where(dt > 0, dt, 1.0), 0.0)
    for k in range(n):
        qs[k] = pin.interpolate(model, q_all[idx[k]], q_all[nxt[k]], float(alpha[k]))
    outputs = {}
    for name, values in getattr(trajectory, "outputs", {}).items():
        values = np.asarray(values, dtype=float).reshape(len(t), -1)
        outputs[name] = values[idx] + alpha[:, None] * (values[nxt] - values[idx])
    phases = getattr(trajectory, "phases", [])
    pidx = np.asarray(getattr(trajectory, "phase_index", np.zeros(len(t), int)))
    names = [phases[int(pidx[i])].name if phases else "" for i in nxt]
    return _Frames(times, qs, outputs, names, float(fps))


# ---------------------------------------------------------------------------------------------
# the viewer
# ---------------------------------------------------------------------------------------------
class Viewer:
    """Meshcat viewer of a robot, its surfaces and environment, forces and trails.

    Args:
        system: A :class:`pinext.System` (its contacts and environment are drawn), a
            :class:`pinext.Robot` or a ``pin.Model`` (drawn with generated geometry).
        trails: Frame names whose path is drawn (default: the contact frames, otherwise the
            last frame of the URDF, i.e. the end effector); ``()`` for none.
        frames: Frame names drawn as triads (x red, y green, z blue).
        force_scale: Arrow length per force [m/N]; default: the largest force of the
            trajectory is drawn 30 % of the robot's size long.
        impulse_scale: Arrow length per impulse [m/(N.s)]; default likewise.
        frame_size: Length of the frame triads [m] (default 10 % of the robot's size).
        deflection_scale: Display factor on the elastic DOFs (flexible sublinks, elastic
            joints): 10 draws the bending ten times larger; 1 (default) draws it as simulated.

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
    ) -> None:
        from ..robot import Robot

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
        self.visual_model = _visual_model_for(robot)
        self.visual_data = self.visual_model.createData()
        self.contacts, self.environment = _scene_from_components(self.model, components)
        self.size = _characteristic_length(self.model)
        self.frame_size = frame_size or 0.1 * self.size
        self.force_scale = force_scale
        self.impulse_scale = impulse_scale
        self.frames = [self._frame(name) for name in frames]
        if trails is None:
            fids = sorted({c.frame_id for c in self.contacts}) or [self._end_effector()]
        else:
            fids = [self._frame(name) for name in trails]
        self.trails = fids
        self.deflection_scale = float(deflection_scale)
        stiffness = getattr(robot, "joint_stiffness", None)
        self.elastic = np.flatnonzero(stiffness) if stiffness is not None else np.zeros(0, int)
        self.camera: tuple[np.ndarray, np.ndarray] | None = None
        self._server: LiveServer | None = None
        self._live: Any = None
        self._live_viz: Any = None

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
    def sample(self, trajectory: Any, fps: float) -> _Frames:
        """The trajectory at ``fps`` frames per second, elastic DOFs scaled for display."""
        frames = _resample(self.model, trajectory, fps)
        if self.deflection_scale != 1.0 and self.elastic.size:
            rest = pin.neutral(self.model)
            for k, q in enumerate(frames.q):
                dq = pin.difference(self.model, rest, q)
                dq[self.elastic] *= self.deflection_scale
                frames.q[k] = pin.integrate(self.model, rest, dq)
        return frames

    def _scales(self, frames: _Frames | None, trajectory: Any) -> tuple[float, float]:
        force_scale, impulse_scale = self.force_scale, self.impulse_scale
        if force_scale is None:
            peak = 0.0
            if frames is not None:
                for c in self.contacts:
                    if c.output in frames.outputs:
                        peak = max(
                            peak, np.abs(frames.outputs[c.output][:, c.rows]).max(initial=0.0)
                        )
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

    def _build(self, vis: Any, frames: _Frames | None) -> Any:
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
        for fid in self.frames:
            self._triad(extra["frames"][self.model.frames[fid].name], self.frame_size)
        if frames is not None:
            self._trails(extra, frames)
        return pviz

    def _triad(self, node: Any, length: float) -> None:
        node.set_object(
            mg.LineSegments(
                mg.PointsGeometry(position=length * _AXES, color=_AXES_COLORS),
                mg.LineBasicMaterial(linewidth=2, vertexColors=True),
            )
        )

    def _arrow(self, node: Any, color: int) -> None:
        """A unit arrow along +y: shaft (scaled in y) and head (moved to the tip)."""
        r = 0.008 * self.size
        material = mg.MeshPhongMaterial(color=color)
        node["shaft"].set_object(mg.Cylinder(1.0, r), material)
        node["head"].set_object(_Cone(2.5 * r, 6 * r), material)
        node.set_property("visible", True)
        for key, value in self._arrow_poses(np.zeros(3), np.zeros(3)).items():
            node[key].set_transform(value)

    def _arrow_poses(self, origin: np.ndarray, vector: np.ndarray) -> dict[str, np.ndarray]:
        """Transforms of the shaft and head of an arrow from ``origin`` along ``vector``."""
        length = float(np.linalg.norm(vector))
        rot = _rotation_to(np.array([0.0, 1.0, 0.0]), vector)
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

    def _plate_center(self, c: _ContactView, frames: _Frames | None) -> np.ndarray:
        """Where the contact point meets the surface at the first frame, in the surface frame."""
        q = frames.q[0] if frames is not None else pin.neutral(self.model)
        pin.framesForwardKinematics(self.model, self.data, q)
        point = c.placement.actInv(self.data.oMf[c.frame_id] * c.tool).translation
        return np.array([point[0], point[1], 0.0])

    def _surface_placement(self, c: _ContactView, frames: _Frames | None, k: int) -> pin.SE3:
        placement = c.placement.copy()
        if self.environment is not None and frames is not None and c is self.contacts[0]:
            s_e = self._env_value(frames, "deformation", k)
            w = self._env_value(frames, "layer", k)
            placement.translation = placement.translation + (s_e - w) * self.environment.normal
        return placement

    def _env_value(self, frames: _Frames, name: str, k: int) -> float:
        key = f"{self.environment.output}{name}"
        return float(frames.outputs[key][k, 0]) if key in frames.outputs else 0.0

    def _trails(self, extra: Any, frames: _Frames) -> None:
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
        self, frames: _Frames, k: int, scales: tuple[float, float], events: Sequence[Any] = ()
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

    def _impulse_at(
        self, c: _ContactView, t: float, events: Sequence[Any], surface: pin.SE3
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

    def _camera(self, vis: Any, frames: _Frames) -> tuple[np.ndarray, np.ndarray]:
        """A raised oblique view of the robot's workspace; returns (eye, target) [m].

        meshcat's orbit controls look at their target (the world origin unless the page sets
        it): the exported page sets it; the live viewer looks at the origin from ``eye``.
        """
        points = []
        for q in frames.q[:: max(1, len(frames.q) // 20)]:
            pin.framesForwardKinematics(self.model, self.data, q)
            points += [f.translation for f in self.data.oMf]
        points = np.array(points)
        lo, hi = points.min(axis=0), points.max(axis=0)
        target = (lo + hi) / 2
        extent = float(max(np.linalg.norm(hi - lo), 0.2))
        direction = np.array([1.0, -1.3, 0.9])
        eye = target + 1.1 * extent * direction / np.linalg.norm(direction)
        self.camera = (eye, target)
        # the camera node's coordinates are three.js's: (x, z, -y) of pinext's z-up world
        vis["/Cameras/default/rotated/<object>"].set_property("position", [eye[0], eye[2], -eye[1]])
        return eye, target

    # -- live -------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """URL of the live viewer (starts the server on 127.0.0.1 if needed)."""
        return self._ensure_live().window.web_url

    @property
    def server(self) -> LiveServer:
        """The live meshcat server (started on demand)."""
        self._ensure_live()
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
        frames = _Frames(np.zeros(1), q[None, :], {}, [""], 1.0)
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
        self, vis: Any, frames: _Frames, scales: tuple[float, float], events: Sequence[Any]
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
        window = _RecordingWindow()
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
        return _page(window.commands, frames, title, trajectory, self.camera)

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


# ---------------------------------------------------------------------------------------------
# HTML page
# ---------------------------------------------------------------------------------------------
def _meshcat_js() -> str:
    dist = Path(meshcat.__file__).parent / "viewer" / "dist" / "main.min.js"
    return dist.read_text(encoding="utf-8").replace("</script", "<\\/script")


_SCRIPT = r"""
(async function () {
  const params = new URLSearchParams((location.hash || "").replace(/^#/, ""));
  const pane = document.getElementById("meshcat-pane");
  const viewer = new MeshCat.Viewer(pane);
  window.viewer = viewer;
  const info = JSON.parse(document.getElementById("pinext-info-data").textContent);
  const b64 = document.getElementById("pinext-scene").textContent.trim();
  const raw = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const stream = new Blob([raw]).stream().pipeThrough(new DecompressionStream("gzip"));
  const buf = new Uint8Array(await new Response(stream).arrayBuffer());
  const view = new DataView(buf.buffer);
  const seek = params.has("t");
  for (let off = 0; off < buf.length; ) {
    const n = view.getUint32(off, true);
    off += 4;
    const bytes = buf.subarray(off, off + n);
    off += n;
    viewer.handle_command_bytearray(bytes);
  }
  if (info.camera) {
    const e = info.camera.eye, c = info.camera.target;
    viewer.camera.position.set(e[0], e[2], -e[1]);
    viewer.controls.target.set(c[0], c[2], -c[1]);
    viewer.controls.update();
  }
  if (params.get("background")) {
    const c = params.get("background");
    const rgb = [0, 2, 4].map((i) => parseInt(c.substr(i, 2), 16) / 255);
    viewer.scene.background = new MeshCat.THREE.Color(rgb[0], rgb[1], rgb[2]);
    for (const name of ["Grid", "Axes"]) viewer.set_property([name], "visible", false);
  }
  if (params.get("controls") === "0") viewer.gui.domElement.style.display = "none";
  const line = document.getElementById("pinext-info");
  if (params.get("info") === "0") line.style.display = "none";
  if (seek) {
    const t = parseFloat(params.get("t")) - info.t0;
    viewer.animator.pause();
    viewer.animator.seek(t);
    viewer.animator.display_progress(t);
  }
  function phaseAt(t) {
    let name = "";
    for (const p of info.phases) if (t + info.t0 >= p[0]) name = p[1];
    return name;
  }
  function update() {
    const t = viewer.animator.time || 0;
    const phase = phaseAt(t);
    line.textContent = info.title + "   t = " + (t + info.t0).toFixed(3) + " s" +
      (phase ? "   phase: " + phase : "");
    requestAnimationFrame(update);
  }
  update();
  viewer.set_dirty();
  requestAnimationFrame(() => requestAnimationFrame(() => { window.pinextReady = true; }));
})();
"""


def _page(
    commands: list[bytes],
    frames: _Frames,
    title: str,
    trajectory: Any,
    camera: tuple[np.ndarray, np.ndarray] | None,
) -> str:
    blob = b"".join(struct.pack("<I", len(c)) + c for c in commands)
    packed = base64.b64encode(gzip.compress(blob, compresslevel=9, mtime=0)).decode("ascii")
    phases = [[float(p.t_start), str(p.name)] for p in getattr(trajectory, "phases", [])]
    view = (
        {"eye": [float(x) for x in camera[0]], "target": [float(x) for x in camera[1]]}
        if camera is not None
        else None
    )
    info = json.dumps({"title": title, "t0": float(frames.t[0]), "phases": phases, "camera": view})
    info = info.replace("<", "\\u003c")
    return (
        '<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html_lib.escape(title)}</title>\n"
        "<style>body{margin:0;overflow:hidden}#meshcat-pane{width:100vw;height:100vh;"
        "overflow:hidden}#pinext-info{position:absolute;left:8px;bottom:8px;"
        "font:13px sans-serif;color:#222;background:rgba(255,255,255,.75);padding:3px 6px;"
        'border-radius:3px}</style>\n</head>\n<body>\n<div id="meshcat-pane"></div>\n'
        '<div id="pinext-info"></div>\n'
        f"<script>{_meshcat_js()}</script>\n"
        f'<script id="pinext-info-data" type="application/json">{info}'
        "</script>\n"
        f'<script id="pinext-scene" type="application/octet-stream">{packed}</script>\n'
        f"<script>{_SCRIPT}</script>\n</body>\n</html>\n"
    )


# ---------------------------------------------------------------------------------------------
# functions
# ---------------------------------------------------------------------------------------------
def viewer_for(trajectory: Any, system: Any = None, **kwargs: Any) -> Viewer:
    """A :class:`Viewer` for a trajectory: of ``system`` if given, else rebuilt from its meta.

    The robot is reloaded from ``meta["urdf"]`` with the flexible links of ``meta["flexible"]``
    and the sidecar ``meta["sidecar"]``; contact surfaces come from ``meta["contacts"]`` (dicts
    of :meth:`pinext.contact.Contact.from_dict`) or a task's ``meta["task"]["table_height"]``.
    """
    if system is not None:
        return Viewer(system, **kwargs)
    meta = getattr(trajectory, "meta", {}) or {}
    urdf = meta.get("urdf")
    if not urdf or not Path(urdf).is_file():
        raise InvalidParameter(
            f"the trajectory names no URDF file that exists (meta['urdf'] = {urdf!r}); pass "
            "the System or Robot it was simulated with"
        )
    from ..flexible import FlexibleLink
    from ..robot import load_urdf

    flexible = [FlexibleLink.from_dict(d) for d in meta.get("flexible") or []]
    sidecar = meta.get("sidecar")
    # "sidecar" names the last source of extensions: the URDF itself or a TOML file
    toml = (
        sidecar if sidecar and str(sidecar).endswith(".toml") and Path(sidecar).is_file() else None
    )
    robot = load_urdf(urdf, flexible=flexible, extensions=toml)
    if robot.model.nq != np.asarray(trajectory.q).shape[1]:
        raise InvalidParameter(
            f"the robot rebuilt from {urdf} has nq = {robot.model.nq}, the trajectory "
            f"{np.asarray(trajectory.q).shape[1]}"
        )
    viewer = Viewer(robot, **kwargs)
    viewer.contacts, viewer.environment = _scene_from_meta(
        robot.model, meta, getattr(trajectory, "outputs", {})
    )
    if "trails" not in kwargs and viewer.contacts:
        viewer.trails = sorted({c.frame_id for c in viewer.contacts})
    return viewer


def export_html(
    trajectory: Any, path: str | Path, system: Any = None, *, fps: float = 30.0, **kwargs: Any
) -> Path:
    """Write a trajectory as a self-contained HTML animation; see :meth:`Viewer.export_html`.

    Args:
        trajectory: A :class:`pinext.Trajectory`.
        path: Output ``.html`` file.
        system: The System / Robot it was simulated with (default: rebuilt from its meta).
        fps: Frames per second of simulated time.
        **kwargs: Options of :class:`Viewer` (trails, frames, force_scale, ...).
    """
    return viewer_for(trajectory, system, **kwargs).export_html(trajectory, path, fps=fps)


def play(
    trajectory: Any,
    speed: float = 1.0,
    system: Any = None,
    *,
    fps: float = 30.0,
    wait: bool = False,
    **kwargs: Any,
) -> Viewer:
    """Play a trajectory in the live viewer (server on 127.0.0.1; the URL is printed).

    Returns:
        The :class:`Viewer` (call ``close()`` to stop its server).
    """
    viewer = viewer_for(trajectory, system, **kwargs)
    viewer.play(trajectory, speed, fps=fps, wait=wait)
    return viewer


# ---------------------------------------------------------------------------------------------
# headless Chromium (screenshots of exported pages; used by the tests and the docs)
# ---------------------------------------------------------------------------------------------
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--enable-unsafe-swiftshader",
    "--use-angle=swiftshader",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
)


def find_chromium() -> str | None:
    """Path of a Chromium / Chrome executable, or None."""
    import shutil

    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclasses.dataclass
class BrowserCapture:
    """What :func:`screenshots` saw.

    Attributes:
        images: One RGB array (height, width, 3) per requested time.
        requests: Every URL the page requested while loading (file:, data:, http(s):...).
        console: Console messages and exceptions of the page.
    """

    images: list[np.ndarray]
    requests: list[str]
    console: list[str]

    def network_requests(self) -> list[str]:
        """The requests that would leave the machine (http, https, ws, wss, ftp)."""
        return [
            u
            for u in self.requests
            if u.split(":", 1)[0].lower() in ("http", "https", "ws", "wss", "ftp")
        ]


def screenshots(
    html_path: str | Path,
    times: Sequence[float | None],
    *,
    size: tuple[int, int] = (800, 600),
    options: str = "",
    chromium: str | None = None,
    timeout: float = 60.0,
) -> BrowserCapture:
    """Open an exported page in headless Chromium (SwiftShader WebGL) and take screenshots.

    Speaks the DevTools protocol over a websocket (tornado, a meshcat dependency); records
    every request the page makes.

    Args:
        html_path: The HTML file (opened as ``file://``).
        times: Animation times [s]; the page is loaded once per time with ``#t=<time>``
            (None: the page as it opens).
        size: Viewport (width, height) [px].
        options: Extra URL fragment options, e.g. ``"controls=0&background=ffffff"``.
        chromium: The executable (default: :func:`find_chromium`).
        timeout: Seconds to wait for each page.
    """
    import asyncio
    import io
    import os
    import re
    import shutil
    import tempfile

    from PIL import Image
    from tornado.websocket import websocket_connect

    exe = chromium or find_chromium()
    if exe is None:
        raise FileNotFoundError("no chromium executable found (apt-get install chromium)")
    url = Path(html_path).resolve().as_uri()
    profile = tempfile.mkdtemp(prefix="pinext-chromium-")
    proc = subprocess.Popen(
        [
            exe,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            "--remote-debugging-port=0",
            f"--window-size={size[0]},{size[1]}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        ws_url = None
        deadline = time.monotonic() + timeout
        while ws_url is None:
            line = proc.stderr.readline().decode("utf-8", "replace")
            if not line and proc.poll() is not None:
                raise RuntimeError(f"chromium exited with code {proc.returncode}")
            match = re.search(r"DevTools listening on (ws://\S+)", line)
            if match:
                ws_url = match.group(1)
            if time.monotonic() > deadline:
                raise TimeoutError("chromium did not open its DevTools port")

        async def run() -> BrowserCapture:
            conn = await websocket_connect(ws_url, max_message_size=256 * 1024 * 1024)
            counter = [0]
            pending: dict[int, asyncio.Future] = {}
            requests: list[str] = []
            console: list[str] = []

            async def reader() -> None:
                while True:
                    msg = await conn.read_message()
                    if msg is None:
                        return
                    data = json.loads(msg)
                    if "id" in data and data["id"] in pending:
                        pending.pop(data["id"]).set_result(data)
                    method = data.get("method", "")
                    params = data.get("params", {})
                    if method == "Network.requestWillBeSent":
                        requests.append(params["request"]["url"])
                    elif method == "Runtime.consoleAPICalled":
                        console.append(
                            " ".join(
                                str(a.get("value", a.get("description", "")))
                                for a in params.get("args", [])
                            )
                        )
                    elif method == "Runtime.exceptionThrown":
                        console.append("exception: " + json.dumps(params)[:500])

            task = asyncio.ensure_future(reader())

            async def call(method: str, session: str | None = None, **params: Any) -> dict:
                counter[0] += 1
                message = {"id": counter[0], "method": method, "params": params}
                if session:
                    message["sessionId"] = session
                future = asyncio.get_running_loop().create_future()
                pending[counter[0]] = future
                await conn.write_message(json.dumps(message))
                reply = await asyncio.wait_for(future, timeout)
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

            target = await call("Target.createTarget", url="about:blank")
            session = (
                await call("Target.attachToTarget", targetId=target["targetId"], flatten=True)
            )["sessionId"]
            for domain in ("Network", "Page", "Runtime"):
                await call(f"{domain}.enable", session)
            await call(
                "Emulation.setDeviceMetricsOverride",
                session,
                width=size[0],
                height=size[1],
                deviceScaleFactor=1,
                mobile=False,
            )
            images = []
            for t in times:
                fragment = "&".join(x for x in (f"t={t}" if t is not None else "", options) if x)
                await call("Page.navigate", session, url="about:blank")
                await call("Page.navigate", session, url=url + ("#" + fragment if fragment else ""))
                end = time.monotonic() + timeout
                while True:
                    result = await call(
                        "Runtime.evaluate", session, expression="window.pinextReady === true"
                    )
                    if result.get("result", {}).get("value") is True:
                        break
                    if time.monotonic() > end:
                        raise TimeoutError(f"the page did not get ready: {console[-5:]}")
                    await asyncio.sleep(0.2)
                await asyncio.sleep(0.3)
                shot = await call("Page.captureScreenshot", session, format="png")
                image = Image.open(io.BytesIO(base64.b64decode(shot["data"]))).convert("RGB")
                images.append(np.asarray(image))
            await call("Browser.close")
            task.cancel()
            return BrowserCapture(images, requests, console)

        return asyncio.run(run())
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(profile, ignore_errors=True)
        del os


if __name__ == "__main__":  # pragma: no cover
    if "--serve" in sys.argv:
        _serve()
