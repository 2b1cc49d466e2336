"""The robot description a trajectory carries (``meta["description"]``): no absolute path in a
trajectory's meta, portable mesh URIs, and a saved run replayed by the viewer from its file
alone after the robot's folder moved."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.cli import build_parser
from pinext.exceptions import FileFormatError, InvalidParameter, MeshNotFound
from pinext.robots.description import load_description, mesh_roots, resolve_mesh
from pinext.simulation.description import FORMAT, MESH, portable_uri, robot_description
from pinext.simulation.timestepping import simulate_timestepping
from pinext.simulation.trajectory import Trajectory
from pinext.visualization import viewer_for
from tests.test_viewer import _scene_commands

#: Runs on the Python path only: the description does not depend on the path, and the
#: compiled kernels would be compiled for nothing.
BOTH_PATHS = False
ROOT = Path(__file__).resolve().parents[1]

#: A tetrahedron, 0.1 m on a side, as an ASCII STL.
STL = """solid tet
facet normal 0 0 -1
 outer loop
  vertex 0 0 0
  vertex 0.1 0 0
  vertex 0 0.1 0
 endloop
endfacet
facet normal 0 -1 0
 outer loop
  vertex 0 0 0
  vertex 0 0 0.1
  vertex 0.1 0 0
 endloop
endfacet
facet normal -1 0 0
 outer loop
  vertex 0 0 0
  vertex 0 0.1 0
  vertex 0 0 0.1
 endloop
endfacet
facet normal 1 1 1
 outer loop
  vertex 0.1 0 0
  vertex 0 0 0.1
  vertex 0 0.1 0
 endloop
endfacet
endsolid tet
"""

#: A two-link arm whose second link is a mesh given relative to the URDF's own folder.
ARM = """<?xml version="1.0"?>
<robot name="meshed_arm">
  <link name="base"/>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="5"/>
  </joint>
  <link name="upper">
    <inertial><origin xyz="0.25 0 0"/><mass value="1"/>
      <inertia ixx="1e-3" ixy="0" ixz="0" iyy="0.021" iyz="0" izz="0.021"/></inertial>
    <visual><origin xyz="0.25 0 0"/><geometry><box size="0.5 0.04 0.04"/></geometry></visual>
  </link>
  <joint name="elbow" type="revolute">
    <parent link="upper"/><child link="fore"/><origin xyz="0.5 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="5"/>
  </joint>
  <link name="fore">
    <inertial><origin xyz="0.25 0 0"/><mass value="0.5"/>
      <inertia ixx="1e-3" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
    <visual><origin xyz="0.1 0 0"/>
      <geometry><mesh filename="../meshes/fore.stl" scale="2 1 1"/></geometry></visual>
    <visual><origin xyz="0.25 0 0"/><geometry><box size="0.5 0.03 0.03"/></geometry></visual>
  </link>
</robot>
"""

#: Its sidecar: the upper link is flexible (five sublinks), which changes the model.
SIDECAR = """[[flexible]]
link = "upper"
sublinks = 5
young_modulus = 7e10
second_moment_of_area = 1e-9
"""


@pytest.fixture(autouse=True)
def _python_path(monkeypatch):
    monkeypatch.setenv("PINEXT_NO_COMPILED", "1")
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)


def _package(folder: Path) -> Path:
    """``folder/meshed_arm_description/{urdf/arm.urdf, urdf/arm.pinext.toml, meshes/fore.stl}``;
    returns the URDF."""
    package = folder / "meshed_arm_description"
    (package / "urdf").mkdir(parents=True)
    (package / "meshes").mkdir()
    (package / "meshes" / "fore.stl").write_text(STL)
    (package / "urdf" / "arm.pinext.toml").write_text(SIDECAR)
    urdf = package / "urdf" / "arm.urdf"
    urdf.write_text(ARM)
    return urdf


def _strings(value, found=None) -> list[str]:
    """Every string in a JSON-like value, keys included."""
    found = [] if found is None else found
    if isinstance(value, str):
        found.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            _strings(key, found)
            _strings(item, found)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _strings(item, found)
    return found


def _assert_no_absolute_path(traj: Trajectory, tmp_path: Path, *folders: Path) -> None:
    """No string of the meta (nor of the saved file's header) is an absolute path or holds
    one of the folders the robot, the checkout, the interpreter or the test live in."""
    forbidden = {str(f.resolve()) for f in (*folders, ROOT, tmp_path)} | {sys.prefix}
    forbidden |= {str(Path(sys.prefix).resolve()), "site-packages"}
    strings = _strings(traj.meta)
    assert strings
    for text in strings:
        assert not os.path.isabs(text), text
        assert not re.match(r"^[A-Za-z]:[\\/]", text), text
        for folder in forbidden:
            assert folder not in text, f"{folder} in meta: {text[:200]}"
    header = json.loads(str(np.load(traj.save(tmp_path / "run.npz"))["header"]))
    assert header["meta"] == json.loads(json.dumps(header["meta"]))
    for text in _strings(header["meta"]):
        assert not any(folder in text for folder in forbidden)
    description = traj.meta["description"]
    assert description["format"] == FORMAT
    uris = [m.group(3) for m in MESH.finditer(description["urdf"])]
    assert uris == description["meshes"]
    assert all(uri.startswith("package://") for uri in uris)


# -- the description -----------------------------------------------------------------------------
def test_mesh_references_become_package_uris(tmp_path):
    urdf_dir = tmp_path / "ws" / "pkg" / "urdf"
    assert portable_uri("package://ur/meshes/a.dae", urdf_dir) == "package://ur/meshes/a.dae"
    # relative to the URDF: the nearest folder holding both names the package
    assert portable_uri("../meshes/a.stl", urdf_dir) == "package://pkg/meshes/a.stl"
    assert portable_uri("meshes/a.stl", urdf_dir) == "package://urdf/meshes/a.stl"
    assert portable_uri("a.stl", urdf_dir) == "package://urdf/a.stl"
    # absolute paths and file:// URIs likewise
    mesh = tmp_path / "ws" / "pkg" / "meshes" / "b.obj"
    assert portable_uri(str(mesh), urdf_dir) == "package://pkg/meshes/b.obj"
    assert portable_uri(f"file://{mesh.as_posix()}", urdf_dir) == "package://pkg/meshes/b.obj"
    # sharing no folder but the file system's root: the mesh's own folder
    elsewhere = Path(tmp_path.anchor) / "opt_pinext_absent" / "meshes" / "c.stl"
    assert portable_uri(str(elsewhere), urdf_dir) == "package://meshes/c.stl"


def test_a_description_reads_the_urdf_as_it_is_when_the_run_ends(tmp_path):
    """The portable URDF text is read once per version of the file (its modification time
    and size): runs of an unchanged file share it, a file rewritten between two runs is
    read again."""
    path = tmp_path / "twotr.urdf"
    shutil.copy(px.robot_path("twotr"), path)
    robot = px.load_urdf(path)
    first = robot_description(robot)
    assert robot_description(robot)["urdf"] == first["urdf"]
    path.write_text(path.read_text() + "<!-- edited -->\n")
    assert robot_description(robot)["urdf"] == first["urdf"] + "<!-- edited -->\n"


def test_a_robot_not_loaded_from_a_urdf_has_no_description(tmp_path):
    robot = px.load_urdf(px.robot_path("twotr"))
    assert robot_description(robot) is not None
    bare = px.Robot.from_model(robot.model)
    assert robot_description(bare) is None
    traj = px.simulate(bare, 0.01, output_dt=0.005)
    assert traj.meta["description"] is None
    with pytest.raises(InvalidParameter, match="description"):
        viewer_for(Trajectory.load(traj.save(tmp_path / "bare.npz")))
    # with the robot given, it is drawn as before
    assert viewer_for(traj, bare).model.nq == bare.model.nq


def test_a_description_of_another_format_is_refused():
    with pytest.raises(FileFormatError, match="pinext-description-1"):
        load_description({"format": "other", "urdf": "<robot/>"})
    with pytest.raises(FileFormatError, match="urdf"):
        load_description({"format": FORMAT, "file": "a.urdf"})


# -- no absolute path in a trajectory ------------------------------------------------------------
@pytest.mark.parametrize("method", ["simulate", "timestepping"])
def test_project_robot_trajectory_holds_no_absolute_path(method, tmp_path):
    robot = px.load_robot("flexible_arm")  # its <pinext> block makes the bar flexible
    if method == "simulate":
        traj = px.simulate(robot, 0.01, output_dt=0.005)
    else:
        traj = simulate_timestepping(px.System(robot), 0.01, dt=1e-3)
    _assert_no_absolute_path(traj, tmp_path, px.robot_path("flexible_arm").parent)
    description = traj.meta["description"]
    assert description["file"] == "flexible_arm.urdf"
    assert description["extensions"] is True and description["sidecar"] is None
    assert [f["link"] for f in description["flexible"]] == ["bar"]
    assert description["urdf"] == px.robot_path("flexible_arm").read_text()  # no mesh


@pytest.mark.parametrize("method", ["simulate", "timestepping"])
def test_example_robot_data_trajectory_holds_no_absolute_path(method, robots_dir, tmp_path):
    robot = px.load_robot("ur5")
    if method == "simulate":
        traj = px.simulate(robot, 0.005, output_dt=0.005)
    else:
        traj = simulate_timestepping(px.System(robot), 0.01, dt=1e-3)
    _assert_no_absolute_path(traj, tmp_path, robots_dir)
    meshes = traj.meta["description"]["meshes"]
    assert len(meshes) == 14  # seven visual .dae, seven collision .stl
    assert (
        meshes[0] == "package://example-robot-data/robots/ur_description/meshes/ur5/visual/base.dae"
    )


# -- replay from the file alone ------------------------------------------------------------------
def _placements(model, visual_model, q) -> list[np.ndarray]:
    data, gdata = model.createData(), visual_model.createData()
    pin.forwardKinematics(model, data, q)
    pin.updateGeometryPlacements(model, data, visual_model, gdata)
    return [gdata.oMg[i].homogeneous for i in range(visual_model.ngeoms)]


def test_saved_run_replays_after_the_robot_folder_moved(tmp_path, monkeypatch):
    """A URDF with a mesh relative to its own file and a sidecar: the run is saved, the
    package folder moved away; the viewer rebuilds the flexible robot from the file alone,
    finds the mesh through package_dirs (or $ROS_PACKAGE_PATH), and places every geometry
    where Pinocchio places the original robot's."""
    urdf = _package(tmp_path / "src")
    robot = px.load_urdf(urdf)
    assert robot.model.nq == 2 + 5  # five elastic joints between six sublinks
    q0 = pin.neutral(robot.model)
    q0[0] = 0.4
    traj = px.simulate(robot, 0.02, q0=q0, output_dt=0.01)
    _assert_no_absolute_path(traj, tmp_path, urdf.parents[1])
    description = traj.meta["description"]
    assert description["meshes"] == ["package://meshed_arm_description/meshes/fore.stl"]
    assert description["sidecar"] == SIDECAR and description["sidecar_file"] == "arm.pinext.toml"
    saved = traj.save(tmp_path / "runs" / "arm.npz")
    original = _placements(robot.model, robot.visual_model, traj.q[-1])
    mesh_scale = next(
        g.meshScale for g in robot.visual_model.geometryObjects if g.meshPath.endswith(".stl")
    )

    moved = tmp_path / "elsewhere"
    shutil.move(str(tmp_path / "src"), str(moved))
    loaded = Trajectory.load(saved)
    with pytest.raises(MeshNotFound) as err:
        viewer_for(loaded)
    assert err.value.mesh == "package://meshed_arm_description/meshes/fore.stl"
    assert err.value.roots == [str(r) for r in mesh_roots()]
    assert "package://meshed_arm_description/meshes/fore.stl" in str(err.value)

    viewer = viewer_for(loaded, package_dirs=[moved])
    assert viewer.model.nq == robot.model.nq
    assert list(viewer.model.names) == list(robot.model.names)
    meshes = [g for g in viewer.visual_model.geometryObjects if g.meshPath.endswith(".stl")]
    assert len(meshes) == 1
    assert Path(meshes[0].meshPath) == (moved / "meshed_arm_description/meshes/fore.stl").resolve()
    np.testing.assert_array_equal(meshes[0].meshScale, mesh_scale)
    np.testing.assert_array_equal(mesh_scale, [2.0, 1.0, 1.0])
    assert viewer.visual_model.ngeoms == robot.visual_model.ngeoms
    rebuilt = _placements(viewer.model, viewer.visual_model, loaded.q[-1])
    for a, b in zip(rebuilt, original, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-12)
    # the scene of the page: the mesh is sent to meshcat (no server: a recording window)
    commands = _scene_commands(viewer.html(loaded, fps=100.0))
    objects = [c for c in commands if c["type"] == "set_object"]
    assert any("_meshfile" in str(c)[:4000] for c in objects)
    animation = next(c for c in commands if c["type"] == "set_animation")
    assert len(animation["animations"][0]["clip"]["tracks"][0]["keys"]) == 3  # 0.02 s, 100 fps

    # the command: pinext view RUN.npz --html PAGE --package-dirs FOLDER
    args = build_parser().parse_args(
        ["view", str(saved), "--html", str(tmp_path / "arm.html"), "--package-dirs", str(moved)]
    )
    assert args.func(args) == 0
    assert "_meshfile" in (tmp_path / "arm.html").read_text()

    monkeypatch.setenv("ROS_PACKAGE_PATH", os.pathsep.join([str(tmp_path / "none"), str(moved)]))
    assert viewer_for(loaded).visual_model.ngeoms == robot.visual_model.ngeoms


def test_a_root_may_be_the_package_folder_itself(tmp_path):
    urdf = _package(tmp_path)
    package = urdf.parents[1]
    uri = "package://meshed_arm_description/meshes/fore.stl"
    assert resolve_mesh(uri, [tmp_path]) == (package / "meshes" / "fore.stl").resolve()
    assert resolve_mesh(uri, [package]) == (package / "meshes" / "fore.stl").resolve()
    with pytest.raises(MeshNotFound, match=re.escape(str(tmp_path / "x"))):
        resolve_mesh(uri, [tmp_path / "x"])


def test_example_robot_data_run_replays_from_its_file(robots_dir, tmp_path):
    """Solo12 on its feet under time stepping: free-flyer root joint and a sidecar of
    contacts; the saved run rebuilds the robot (meshes from example-robot-data) and its
    contact scene."""
    from pinext.robots.solo12 import load_solo12

    robot, q = load_solo12()
    traj = simulate_timestepping(px.System(robot), 0.01, dt=1e-3, q0=q)
    _assert_no_absolute_path(traj, tmp_path, robots_dir)
    description = traj.meta["description"]
    assert description["root_joint"] == "freeflyer"
    assert description["sidecar_file"] == "solo12.pinext.toml"
    loaded = Trajectory.load(traj.save(tmp_path / "solo.npz"))
    viewer = viewer_for(loaded)
    assert list(viewer.model.names) == list(robot.model.names)
    assert viewer.visual_model.ngeoms == robot.visual_model.ngeoms
    assert [Path(g.meshPath).name for g in viewer.visual_model.geometryObjects] == [
        Path(g.meshPath).name for g in robot.visual_model.geometryObjects
    ]
    feet = [viewer.model.frames[c.frame_id].name for c in viewer.contacts]
    assert feet == ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]
    for a, b in zip(
        _placements(viewer.model, viewer.visual_model, loaded.q[-1]),
        _placements(robot.model, robot.visual_model, loaded.q[-1]),
        strict=True,
    ):
        np.testing.assert_allclose(a, b, atol=1e-12)


def test_old_trajectories_load_from_their_urdf_path(tmp_path):
    """A trajectory saved before descriptions existed names its URDF by absolute path in
    meta["urdf"] (with "flexible" and "sidecar"): it still replays while that file exists."""
    robot = px.load_robot("flexible_arm")
    traj = px.simulate(robot, 0.01, output_dt=0.005)
    del traj.meta["description"]
    traj.meta["urdf"] = str(px.robot_path("flexible_arm"))
    traj.meta["sidecar"] = str(px.robot_path("flexible_arm"))
    loaded = Trajectory.load(traj.save(tmp_path / "old.npz"))
    assert viewer_for(loaded).model.nq == robot.model.nq
    loaded.meta["urdf"] = str(tmp_path / "gone.urdf")
    with pytest.raises(InvalidParameter, match="gone.urdf"):
        viewer_for(loaded)


def test_example_replays_its_saved_run(tmp_path, monkeypatch, capsys):
    """examples/replay_saved_run.py writes the page of a run from its saved file alone."""
    import runpy

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["replay_saved_run.py", "--out", str(tmp_path / "o")])
    runpy.run_path(str(ROOT / "examples" / "replay_saved_run.py"), run_name="__main__")
    out = capsys.readouterr().out
    page = tmp_path / "o" / "replay.html"
    assert f"wrote {page}" in out
    commands = _scene_commands(page.read_text())
    animation = next(c for c in commands if c["type"] == "set_animation")
    keys = animation["animations"][0]["clip"]["tracks"][0]["keys"]
    assert len(keys) == 16  # 0.5 s at 30 fps, both ends
