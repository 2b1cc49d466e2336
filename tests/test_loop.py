"""Loop closures (McClamroch (1986)): a gripped load against (29)–(31), pin.constraintDynamics
and tree models; a four-bar linkage against its one-DOF reduced model."""

from __future__ import annotations

import importlib.util
import inspect
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from scipy.integrate import solve_ivp

import pinext as px
from pinext.contact import RedundantConstraintWarning, VelocityLimitWarning
from pinext.exceptions import (
    ConstraintError,
    InconsistentInitialConditions,
    InvalidParameter,
    NameNotFound,
)
from pinext.simulation.controls import as_control

from ._contact_models import pinocchio_loop_rows

ROOT = Path(__file__).resolve().parents[1]
LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
LOAD = 2.0  # [kg]


def gripped_load(kind: str = "point", inertia=None, stabilization=None):
    """The six_dof_arm's tool holding a free load (a point mass, or a rigid body)."""
    robot = px.free_body(px.load_robot("six_dof_arm"), "load", LOAD, inertia)
    loop = px.Loop("tool", "load", kind, stabilization=stabilization)
    return px.System(robot, loops=[loop]), loop


def random_closed_state(system, rng):
    """A seeded random arm state with the load projected onto the loop (McClamroch (32))."""
    q = pin.neutral(system.model)
    q[:6] = rng.uniform(-1.2, 1.2, 6)
    v = np.zeros(system.model.nv)
    v[:6] = rng.normal(size=6)
    return px.close_loops(system, q, v)


def pin_loop_dynamics(model, q, v, tau, contact_type, frame, joint2, placement2, reference):
    """pin.constraintDynamics with one RigidConstraintModel between a frame and a joint."""
    data = model.createData()
    f = model.frames[model.getFrameId(frame)]
    cm = pin.RigidConstraintModel(
        contact_type, model, f.parentJoint, f.placement, joint2, placement2, reference
    )
    models = pin.StdVec_RigidConstraintModel()
    models.append(cm)
    datas = pin.StdVec_RigidConstraintData()
    datas.append(cm.createData())
    pin.initConstraintDynamics(model, data, models, datas)
    a = pin.constraintDynamics(
        model, data, q, v, tau, models, datas, pin.ProximalSettings(1e-14, 0.0, 1)
    )
    return np.array(a), datas[0].contact_force.vector.copy()


def test_gripped_point_mass_equals_29_to_31_and_constraint_dynamics():
    """(29): [1/m I + J M⁻¹ Jᵀ] f = J M⁻¹ (G - T) - J̇q̇ + g, then (30) and (31), by hand
    from crba, nonLinearEffects and the tool's Jacobian; and Pinocchio's constraintDynamics
    with a 3D loop between the tool and the load's joint."""
    system, loop = gripped_load("point")
    model = system.model
    arm = px.load_robot("six_dof_arm").model
    data = arm.createData()
    tool = arm.getFrameId("tool")
    rng = np.random.default_rng(29)
    for _ in range(4):
        x = random_closed_state(system, rng)
        q, v = system.split(x)
        tau = rng.normal(size=model.nv) * 5
        tau[6:] = 0.0  # the load is not actuated
        step = system.step(0.0, x, tau)
        # (29)-(31) with the arm alone
        qa, va, ta = q[:6], v[:6], tau[:6]
        mass = pin.crba(arm, data, qa)
        mass = np.triu(mass) + np.triu(mass, 1).T
        bias = pin.nonLinearEffects(arm, data, qa, va)
        pin.computeJointJacobians(arm, data, qa)
        pin.forwardKinematics(arm, data, qa, va, np.zeros(6))
        jac = pin.getFrameJacobian(arm, data, tool, LWA)[:3]
        jdot_qdot = pin.getFrameClassicalAcceleration(arm, data, tool, LWA).linear
        g = arm.gravity.linear
        minv_jt = np.linalg.solve(mass, jac.T)
        lhs = np.eye(3) / LOAD + jac @ minv_jt
        f = np.linalg.solve(lhs, jac @ np.linalg.solve(mass, bias - ta) - jdot_qdot + g)
        qdd = np.linalg.solve(mass, ta - bias + jac.T @ f)  # (30)
        pdd = -f / LOAD + g  # (31)
        scale = 1.0 + np.abs(qdd).max()
        assert np.abs(step.a[:6] - qdd).max() < 1e-9 * scale
        assert np.abs(step.a[6:] - pdd).max() < 1e-9 * scale
        assert np.abs(step.forces[loop.name] - f).max() < 1e-9 * (1 + np.abs(f).max())
        # Pinocchio's constraintDynamics, the loop as a RigidConstraintModel
        a_ref, f_ref = pin_loop_dynamics(
            model,
            q,
            v,
            tau,
            pin.ContactType.CONTACT_3D,
            "tool",
            model.getJointId("load_joint"),
            pin.SE3.Identity(),
            LWA,
        )
        assert np.abs(step.a - a_ref).max() < 1e-9 * scale
        assert np.abs(step.forces[loop.name] - f_ref[:3]).max() < 1e-9 * (1 + np.abs(f).max())


def test_welded_rigid_load_equals_constraint_dynamics():
    inertia = np.diag([0.02, 0.03, 0.04])
    system, loop = gripped_load("weld", inertia)
    model = system.model
    rng = np.random.default_rng(6)
    for _ in range(3):
        x = random_closed_state(system, rng)
        q, v = system.split(x)
        tau = np.concatenate([rng.normal(size=6) * 5, np.zeros(6)])
        step = system.step(0.0, x, tau)
        a_ref, f_ref = pin_loop_dynamics(
            model,
            q,
            v,
            tau,
            pin.ContactType.CONTACT_6D,
            "tool",
            model.getJointId("load_joint"),
            pin.SE3.Identity(),
            pin.LOCAL,
        )
        scale = 1.0 + np.abs(a_ref).max()
        assert np.abs(step.a - a_ref).max() < 1e-9 * scale
        # Pinocchio's wrench is in the tool's axes, pinext's in the world's
        pin.framesForwardKinematics(model, system.data, q)
        rotation = system.data.oMf[model.getFrameId("tool")].rotation
        wrench = np.concatenate([rotation @ f_ref[:3], rotation @ f_ref[3:]])
        assert np.abs(step.forces[loop.name] - wrench).max() < 1e-9 * (1 + np.abs(wrench).max())


@pytest.mark.parametrize(
    ("kind", "joint"),
    [
        ("point", pin.JointModelSpherical()),
        ("hinge", pin.JointModelRX()),
        ("weld", None),
    ],
)
def test_loop_equals_the_tree_with_the_matching_joint(kind, joint):
    """A rigid load closed on the tool by a point, a hinge (about x) or a weld moves the arm
    as the load mounted on a spherical, revolute or fixed joint of the tree does."""
    inertia = pin.Inertia(LOAD, np.array([0.05, -0.02, 0.08]), np.diag([0.02, 0.03, 0.04]))
    robot = px.free_body(px.load_robot("six_dof_arm"), "load", LOAD, inertia)
    axis = (1.0, 0.0, 0.0) if kind == "hinge" else None
    system = px.System(robot, loops=[px.Loop("tool", "load", kind, axis=axis, stabilization=0)])
    tree = px.load_robot("six_dof_arm").model.copy()
    tool = tree.frames[tree.getFrameId("tool")]
    if joint is None:
        tree.appendBodyToJoint(tool.parentJoint, inertia, tool.placement)
    else:
        jid = tree.addJoint(tool.parentJoint, joint, tool.placement, "mount")
        tree.appendBodyToJoint(jid, inertia, pin.SE3.Identity())
    tree_data = tree.createData()
    rng = np.random.default_rng(len(kind))
    for _ in range(3):
        q_tree = pin.randomConfiguration(tree, -np.ones(tree.nq), np.ones(tree.nq))
        v_tree = rng.normal(size=tree.nv)
        tau = np.zeros(tree.nv)
        tau[:6] = rng.normal(size=6) * 5
        # the same state in the loop model: the load placed and moving as the tree's body
        pin.forwardKinematics(tree, tree_data, q_tree, v_tree)
        pin.updateFramePlacements(tree, tree_data)
        if joint is None:
            placement = tree_data.oMf[tree.getFrameId("tool")]
            velocity = pin.getFrameVelocity(tree, tree_data, tree.getFrameId("tool"))
        else:
            placement, velocity = tree_data.oMi[jid], tree_data.v[jid]
        q = np.concatenate([q_tree[:6], pin.SE3ToXYZQUAT(placement)])
        v = np.concatenate([v_tree[:6], velocity.vector])
        step = system.step(0.0, system.initial_state(q, v), np.concatenate([tau[:6], np.zeros(6)]))
        a_tree = pin.aba(tree, tree_data, q_tree, v_tree, tau)
        assert np.abs(step.a[:6] - a_tree[:6]).max() < 1e-9 * (1 + np.abs(a_tree).max())


@pytest.mark.parametrize("kind", ["point", "hinge", "weld"])
def test_drift_is_the_time_derivative_of_the_rows(kind):
    """γ = J̇ v: the rows times v, differentiated along q(t) = integrate(q, v t) by central
    differences; and on the closure the residual's rate is J v."""
    inertia = np.diag([0.02, 0.03, 0.04])
    robot = px.free_body(px.load_robot("six_dof_arm"), "load", LOAD, inertia)
    loop = px.Loop(
        "tool",
        "load",
        kind,
        placement=pin.SE3(pin.rpy.rpyToMatrix(0.3, -0.2, 0.5), np.array([0.02, -0.01, 0.05])),
    )
    system = px.System(robot, loops=[loop])
    model, data = system.model, system.model.createData()
    rng = np.random.default_rng(7)
    q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
    v = rng.normal(size=model.nv)

    def rows_times_v(s):
        qs = pin.integrate(model, q, v * s)
        pin.computeAllTerms(model, data, qs, v)
        return loop.kinematics(model, data, qs, 0.0).jacobian @ v

    eps = 1e-6
    derivative = (rows_times_v(eps) - rows_times_v(-eps)) / (2 * eps)
    pin.computeAllTerms(model, data, q, v)
    drift = loop.kinematics(model, data, q, 0.0).drift
    assert np.abs(drift - derivative).max() < 1e-6 * (1 + np.abs(drift).max())
    # on the closure the residual's rate is J v
    x = px.close_loops(system, q, v)
    qc, vc = system.split(x)

    def residual(s):
        qs = pin.integrate(model, qc, vc * s)
        pin.computeAllTerms(model, data, qs, vc)
        return loop.kinematics(model, data, qs, 0.0).residual

    rate = (residual(eps) - residual(-eps)) / (2 * eps)
    assert np.abs(residual(0.0)).max() < 1e-12
    assert np.abs(rate).max() < 1e-8  # J v = 0 on the closure, and so is the residual's rate


@pytest.mark.parametrize("kind", ["point", "hinge", "weld"])
def test_python_rows_equal_pinocchios_frame_kinematics(kind):
    """The Python path's rows (Loop.kinematics: the loop's FrameRows evaluated on Pinocchio's
    joint motions through forms.frame_block, the function the compiled kernels call) against
    Pinocchio's frame Jacobians, velocities and classical accelerations and pin.log3
    (``pinocchio_loop_rows``), and the reported wrench against λ applied along those rows
    (Jᵀλ = J_Aᵀ [f; τ] on A's own columns): 10 seeded random frames, placements, axes and
    states of Pinocchio's sample humanoid (a free flyer, 28 joints). Rounding of O(1)
    sums: 1e-12."""
    model = pin.buildSampleModelHumanoidRandom()
    rng = np.random.default_rng(3)
    for _ in range(10):
        a, b = (int(i) for i in rng.choice(np.arange(1, model.nframes), 2, replace=False))
        axis = rng.normal(size=3) if kind == "hinge" else None
        placement = pin.SE3(pin.exp3(rng.normal(size=3)), rng.normal(scale=0.1, size=3))
        loop = px.Loop(model.frames[a].name, model.frames[b].name, kind, placement, axis)
        px.System(px.Robot(model, model), loops=[loop], joint_limits=False)
        q = pin.integrate(model, pin.neutral(model), rng.normal(size=model.nv))
        v = rng.normal(size=model.nv)
        kin = loop.state_kinematics(q, v)
        residual, jacobian, drift = pinocchio_loop_rows(loop, model, loop.data)
        for got, want in ((kin.residual, residual), (kin.jacobian, jacobian), (kin.drift, drift)):
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * (1 + np.abs(want).max()))
        # the wrench on A at its origin, and the opposite on B' at its point, do J^T lam
        lam = rng.normal(size=loop.m)
        wrench = np.concatenate(loop.wrench(lam))
        fb = model.frames[b]
        ja = pin.getFrameJacobian(model, loop.data, int(a), LWA)
        jb = pin.getFrameJacobian(
            model, loop.data, fb.parentJoint, fb.placement * loop.placement, LWA
        )
        np.testing.assert_allclose((ja - jb).T @ wrench, jacobian.T @ lam, rtol=0, atol=1e-11)


# -- the four-bar linkage -----------------------------------------------------------------
CRANK, COUPLER, ROCKER, GROUND = 0.1, 0.4, 0.3, 0.35  # [m]: a Grashof crank-rocker
MASSES = (0.5, 1.0, 0.8)  # [kg]


def _link(name: str, length: float, mass: float) -> str:
    i = mass * length**2 / 12
    return (
        f'<link name="{name}"><inertial><origin xyz="{length / 2} 0 0"/><mass value="{mass}"/>'
        f'<inertia ixx="1e-4" ixy="0" ixz="0" iyy="{i}" iyz="0" izz="{i}"/></inertial></link>'
    )


def _joint(name: str, parent: str, child: str, x: float) -> str:
    return (
        f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{x} 0 0"/><axis xyz="0 1 0"/>'
        '<limit lower="-100" upper="100" effort="1" velocity="1"/></joint>'
    )


FOUR_BAR = (
    '<robot name="four_bar"><link name="base"/>'
    + _link("crank", CRANK, MASSES[0])
    + _link("coupler", COUPLER, MASSES[1])
    + _link("rocker", ROCKER, MASSES[2])
    + '<link name="tip"/><link name="pivot"/>'
    + _joint("crank_joint", "base", "crank", 0.0)
    + _joint("coupler_joint", "crank", "coupler", CRANK)
    + _joint("rocker_joint", "coupler", "rocker", COUPLER)
    + '<joint name="tip_joint" type="fixed"><parent link="rocker"/><child link="tip"/>'
    f'<origin xyz="{ROCKER} 0 0"/></joint>'
    + '<joint name="pivot_joint" type="fixed"><parent link="base"/><child link="pivot"/>'
    f'<origin xyz="{GROUND} 0 0"/></joint></robot>'
)


@pytest.fixture(scope="module")
def four_bar(tmp_path_factory):
    """A chain of three links in the vertical x-z plane (revolute joints about y)."""
    path = tmp_path_factory.mktemp("four_bar") / "four_bar.urdf"
    path.write_text(FOUR_BAR)
    return px.load_urdf(path)


def closed_angles(theta: float) -> np.ndarray:
    """Joint angles of the closed linkage at crank angle θ, in closed form (the rocker's
    end on the ground pivot; the coupler above the line from the crank to the pivot)."""
    p1 = CRANK * np.array([np.cos(theta), np.sin(theta)])  # (x, -z): +θ about y
    d = np.array([GROUND, 0.0]) - p1
    length = np.linalg.norm(d)
    along = (COUPLER**2 - ROCKER**2 + length**2) / (2 * length)
    e = d / length
    p2 = p1 + along * e + np.sqrt(COUPLER**2 - along**2) * np.array([-e[1], e[0]])
    psi2 = np.arctan2(*(p2 - p1)[::-1])
    psi3 = np.arctan2(*(np.array([GROUND, 0.0]) - p2)[::-1])
    return np.array([theta, psi2 - theta, psi3 - psi2])


class ReducedFourBar:
    """McClamroch's first reduction ('solve the constraint for m of the variables'): the
    one-DOF model of the crank angle, q = q(θ) in closed form, q̇ = S θ̇, q̈ = S θ̈ + c with
    ``S = [1, -J_d⁻¹ J_θ]`` and ``c = [0, -J_d⁻¹ J̇q̇]`` from the tip's Jacobian; then
    ``(Sᵀ M S) θ̈ = -Sᵀ (h + M c)``."""

    def __init__(self, model: pin.Model) -> None:
        self.model, self.data = model, model.createData()
        self.tip = model.getFrameId("tip")

    def basis(self, theta: float) -> tuple[np.ndarray, np.ndarray]:
        q = closed_angles(theta)
        pin.computeJointJacobians(self.model, self.data, q)
        jac = pin.getFrameJacobian(self.model, self.data, self.tip, LWA)[[0, 2]]
        return q, np.concatenate([[1.0], -np.linalg.solve(jac[:, 1:], jac[:, 0])])

    def rhs(self, t: float, y: np.ndarray) -> list[float]:
        model, data = self.model, self.data
        theta, omega = y
        q, s = self.basis(theta)
        qd = s * omega
        jac = pin.getFrameJacobian(model, data, self.tip, LWA)[[0, 2]]
        pin.forwardKinematics(model, data, q, qd, np.zeros(3))
        bias = pin.getFrameClassicalAcceleration(model, data, self.tip, LWA).linear[[0, 2]]
        c = np.concatenate([[0.0], -np.linalg.solve(jac[:, 1:], bias)])
        mass = pin.crba(model, data, q)
        mass = np.triu(mass) + np.triu(mass, 1).T
        h = pin.nonLinearEffects(model, data, q, qd)
        return [omega, -(s @ (h + mass @ c)) / (s @ mass @ s)]


@pytest.mark.parametrize("kind", ["point", "hinge"])
def test_four_bar_follows_its_reduced_model(four_bar, kind, caplog):
    """Closed by a point or by a hinge loop (both redundant in the plane: 3 and 5 rows of rank
    2), the linkage swings under gravity as the one-DOF model of its crank does. The
    redundancy is the planar mechanism's own: said once at INFO, no warning."""
    theta0, omega0, duration = 0.7, 2.0, 5.0
    reduced = ReducedFourBar(four_bar.model)
    reference = solve_ivp(
        reduced.rhs, (0.0, duration), [theta0, omega0], rtol=1e-12, atol=1e-12, dense_output=True
    )
    loop = px.Loop("tip", "pivot", kind, axis=(0.0, 1.0, 0.0) if kind == "hinge" else None)
    system = px.System(four_bar, loops=[loop])
    q0, s0 = reduced.basis(theta0)
    x0 = px.close_loops(system, q0, s0 * omega0)
    assert np.abs(x0 - system.initial_state(q0, s0 * omega0)).max() < 1e-12
    caplog.set_level("INFO", logger="pinext")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RedundantConstraintWarning)
        traj = px.simulate(system, duration, x0=x0, output_dt=0.01)
    said = [r.getMessage() for r in caplog.records if "mechanism is planar" in r.getMessage()]
    assert len(said) == 1  # once per run, not per evaluation
    rows = px.constraints.loop.KINDS[kind]
    assert f"{rows - 2} of the {rows} rows hold by themselves" in said[0]
    assert "normal [0. 1. 0.]" in said[0] or "normal [ 0. -1.  0.]" in said[0]
    assert np.ptp(traj.q[:, 0]) > 1.0  # it moves
    assert np.abs(traj.q[:, 0] - reference.sol(traj.t)[0]).max() < 1e-7
    assert traj.constraint_residual(loop.name).max() < 1e-9
    assert traj.energy_balance().max_relative() < 1e-9
    # the reaction on the rocker's end, in the plane of the linkage
    force = traj.outputs[f"{loop.name}.force"]
    assert np.abs(force[:, 1]).max() < 1e-9  # nothing out of the plane (min-norm)
    assert np.abs(force).max() > 1.0


def test_planar_redundancy_is_said_once_and_unexpected_redundancy_warns(four_bar, caplog):
    """A weld closing the planar four-bar: 6 rows of rank 3, the plane's own redundancy
    (3 of the 6 rows hold by themselves), said at INFO. Two point loops closing the same
    linkage: rank 2 where the plane expects 2 + 2, a RedundantConstraintWarning and no INFO
    line (on the six-DOF arm, not planar, see test_singular_delassus_names_the_dependent_loops).
    """
    reduced = ReducedFourBar(four_bar.model)
    q0, _ = reduced.basis(0.7)
    caplog.set_level("INFO", logger="pinext")
    weld = px.System(four_bar, loops=[px.Loop.closed_at(four_bar.model, q0, "tip", "pivot")])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RedundantConstraintWarning)
        weld.initial_phase(0.0, weld.initial_state(q0, np.zeros(3)), as_control(None, 0))
    (said,) = [r for r in caplog.records if "mechanism is planar" in r.getMessage()]
    assert said.levelname == "INFO" and "3 of the 6 rows" in said.getMessage()
    caplog.clear()
    twice = px.System(
        four_bar, loops=[px.Loop("tip", "pivot", name="one"), px.Loop("tip", "pivot", name="two")]
    )
    with pytest.warns(RedundantConstraintWarning, match="the 6 rows .* have rank 2"):
        twice.initial_phase(0.0, twice.initial_state(q0, np.zeros(3)), as_control(None, 0))
    assert not [r for r in caplog.records if "mechanism is planar" in r.getMessage()]


def test_four_bar_stays_closed_for_20_s(four_bar):
    """Drift: Baumgarte's term (ω = 20 1/s) on the index-1 rows keeps the position residual
    of the swinging four-bar below 1e-9 m for 20 s at the default tolerance (1.5e-11
    measured); the bare index-1 rows (no stabilisation) drift ten times further or more
    (1.3e-9 measured), so the term is what holds the loop."""
    reduced = ReducedFourBar(four_bar.model)
    q0, s0 = reduced.basis(0.7)
    residuals = {}
    for stabilization in (20.0, None):
        loop = px.Loop("tip", "pivot", "point", stabilization=stabilization)
        system = px.System(four_bar, loops=[loop])
        x0 = px.close_loops(system, q0, s0 * 2.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RedundantConstraintWarning)
            traj = px.simulate(system, 20.0, x0=x0, output_dt=0.01)
        residuals[stabilization] = traj.constraint_residual(loop.name).max()
        if stabilization:
            assert traj.energy_balance().max_relative() < 1e-9
    assert residuals[20.0] < 1e-9
    assert residuals[None] > 10 * residuals[20.0]


def test_default_stabilization_takes_out_a_start_residual_critically_damped(four_bar):
    """A Loop's default ``stabilization`` is Baumgarte's natural frequency ω = 20 1/s (the
    documented default of Closure.stabilization, "ω [1/s]; None for none"). The rows enter the
    acceleration step as ``B a + Ḃ v - 2ω Θ̇ - ω² Θ = 0`` with the exact drift Ḃ v, i.e.
    Θ̈ + 2ω Θ̇ + ω² Θ = 0: started at rest (Θ̇(0) = J v = 0) with a residual Θ₀ within the start
    tolerance, each row decays critically damped, Θ(t) = Θ₀ e^(−ωt) (1 + ωt), whatever the
    linkage does meanwhile (here it falls under gravity). Without stabilisation Θ̈ = 0 and Θ
    would stay at Θ₀."""
    omega = 20.0
    assert inspect.signature(px.Loop).parameters["stabilization"].default == omega
    loop = px.Loop("tip", "pivot", "point")  # stabilization not given
    assert loop.stabilization == omega
    system = px.System(four_bar, loops=[loop])
    q0, _ = ReducedFourBar(four_bar.model).basis(0.7)
    x0 = system.initial_state(q0, np.zeros(3))
    x0[2] += 1e-8  # the rocker turned by 1e-8 rad: Θ₀ ≈ 3e-9 m, below START_TOLERANCE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VelocityLimitWarning)  # the URDF's nominal 1 rad/s
        traj = px.simulate(system, 0.5, x0=x0, output_dt=0.05, rtol=1e-12, atol=1e-14)
    residual = traj.outputs[f"{loop.name}.residual"]  # (samples, 3), world x y z [m]
    theta0 = residual[0]
    assert np.abs(theta0).max() > 1e-9  # a residual to take out
    t = traj.t[:, None]
    expected = theta0 * np.exp(-omega * t) * (1 + omega * t)
    # 1e-12 m (3e-4 Θ₀): the integration error of q at atol = 1e-14, rtol = 1e-12 through a
    # linkage of links < 0.5 m stays far below it; no stabilisation would leave errors ~Θ₀
    assert np.abs(residual - expected).max() < 1e-12
    assert np.abs(residual[-1]).max() < 1e-3 * np.abs(theta0).max()  # 11 e^(-10) = 5e-4


def test_loop_errors_name_what_exists(four_bar):
    with pytest.raises(NameNotFound, match="Available frame names: .*pivot"):
        px.System(four_bar, loops=[px.Loop("tip", "pivto")])
    with pytest.raises(InvalidParameter, match="valid kinds: point, hinge, weld"):
        px.Loop("tip", "pivot", "ball")
    with pytest.raises(InvalidParameter, match="only for a hinge"):
        px.Loop("tip", "pivot", "point", axis=(0, 0, 1))
    system = px.System(four_bar, loops=[px.Loop("tip", "pivot", name="closing")])
    with pytest.raises(
        InconsistentInitialConditions, match="'closing' .* open at the start"
    ) as err:
        px.simulate(system, 0.1, q0=np.zeros(3))
    # at q = 0 the chain lies straight along x: the tip is CRANK + COUPLER + ROCKER - GROUND
    # beyond the pivot
    gap = CRANK + COUPLER + ROCKER - GROUND
    assert err.value.residuals == {system.components[-1].describe(): pytest.approx(gap)}
    assert isinstance(err.value, ConstraintError)
    # a pivot out of reach: the projection names the loop and its residual
    far = px.System(
        four_bar, loops=[px.Loop("tip", "pivot", placement=pin.SE3(np.eye(3), np.ones(3)))]
    )
    with pytest.raises(
        InconsistentInitialConditions, match=r"cannot close loop 'loop:tip-pivot'.*residual \d"
    ) as err:
        px.close_loops(far, closed_angles(0.7))
    ((name, residual),) = err.value.residuals.items()
    assert "loop:tip-pivot" in name and residual > 0.1


def test_singular_delassus_names_the_dependent_loops():
    """B M⁻¹ Bᵀ singular: the warning names the closures whose rows are dependent (the same
    grip twice) and not an independent one in the same System (a coupling of two joints)."""
    robot = px.free_body(px.load_robot("six_dof_arm"), "load", 1.0)
    system = px.System(
        robot,
        loops=[px.Loop("tool", "load", name="grip"), px.Loop("tool", "load", name="again")],
        components=[px.Mimic("wrist_3", "wrist_1", 0.5, name="coupling")],
    )
    x = random_closed_state(system, np.random.default_rng(5))
    with pytest.warns(RedundantConstraintWarning) as caught:
        system.step(0.0, x)
    message = str(caught[0].message)
    assert "B M⁻¹ Bᵀ is singular" in message
    assert "'grip'" in message and "'again'" in message and "coupling" not in message
    assert "the 6 rows" in message and "rank 3" in message


def test_loops_as_tuples_and_dicts(four_bar):
    system = px.System(
        four_bar,
        loops=[("tip", "pivot", "point"), {"frame_a": "tip", "frame_b": "pivot", "name": "b"}],
    )
    assert [c.name for c in system.components if c.name != "joint_limits"] == [
        "loop:tip-pivot",
        "b",
    ]
    with pytest.raises(InvalidParameter, match="a loop must be"):
        px.System(four_bar, loops=[3])


@pytest.mark.parametrize("kind", ["point", "hinge", "weld"])
def test_a_loop_closed_at_a_configuration(kind):
    """Loop.closed_at: the placement B⁻¹·A at q, so that q is on the closure."""
    robot = px.free_body(px.load_robot("six_dof_arm"), "load", LOAD, np.diag([0.02, 0.03, 0.04]))
    rng = np.random.default_rng(3)
    q = pin.randomConfiguration(robot.model, -np.ones(robot.nq), np.ones(robot.nq))
    loop = px.Loop.closed_at(robot.model, q, "tool", "load", kind, name="here")
    system = px.System(robot, loops=[loop])
    x = px.close_loops(system, q, rng.normal(size=robot.nv))
    assert np.abs(system.split(x)[0] - q).max() < 1e-12  # already closed: q unchanged
    assert loop.name == "here" and loop.kind == kind


def test_loops_from_the_extension_format(tmp_path, four_bar):
    """``<loop/>`` in the URDF's ``<pinext>`` block and ``[[loops]]`` in a sidecar close the
    linkage exactly as the Python ``loops=`` argument does."""
    q = np.r_[closed_angles(0.4)]
    v = np.zeros(3)
    reference = px.System(four_bar, loops=[px.Loop("tip", "pivot", "hinge", axis=(0, 1, 0))])
    x = reference.initial_state(q, v)
    expected = reference.step(0.0, x).a
    inline = tmp_path / "inline.urdf"
    inline.write_text(
        FOUR_BAR.replace(
            "</robot>",
            '<pinext><loop frame_a="tip" frame_b="pivot" kind="hinge" axis="0 1 0"/></pinext>'
            "</robot>",
        )
    )
    sidecar = tmp_path / "side.urdf"
    sidecar.write_text(FOUR_BAR)
    (tmp_path / "side.pinext.toml").write_text(
        '[[loops]]\nframe_a = "tip"\nframe_b = "pivot"\nkind = "hinge"\naxis = [0, 1, 0]\n'
    )
    for path in (inline, sidecar):
        system = px.System(px.load_urdf(path))
        assert [c.name for c in system.components if c.name.startswith("loop")]
        assert np.allclose(system.step(0.0, x).a, expected, rtol=0, atol=1e-12)
    assert px.System(px.load_urdf(inline), loops=()).independent_dofs() == 3
    (tmp_path / "side.pinext.toml").write_text('[[loops]]\nframe_a = "tip"\n')
    with pytest.raises(px.exceptions.FileFormatError, match="frame_a' and 'frame_b'"):
        px.load_urdf(sidecar)


# -- Pinocchio's closed-chain example ------------------------------------------------------
# examples/simulation-closed-kinematic-chains.py of Pinocchio's repository: links A (10 kg,
# 1 m) and B (5 kg, 0.6 m) as boxes 1 cm x 10 cm; the ground link A1 is the world, three
# revolute joints about y carry B1, A2, B2, and a CONTACT_3D RigidConstraintModel joins the
# end of B2 to the world point (-0.5, 0, 0). The example integrates pin.constraintDynamics
# (Baumgarte corrector Kp = 10, Kd = 2√10; ProximalSettings(1e-8, 1e-10, 10)) by semi-implicit
# Euler, v += a dt, q = integrate(q, v dt), dt = 5 ms, with zero torques.
LINK_A, LINK_B = (10.0, 1.0), (5.0, 0.6)  # (mass [kg], length [m])


def _x(x: float) -> pin.SE3:
    return pin.SE3(np.eye(3), np.array([x, 0.0, 0.0]))


def pinocchio_four_bar() -> pin.Model:
    """The example's model, built as the example builds it, plus a frame "closure" at the
    end of B2 (where its constraint's first placement is)."""
    (m_a, l_a), (m_b, l_b) = LINK_A, LINK_B
    inertia_a = pin.Inertia.FromBox(m_a, l_a, 0.01, 0.1)
    inertia_b = pin.Inertia.FromBox(m_b, l_b, 0.01, 0.1)
    model = pin.Model()
    j1 = model.addJoint(0, pin.JointModelRY(), _x(l_a / 2), "link_B1")
    model.appendBodyToJoint(j1, inertia_b, _x(l_b / 2))
    j2 = model.addJoint(j1, pin.JointModelRY(), _x(l_b), "link_A2")
    model.appendBodyToJoint(j2, inertia_a, _x(l_a / 2))
    j3 = model.addJoint(j2, pin.JointModelRY(), _x(l_a), "link_B2")
    model.appendBodyToJoint(j3, inertia_b, _x(l_b / 2))
    model.addFrame(pin.Frame("closure", j3, _x(l_b), pin.FrameType.OP_FRAME))
    return model


class PinocchioLoop:
    """The example's simulation loop: constraintDynamics and semi-implicit Euler."""

    def __init__(self, model: pin.Model) -> None:
        self.model, self.data = model, model.createData()
        cm = pin.RigidConstraintModel(
            pin.ContactType.CONTACT_3D, model, 3, _x(LINK_B[1]), 0, _x(-LINK_A[1] / 2)
        )
        corrector = cm.m_baumgarte_parameters
        corrector.Kp, corrector.Kd = 10.0, 2.0 * np.sqrt(10.0)
        cm.setBaumgarteCorrectorParameters(corrector)
        self.models = pin.StdVec_RigidConstraintModel()
        self.models.append(cm)
        self.datas = pin.StdVec_RigidConstraintData()
        self.datas.append(cm.createData())
        pin.initConstraintDynamics(model, self.data, self.models, self.datas)
        self.settings = pin.ProximalSettings(1e-8, 1e-10, 10)

    def acceleration(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        tau = np.zeros(self.model.nv)
        return np.array(
            pin.constraintDynamics(
                self.model, self.data, q, v, tau, self.models, self.datas, self.settings
            )
        )

    def run(self, q: np.ndarray, v: np.ndarray, dt: float, steps: int) -> np.ndarray:
        q, v, out = q.copy(), v.copy(), [q.copy()]
        for _ in range(steps):
            v = v + self.acceleration(q, v) * dt
            q = pin.integrate(self.model, q, v * dt)
            out.append(q)
        return np.array(out)


def test_pinocchio_closed_chain_example():
    """pinext's point loop on the example's model: accelerations equal constraintDynamics'
    at the same states to 1e-9 (Baumgarte ω = √10 is the example's Kp = ω², Kd = 2ω), and
    the example's first-order scheme converges to pinext's trajectory: halving dt halves
    the gap (ratio 0.5 ± 0.05), the gap at dt = 0.3 ms is below 5e-4 rad, and Richardson's
    extrapolation 2 q(dt/2) - q(dt) of the example's runs is within 5e-6 rad of pinext's
    (measured: gaps 6.1e-3 ... 3.8e-4 rad, extrapolated 5.7e-7 rad over 2 s).

    The example starts from its inverse-geometry solution; here the start is the closed
    parallelogram q = (θ, π - θ, θ) at θ = 1 rad, at rest, in closed form: the coupler
    translates and the cranks swing about the downward vertical (θ = π/2), 1.14 rad wide.
    """
    model = pinocchio_four_bar()
    reference = PinocchioLoop(model)
    loop = px.Loop("closure", "universe", "point", _x(-LINK_A[1] / 2), stabilization=np.sqrt(10))
    system = px.System(px.Robot.from_model(model), loops=[loop])
    q0, v0 = np.array([1.0, np.pi - 1.0, 1.0]), np.zeros(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RedundantConstraintWarning)  # 3 rows of rank 2
        traj = px.simulate(system, 2.0, x0=system.initial_state(q0, v0), output_dt=5e-3)
        assert np.ptp(traj.q[:, 0]) > 1.0
        assert traj.constraint_residual(loop.name).max() < 1e-9
        x0 = system.initial_state(q0, v0)
        phase = system.initial_phase(0.0, x0, as_control(None, system.n_inputs))  # closed
        rng = np.random.default_rng(1986)
        for k in rng.choice(len(traj), 5, replace=False):  # along the run, and opened a bit
            q, v = traj.q[k], traj.v[k]
            for dq in (np.zeros(3), rng.normal(scale=1e-3, size=3)):
                expected = reference.acceleration(q + dq, v)
                step = system.step(0.0, system.initial_state(q + dq, v), phase=phase)
                assert np.abs(step.a - expected).max() < 1e-9 * (1 + np.abs(expected).max())
    gaps, runs = [], []
    for dt in (5e-3, 2.5e-3, 1.25e-3, 6.25e-4, 3.125e-4):
        run = reference.run(q0, v0, dt, round(2.0 / dt))[:: round(5e-3 / dt)]
        runs.append(run)
        gaps.append(np.abs(run - traj.q).max())
    ratios = np.array(gaps[1:]) / np.array(gaps[:-1])
    assert np.all(np.abs(ratios - 0.5) < 0.05), ratios
    assert gaps[-1] < 5e-4
    assert np.abs(2 * runs[-1] - runs[-2] - traj.q).max() < 5e-6


def _example(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_four_bar_example_crank_torque_is_the_constrained_inverse_dynamics(tmp_path, monkeypatch):
    """examples/four_bar.py (the URDF's <loop>, a Prescribed crank): the crank's reaction
    equals constrained_inverse_dynamics of the linkage (McClamroch (1986) §5, coupler and
    rocker unactuated) at the run's states, to 1e-9 N.m; ``--quick`` writes the plot."""
    example = _example("four_bar")
    linkage, _ = example.build()
    assert [c.name for c in linkage.components if isinstance(c, px.Loop)] == ["pivot"]
    system, traj = example.crank_run(1.0, output_dt=0.05)
    assert np.ptp(traj.q[:, 0]) == pytest.approx(2 * np.pi, abs=1e-9)
    torque = traj.outputs["crank.torque"][:, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RedundantConstraintWarning)
        for k in range(0, len(traj), 2):
            x = traj.x[k]
            q, v = system.split(x)
            a = system.step(traj.t[k], x).a
            result = px.constrained_inverse_dynamics(
                linkage, q, v, a, unactuated=["coupler_joint", "rocker_joint"]
            )
            assert abs(result.tau[0] - torque[k]) < 1e-9 * (1 + np.abs(torque).max())
            assert np.abs(result.tau[1:]).max() < 1e-9
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.argv", ["four_bar.py", "--quick"])
    example.main()
    assert (tmp_path / "out" / "four_bar_torque.png").stat().st_size > 10_000


def test_close_loops_holds_a_prescribed_crank_at_its_law():
    """examples/four_bar.urdf with a Prescribed crank θ(t) = 0.3 + 2π t [rad]: the crank is a
    given of the closure, so close_loops (at t = 0.25 s and t = 0, from seeded guesses with
    every joint 0.2 rad off) puts it on its law and closes the loop with the coupler and
    rocker alone. The pose equals the closed form
    ``closed_angles(θ)`` and the velocity ``S θ̇`` of the one-DOF model; simulate then starts
    (no InconsistentInitialConditions) and the crank follows its law."""
    example = _example("four_bar")
    linkage, _ = example.build()

    def law(t: float) -> tuple[float, float, float]:
        return 0.3 + 2 * np.pi * t, 2 * np.pi, 0.0

    system = px.System(linkage.robot, components=[px.Prescribed("crank_joint", law, name="crank")])
    reduced = ReducedFourBar(system.model)
    rng = np.random.default_rng(84)
    for t0 in (0.25, 0.0):  # simulate starts from the last, at t = 0
        theta = law(t0)[0]
        closed, s = reduced.basis(theta)
        guess = closed + rng.uniform(-0.2, 0.2, 3)  # the crank off its law too
        x0 = px.close_loops(system, guess, rng.normal(size=3), t=t0)
        q0, v0 = system.split(x0)
        assert q0[0] == theta and v0[0] == 2 * np.pi
        assert np.abs(q0 - closed).max() < 1e-10
        assert np.abs(v0 - s * 2 * np.pi).max() < 1e-9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RedundantConstraintWarning)
        traj = px.simulate(system, 0.5, x0=x0, output_dt=0.05)
    assert np.abs(traj.q[:, 0] - (0.3 + 2 * np.pi * traj.t)).max() < 1e-12
    assert traj.constraint_residual("pivot").max() < 1e-9
