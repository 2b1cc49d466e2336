"""Scene items: the viewer draws what components declare in their metadata (the key
``scene.<component>``), the same live and from a saved trajectory, and reads older files."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

import pinext as px
from pinext.contact import Contact, DynamicEnvironment, plane
from pinext.contact.scene import contact_scene_items, legacy_scene_items_from_meta
from pinext.visualization import Viewer, viewer_for
from pinext.visualization.scene import declared_items, views
from tests.test_viewer import _trajectory

SIX_DOF = px.robot_path("six_dof_arm")


def _system():
    robot = px.load_urdf(SIX_DOF, extensions=False)
    contact = Contact(plane("pen_tip", (0.0, 0.0, 0.2)), name="table")
    env = DynamicEnvironment(mass=2.0, stiffness=2e4, damping=100.0)
    return robot, px.System(robot, contacts=[contact], environment=env)


def test_items_of_a_contact_and_its_environment():
    robot, system = _system()
    items = contact_scene_items(system.components[-1].contacts, True, component="contact")
    contact, environment = items
    assert contact["kind"] == "contact" and contact["frame"] == "pen_tip"
    np.testing.assert_allclose(np.asarray(contact["placement"])[:3, 3], [0.0, 0.0, 0.2])
    assert contact["force"] == {"output": "contact.force", "first_row": 0, "rows": [[0, [0, 0, 1]]]}
    assert environment["displacement"] == "contact.deformation" and environment["layer"] is None
    contacts, env, trails = views(robot.model, items)
    assert [c.name for c in contacts] == ["table"] and env is not None and trails == []
    assert contacts[0].frame_id == robot.model.getFrameId("pen_tip")


def test_declared_items_are_drawn_for_any_component_and_from_a_saved_file(tmp_path):
    robot, system = _system()
    live = Viewer(system)
    t = np.linspace(0.0, 1.0, 3)
    traj = _trajectory(robot, t, np.tile([0.0, 0.6, 1.4, 0.0, 1.1, 0.0], (3, 1)))
    # a component of any kind declares a surface and a trail under its own key
    traj.meta["scene.table"] = contact_scene_items(
        system.components[-1].contacts, None, component="contact"
    ) + [{"kind": "trail", "frame": "wrist_3"}, {"kind": "sound", "file": "x.wav"}]
    loaded = px.Trajectory.load(traj.save(tmp_path / "t.npz"))
    assert declared_items(loaded.meta) == declared_items(traj.meta)
    viewer = viewer_for(loaded)
    assert [c.name for c in viewer.contacts] == [c.name for c in live.contacts]
    for a, b in zip(viewer.contacts, live.contacts, strict=True):
        assert a.frame_id == b.frame_id and a.placement.isApprox(b.placement)
    assert viewer.environment is None and live.environment is not None
    assert viewer.trails == [robot.model.getFrameId("wrist_3")]


def test_trajectories_saved_before_scene_items_are_still_drawn():
    meta = {"task": {"name": "writing", "table_height": 0.2, "frame": "pen_tip"}}
    items = legacy_scene_items_from_meta(meta, {"contact.deformation": np.zeros(1)})
    robot = px.load_urdf(SIX_DOF, extensions=False)
    contacts, env, _ = views(robot.model, items)
    assert contacts[0].placement.isApprox(pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.2])))
    assert env is not None and env.displacement == "contact.deformation"
