"""Tests of pinext.flexible.modal against seed 001 §5.2 and Euler–Bernoulli closed forms."""

from __future__ import annotations

import site
import sysconfig
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

import pinext as px
from pinext.exceptions import InvalidParameter, NameNotFound
from pinext.flexible import (
    FlexibleLink,
    expand_flexible,
    forward_dynamics,
    mass_matrix,
    mode_shapes,
    natural_frequencies,
    static_deflection,
    undeformed_bias,
)
from pinext.robots import robot_path

ARM = robot_path("flexible_arm")
E, SIDE, L = 1e11, 0.01, 2.0
I = SIDE**4 / 12  # noqa: E741
EI = E * I


class Robot:
    """Duck-typed robot: model, joint_stiffness, joint_damping."""

    def __init__(self, expansion):
        self.model = expansion.model
        self.joint_stiffness = expansion.joint_stiffness
        self.joint_damping = expansion.joint_damping


def arm(nu: int, young: float = E, inertia: float = I, model: pin.Model | None = None) -> Robot:
    model = model or pin.buildModelFromUrdf(str(ARM))
    geom = pin.GeometryModel()
    return Robot(expand_flexible(model, geom, geom, [FlexibleLink("bar", nu, young, inertia)]))


def beam_model(length: float, mass_per_length: float, vertical: bool = False) -> pin.Model:
    """A hub joint (axis z) driving a uniform Euler–Bernoulli bar along x."""
    mass = mass_per_length * length
    xml = f"""<robot name="beam"><link name="base"/>
      <joint name="hub" type="revolute"><parent link="base"/><child link="bar"/>
      <axis xyz="0 0 1"/><limit effort="1" velocity="1" lower="-4" upper="4"/></joint>
      <link name="bar"><inertial><origin xyz="{length / 2} 0 0"/><mass value="{mass}"/>
      <inertia ixx="1e-9" iyy="{mass * length**2 / 12}" izz="{mass * length**2 / 12}"
        ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="tip_joint" type="fixed"><parent link="bar"/><child link="tip"/>
      <origin xyz="{length} 0 0"/></joint><link name="tip"/></robot>"""
    model = pin.buildModelFromXML(xml)
    model.gravity.linear = np.array([0.0, -9.81, 0.0]) if vertical else np.zeros(3)
    return model


def printed(values, digits):
    """Round each value to the number of decimals printed in the seed."""
    return [round(float(v), d) for v, d in zip(values, digits, strict=True)]


# -- seed 001 §5.2 ---------------------------------------------------------------------------
def test_theoretical_frequencies_71():
    """(70) with the seed's data gives the printed (71): checks E, I and m as read."""
    m = 7876 * SIDE**2
    i = np.arange(1, 6)
    f = np.sqrt(EI / m) * np.pi / (32 * L**2) * (4 * i + 1) ** 2
    assert printed(f, [2, 1, 1, 1, 1]) == [6.31, 20.4, 42.7, 73.0, 111.3]


@pytest.mark.parametrize(
    ("nu", "expected", "digits"),
    [
        (5, [6.31, 20.4, 41.9, 65.6, 90.8], [2, 1, 1, 1, 1]),  # (72)
        (10, [6.31, 20.4, 42.6, 72.77, 110.5], [2, 1, 1, 2, 1]),  # (73)
    ],
)
def test_seed_frequencies_72_73(nu, expected, digits):
    f = natural_frequencies(arm(nu))  # pinned-free: hub free, no hub inertia
    assert f[0] == 0.0 and np.all(f[1:] > 0)
    assert printed(f[1:6], digits) == expected


def test_section_rotary_inertia_explains_the_4th_digit_of_73():
    """With the box's own inertia (section rotary inertia m l²/12 per length, Rayleigh beam) the
    4th frequency at ν = 10 is 72.75 Hz, not the printed 72.77: the seed neglects it."""
    model = pin.buildModelFromUrdf(str(ARM))
    m = model.inertias[1].mass
    box = np.diag([m * SIDE**2 / 6, m * (L**2 + SIDE**2) / 12, m * (L**2 + SIDE**2) / 12])
    model.inertias[1] = pin.Inertia(m, np.array([1.0, 0, 0]), box)
    f = natural_frequencies(arm(10, model=model))
    assert round(float(f[4]), 2) == 72.75


def tip_jacobian(robot) -> np.ndarray:
    """Jacobian of the tip frame in the undeformed configuration, LOCAL_WORLD_ALIGNED."""
    model = robot.model
    return pin.computeFrameJacobian(
        model,
        model.createData(),
        pin.neutral(model),
        model.getFrameId("tip"),
        pin.LOCAL_WORLD_ALIGNED,
    )


@pytest.mark.parametrize("nu", [1, 2, 5, 10])
def test_tip_couple_74_exact_for_every_nu(nu):
    robot = arm(nu)
    q = static_deflection(robot, None, frame="tip", wrench=[0, 0, 0, 0, 0, 1.0])
    alpha = q[1:].sum()
    jac = tip_jacobian(robot)
    delta = (jac @ (q - pin.neutral(robot.model)))[1]  # linear kinematics
    np.testing.assert_allclose(alpha, L / EI, rtol=1e-12)
    np.testing.assert_allclose(delta, L**2 / (2 * EI), rtol=1e-12)
    assert round(np.degrees(alpha), 3) == 1.375 and round(delta * 100, 2) == 2.40


@pytest.mark.parametrize("nu", [1, 2, 5, 10])
def test_tip_force_75_76_error_law(nu):
    robot = arm(nu)
    q = static_deflection(robot, None, frame="tip", wrench=[0, 1.0, 0, 0, 0, 0])
    jac = tip_jacobian(robot)
    alpha = q[1:].sum()
    delta = (jac @ q)[1]
    np.testing.assert_allclose(alpha, L**2 / (2 * EI), rtol=1e-12)
    exact = L**3 / (3 * EI)
    np.testing.assert_allclose((delta - exact) / exact, -1 / (4 * nu**2), rtol=1e-10)


def test_nonlinear_statics_small_load_and_equilibrium_with_gravity():
    robot = arm(5)
    lin = static_deflection(robot, None, frame="tip", wrench=[0, 1e-3, 0, 0, 0, 0])
    nonlin = static_deflection(robot, None, frame="tip", wrench=[0, 1e-3, 0, 0, 0, 0], linear=False)
    np.testing.assert_allclose(nonlin, lin, rtol=1e-4, atol=1e-15)
    # Vertical plane, gravity along -y, plus a tip force: K β + g(q) − Jᵀw = 0 (RNEA, Jacobian).
    model = pin.buildModelFromUrdf(str(ARM))
    model.gravity.linear = np.array([0.0, -9.81, 0.0])
    robot = arm(5, model=model)
    wrench = np.array([0.0, -2.0, 0.0, 0.0, 0.0, 0.0])
    q = static_deflection(robot, None, frame="tip", wrench=wrench, linear=False)
    data = robot.model.createData()
    g = pin.rnea(robot.model, data, q, np.zeros(6), np.zeros(6))
    jac = pin.computeFrameJacobian(
        robot.model, data, q, robot.model.getFrameId("tip"), pin.LOCAL_WORLD_ALIGNED
    )
    residual = robot.joint_stiffness * q + g - jac.T @ wrench
    np.testing.assert_allclose(residual[1:], 0.0, atol=1e-10)
    assert q[1:].sum() < -0.05  # large deflection: nonlinear differs from linear
    lin = static_deflection(robot, None, frame="tip", wrench=wrench, gravity=True)
    assert np.abs(lin - q).max() > 1e-4


# -- Euler–Bernoulli convergence -------------------------------------------------------------
def _roots(equation, n):
    grid = np.linspace(0.5, 12.0, 2000)
    values = equation(grid)
    return [
        brentq(equation, a, b)
        for a, b, fa, fb in zip(grid[:-1], grid[1:], values[:-1], values[1:], strict=True)
        if fa * fb < 0
    ][:n]


def test_convergence_to_euler_bernoulli_at_nu_40():
    """Aluminium bar 1.5 m, 30 x 8 mm: first three frequencies within 0.2 %."""
    young, width, height, length, density = 7.0e10, 0.03, 0.008, 1.5, 2700.0
    inertia = width * height**3 / 12  # bending about z: height along y
    mu = density * width * height
    robot = arm(40, young, inertia, model=beam_model(length, mu))
    scale = np.sqrt(young * inertia / mu) / length**2 / (2 * np.pi)
    # Pinned-free: tan x = tanh x (x > 0); clamped-free: cos x cosh x = -1.
    pinned = np.array(_roots(lambda x: np.sin(x) * np.cosh(x) - np.cos(x) * np.sinh(x), 3))
    clamped = np.array(_roots(lambda x: np.cos(x) * np.cosh(x) + 1, 3))
    np.testing.assert_allclose(pinned[0], 3.9266, atol=1e-4)
    np.testing.assert_allclose(clamped[0], 1.8751, atol=1e-4)
    f_pinned = natural_frequencies(robot)[1:4]
    f_clamped = natural_frequencies(robot, locked_joints=["hub"])[:3]
    np.testing.assert_allclose(f_pinned, scale * pinned**2, rtol=2e-3)
    np.testing.assert_allclose(f_clamped, scale * clamped**2, rtol=2e-3)


# -- modal records, gravity, kinetic-energy options ------------------------------------------
def test_mode_shapes_are_mass_normalised():
    robot = arm(6)
    result = mode_shapes(robot, locked_joints=["hub"])
    mass = mass_matrix(robot)[1:, 1:]
    shapes = result.shapes[1:]
    np.testing.assert_allclose(shapes.T @ mass @ shapes, np.eye(6), atol=1e-10)
    omega2 = (2 * np.pi * result.frequencies) ** 2
    np.testing.assert_allclose(
        shapes.T @ np.diag(robot.joint_stiffness[1:]) @ shapes,
        np.diag(omega2),
        rtol=1e-9,
        atol=1e-6,
    )
    np.testing.assert_array_equal(result.shapes[0], 0.0)
    np.testing.assert_array_equal(result.dofs, np.arange(1, 7))


def test_pendulum_frequency_with_gravity():
    """Rigid bar hanging in a vertical plane: f = √(m g c / I_O) / 2π."""
    model = beam_model(1.0, 2.0, vertical=True)
    robot = type("R", (), {"model": model, "joint_stiffness": np.zeros(1)})()
    q = np.array([-np.pi / 2])  # hanging down
    f = natural_frequencies(robot, q, gravity=True)
    np.testing.assert_allclose(f, [np.sqrt(2.0 * 9.81 * 0.5 / (2.0 / 3)) / (2 * np.pi)])
    assert natural_frequencies(robot, -q, gravity=True)[0] < 0  # upright: unstable
    assert natural_frequencies(robot, q)[0] == 0.0


def test_undeformed_kinetic_energy_option():
    robot = arm(4)
    rng = np.random.default_rng(7)
    q = rng.uniform(-0.2, 0.2, robot.model.nq)
    q_bar = q.copy()
    q_bar[1:] = 0.0
    data = robot.model.createData()
    crba = pin.crba(robot.model, data, q_bar)
    crba = np.triu(crba) + np.triu(crba, 1).T
    np.testing.assert_allclose(mass_matrix(robot, q, kinetic_energy="undeformed"), crba)
    assert not np.allclose(mass_matrix(robot, q), crba)
    np.testing.assert_allclose(
        natural_frequencies(robot, kinetic_energy="undeformed"), natural_frequencies(robot)
    )
    with pytest.raises(InvalidParameter, match="exact, undeformed"):
        mass_matrix(robot, q, kinetic_energy="linear")


def test_undeformed_bias_matches_lagrange_by_finite_differences():
    """b̄ = d/dt(M(q̄) v) − ∂T̄/∂q, with T̄ = ½ vᵀ M(q̄) v, by central differences."""
    robot = arm(3)
    rng = np.random.default_rng(11)
    q, v = rng.uniform(-0.3, 0.3, 4), rng.uniform(-1, 1, 4)
    rigid = np.array([1.0, 0, 0, 0])

    def mass(qq):
        return mass_matrix(robot, qq, kinetic_energy="undeformed")

    h = 1e-6
    mdot = (mass(q + h * v) - mass(q - h * v)) / (2 * h)
    grad = np.array(
        [(v @ mass(q + h * e) @ v - v @ mass(q - h * e) @ v) / (4 * h) for e in np.eye(4)]
    )
    np.testing.assert_allclose(undeformed_bias(robot, q, v), mdot @ v - grad, atol=1e-6)
    # Only the motion angle enters M(q̄): the gradient along elastic angles is zero.
    np.testing.assert_allclose(grad * (1 - rigid), 0.0, atol=1e-12)


@pytest.mark.parametrize("kinetic_energy", ["exact", "undeformed"])
def test_energy_conserved_by_both_kinetic_energy_models(kinetic_energy):
    model = beam_model(2.0, 0.7876, vertical=True)
    robot = arm(3, model=model)
    nv = robot.model.nv

    def energy(x):
        q, v = x[:nv], x[nv:]
        kinetic = 0.5 * v @ mass_matrix(robot, q, kinetic_energy=kinetic_energy) @ v
        potential = pin.computePotentialEnergy(robot.model, robot.model.createData(), q)
        return kinetic + potential + 0.5 * robot.joint_stiffness @ q**2

    def rhs(t, x):
        a = forward_dynamics(robot, x[:nv], x[nv:], kinetic_energy=kinetic_energy)
        return np.concatenate([x[nv:], a])

    x0 = np.concatenate([[0.3, 0.05, -0.02, 0.01], np.zeros(nv)])
    sol = solve_ivp(rhs, (0, 0.5), x0, method="DOP853", rtol=1e-11, atol=1e-12)
    energies = [energy(x) for x in sol.y.T]
    assert np.ptp(energies) < 1e-7 * max(abs(energies[0]), 1.0)


def test_forward_dynamics_exact_matches_mass_matrix_solve_with_armature():
    robot = arm(3)
    robot.model.armature[0] = 0.3
    rng = np.random.default_rng(5)
    q, v, tau = rng.normal(size=4) * 0.1, rng.normal(size=4), rng.normal(size=4)
    data = robot.model.createData()
    bias = pin.rnea(robot.model, data, q, v, np.zeros(4))
    expected = np.linalg.solve(mass_matrix(robot, q), tau - robot.joint_stiffness * q - bias)
    np.testing.assert_allclose(forward_dynamics(robot, q, v, tau), expected, rtol=1e-10)


def test_names_are_checked():
    robot = arm(2)
    with pytest.raises(NameNotFound, match="Available joint names: hub"):
        natural_frequencies(robot, locked_joints=["shoulder"])
    with pytest.raises(NameNotFound, match="Available frame names"):
        static_deflection(robot, None, frame="tool", wrench=np.zeros(6))


def test_ur5_energy_conserved_over_3_s():
    """Spatial bending of the UR5 upper arm and forearm, no damping, gravity on."""
    import warnings

    from pinext.robot import load_urdf
    from pinext.simulation.simulate import simulate
    from pinext.simulation.system import System

    path = None
    for base in {sysconfig.get_paths()["purelib"], *site.getsitepackages()}:
        folder = Path(base) / "cmeel.prefix/share/example-robot-data/robots/ur_description/urdf"
        if (folder / "ur5_robot.urdf").is_file():
            path = folder / "ur5_robot.urdf"
    if path is None:
        pytest.skip("example-robot-data is not installed")
    links = [
        FlexibleLink("upper_arm_link", 3, 7e10, (4e-8, 6e-8)),
        FlexibleLink(
            "forearm_link", 2, 7e10, (2e-8, 2e-8), shear_modulus=2.6e10, polar_moment=4e-8
        ),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = load_urdf(path, flexible=links)
    assert not robot.joint_damping.any()
    assert robot.model.existFrame("tool0") and robot.model.existFrame("forearm_link")
    q0 = robot.neutral()
    q0[robot.model.joints[robot.joint_id("shoulder_lift_joint")].idx_q] = -1.0
    # conservation of the free mechanism: the joint limits (plastic impacts) are off
    run = simulate(System(robot, joint_limits=False), 3.0, q0=q0, rtol=1e-10, atol=1e-12)
    energy = run.energy()
    assert np.abs(energy - energy[0]).max() < 1e-6 * np.abs(energy).max()
    assert np.abs(run.q[:, robot.elastic_dofs()]).max() > 1e-4  # the links did bend


def test_undeformed_kinetic_energy_in_the_simulator():
    """Remark 5 through simulate: same accelerations as forward_dynamics, own energy conserved,
    and close to the exact model for small deformations."""
    from pinext.flexible import UndeformedKineticEnergy

    robot = px.load_urdf(ARM, flexible=[FlexibleLink("bar", 5, E, I)])
    system = px.System(robot, components=[UndeformedKineticEnergy(robot)])
    rng = np.random.default_rng(8)
    q, v = rng.normal(scale=0.05, size=robot.nv), rng.normal(size=robot.nv)
    dx = system.derivative(0.0, system.initial_state(q, v))
    expected = forward_dynamics(robot, q, v, kinetic_energy="undeformed")
    # relative: M(q̄) of stiff sublinks is ill-conditioned, two solvers differ by cond(M) eps
    assert np.abs(dx[robot.nv : 2 * robot.nv] - expected).max() < 1e-12 * np.abs(expected).max()
    q0 = np.r_[0.0, 0.02 * np.ones(robot.nv - 1)]
    v0 = np.r_[1.0, np.zeros(robot.nv - 1)]
    approx = px.simulate(system, 0.25, q0=q0, v0=v0, output_dt=0.05)
    exact = px.simulate(robot, 0.25, q0=q0, v0=v0, output_dt=0.05)
    energy = approx.energy()
    assert np.abs(energy - energy[0]).max() < 1e-8 * energy[0]
    assert np.abs(approx.q[:, 0] - exact.q[:, 0]).max() < 1e-2  # the hub barely notices
    assert np.abs(approx.q - exact.q).max() > 1e-9  # but the models differ
