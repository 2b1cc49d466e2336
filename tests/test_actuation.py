"""Joint torques to the System's inputs: DC-motor voltages behind rigid gears, motor-angle
servos behind elastic transmissions (checked by the System's own drive equations)."""

import numpy as np
import pytest

import pinext as px
from pinext.control.actuation import Actuation
from pinext.drives import harmonic_drives
from pinext.exceptions import InvalidParameter

from .models import random_pose

MOTOR = px.DCMotor(
    resistance=0.6,
    torque_constant=0.06,
    back_emf_constant=0.05,
    rotor_inertia=3e-5,
    viscous_friction=2e-6,
)


def sensors_of(system, x):
    skip = ("q", "v", "input_work", "dissipated_energy")
    return {k: x[s] for k, s in system.layout.items() if k not in skip}


def test_rigid_drives_voltages_give_the_joint_torques():
    """u from the motors' inverse law; the System's generalized forces (its drives' effort
    N C_M (u − C_E θ̇)/R − N B θ̇, McClamroch's u of singular_form) are τ_d."""
    robot = px.load_robot("six_dof_arm")
    joints = list(robot.model.names)[1:]
    ratios = [100.0, 100.0, 80.0, 50.0, 50.0, 50.0]
    drives = {j: px.Drive(MOTOR, px.Gear(n)) for j, n in zip(joints, ratios, strict=True)}
    system = px.System(robot, drives=drives, joint_limits=False)
    rng = np.random.default_rng(50)
    act = Actuation(system)
    for _ in range(3):
        q, v = random_pose(system.model, rng), rng.standard_normal(6)
        tau = rng.standard_normal(6) * 20
        x = system.initial_state(q, v)
        u = act(q, v, sensors_of(system, x), tau)
        force = px.singular_form(system, q, v, u).force
        np.testing.assert_allclose(force, tau, rtol=0, atol=1e-12 * 20)


def test_elastic_drives_spring_carries_the_torque_at_rest():
    """At rest with the motors at θ_d = N (q + τ_d / c): the motors do not accelerate and the
    springs apply τ_d (the System's derivative); away from θ_d the motor's torque is the
    servo's τ_d/N + k_m (θ_d − θ) + d_m (N q̇ − θ̇)."""
    robot = px.load_robot("six_dof_arm")
    joints = list(robot.model.names)[1:]
    drives = harmonic_drives(joints)
    system = px.System(robot, drives=drives, joint_limits=False)
    act = Actuation(system, motor_bandwidth=100.0)
    rng = np.random.default_rng(51)
    ratio = np.array([d.transmission.ratio for d in drives.values()])
    stiffness = np.array([d.transmission.stiffness for d in drives.values()])
    inertia = np.array([d.motor_side_inertia for d in drives.values()])
    q = random_pose(system.model, rng)
    tau = rng.standard_normal(6) * 20
    x = system.initial_state(q, np.zeros(6))
    angle, speed = system.layout["drives.motor_angle"], system.layout["drives.motor_velocity"]
    x[angle] = ratio * (q + tau / stiffness)
    x[speed] = 0.0
    u = act(q, np.zeros(6), sensors_of(system, x), tau)
    dx = system.derivative(0.0, x, u)
    offset = system.model.nv - system.model.nq  # the derivative's q block has nv entries
    motor_acc = dx[speed.start + offset : speed.stop + offset]
    scale = np.abs(tau / ratio / inertia).max()  # size of the torques balanced on the rotor
    np.testing.assert_allclose(motor_acc, 0.0, atol=1e-12 * scale)
    np.testing.assert_allclose(
        px.singular_form(system, q, np.zeros(6), u, x=x).force, tau, atol=1e-9
    )
    # off target and moving: J θ̈ = τ_s − τ_spring/N with τ_s the servo's torque
    v = rng.standard_normal(6)
    x[system.layout["v"]] = v
    x[angle] += rng.standard_normal(6) * 1e-2
    x[speed] = ratio * v + rng.standard_normal(6)
    u = act(q, v, sensors_of(system, x), tau)
    spring = stiffness * (x[angle] / ratio - q) + np.array(
        [d.transmission.damping for d in drives.values()]
    ) * (x[speed] / ratio - v)
    w = 100.0
    servo = (
        tau / ratio
        + inertia * w**2 * (ratio * (q + tau / stiffness) - x[angle])
        + (2 * inertia * w * (ratio * v - x[speed]))
    )
    expected = (servo - spring / ratio) / inertia
    dx = system.derivative(0.0, x, u)
    np.testing.assert_allclose(dx[speed.start + offset : speed.stop + offset], expected, rtol=1e-9)


def test_unsupported_inputs_are_named():
    robot = px.load_robot("six_dof_arm")
    inductive = px.DCMotor(
        resistance=0.6,
        torque_constant=0.06,
        back_emf_constant=0.06,
        rotor_inertia=3e-5,
        inductance=1e-3,
    )
    system = px.System(robot, drives={"elbow": px.Drive(inductive, px.Gear(50.0))})
    with pytest.raises(InvalidParameter, match="elbow.*no direct input"):
        Actuation(system)
    with pytest.raises(InvalidParameter, match="motor_bandwidth"):
        Actuation(px.System(robot), motor_bandwidth=0.0)
