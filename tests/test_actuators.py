"""The Actuator protocol: a new actuator is one class plus one registry line."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.drives import (
    ACTUATORS,
    Actuator,
    DCMotor,
    Drive,
    Gear,
    LinearActuator,
    TorqueSource,
    drive_from_spec,
    register_actuator,
)
from pinext.exceptions import InvalidParameter

from .conftest import pendulum_urdf


class LaggedTorque(Actuator):
    """A torque source with a first-order lag: T τ̇ = u − τ (a toy actuator for this test)."""

    input_kind = "torque"
    state_block = "lagged_torque"

    def __init__(self, time_constant: float) -> None:
        self.time_constant = float(time_constant)

    @property
    def inertia(self) -> float:
        return 0.0

    @property
    def n_states(self) -> int:
        return 1

    def active_torque(self, states, theta, omega, u):
        return float(states[0])

    def state_derivative(self, states, theta, omega, u):
        return np.array([(u - states[0]) / self.time_constant])


register_actuator("lagged_torque", LaggedTorque)  # the one registry line


@pytest.fixture
def link(tmp_path) -> px.Robot:
    path = tmp_path / "link.urdf"
    path.write_text(pendulum_urdf(n=1, length=0.4, mass=1.5))
    robot = px.load_urdf(path)
    robot.model.gravity.setZero()
    return robot


def test_a_new_actuator_from_the_extension_format_matches_its_closed_form(link):
    """N τ(t) = N u (1 − e^{−t/T}) on a free link: q̇(t) = (N u / J)(t − T(1 − e^{−t/T}))."""
    drive = drive_from_spec("j0", {"lagged_torque": {"time_constant": 0.05}, "gear": {"ratio": 10}})
    assert isinstance(drive.actuator, LaggedTorque) and drive.input_kind == "torque"
    system = px.System(link, drives={"j0": drive})
    assert "drives.lagged_torque" in system.layout
    u, T, N = 0.3, 0.05, 10.0
    traj = px.simulate(system, 0.4, control=[u], output_dt=0.05)
    inertia = pin.crba(link.model, link.model.createData(), np.zeros(1))[0, 0]
    expected = N * u / inertia * (traj.t - T * (1 - np.exp(-traj.t / T)))
    assert np.abs(traj.v[:, 0] - expected).max() < 1e-8 * np.abs(expected).max()
    torque = traj.outputs["drives.motor_torque"][:, 0]
    assert np.allclose(torque, u * (1 - np.exp(-traj.t / T)), rtol=0, atol=1e-9)
    assert traj.energy_balance().max_relative() < 1e-9


def test_the_registry_knows_every_actuator_and_refuses_imposters():
    assert ACTUATORS["motor"] is DCMotor and ACTUATORS["actuator"] is LinearActuator
    assert ACTUATORS["torque_source"] is TorqueSource
    with pytest.raises(InvalidParameter, match="subclass pinext.drives.Actuator"):
        register_actuator("bogus", dict)
    with pytest.raises(InvalidParameter, match="taken by DCMotor"):
        register_actuator("motor", LaggedTorque)
    with pytest.raises(InvalidParameter, match="valid parts: .*lagged_torque"):
        drive_from_spec("j0", {"lagged": {"time_constant": 1.0}})
    with pytest.raises(InvalidParameter, match="valid parameters: time_constant"):
        drive_from_spec("j0", {"lagged_torque": {"tau": 1.0}})


def test_the_actuator_table_is_written_out_and_each_class_knows_its_part():
    """The built-in actuators are the lines of one literal table (pinext.drives.registry), in
    order, not entries registered by importing their modules; each class's ``part`` is its
    key, and user code appends after them."""
    from pinext.drives import registry

    assert ACTUATORS is registry.ACTUATORS
    builtin = {k: c for k, c in ACTUATORS.items() if c.__module__.startswith("pinext.")}
    assert list(builtin) == ["motor", "actuator", "torque_source"]
    assert all(cls.part == part for part, cls in ACTUATORS.items())
    assert "lagged_torque" in list(ACTUATORS)[3:]  # this file's register_actuator line


def test_dc_motor_through_the_protocol_equals_the_vectorized_path(link):
    """A DC motor beside a torque source takes the per-actuator path; alone, the vectorized
    one: same accelerations and powers (Vukobratović & Potkonjak (20.66)–(20.73))."""
    motor = DCMotor(
        resistance=1.2,
        torque_constant=0.05,
        back_emf_constant=0.06,
        rotor_inertia=2e-5,
        viscous_friction=1e-6,
    )
    two = pendulum_urdf(n=2)
    robot = px.Robot.from_model(pin.buildModelFromXML(two))
    vectorized = px.System(robot, drives={"j0": Drive(motor, Gear(20.0)), "j1": Drive(motor)})
    per_actuator = px.System(
        robot, drives={"j0": Drive(motor, Gear(20.0)), "j1": Drive(motor, None)}
    )
    per_actuator.components[0].vectorized = False
    assert vectorized.components[0].vectorized
    rng = np.random.default_rng(4)
    x = vectorized.initial_state(rng.normal(size=2), rng.normal(size=2))
    u = rng.normal(size=2)
    fa, fb = vectorized.derivative(0.0, x, u), per_actuator.derivative(0.0, x, u)
    assert np.allclose(fa, fb, rtol=1e-13, atol=1e-13 * np.abs(fa).max())
