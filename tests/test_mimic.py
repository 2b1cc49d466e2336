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
