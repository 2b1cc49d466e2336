"""Mimic joints: a URDF <mimic> as a linear coupling row (McClamroch (1986) (23))."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.exceptions import ConstraintError, FileFormatError, InvalidParameter, NameNotFound
from pinext.urdf_extensions import MimicSpec

FINGERS = ("panda_finger_joint1", "panda_finger_joint2")


def test_panda_fingers_stay_mirrored(panda):
    """The Panda's second finger mimics the first (q₂ = q₁): with a force on the first finger
    only and the arm swinging, the fingers stay mirrored, and the accelerations are those of
    the model reduced to one finger coordinate."""
    assert panda.extensions.mimic == {FINGERS[1]: MimicSpec(FINGERS[1], FINGERS[0], 1.0, 0.0)}
    # the push would bring the fingers to their limits, where the reduced model stops holding
    # (limits and the coupling together: test_limits.py::test_panda_stays_within_its_limits)
    system = px.System(panda, joint_limits=False)
    coupling = next(c for c in system.components if isinstance(c, px.Mimic))
    assert coupling.name == f"mimic:{FINGERS[1]}"
    model = system.model
    i1, i2 = (model.joints[model.getJointId(j)].idx_v for j in FINGERS)
    rng = np.random.default_rng(9)
    q = pin.neutral(model)
    q[:7] = rng.uniform(-0.5, 0.5, 7)
    q[i1] = 0.01
    v = rng.normal(scale=0.3, size=model.nv)
    x0 = px.close_loops(system, q, v)  # q₂, v₂ brought onto the coupling
    q0, v0 = system.split(x0)
    assert q0[i2] == pytest.approx(q0[i1], abs=1e-14) and v0[i2] == pytest.approx(v0[i1], abs=1e-14)
    push = np.zeros(model.nv)
    push[i1] = 2.0  # [N] on the first finger only
    traj = px.simulate(system, 0.5, x0=x0, control=push, output_dt=0.01)
    assert np.ptp(traj.q[:, i1]) > 1e-3  # the fingers move
    assert np.abs(traj.q[:, i2] - traj.q[:, i1]).max() < 1e-12
    assert traj.constraint_residual(coupling.name).max() < 1e-12
    assert traj.energy_balance().max_relative() < 1e-9
    force = traj.outputs[f"{coupling.name}.force"][:, 0]
    assert np.abs(force).max() > 0.1
    # the reduced model q = S r (one coordinate for both fingers): (Sᵀ M S) r̈ = Sᵀ (τ - h)
    basis = np.eye(model.nv)[:, : model.nv - 1]
    basis[i2, i1] = 1.0
    data = model.createData()
    for k in range(0, len(traj), 17):
        qk, vk = traj.q[k], traj.v[k]
        step = system.step(traj.t[k], traj.x[k], push)
        mass = pin.crba(model, data, qk)
        mass = np.triu(mass) + np.triu(mass, 1).T
        rhs = basis.T @ (step.tau - pin.nonLinearEffects(model, data, qk, vk))
        a_ref = basis @ np.linalg.solve(basis.T @ mass @ basis, rhs)
        assert np.abs(step.a - a_ref).max() < 1e-9 * (1 + np.abs(a_ref).max())


def test_mimic_errors(tmp_path):
    robot = px.load_robot("planar3r")
    names = list(robot.model.names)[1:]
    with pytest.raises(NameNotFound, match="Available joint names"):
        px.System(robot, components=[px.Mimic("nope", names[0])])
    with pytest.raises(InvalidParameter, match="cannot mimic itself"):
        px.System(robot, components=[px.Mimic(names[0], names[0])])
    system = px.System(robot, components=[px.Mimic(names[1], names[0], -2.0, 0.1)])
    with pytest.raises(ConstraintError, match=f"mimic coupling 'mimic:{names[1]}'.*open"):
        system.step(0.0, system.initial_state())
    x0 = px.close_loops(system, np.zeros(robot.nq))
    q0, _ = system.split(x0)
    assert q0[1] - (-2.0 * q0[0] + 0.1) == pytest.approx(0.0, abs=1e-14)
    bad = tmp_path / "bad.urdf"
    bad.write_text(
        '<robot name="r"><link name="a"/><link name="b"/><joint name="j" type="revolute">'
        '<parent link="a"/><child link="b"/><mimic joint="k" multiplier="two"/></joint></robot>'
    )
    with pytest.raises(FileFormatError, match="<joint name='j'>.*multiplier='two'"):
        px.load_urdf(bad)


def test_pinext_info_counts_the_panda_fingers_as_one_dof(panda):
    """Two fingers, one coupling: 8 independent DOF of 9 (the rank of the coupling row)."""
    system = px.System(panda)
    assert system.independent_dofs() == 8
    assert ("independent DOF", "8") in system.describe()
    assert px.System(panda, mimic=False).independent_dofs() == 9


def test_a_mimic_on_no_dof_is_left_out_with_one_warning(tmp_path):
    """A <mimic> on a fixed joint, and one whose leader the URDF does not define, couple no
    DOF: System leaves them out with one SkippedMimicWarning naming each element, its joint
    and the URDF (with the closest joint name), and keeps the valid coupling."""
    joints = "".join(
        f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="0 0 -0.3"/><axis xyz="0 1 0"/>{mimic}'
        '<limit lower="-3" upper="3" effort="10" velocity="10"/></joint>'
        for name, kind, parent, child, mimic in [
            ("j0", "revolute", "base", "l0", ""),
            ("j1", "revolute", "l0", "l1", '<mimic joint="j00"/>'),
            ("j2", "revolute", "l1", "l2", '<mimic joint="j0" multiplier="-2"/>'),
            ("f", "fixed", "l2", "l3", '<mimic joint="j0"/>'),
        ]
    )
    links = "".join(
        f'<link name="l{i}"><inertial><mass value="1"/>'
        '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>'
        for i in range(4)
    )
    path = tmp_path / "mimics.urdf"
    path.write_text(f'<robot name="r"><link name="base"/>{links}{joints}</robot>')
    robot = px.load_urdf(path)
    with pytest.warns(px.constraints.SkippedMimicWarning) as caught:
        system = px.System(robot)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert f"mimics.urdf ({path})" in message and "2 <mimic> element(s) left out" in message
    assert "<mimic joint='j00'> of joint 'j1': the model has no joint 'j00'; did you mean 'j0'" in (
        message
    )
    assert "<mimic joint='j0'> of joint 'f': 'f' is a fixed joint" in message
    assert "1 other coupling(s) hold" in message
    assert [repr(c) for c in system.components if isinstance(c, px.Mimic)] == [
        "Mimic('j2', 'j0', -2.0, 0.0)"
    ]


@pytest.mark.parametrize(
    ("name", "skipped", "why"),
    [
        ("talos_arm", 6, "'gripper_left_inner_double_joint' is a fixed joint"),
        ("talos", 12, "'gripper_right_fingertip_3_joint' is a fixed joint"),
        ("alex_psyonic_hands", 8, "no joint 'index_q1'; did you mean 'Left_index_q1'"),
    ],
)
def test_example_robot_data_mimics_on_no_dof_leave_the_robot_usable(robots_dir, name, skipped, why):
    """example-robot-data's Talos puts its gripper <mimic> elements on fixed joints, and
    alex_psyonic_hands's name leaders without their Left_/Right_ prefix: System used to stop
    with NameNotFound. Now it builds with one warning that names the URDF and every element
    left out, and is the System of ``mimic=False``; the Talos arm then simulates 0.3 s from a
    seeded state with its energy audit closed to 1e-9."""
    robot = px.load_robot(name)
    with pytest.warns(px.constraints.SkippedMimicWarning) as caught:
        system = px.System(robot)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert robot.path in message and f"{skipped} <mimic> element(s) left out" in message
    assert message.count("<mimic joint=") == skipped and why in message
    assert not [c for c in system.components if isinstance(c, px.Mimic)]
    plain = px.System(robot, mimic=False)
    assert [type(c) for c in system.components] == [type(c) for c in plain.components]
    if name == "talos_arm":
        rng = np.random.default_rng(6)
        model = system.model
        q0 = pin.randomConfiguration(model, model.lowerPositionLimit, model.upperPositionLimit)
        q0 = 0.5 * q0 + 0.5 * pin.neutral(model)  # away from the stops
        v0 = rng.normal(scale=0.2, size=model.nv)
        traj = px.simulate(system, 0.3, q0=q0, v0=v0, output_dt=0.05)
        assert traj.t[-1] == pytest.approx(0.3)
        assert traj.energy_balance().max_relative() < 1e-9
