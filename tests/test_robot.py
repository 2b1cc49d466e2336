"""load_urdf and Robot: Pinocchio's parser plus transmissions, damping and extensions."""

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.exceptions import FileFormatError, NameNotFound
from tests.conftest import URDF, pendulum_urdf


def test_planar3r_matches_pinocchio_parser():
    robot = px.load_urdf(URDF / "planar3r.urdf")
    reference = pin.buildModelFromUrdf(str(URDF / "planar3r.urdf"))
    assert robot.nv == reference.nv == 3
    q = np.array([0.3, -0.5, 1.1])
    M = pin.crba(robot.model, robot.data, q)
    assert np.allclose(M, pin.crba(reference, reference.createData(), q), atol=1e-14)
    assert robot.frame_id("tool") == reference.getFrameId("tool")
    assert len(robot.visual_model.geometryObjects) == 3
    assert np.all(robot.joint_stiffness == 0)


def test_urdf_damping_is_read(tmp_path):
    path = tmp_path / "p.urdf"
    path.write_text(pendulum_urdf(n=2, damping=0.25))
    robot = px.load_urdf(path)
    assert np.allclose(robot.joint_damping, [0.25, 0.25])


def test_ur5_loads_with_six_transmissions(ur5_urdf):
    robot = px.load_urdf(ur5_urdf)
    assert robot.nv == 6
    assert len(robot.transmissions) == 6
    assert {t.reduction for t in robot.transmissions.values()} == {1.0}
    assert robot.transmissions["elbow_joint"].name == "elbow_trans"
    assert len(robot.visual_model.geometryObjects) > 0  # meshes found through package://
    assert robot.frame_id("tool0") > 0


def test_unknown_names_list_existing_ones():
    robot = px.load_urdf(URDF / "planar3r.urdf")
    with pytest.raises(NameNotFound) as err:
        robot.frame_id("gripper")
    assert "tool" in str(err.value) and "gripper" in str(err.value)
    with pytest.raises(NameNotFound) as err:
        robot.joint_id("joint9")
    assert "joint1" in str(err.value)


def test_missing_and_malformed_urdf(tmp_path):
    with pytest.raises(FileFormatError, match="not found"):
        px.load_urdf(tmp_path / "nope.urdf")
    bad = tmp_path / "bad.urdf"
    bad.write_text('<robot name="x"><link name="a"></robot>')
    with pytest.raises(FileFormatError) as err:
        px.load_urdf(bad)
    assert "bad.urdf" in str(err.value) and "line 1" in str(err.value)


def test_from_model_wraps_a_pinocchio_model():
    model = pin.buildSampleModelHumanoid()
    robot = px.Robot.from_model(model)
    assert robot.nq == model.nq and robot.nv == model.nv
    assert robot.joint_damping.shape == (model.nv,)


def test_negative_mass_and_bad_inertia_are_rejected(tmp_path):
    path = tmp_path / "neg.urdf"
    path.write_text(pendulum_urdf(n=2, mass=-1.0))
    with pytest.raises(px.exceptions.InvalidParameter, match="l0.*negative mass"):
        px.load_urdf(path)
    path.write_text(pendulum_urdf(n=1).replace('ixx="', 'ixx="-5'))
    with pytest.raises(px.exceptions.InvalidParameter, match="positive semi-definite"):
        px.load_urdf(path)


def test_a_non_finite_number_in_the_urdf_is_named(tmp_path):
    """urdfdom only says "not a valid URDF model": the error names the joint, the element
    and the attribute."""
    from pinext.robots import robot_path

    text = robot_path("six_dof_arm").read_text()
    broken = text.replace('type="revolute">', 'type="revolute"><dynamics friction="nan"/>', 1)
    path = tmp_path / "broken.urdf"
    path.write_text(broken)
    with pytest.raises(px.exceptions.FileFormatError, match='<dynamics friction="nan">'):
        px.load_urdf(path)
