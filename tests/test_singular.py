"""The singular form (23), its reduction (24)–(28) and constrained inverse dynamics (§5) of
McClamroch (1986), against the System's acceleration step."""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.exceptions import InvalidParameter, UnactuatedLoad

from .conftest import ROOT
from .test_assembly import two_arms_holding_a_box
from .test_loop import gripped_load, random_closed_state


def _close(a, b, tol=1e-10):
    return np.abs(a - b).max() <= tol * (1 + np.abs(b).max())


@pytest.mark.parametrize("case", ["gripped point", "two arms", "mimic and loop"])
def test_reduction_equals_the_acceleration_step(case):
    rng = np.random.default_rng(24)
    if case == "gripped point":
        system, _ = gripped_load("point", stabilization=20.0)
        x = random_closed_state(system, rng)
    elif case == "two arms":
        system, _, x = two_arms_holding_a_box()
        x = px.close_loops(system, system.split(x)[0], rng.normal(size=system.model.nv))
    else:  # a redundant pair: the same point loop twice, and a coupling of two joints
        robot = px.free_body(px.load_robot("six_dof_arm"), "load", 1.0)
        system = px.System(
            robot,
            loops=[px.Loop("tool", "load"), px.Loop("tool", "load", name="again")],
            components=[px.Mimic("wrist_3", "wrist_1", 0.5)],
        )
        x = random_closed_state(system, rng)
    q, v = system.split(x)
    u = rng.normal(size=system.n_inputs) * 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", px.contact.RedundantConstraintWarning)
        step = system.step(0.0, x, u)
        form = px.singular_form(system, q, v, u)
        reduced = px.reduce(system, q, v, u)
    assert _close(reduced.acceleration, step.a)
    for name, force in step.forces.items():
        assert _close(reduced.forces[name], force, 1e-9)
    assert np.abs(form.residual(reduced.acceleration, reduced.multipliers)).max() < 1e-9 * (
        1 + np.abs(form.force).max()
    )
    assert np.allclose(form.force, u + system.joint_effort(q, v))
    assert form.jacobian.shape == (sum(s.stop - s.start for s in form.rows.values()), len(v))
    assert np.allclose(reduced.delassus, reduced.delassus.T)


def test_inverse_dynamics_of_the_gripped_load_returns_the_torques():
    """u → (ẍ, λ) by the step, then (ẍ) → (u, λ) with the load unactuated (its DOFs are the
    free body's), and with λ given."""
    system, loop = gripped_load("point")
    rng = np.random.default_rng(31)
    for _ in range(3):
        x = random_closed_state(system, rng)
        q, v = system.split(x)
        u = np.concatenate([rng.normal(size=6) * 5, np.zeros(3)])
        step = system.step(0.0, x, u)
        result = px.constrained_inverse_dynamics(system, q, v, step.a)
        assert _close(result.tau, u, 1e-9)
        assert _close(result.forces[loop.name], step.forces[loop.name], 1e-9)
        # all DOFs actuated, λ given: the torques come back whatever they were
        w = rng.normal(size=9)
        step = system.step(0.0, x, w)
        given = px.constrained_inverse_dynamics(system, q, v, step.a, step.forces[loop.name])
        assert _close(given.tau, w, 1e-9)


def test_inverse_dynamics_of_two_arms_chooses_the_smallest_torques():
    """Two arms holding a box: the internal force (36) is free; the chosen λ leaves the box
    unactuated, reproduces the motion, and gives the least torques among all such λ."""
    system, loops, x = two_arms_holding_a_box()
    rng = np.random.default_rng(36)
    x = px.close_loops(system, system.split(x)[0], rng.normal(size=system.model.nv))
    q, v = system.split(x)
    u = np.concatenate([rng.normal(size=12) * 5, np.zeros(6)])
    a = system.step(0.0, x, u).a
    result = px.constrained_inverse_dynamics(system, q, v, a)
    assert np.abs(result.tau[12:]).max() < 1e-9 * np.abs(result.tau).max()
    assert _close(system.step(0.0, x, result.tau).a, a, 1e-9)
    assert np.linalg.norm(result.tau) <= np.linalg.norm(u) + 1e-9
    with pytest.raises(InvalidParameter, match=r"forces must have shape \(12,\)"):
        px.constrained_inverse_dynamics(system, q, v, a, np.zeros(3))


def test_inverse_dynamics_needs_torque_inputs():
    arm = px.load_robot("six_dof_arm")
    drive = px.Drive(px.DCMotor(1.2, 0.05, 0.05, 1e-5), px.Gear(50.0))
    system = px.System(arm, drives={"elbow": drive})
    with pytest.raises(InvalidParameter, match="joint torques"):
        px.constrained_inverse_dynamics(system, pin.neutral(system.model), np.zeros(6), np.zeros(6))


def _example(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_planned_torques_played_back_reproduce_the_motion_and_the_squeeze():
    """McClamroch (1986) §5 in closed loop through simulate: two arms carry a 2 kg box along
    a path (examples/two_arms_carry.py), their torques planned with a 20 N squeeze as the
    internal force; played back open loop, the joints follow the plan to 1e-6 rad, the grip
    wrenches equal the planned λ to 1e-6 N, and the internal part of the simulated λ is the
    prescribed squeeze to 1e-6 N."""
    carry = _example("two_arms_carry")
    system, planner, traj = carry.run(2.0, t_final=0.6, output_dt=0.02)
    plans = [planner(t) for t in traj.t]
    assert np.ptp(traj.q[:, -7:-4], axis=0).max() > 0.04  # the box moves (5 cm)
    assert np.abs(traj.q - np.array([p.q for p in plans])).max() < 1e-6
    simulated = np.hstack(
        [
            np.hstack([traj.outputs[f"{side} grip.force"], traj.outputs[f"{side} grip.torque"]])
            for side in ("left", "right")
        ]
    )
    assert np.abs(simulated - np.array([p.forces for p in plans])).max() < 1e-6
    for k in range(0, len(traj), 5):
        q, v = traj.q[k], traj.v[k]
        basis = px.constrained_inverse_dynamics(system, q, v, np.zeros(system.model.nv))
        internal = basis.internal_basis @ (basis.internal_basis.T @ simulated[k])
        assert np.abs(internal - planner.internal).max() < 1e-6
    squeeze = traj.outputs["right grip.force"][:, 0] - traj.outputs["left grip.force"][:, 0]
    assert np.abs(squeeze / 2 - carry.SQUEEZE).max() < 1e-6


def test_internal_force_is_the_free_parameter_of_a_redundant_pair():
    """Two arms on one box: every internal force N z gives the same motion, the box stays
    unactuated, and z = 0's companion (internal=None) has the smallest torques; forces that
    would push the box are refused."""
    system, _, x = two_arms_holding_a_box()
    rng = np.random.default_rng(37)
    x = px.close_loops(system, system.split(x)[0], rng.normal(size=system.model.nv))
    q, v = system.split(x)
    a = system.step(0.0, x, np.concatenate([rng.normal(size=12) * 5, np.zeros(6)])).a
    least = px.constrained_inverse_dynamics(system, q, v, a)
    basis = least.internal_basis
    assert basis.shape == (12, 6)  # two welds on one rigid body: six internal wrenches
    assert np.allclose(basis.T @ basis, np.eye(6), atol=1e-12)
    b_box = px.singular_form(system, q, v).jacobian[:, 12:]
    assert np.abs(b_box.T @ basis).max() < 1e-12  # the box does not feel them
    for _ in range(3):
        internal = basis @ rng.normal(scale=20.0, size=6)
        chosen = px.constrained_inverse_dynamics(system, q, v, a, internal=internal)
        assert np.abs(chosen.internal - internal).max() < 1e-9 * (1 + np.abs(internal).max())
        assert np.abs(chosen.tau[12:]).max() < 1e-9 * np.abs(chosen.tau).max()
        assert _close(system.step(0.0, x, chosen.tau).a, a, 1e-9)
        assert np.linalg.norm(least.tau) < np.linalg.norm(chosen.tau)
    with pytest.raises(InvalidParameter, match="balanced on the unactuated DOFs"):
        px.constrained_inverse_dynamics(system, q, v, a, internal=np.r_[1.0, np.zeros(11)])
    with pytest.raises(InvalidParameter, match="either forces"):
        px.constrained_inverse_dynamics(system, q, v, a, least.multipliers, internal=internal)
    with pytest.raises(InvalidParameter, match=r"internal must have shape \(12,\)"):
        px.constrained_inverse_dynamics(system, q, v, a, internal=np.zeros(3))


@pytest.mark.slow
def test_two_arms_carry_example_writes_the_page_with_both_grip_forces(tmp_path, monkeypatch):
    """examples/two_arms_carry.py end to end (2 s, HTML): the page draws both grips' force
    arrows and loop markers."""
    carry = _example("two_arms_carry")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.argv", ["two_arms_carry.py"])
    carry.main()
    from .test_viewer import _scene_commands

    html = (tmp_path / "out" / "two_arms_carry.html").read_text()
    names = {c["path"] for c in _scene_commands(html) if c["type"] == "set_object"}
    for name in ("left grip", "right grip"):
        assert any(f"/pinext/forces/{name}/shaft" in n for n in names)
        assert any(f"/pinext/loops/{name}/a" in n for n in names)


def test_four_bar_inverse_dynamics_at_every_state_equals_the_reduced_model():
    """The four-bar of examples/four_bar.urdf (a hinge loop: 5 rows of rank 2), coupler and
    rocker unactuated, at 200 seeded states all round the crank circle: the crank torque of
    constrained_inverse_dynamics equals the virtual-work torque ``Sᵀ (M q̈ + h)`` of the
    one-DOF model (q = q(θ) in closed form, q̇ = S θ̇, q̈ = S θ̈ + c; Pinocchio's crba and
    nonLinearEffects), the unactuated joints get none, and the System's forward step with
    that torque gives back q̈. (The bug: a block ``B_aᵀ N`` zero up to rounding, 1e-17,
    was inverted by ``lstsq``'s relative cutoff, which put the load on the passive joints.)"""
    from .test_loop import LWA, ReducedFourBar

    system = px.System(px.load_urdf(ROOT / "examples" / "four_bar.urdf"))
    model, data = system.model, system.model.createData()
    reduced = ReducedFourBar(model)
    rng = np.random.default_rng(4)
    angles = np.r_[0.0, np.pi / 2, np.pi, rng.uniform(-np.pi, np.pi, 197)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", px.contact.RedundantConstraintWarning)
        for theta in angles:
            rate, acceleration = rng.normal(scale=2 * np.pi), rng.normal(scale=40.0)
            q, s = reduced.basis(theta)  # q = closed_angles(θ)
            v = s * rate
            pin.computeJointJacobians(model, data, q)
            jac = pin.getFrameJacobian(model, data, model.getFrameId("tip"), LWA)[[0, 2]]
            pin.forwardKinematics(model, data, q, v, np.zeros(3))
            bias = pin.getFrameClassicalAcceleration(model, data, model.getFrameId("tip"), LWA)
            a = s * acceleration + np.r_[0.0, -np.linalg.solve(jac[:, 1:], bias.linear[[0, 2]])]
            mass = pin.crba(model, data, q)
            mass = np.triu(mass) + np.triu(mass, 1).T
            crank = s @ (mass @ a + pin.nonLinearEffects(model, data, q, v))
            result = px.constrained_inverse_dynamics(
                system, q, v, a, unactuated=["coupler_joint", "rocker_joint"]
            )
            assert abs(result.tau[0] - crank) < 1e-9 * (1 + abs(crank))
            assert np.all(result.tau[1:] == 0.0)
            back = system.step(0.0, system.initial_state(q, v), result.tau).a
            assert np.abs(back - a).max() < 1e-8 * (1 + np.abs(a).max())


def test_inverse_dynamics_refuses_a_load_the_constraints_cannot_carry():
    """A rigid load held at one point (a point loop: no torque passes) is unactuated: at rest
    with no angular acceleration its rotation needs no torque and the inverse dynamics
    holds; asked to turn it, no constraint force can, and UnactuatedLoad names the load's
    joint and the torque ``I ω̇`` that would remain (Euler's equation at rest)."""
    from .test_loop import gripped_load, random_closed_state

    inertia = np.diag([0.02, 0.03, 0.04])
    system, _ = gripped_load("point", inertia=inertia)
    rng = np.random.default_rng(41)
    x = random_closed_state(system, rng)
    q, v = system.split(x)
    u = np.r_[rng.normal(size=6) * 5, np.zeros(6)]
    a = system.step(0.0, x, u).a
    assert np.abs(v[9:]).max() == 0.0 and np.abs(a[9:]).max() < 1e-12  # the load does not turn
    result = px.constrained_inverse_dynamics(system, q, v, a)
    assert _close(result.tau, u, 1e-9)
    turning = a.copy()
    turning[9:] = [1.0, -2.0, 0.5]  # [rad/s^2], about the load's own axes
    with pytest.raises(UnactuatedLoad, match="'load_joint'") as caught:
        px.constrained_inverse_dynamics(system, q, v, turning)
    assert caught.value.joints == ["load_joint"]
    left = caught.value.torque["load_joint"]
    assert np.abs(left[3:] - inertia @ turning[9:]).max() < 1e-12
