"""Free bodies and several robots in one model (McClamroch (1986) (1)–(5), (12)–(19))."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.exceptions import InvalidParameter, NameNotFound

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
POSE = np.array([0.0, -0.6, 1.2, -0.6, -1.57, 0.0])  # a guess the projection starts from
WIDTH = 0.3  # [m] between the two grips of the box
BOX_MASS = 3.0  # [kg]
BOX_INERTIA = np.diag([0.05, 0.04, 0.03])  # [kg.m^2]


def test_free_body_adds_a_point_mass_or_a_rigid_body():
    arm = px.load_robot("six_dof_arm")
    where = pin.SE3(np.eye(3), np.array([0.3, 0.1, 0.4]))
    point = px.free_body(arm, "load", 2.0, placement=where)
    assert (point.nq, point.nv) == (arm.nq + 3, arm.nv + 3)
    assert point.joint_stiffness.shape == (point.nv,) and arm.nq == 6  # the arm unchanged
    data = point.model.createData()
    pin.framesForwardKinematics(point.model, data, pin.neutral(point.model))
    assert np.allclose(data.oMf[point.frame_id("load")].translation, where.translation)
    mass = pin.crba(point.model, data, pin.neutral(point.model))
    assert np.allclose(mass[6:, 6:], 2.0 * np.eye(3))  # (5): the load's block m I
    assert np.allclose(mass[:6, 6:], 0.0)
    body = px.free_body(arm, "load", 2.0, BOX_INERTIA)
    assert (body.nq, body.nv) == (arm.nq + 7, arm.nv + 6)
    assert body.model.inertias[body.joint_id("load_joint")].mass == pytest.approx(2.0)
    # drawn as the uniform box of the same principal moments (a point mass as a sphere)
    shape = body.visual_model.geometryObjects[-1]
    box = pin.Inertia.FromBox(2.0, *(2 * shape.geometry.halfSide))
    rotation = shape.placement.rotation
    assert np.allclose(rotation @ box.inertia @ rotation.T, BOX_INERTIA)
    assert point.visual_model.ngeoms == arm.visual_model.ngeoms + 1
    with pytest.raises(
        InvalidParameter, match="mass of free body .load. must be a finite number > 0"
    ):
        px.free_body(arm, "load", 0.0)
    with pytest.raises(InvalidParameter, match="is in use; frames: .*tool"):
        px.free_body(arm, "tool", 1.0)
    with pytest.raises(InvalidParameter, match="symmetric"):
        px.free_body(arm, "load", 1.0, np.ones((2, 2)))


@pytest.mark.parametrize(
    ("kind", "inertia"), [("point", None), ("hinge", BOX_INERTIA), ("weld", BOX_INERTIA)]
)
def test_gripped_load_keeps_its_grip_and_its_energy(kind, inertia):
    """A load gripped by the six_dof_arm's tool (McClamroch (1)–(5)) swings for 2 s: the
    closure holds and the energy audit closes."""
    robot = px.free_body(px.load_robot("six_dof_arm"), "load", 2.0, inertia)
    loop = px.Loop("tool", "load", kind)
    system = px.System(robot, loops=[loop])
    rng = np.random.default_rng(4)
    q = pin.neutral(robot.model)
    q[:6] = POSE
    v = np.zeros(robot.nv)
    v[:6] = rng.normal(scale=0.5, size=6)
    traj = px.simulate(system, 2.0, x0=px.close_loops(system, q, v), output_dt=0.01)
    assert np.ptp(traj.q[:, :6], axis=0).max() > 0.5  # it moves
    assert traj.constraint_residual(loop.name).max() < 1e-9
    assert traj.energy_balance().max_relative() < 1e-9
    # the recorded force acts on the tool; on the load, minus it: (31) m p̈ = -f + m g
    force = traj.outputs[f"{loop.name}.force"]
    if kind == "point":
        for i in range(0, len(traj), 50):
            a_load = system.step(traj.t[i], traj.x[i]).a[6:]
            expected = 2.0 * (robot.model.gravity.linear - a_load)
            assert np.abs(force[i] - expected).max() < 1e-9 * (1 + np.abs(expected).max())


def two_arms_holding_a_box():
    """Two six_dof_arms facing each other 1 m apart, welded to one box (12)–(19)."""
    arm = px.load_robot("six_dof_arm")
    facing = pin.SE3(pin.rpy.rpyToMatrix(0.0, 0.0, np.pi), np.array([1.0, 0.0, 0.0]))
    pair = px.assemble({"left": arm, "right": arm}, placements={"right": facing})
    box = pin.SE3(np.eye(3), np.array([0.5, 0.0, 0.5]))
    robot = px.free_body(pair, "box", BOX_MASS, BOX_INERTIA, box)

    def grip(side: float) -> pin.SE3:  # the tool's z axis into the box's side
        return pin.SE3(
            pin.rpy.rpyToMatrix(0, side * np.pi / 2, 0), np.array([-side * WIDTH / 2, 0, 0])
        )

    loops = [
        px.Loop("left/tool", "box", "weld", grip(1.0), name="left grip"),
        px.Loop("right/tool", "box", "weld", grip(-1.0), name="right grip"),
    ]
    system = px.System(robot, loops=loops)
    q = pin.neutral(robot.model)
    q[:6] = q[6:12] = POSE
    return system, loops, px.close_loops(system, q)


def test_assemble_prefixes_names_and_keeps_each_robots_extras():
    flexible = px.load_robot("flexible_arm")
    arm = px.load_robot("six_dof_arm")
    drive = px.Drive(px.DCMotor(1.2, 0.05, 0.05, 1e-5), px.Gear(50.0))
    arm.drives = {"elbow": drive}
    pair = px.assemble({"a": flexible, "b": arm}, placements={"b": pin.SE3(np.eye(3), np.ones(3))})
    assert pair.nv == flexible.nv + arm.nv
    assert "b/elbow" in pair.model.names and "a/hub" in pair.model.names
    assert pair.drives == {"b/elbow": drive}
    assert [f.link for f in pair.flexible] == [f"a/{f.link}" for f in flexible.flexible]
    for prefix, robot in (("a", flexible), ("b", arm)):
        for jid in range(1, robot.model.njoints):
            old = robot.model.joints[jid]
            new = pair.model.joints[pair.joint_id(f"{prefix}/{robot.model.names[jid]}")]
            assert pair.joint_stiffness[new.idx_v] == robot.joint_stiffness[old.idx_v]
            assert pair.joint_damping[new.idx_v] == robot.joint_damping[old.idx_v]
    # the mass matrix is block diagonal, (19)
    q = pin.randomConfiguration(pair.model, -np.ones(pair.nq), np.ones(pair.nq))
    mass = pin.crba(pair.model, pair.model.createData(), q)
    assert np.allclose(mass[: flexible.nv, flexible.nv :], 0.0)
    data = pair.model.createData()
    pin.framesForwardKinematics(pair.model, data, pin.neutral(pair.model))
    assert np.allclose(data.oMf[pair.frame_id("b/base_link")].translation, 1.0)
    # the DC motor of the elbow drives the assembled joint
    system = px.System(pair)
    assert system.n_inputs == 1
    with pytest.raises(NameNotFound, match="Available robot names: a, b"):
        px.assemble({"a": flexible, "b": arm}, placements={"c": pin.SE3.Identity()})
    with pytest.raises(InvalidParameter, match="without '/'"):
        px.assemble({"a/b": arm})


def _pin_two_welds(system, loops, q, v, tau, omega=0.0):
    """Pinocchio's constraintDynamics with the two grips as 6D RigidConstraintModels, with
    Baumgarte's corrector ``Kp = ω², Kd = 2ω`` (none for ω = 0); also the stacked constraint
    Jacobian (LOCAL, 12 × nv)."""
    model = system.model
    data = model.createData()
    models = pin.StdVec_RigidConstraintModel()
    box = model.getJointId("box_joint")
    for loop in loops:
        tool = model.frames[model.getFrameId(loop.frame_a)]
        constraint = pin.RigidConstraintModel(
            pin.ContactType.CONTACT_6D,
            model,
            tool.parentJoint,
            tool.placement,
            box,
            loop.placement,
            pin.LOCAL,
        )
        gains = constraint.m_baumgarte_parameters
        gains.Kp, gains.Kd = omega**2, 2.0 * omega
        constraint.setBaumgarteCorrectorParameters(gains)
        models.append(constraint)
    datas = pin.StdVec_RigidConstraintData()
    for cm in models:
        datas.append(cm.createData())
    pin.initConstraintDynamics(model, data, models, datas)
    a = pin.constraintDynamics(
        model, data, q, v, tau, models, datas, pin.ProximalSettings(1e-14, 0.0, 1)
    )
    jacobian = pin.getConstraintsJacobian(model, data, models, datas)
    return np.array(a), [d.contact_force.vector.copy() for d in datas], jacobian


def _world_wrenches(model, loops, q, wrenches):
    """The grips' wrenches from Pinocchio's LOCAL frame of the tool to world axes."""
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    world = []
    for loop, wrench in zip(loops, wrenches, strict=True):
        rotation = data.oMf[model.getFrameId(loop.frame_a)].rotation
        world.append(np.concatenate([rotation @ wrench[:3], rotation @ wrench[3:]]))
    return world


def test_two_arms_holding_a_box_equal_constraint_dynamics():
    """The step's accelerations and grip wrenches (36)–(38) against Pinocchio's
    constraintDynamics with two RigidConstraintModels, at seeded random consistent states."""
    system, loops, x0 = two_arms_holding_a_box()
    model = system.model
    rng = np.random.default_rng(36)
    q0, _ = system.split(x0)
    for _ in range(3):
        q = q0.copy()
        q[:12] += rng.normal(scale=0.05, size=12)
        x = px.close_loops(system, q, rng.normal(size=model.nv))
        q, v = system.split(x)
        tau = np.concatenate([rng.normal(size=12) * 5, np.zeros(6)])
        for loop in loops:
            loop.stabilization = 0.0  # the bare index-1 rows, as Pinocchio's
        step = system.step(0.0, x, tau)
        a_ref, wrenches, _ = _pin_two_welds(system, loops, q, v, tau)
        assert np.abs(step.a - a_ref).max() < 1e-9 * (1 + np.abs(a_ref).max())
        for loop, world in zip(loops, _world_wrenches(model, loops, q, wrenches), strict=True):
            assert np.abs(step.forces[loop.name] - world).max() < 1e-9 * (1 + np.abs(world).max())


def test_two_arms_holding_a_box_for_5_s():
    """The grips hold for 5 s and the energy audit closes. The recorded grip wrenches (the
    reaction ``force`` and ``torque`` on each tool, world axes) at every sample where no joint
    rests on a stop equal Pinocchio's constraintDynamics with the two welds as
    RigidConstraintModels and Baumgarte's corrector ``Kp = ω², Kd = 2ω`` (the loops' own
    stabilisation, equal to first order in the closure residual, < 1e-9: the second-order
    difference is below rounding). Both solve the Delassus system ``G λ = r`` of one
    problem, so they differ by its forward error, at most ``nv ε κ(G) ‖λ‖∞`` (Higham; 1.1 ε
    κ(G) ‖λ‖∞ measured)."""
    system, loops, x0 = two_arms_holding_a_box()
    model = system.model
    rng = np.random.default_rng(12)
    q0, _ = system.split(x0)
    x0 = px.close_loops(system, q0, rng.normal(scale=0.3, size=system.model.nv))
    traj = px.simulate(system, 5.0, x0=x0, output_dt=0.01)
    assert np.ptp(traj.state("q")[:, -7:-4], axis=0).max() > 0.1  # the box moves
    for loop in loops:
        assert traj.constraint_residual(loop.name).max() < 1e-9
        assert traj.outputs[f"{loop.name}.torque"].shape == (len(traj), 3)
    assert traj.energy_balance().max_relative() < 1e-9
    free = np.flatnonzero(~traj.outputs["joint_limits.held"].any(axis=1))
    assert len(free) > 20  # (the arms swing onto their stops and off them)
    omega = loops[0].stabilization
    assert omega > 0.0 and all(loop.stabilization == omega for loop in loops)
    data = model.createData()
    for i in free:
        q, v = system.split(traj.x[i])
        tau = -model.damping * v  # no input, no joint spring
        _, wrenches, jacobian = _pin_two_welds(system, loops, q, v, tau, omega)
        mass = pin.crba(model, data, q)
        mass = np.triu(mass) + np.triu(mass, 1).T
        delassus = jacobian @ np.linalg.solve(mass, jacobian.T)
        expected = _world_wrenches(model, loops, q, wrenches)
        scale = max(np.abs(w).max() for w in expected)
        bound = model.nv * np.finfo(float).eps * np.linalg.cond(delassus) * scale
        for loop, world in zip(loops, expected, strict=True):
            torque = traj.outputs[f"{loop.name}.torque"][i]
            force = traj.outputs[f"{loop.name}.force"][i]
            assert np.abs(torque - world[3:]).max() <= bound, (loop.name, traj.t[i], torque)
            assert np.abs(force - world[:3]).max() <= bound, (loop.name, traj.t[i], force)


@pytest.mark.slow
def test_two_arms_holding_a_box_stay_closed_for_20_s():
    """Drift over a long run: both welds' position residuals below 1e-9 for 20 s (Baumgarte
    stabilisation of the index-1 rows, no projection during the run; 2.6e-11 measured)."""
    system, loops, x0 = two_arms_holding_a_box()
    rng = np.random.default_rng(12)
    q0, _ = system.split(x0)
    x0 = px.close_loops(system, q0, rng.normal(scale=0.3, size=system.model.nv))
    traj = px.simulate(system, 20.0, x0=x0, output_dt=0.01)
    assert np.ptp(traj.state("q")[:, -7:-4], axis=0).max() > 0.1
    for loop in loops:
        assert traj.constraint_residual(loop.name).max() < 1e-9
    assert traj.energy_balance().max_relative() < 1e-9
