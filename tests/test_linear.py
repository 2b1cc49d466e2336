"""The fused right-hand side of linear phases: the identified matrices reproduce the components'
own efforts, state derivatives and powers at random states, and nonlinear phases are left to
the generic path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.drives import DCMotor, Drive, ElasticTransmission, Gear
from pinext.robots import robot_path
from pinext.simulation import linear
from pinext.simulation.component import Phase
from pinext.simulation.controls import as_control

from .conftest import pendulum_urdf


def motor(**kw) -> DCMotor:
    params = dict(resistance=1.2, torque_constant=0.05, back_emf_constant=0.06, rotor_inertia=2e-5)
    return DCMotor(**{**params, **kw})


@pytest.fixture
def robot(tmp_path: Path) -> px.Robot:
    path = tmp_path / "pendulum.urdf"
    path.write_text(pendulum_urdf(n=4))
    robot = px.load_urdf(path)
    robot.joint_stiffness[:] = [0.0, 3.0, 0.0, 0.0]
    robot.joint_damping[:] = [0.1, 0.0, 0.2, 0.0]
    return robot


def mixed_drives() -> dict[str, Drive]:
    """A rigid gear with friction, an elastic transmission with damping, an inductive motor, an
    ideal torque source (whose input power u N q̇ is a pure cross term)."""
    return {
        "j0": Drive(motor(viscous_friction=1e-5), Gear(50.0, input_inertia=1e-6)),
        "j1": Drive(motor(), ElasticTransmission(30.0, 400.0, 0.3, input_inertia=1e-6)),
        "j2": Drive(motor(inductance=1e-3), ElasticTransmission(20.0, 250.0)),
        "j3": Drive(None, Gear(20.0, input_inertia=1e-6)),
    }


def test_fused_rhs_equals_the_components_at_random_states(robot):
    system = px.System(robot, drives=mixed_drives())
    phase = Phase()
    rng = np.random.default_rng(1)
    law = as_control(lambda t, x: np.sin(t + np.arange(4.0)), system.n_inputs)
    fused = linear.fused_rhs(system, phase, law, None)
    assert fused is not None
    model, data = system.model, system.model.createData()
    nv, n_core = model.nv, system.nx - 2
    for _ in range(5):
        t = float(rng.uniform(0, 5))
        y = rng.standard_normal(system.nx)
        u = law(t, y)
        f = linear.forces(system, phase, np.concatenate((y[:n_core], u, [1.0])))
        q, v = y[:nv], y[nv : 2 * nv]
        expected = np.concatenate((v, pin.aba(model, data, q, v, f[:nv]), f[nv:]))
        np.testing.assert_allclose(fused(t, y), expected, rtol=1e-11, atol=1e-10)


def test_simulation_through_the_fused_path_closes_its_energy_balance(robot):
    system = px.System(robot, drives=mixed_drives())
    q0, u = np.array([0.4, -0.3, 0.2, 0.1]), np.array([2.0, -1.0, 1.0, 0.05])
    traj = px.simulate(system, 0.5, q0=q0, control=u)
    assert traj.energy_balance().max_relative() < 1e-7


def test_saturated_inputs_are_clipped_where_the_drives_clip_them(robot):
    """Amplifier limits keep a phase linear in the clipped input (a 3 V limit, and a 0.02 V one
    below the unit steps the identification would take): the fused right-hand side equals the
    components' own efforts, state derivatives and powers, which clip the inputs themselves, at
    random states with inputs inside and far beyond the bounds."""
    drives = mixed_drives()
    drives["j0"] = Drive(motor(voltage_limit=0.02, viscous_friction=1e-5), Gear(50.0))
    drives["j1"] = Drive(motor(voltage_limit=3.0), ElasticTransmission(30.0, 400.0, 0.3))
    system = px.System(robot, drives=drives)
    np.testing.assert_array_equal(system.input_bounds, [0.02, 3.0, np.inf, np.inf])
    model, data = system.model, system.model.createData()
    nv, n_core = model.nv, system.nx - 2
    rng = np.random.default_rng(4)
    for spread in (0.005, 0.5, 50.0):  # inside both bounds, beyond the small one, beyond both
        u = spread * rng.standard_normal(4)
        fused = linear.fused_rhs(system, Phase(), as_control(u, system.n_inputs), None)
        assert fused is not None
        y = rng.standard_normal(system.nx)
        f = linear.forces(system, Phase(), np.concatenate((y[:n_core], u, [1.0])))
        q, v = y[:nv], y[nv : 2 * nv]
        expected = np.concatenate((v, pin.aba(model, data, q, v, f[:nv]), f[nv:]))
        np.testing.assert_allclose(fused(0.0, y), expected, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize(
    "drive",
    [
        Drive(motor(current_limit=2.0), ElasticTransmission(30.0, 400.0)),  # clips a state
        Drive(motor(), Gear(50.0, efficiency=0.8)),  # efficiency modes
    ],
)
def test_nonlinear_phases_use_the_generic_path(robot, drive):
    system = px.System(robot, drives={"j1": drive})
    phase = system.initial_phase(0.0, system.initial_state())
    assert linear.fused_rhs(system, phase, as_control(None, system.n_inputs), None) is None


@pytest.mark.parametrize("with_drives", [True, False])
def test_jacobian_matches_finite_differences(robot, with_drives):
    system = px.System(robot, drives=mixed_drives() if with_drives else {})
    u = np.array([0.7, -0.2, 0.4, 0.1])
    fused = linear.fused_rhs(system, Phase(), as_control(u, system.n_inputs), None)
    y = np.random.default_rng(2).standard_normal(system.nx)
    jac = fused.jac(0.0, y)
    h = 1e-6
    numeric = np.array(
        [(fused(0.0, y + h * e) - fused(0.0, y - h * e)) / (2 * h) for e in np.eye(system.nx)]
    ).T
    np.testing.assert_allclose(jac, numeric, rtol=1e-6, atol=1e-6 * np.abs(numeric).max())


def test_radau_with_the_jacobian_follows_dop853_on_a_damped_flexible_arm():
    from pinext.flexible import FlexibleLink

    arm = robot_path("flexible_arm")
    bar = FlexibleLink("bar", 20, 1e11, 0.01**4 / 12, damping_ratio=0.02)
    robot = px.load_urdf(arm, flexible=[bar])
    torque = np.r_[0.5, np.zeros(20)]
    with pytest.warns(RuntimeWarning, match="Radau"):  # DOP853 detects the stiffness, goes on
        ref = px.simulate(robot, 0.02, control=torque, rtol=1e-11, atol=1e-13, method="DOP853")
        explicit = px.simulate(robot, 0.02, control=torque, rtol=1e-8, atol=1e-11, method="DOP853")
    stiff = px.simulate(robot, 0.02, control=torque, method="Radau", rtol=1e-8, atol=1e-11)
    np.testing.assert_allclose(stiff.x[-1], ref.x[-1], rtol=1e-5, atol=1e-9)
    assert stiff.meta["stats"]["nfev"] < explicit.meta["stats"]["nfev"] / 3  # stiffness-free steps
    assert stiff.energy_balance().max_relative() < 1e-6
