"""Browser playback: scene geometry against Pinocchio, the self-contained HTML in headless
Chromium (robot drawn, animation moves, no network), the live server on 127.0.0.1 only."""

from __future__ import annotations

import base64
import gzip
import re
import site
import struct
import sysconfig
import urllib.request
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import umsgpack

import pinext as px
from pinext.robots import robot_path
from pinext.simulation.trajectory import EventRecord, PhaseRecord, Trajectory
from pinext.visualization import Viewer, export_html, view
from pinext.visualization.sampling import resample
from pinext.visualization.server import LiveServer
from tests.browser import find_chromium, screenshots

ROOT = Path(__file__).resolve().parents[1]
SIX_DOF = robot_path("six_dof_arm")
FLEXIBLE = robot_path("flexible_arm")
needs_chromium = pytest.mark.skipif(find_chromium() is None, reason="chromium not installed")


def _trajectory(robot, t, q, *, outputs=None, events=(), phases=None) -> Trajectory:
    """A Trajectory built by hand (no simulation): t, q and chosen outputs."""
    model = robot.model
    n = len(t)
    v = np.zeros((n, model.nv))
    x = np.hstack([q, v, np.zeros((n, 2))])
    nq, nv = model.nq, model.nv
    layout = {
        "q": (0, nq),
        "v": (nq, nq + nv),
        "input_work": (nq + nv, nq + nv + 1),
        "dissipated_energy": (nq + nv + 1, nq + nv + 2),
    }
    phases = phases or [PhaseRecord(float(t[0]), float(t[-1]), "free")]
    index = np.zeros(n, int)
    for k, p in enumerate(phases):
        index[t >= p.t_start] = k
    meta = {
        "robot": model.name,
        "urdf": robot.path,
        "nq": nq,
        "nv": nv,
        "joint_names": list(model.names)[1:],
        "flexible": [],
        "sidecar": None,
    }
    return Trajectory(
        np.asarray(t, float),
        x,
        layout,
        index,
        list(phases),
        list(events),
        dict(outputs or {}),
        meta,
    )


def _swing(robot, duration=1.0, rate=100.0, amplitude=0.6):
    """Every joint swings by ``amplitude`` [rad] over the run."""
    t = np.arange(0.0, duration + 1e-12, 1.0 / rate)
    q0 = np.array([0.0, 0.6, 1.4, 0.0, 1.1, 0.0])[: robot.nq]
    q = q0[None, :] + amplitude * np.sin(np.pi * t / duration)[:, None] * np.ones(robot.nq)
    return _trajectory(robot, t, q)


def _project(points, eye, target, size, fov=75.0):
    """Pixels (x right, y down) of world points for three.js's default meshcat camera (z up)."""
    forward = (target - eye) / np.linalg.norm(target - eye)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    w, h = size
    f = 1.0 / np.tan(np.radians(fov) / 2)
    out = []
    for p in np.atleast_2d(points):
        d = p - eye
        depth = d @ forward
        x_ndc = f / (w / h) * (d @ right) / depth
        y_ndc = f * (d @ up) / depth
        out.append(((x_ndc + 1) / 2 * w, (1 - y_ndc) / 2 * h))
    return np.array(out)


def _scene_commands(html: str) -> list[dict]:
    blob = re.search(r'id="pinext-scene"[^>]*>([^<]*)<', html).group(1)
    raw = gzip.decompress(base64.b64decode(blob))
    out, off = [], 0
    while off < len(raw):
        (n,) = struct.unpack_from("<I", raw, off)
        out.append(umsgpack.unpackb(raw[off + 4 : off + 4 + n]))
        off += 4 + n
    return out


# -- scene geometry ------------------------------------------------------------------------------
def test_resampling_interpolates_configurations_and_keeps_event_duplicates():
    robot = px.load_urdf(SIX_DOF, extensions=False)
    t = np.array([0.0, 0.05, 0.05, 0.1])  # an event sample twice
    q = np.array([np.zeros(6), 0.5 * np.ones(6), 0.5 * np.ones(6), np.ones(6)])
    frames = resample(robot.model, _trajectory(robot, t, q), fps=40.0)
    np.testing.assert_allclose(frames.t, [0.0, 0.025, 0.05, 0.075, 0.1], atol=1e-15)
    np.testing.assert_allclose(frames.q[:, 0], [0.0, 0.25, 0.5, 0.75, 1.0], atol=1e-12)


def test_skeleton_of_a_model_without_geometry_joins_the_joints():
    model = pin.buildSampleModelManipulator()
    viewer = Viewer(model)
    geoms = viewer.visual_model.geometryObjects
    assert {g.parentJoint for g in geoms} == set(range(1, model.njoints))
    for child in range(2, model.njoints):
        parent = model.parents[child]
        offset = model.jointPlacements[child].translation
        if np.linalg.norm(offset) < 1e-9:
            continue
        cylinders = [
            g
            for g in geoms
            if g.parentJoint == parent
            and np.allclose(g.placement.translation, offset / 2, atol=1e-12)
        ]
        assert len(cylinders) == 1
        assert cylinders[0].geometry.halfLength * 2 == pytest.approx(np.linalg.norm(offset))
        np.testing.assert_allclose(
            cylinders[0].placement.rotation[:, 2], offset / np.linalg.norm(offset), atol=1e-12
        )


def test_flexible_sublinks_bend_with_the_elastic_joints():
    robot = px.load_urdf(FLEXIBLE)
    viewer = Viewer(robot)
    elastic = [j for j in range(1, robot.model.njoints) if "_elastic_" in robot.model.names[j]]
    drawn = {g.parentJoint for g in viewer.visual_model.geometryObjects}
    assert set(elastic) <= drawn  # one piece per sublink
    rng = np.random.default_rng(3)
    q = rng.uniform(-0.05, 0.05, robot.nq)
    traj = _trajectory(robot, np.array([0.0, 1.0]), np.array([q, q]))
    poses = viewer._poses(resample(robot.model, traj, 1.0), 0, (0.0, 0.0))
    data = robot.model.createData()
    gdata = viewer.visual_model.createData()
    pin.forwardKinematics(robot.model, data, q)
    pin.updateGeometryPlacements(robot.model, data, viewer.visual_model, gdata)
    for gid, geom in enumerate(viewer.visual_model.geometryObjects):
        np.testing.assert_allclose(
            poses[f"pinocchio/visuals/{geom.name}"][0], gdata.oMg[gid].homogeneous, atol=1e-12
        )
    # a flexible link drawn by a single piece gets generated geometry on its sublinks
    robot.visual_model = pin.GeometryModel()
    first = px.load_urdf(FLEXIBLE).visual_model.geometryObjects[0]
    robot.visual_model.addGeometryObject(first)
    drawn = {g.parentJoint for g in Viewer(robot).visual_model.geometryObjects}
    assert set(elastic) <= drawn


def test_deflection_scale_multiplies_the_elastic_dofs_only():
    robot = px.load_urdf(FLEXIBLE)
    q = np.linspace(0.1, 0.2, robot.nq)
    traj = _trajectory(robot, np.array([0.0, 1.0]), np.array([q, q]))
    frames = Viewer(robot, deflection_scale=10.0).sample(traj, 1.0)
    expected = q.copy()
    expected[robot.elastic_dofs()] *= 10.0
    np.testing.assert_allclose(frames.q[0], expected, atol=1e-12)


def test_contact_arrows_and_moving_environment_mass():
    from pinext.contact import Contact, DynamicEnvironment, plane

    robot = px.load_urdf(SIX_DOF, extensions=False)
    contact = Contact(plane("pen_tip", (0.0, 0.0, 0.2)), name="table")
    env = DynamicEnvironment(mass=2.0, stiffness=2e4, damping=100.0)
    system = px.System(robot, contacts=[contact], environment=env)
    t = np.linspace(0.0, 1.0, 11)
    q = np.tile([0.0, 0.6, 1.4, 0.0, 1.1, 0.0], (t.size, 1))
    force = np.linspace(0.0, 20.0, t.size)[:, None]
    deformation = -1e-3 * np.linspace(0.0, 1.0, t.size)[:, None]
    events = [EventRecord(0.3, "contact:table", {"contact": "table", "impulse": [0.5]})]
    traj = _trajectory(
        robot,
        t,
        q,
        events=events,
        outputs={"contact.force": force, "contact.deformation": deformation},
    )
    viewer = Viewer(system, force_scale=0.01, impulse_scale=0.2)
    frames = resample(robot.model, traj, 10.0)
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, q[0])
    tip = data.oMf[robot.model.getFrameId("pen_tip")].translation
    for k in (3, 5, 10):
        poses = viewer._poses(frames, k, (0.01, 0.2), events)
        head, head_scale = poses["pinext/forces/table/head"]
        # the arrow starts at the pen tip and ends at tip + 0.01 m/N * F along +z (the normal)
        np.testing.assert_allclose(head[:3, :3] @ [0, 1, 0], [0, 0, 1], atol=1e-12)
        end = head[:3, 3] + head[:3, :3] @ [0, 6 * 0.008 * viewer.size / 2 * head_scale[1], 0]
        np.testing.assert_allclose(end, tip + [0, 0, 0.01 * force[k, 0]], atol=1e-12)
        shaft, shaft_scale = poses["pinext/forces/table/shaft"]
        np.testing.assert_allclose(
            shaft[:3, 3] - shaft_scale[1] / 2 * np.array([0, 0, 1]), tip, atol=1e-12
        )
        # the environment mass moves by s_e along the normal
        mass = poses["pinext/environment/mass"][0]
        mass0 = viewer._poses(frames, 0, (0.01, 0.2), events)["pinext/environment/mass"][0]
        assert mass[2, 3] - mass0[2, 3] == pytest.approx(deformation[k, 0], abs=1e-15)
        # the impulse arrow is shown for 0.3 s after the impact
        impulse_scale = poses["pinext/impulses/table/shaft"][1]
        shown = 0.3 <= frames.t[k] <= 0.6
        assert (impulse_scale[1] > 1e-3) == shown


def test_export_holds_an_animation_with_one_key_per_frame(tmp_path):
    robot = px.load_urdf(SIX_DOF, extensions=False)
    traj = _swing(robot, duration=1.0)
    path = export_html(traj, tmp_path / "swing.html", fps=20.0)
    html = path.read_text()
    assert "<script src" not in html and "<link" not in html
    commands = _scene_commands(html)
    animation = [c for c in commands if c["type"] == "set_animation"]
    assert len(animation) == 1
    clips = {a["path"]: a["clip"] for a in animation[0]["animations"]}
    visuals = [p for p in clips if "/pinocchio/visuals/" in p]
    assert len(visuals) == robot.visual_model.ngeoms
    track = next(tr for tr in clips[visuals[-1]]["tracks"] if tr["name"] == ".position")
    assert len(track["keys"]) == 21  # 1 s at 20 fps, both ends
    # keys are the geometry placements Pinocchio computes at those times
    gid = robot.visual_model.ngeoms - 1
    data, gdata = robot.model.createData(), robot.visual_model.createData()
    for key in track["keys"][::5]:
        t = key["time"] / 20.0
        q = np.interp(t, traj.t, traj.q[:, 0]) * np.ones(6) + (traj.q[0] - traj.q[0, 0])
        pin.forwardKinematics(robot.model, data, q)
        pin.updateGeometryPlacements(robot.model, data, robot.visual_model, gdata)
        np.testing.assert_allclose(key["value"], gdata.oMg[gid].translation, atol=1e-6)


def test_view_rebuilds_the_robot_from_a_saved_trajectory(tmp_path):
    robot = px.load_urdf(FLEXIBLE)
    q = np.zeros((3, robot.nq))
    q[:, 0] = [0.0, 0.5, 1.0]
    traj = _trajectory(robot, np.array([0.0, 0.5, 1.0]), q)
    traj.meta["flexible"] = [
        {
            "link": "bar",
            "sublinks": 5,
            "young_modulus": 1e11,
            "second_moment_of_area": 8.333333333333333e-10,
        }
    ]
    traj.meta["sidecar"] = str(FLEXIBLE)
    npz = traj.save(tmp_path / "flex.npz")
    out = view(npz, html=tmp_path / "flex.html")
    names = {c["path"] for c in _scene_commands(Path(out).read_text()) if c["type"] == "set_object"}
    assert sum("/pinocchio/visuals/bar_0_" in n for n in names) == 6  # six sublink pieces


def test_bad_inputs_raise_pinext_errors(tmp_path):
    robot = px.load_urdf(SIX_DOF, extensions=False)
    with pytest.raises(px.exceptions.NameNotFound, match="pen_tip"):
        Viewer(robot, frames=["nope"])
    traj = _swing(robot)
    traj.meta["urdf"] = None
    with pytest.raises(px.exceptions.InvalidParameter, match="URDF"):
        export_html(traj, tmp_path / "x.html")
    with pytest.raises(px.exceptions.InvalidParameter, match="fps"):
        Viewer(robot).export_html(traj, tmp_path / "x.html", fps=0.0)


# -- live viewer ---------------------------------------------------------------------------------
def test_live_server_listens_on_localhost_only():
    psutil = pytest.importorskip("psutil")
    server = LiveServer()
    try:
        listening = []
        deadline = 50
        while len(listening) < 2 and deadline:
            listening = [
                c
                for c in psutil.Process(server.pid).net_connections(kind="inet")
                if c.status == psutil.CONN_LISTEN
            ]
            deadline -= 1
        assert len(listening) >= 2  # web + zmq
        assert {c.laddr.ip for c in listening} == {"127.0.0.1"}
        assert server.web_url.startswith("http://127.0.0.1:")
        assert server.zmq_url.startswith("tcp://127.0.0.1:")
        with urllib.request.urlopen(server.web_url, timeout=10) as reply:
            assert reply.status == 200 and b"meshcat" in reply.read().lower()
    finally:
        server.close()
    assert server.process.poll() is not None


def test_live_play_streams_a_trajectory(capsys):
    robot = px.load_urdf(SIX_DOF, extensions=False)
    viewer = Viewer(robot)
    try:
        viewer.play(_swing(robot, duration=0.2), speed=20.0, fps=30.0)
        assert "http://127.0.0.1:" in capsys.readouterr().out
        assert viewer.url.startswith("http://127.0.0.1:")
    finally:
        viewer.close()


# -- headless Chromium ---------------------------------------------------------------------------
@needs_chromium
def test_exported_page_draws_the_moving_robot_offline(tmp_path):
    robot = px.load_urdf(SIX_DOF, extensions=False)
    traj = _swing(robot, duration=1.0, amplitude=0.8)
    viewer = Viewer(robot)
    path = viewer.export_html(traj, tmp_path / "swing.html")
    size = (640, 480)
    times = [0.0, 0.5]
    capture = screenshots(path, times, size=size, options="controls=0&background=ffffff&info=0")
    # nothing leaves the machine while the page loads
    assert capture.requests, "the request log is empty"
    assert capture.network_requests() == []
    assert not [m for m in capture.console if m.startswith("exception")]
    eye, target = viewer.camera
    data = robot.model.createData()
    images = [im.astype(int) for im in capture.images]
    for t, image in zip(times, images, strict=True):
        background = (image == 255).all(axis=2)
        assert background[:10, :10].all()  # a corner far from the robot is background
        q = np.array([np.interp(t, traj.t, traj.q[:, i]) for i in range(robot.nq)])
        pin.framesForwardKinematics(robot.model, data, q)
        # points inside the links: middles of the upper arm and forearm, the wrist
        points = [
            (data.oMi[2].translation + data.oMi[3].translation) / 2,
            (data.oMi[3].translation + data.oMi[4].translation) / 2,
            data.oMi[5].translation,
        ]
        for x, y in _project(np.array(points), eye, target, size):
            window = background[int(y) - 3 : int(y) + 4, int(x) - 3 : int(x) + 4]
            assert window.size and not window.all(), f"no robot at pixel ({x:.0f}, {y:.0f})"
        assert (~background).mean() > 0.01
    changed = np.abs(images[0] - images[1]).sum(axis=2) > 30
    assert changed.mean() > 0.005  # the two animation times differ


@needs_chromium
def test_floor_grid_is_drawn_around_the_robot(tmp_path):
    """The grid lies on the floor under the robot and in front of the camera: its lines show
    around the robot's feet (a grid passing behind the camera was dropped by SwiftShader and
    left a far band above the robot)."""
    robot = px.load_urdf(SIX_DOF, extensions=False)
    viewer = Viewer(robot)
    path = viewer.export_html(_swing(robot, duration=1.0), tmp_path / "grid.html")
    size = (640, 480)
    image = screenshots(path, [0.0], size=size, options="controls=0&info=0").images[0].astype(int)
    framing = viewer.framing
    grid = framing.grid_transform()
    half = 10.0 * grid[0, 0]
    center = grid[:3, 3]
    # floor points between the robot's base and the grid's near corners
    floor = [center + [a * half, b * half, 0.0] for a in (-0.3, 0.3) for b in (-0.3, 0.3)]
    gray = np.abs(image[..., 0] - image[..., 2]) < 40  # grid lines; the background is blue
    for x, y in _project(np.array(floor), framing.eye, framing.target, size):
        assert 0 <= x < size[0] and 0 <= y < size[1]
        window = gray[int(y) - 25 : int(y) + 26, int(x) - 25 : int(x) + 26]
        assert window.any(), f"no grid line near pixel ({x:.0f}, {y:.0f})"
    # above the robot (top rows of the page) only the background shows
    assert not gray[:40].any()


# -- a mesh-based 6-DOF arm ----------------------------------------------------------------------
def _robots_dir() -> Path | None:
    for base in [*site.getsitepackages(), sysconfig.get_paths()["purelib"]]:
        path = Path(base) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if path.is_dir():
            return path
    return None


def test_ur5_meshes_five_seconds_export_under_20_mb(tmp_path):
    robots = _robots_dir()
    if robots is None:
        pytest.skip("example-robot-data not installed")
    urdf = robots / "ur_description" / "urdf" / "ur5_robot.urdf"
    robot = px.load_urdf(urdf, package_dirs=[str(robots.parents[1])], extensions=False)
    assert any(g.meshPath.endswith(".dae") for g in robot.visual_model.geometryObjects)
    t = np.linspace(0.0, 5.0, 501)
    q = 0.8 * np.sin(2 * np.pi * t / 5.0)[:, None] * np.ones(robot.nq)
    path = export_html(_trajectory(robot, t, q), tmp_path / "ur5.html", system=robot, fps=30.0)
    size = path.stat().st_size
    assert size < 20e6, f"{size / 1e6:.1f} MB"
    commands = _scene_commands(path.read_text())
    meshes = [c for c in commands if c["type"] == "set_object" and "_meshfile" in str(c)[:4000]]
    assert len(meshes) == sum(
        g.meshPath.endswith(".dae") for g in robot.visual_model.geometryObjects
    )
    animation = next(c for c in commands if c["type"] == "set_animation")
    keys = animation["animations"][0]["clip"]["tracks"][0]["keys"]
    assert len(keys) == 151  # 5 s at 30 fps


def test_loops_and_free_bodies_are_drawn_with_their_forces(tmp_path):
    """Two arms welded to a free box: the box moves with its joint, each loop marks both
    joined points (one point while closed) and draws its force on the tool as an arrow of
    force_scale * |f| from the tool's origin along f; the exported page holds the nodes."""
    from tests.test_assembly import two_arms_holding_a_box

    system, loops, x0 = two_arms_holding_a_box()
    traj = px.simulate(system, 0.2, x0=x0, output_dt=0.02)
    viewer = Viewer(system, force_scale=0.005)
    assert [loop.name for loop in viewer.loops] == [loop.name for loop in loops]
    model, data = system.model, system.model.createData()
    frames = resample(model, traj, 20.0)
    gids = [
        i
        for i, g in enumerate(viewer.visual_model.geometryObjects)
        if g.parentJoint == model.njoints - 1
    ]
    assert gids  # the free body has geometry of its own
    for k in (0, 2, 4):
        poses = viewer._poses(frames, k, (0.005, 0.1))
        q = frames.q[k]
        pin.framesForwardKinematics(model, data, q)
        gid = gids[0]
        geom = viewer.visual_model.geometryObjects[gid]
        expected = data.oMi[geom.parentJoint] * geom.placement
        np.testing.assert_allclose(
            poses[f"pinocchio/visuals/{geom.name}"][0], expected.homogeneous, atol=1e-12
        )
        for loop in loops:
            tool = data.oMf[model.getFrameId(loop.frame_a)].translation
            a = poses[f"pinext/loops/{loop.name}/a"][0][:3, 3]
            b = poses[f"pinext/loops/{loop.name}/b"][0][:3, 3]
            np.testing.assert_allclose(a, tool, atol=1e-12)
            np.testing.assert_allclose(b, a, atol=1e-8)  # closed
            force = frames.outputs[f"{loop.name}.force"][k]
            head, head_scale = poses[f"pinext/forces/{loop.name}/head"]
            end = head[:3, 3] + head[:3, :3] @ [0, 6 * 0.008 * viewer.size / 2 * head_scale[1], 0]
            np.testing.assert_allclose(end, tool + 0.005 * force, atol=1e-12)
    html = viewer.export_html(traj, tmp_path / "cell.html", fps=10.0).read_text()
    names = {c["path"] for c in _scene_commands(html) if c["type"] == "set_object"}
    for loop in loops:
        assert any(f"/pinext/loops/{loop.name}/a" in n for n in names)
        assert any(f"/pinext/forces/{loop.name}/shaft" in n for n in names)
    # the trajectory keeps the loop items, so a saved run is drawn the same way
    items = [i for key, v in traj.meta.items() if key.startswith("scene.") for i in v]
    assert {i["name"] for i in items if i["kind"] == "loop"} == {loop.name for loop in loops}
