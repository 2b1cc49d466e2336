"""Drive requirements from a prescribed motion (Vukobratović & Potkonjak, §20.4.1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from numpy.polynomial import Polynomial

import pinext as px
from pinext.exceptions import InvalidParameter, NameNotFound
from pinext.planning import RestToRest, best_gear_ratio, drive_requirements, winding_temperature

from .conftest import URDF, pendulum_urdf

MASS, LENGTH = 2.0, 0.4
INERTIA = MASS * LENGTH**2 / 3  # about the joint axis (y)
H = Polynomial([0, 0, 0, 0, 35, -84, 70, -20])  # the rest-to-rest law h(s)


def _pendulum(tmp_path: Path) -> px.Robot:
    path = tmp_path / "pendulum.urdf"
    path.write_text(pendulum_urdf(1, LENGTH, MASS))
    return px.load_urdf(path)


def _max_on_unit_interval(f: Polynomial) -> float:
    roots = f.deriv().roots()
    s = np.real(roots[(np.abs(roots.imag) < 1e-12) & (roots.real >= 0) & (roots.real <= 1)])
    return float(f(np.r_[s, 0.0, 1.0]).max())


def test_rest_to_rest_peak_rms_power_and_energy_match_closed_forms(tmp_path: Path) -> None:
    """Without gravity τ = I q̈, with q̈ = Δq h''(s)/T²: every figure is a polynomial one."""
    robot = _pendulum(tmp_path)
    duration, dq = 0.8, 1.3
    report = drive_requirements(
        robot, RestToRest(np.array([0.2]), np.array([dq]), duration), gravity=False, samples=2001
    )
    scale = INERTIA * dq / duration**2
    h1, h2 = H.deriv(), H.deriv(2)
    peak = scale * max(_max_on_unit_interval(h2), _max_on_unit_interval(-h2))
    rms = scale * np.sqrt((h2**2).integ()(1.0))
    peak_power = INERTIA * dq**2 / duration**3 * _max_on_unit_interval(h1 * h2)
    kinetic = 0.5 * INERTIA * (dq / duration * h1(0.5)) ** 2  # delivered until mid-motion
    assert report.joints == ["j0"]
    assert abs(report.peak_torque[0] / peak - 1) < 1e-9
    assert abs(report.rms_torque[0] / rms - 1) < 1e-9
    assert abs(report.peak_power[0] / peak_power - 1) < 1e-9
    assert abs(report.positive_energy[0] / kinetic - 1) < 1e-9
    assert abs(report.total_energy[0]) < 1e-9 * kinetic  # rest to rest, no gravity


def test_net_energy_with_gravity_is_the_potential_energy_change(tmp_path: Path) -> None:
    robot = _pendulum(tmp_path)
    q0, dq = 0.3, 1.1
    report = drive_requirements(robot, RestToRest(np.array([q0]), np.array([dq]), 1.0))
    g = 9.81
    delta_potential = MASS * g * LENGTH / 2 * (np.cos(q0) - np.cos(q0 + dq))
    assert abs(report.total_energy[0] / delta_potential - 1) < 1e-9


def test_joint_reactions_match_a_free_body_calculation(tmp_path: Path) -> None:
    robot = _pendulum(tmp_path)
    report = drive_requirements(robot, RestToRest(np.array([0.3]), np.array([1.1]), 1.0))
    model = robot.model
    inertia_c = model.inertias[1].inertia
    gravity = model.gravity.linear
    law = RestToRest(np.array([0.3]), np.array([1.1]), 1.0)
    for k in (0, 250, 400, 777, 1000):
        q, v, a = (x[0] for x in law(report.t[k]))
        rotation = pin.exp3(np.array([0.0, q, 0.0]))  # revolute about y
        c = rotation @ np.array([0.0, 0.0, -LENGTH / 2])
        omega, alpha = np.array([0, v, 0.0]), np.array([0, a, 0.0])
        acc_c = np.cross(alpha, c) + np.cross(omega, np.cross(omega, c))
        inertia_world = rotation @ inertia_c @ rotation.T
        force = MASS * (acc_c - gravity)
        moment = (
            inertia_world @ alpha
            + np.cross(omega, inertia_world @ omega)
            + np.cross(c, MASS * (acc_c - gravity))
        )
        np.testing.assert_allclose(report.reaction("j0")[k], np.r_[force, moment], atol=1e-12)
        assert abs(report.torque[k, 0] - moment[1]) < 1e-12  # the joint torque is its y part


def test_winding_temperature_matches_the_step_response() -> None:
    t = np.linspace(0.0, 200.0, 101)
    loss = np.full(t.size, 12.0)
    temperature = winding_temperature(t, loss, 2.5, 40.0, ambient=20.0)
    np.testing.assert_allclose(temperature, 20.0 + 2.5 * 12.0 * (1 - np.exp(-t / 40.0)), atol=1e-12)
    ramp = winding_temperature(t, 0.1 * t, 2.5, 40.0, ambient=0.0)  # exact for a ramp too
    exact = 2.5 * 0.1 * (t - 40.0 * (1 - np.exp(-t / 40.0)))
    np.testing.assert_allclose(ramp, exact, atol=1e-11)


def test_holding_against_gravity_heats_the_winding_as_a_step(tmp_path: Path) -> None:
    robot = _pendulum(tmp_path)
    motor = px.DCMotor(
        resistance=1.2,
        torque_constant=0.06,
        back_emf_constant=0.06,
        rotor_inertia=1e-5,
        thermal_resistance=3.0,
        thermal_time_constant=25.0,
        ambient_temperature=30.0,
    )
    drives = {"j0": px.Drive(motor, px.Gear(40.0, efficiency=0.8))}
    t = np.linspace(0.0, 100.0, 201)
    q = np.full((t.size, 1), np.pi / 2)  # horizontal link, at rest
    zero = np.zeros_like(q)
    report = drive_requirements(robot, (t, q, zero, zero), drives=drives)
    tau = MASS * 9.81 * LENGTH / 2
    current = tau / (40.0 * 0.8 * 0.06)  # static: power flow τ q̇ = 0 counts as driving
    loss = 1.2 * current**2
    np.testing.assert_allclose(np.abs(report.current[:, 0]), current, rtol=1e-12)
    np.testing.assert_allclose(np.abs(report.voltage[:, 0]), 1.2 * current, rtol=1e-12)
    expected = 30.0 + 3.0 * loss * (1 - np.exp(-t / 25.0))
    np.testing.assert_allclose(report.winding_temperature[:, 0], expected, rtol=1e-12)
    assert report.peak_temperature[0] == pytest.approx(expected[-1], rel=1e-12)


def test_best_gear_ratio_is_the_inertia_matching_ratio(tmp_path: Path) -> None:
    robot = _pendulum(tmp_path)
    rotor = 1e-5
    motor = px.DCMotor(
        resistance=1.0,
        torque_constant=0.05,
        back_emf_constant=0.05,
        rotor_inertia=rotor,
        thermal_resistance=2.0,
        thermal_time_constant=20.0,
    )
    drives = {"j0": px.Drive(motor, px.Gear(10.0))}
    law = RestToRest(np.array([0.0]), np.array([2.0]), 0.5)
    optimum = np.sqrt(INERTIA / rotor)
    ratios = np.arange(40.0, 200.0, 2.0)
    for criterion in ("rms_motor_torque", "peak_temperature"):
        choice = best_gear_ratio(
            robot, law, "j0", ratios, drives=drives, gravity=False, criterion=criterion,
            samples=501,
        )  # fmt: skip
        assert abs(choice.ratio - optimum) <= 2.0, (criterion, choice.ratio, optimum)
    with pytest.raises(InvalidParameter, match="criterion must be one of"):
        best_gear_ratio(robot, law, "j0", ratios, drives=drives, criterion="mass")
    with pytest.raises(NameNotFound, match="Available drive names: j0"):
        best_gear_ratio(robot, law, "j1", ratios, drives=drives)


def test_flexible_link_root_moment_stress_and_tip_deflection() -> None:
    """The 2 m steel bar (1 cm square) under a hub acceleration α from rest: the inertial load
    μ α x gives the root moment μ α L³/3 exactly and, on a clamped Euler–Bernoulli beam, the tip
    deflection 11 μ α L⁵ / (120 E I)."""
    side, young, nu = 0.01, 1e11, 20
    second_moment = side**4 / 12
    robot = px.load_urdf(
        URDF / "flexible_arm.urdf",
        flexible=[px.FlexibleLink("bar", nu, young, second_moment)],
    )
    mu, length, alpha = 0.7876, 2.0, 3.0
    t = np.array([0.0, 1.0])
    q, v, a = np.zeros((2, 1)), np.zeros((2, 1)), np.full((2, 1), alpha)
    modulus = side**3 / 6
    report = drive_requirements(robot, (t, q, v, a), section_modulus={"bar": modulus})
    loads = report.flexible["bar"]
    moment = mu * alpha * length**3 / 3
    assert loads.peak_moment == pytest.approx(moment, rel=1e-9)
    assert report.peak_torque[report.joint_index("hub")] == pytest.approx(moment, rel=1e-9)
    assert loads.peak_stress == pytest.approx(moment / modulus, rel=1e-9)
    deflection = 11 * mu * alpha * length**5 / (120 * young * second_moment)
    assert loads.tip_deflection[0, 1] < 0  # lags behind the acceleration (+y)
    assert loads.peak_tip_deflection == pytest.approx(deflection, rel=1e-2)


def test_motion_shape_errors(tmp_path: Path) -> None:
    robot = _pendulum(tmp_path)
    t = np.linspace(0, 1, 5)
    with pytest.raises(InvalidParameter, match="expected the robot's"):
        drive_requirements(robot, (t, np.zeros((5, 2))))
    with pytest.raises(InvalidParameter, match="strictly increasing"):
        drive_requirements(robot, (t[::-1], np.zeros((5, 1))))
    motion = (t, np.zeros((5, 1)))
    with pytest.raises(NameNotFound, match="Available joint names: j0"):
        drive_requirements(robot, motion, drives={"j1": px.Drive(None, px.Gear(2.0))})
    with pytest.raises(NameNotFound, match="flexible link"):
        drive_requirements(robot, motion, section_modulus={"l0": 1e-6})


def test_stiff_elastic_transmission_converges_to_the_rigid_gear(tmp_path: Path) -> None:
    """Limiting case: θ = N (q + τ/c) → N q as c → ∞; the motor signals follow (error ∝ 1/c)."""
    robot = _pendulum(tmp_path)
    motor = px.DCMotor(
        resistance=1.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=1e-5
    )
    law = RestToRest(np.array([0.3]), np.array([1.0]), 1.0)
    rigid = drive_requirements(robot, law, drives={"j0": px.Drive(motor, px.Gear(50.0))})
    errors = []
    for stiffness in (1e4, 1e6):
        drives = {"j0": px.Drive(motor, px.ElasticTransmission(50.0, stiffness))}
        elastic = drive_requirements(robot, law, drives=drives)
        errors.append(np.abs(elastic.voltage - rigid.voltage).max())
        np.testing.assert_allclose(elastic.torque, rigid.torque, rtol=0, atol=1e-12)
    # ∝ 1/c down to the floor of numpy.gradient on 1001 samples (the elastic motor angle is
    # differentiated numerically, the rigid one exactly)
    assert errors[1] < 5e-2 * errors[0] and errors[1] < 1e-4 * rigid.peak_voltage[0]


def test_spatial_bending_root_moments_about_both_axes() -> None:
    """Spatial bending with torsion: the hub acceleration bends the bar in the plane (μαL³/3),
    gravity out of the plane (μgL²/2, sag ≈ μgL⁴/8EI); the torsion joints carry no stress."""
    second_moment = 0.01**4 / 12
    link = px.FlexibleLink(
        "bar", 10, 1e11, (second_moment, second_moment),
        shear_modulus=8e10, polar_moment=2 * second_moment,
    )  # fmt: skip
    robot = px.load_urdf(URDF / "flexible_arm.urdf", flexible=[link])
    mu, length, alpha, g = 0.7876, 2.0, 3.0, 9.81
    t = np.array([0.0, 1.0])
    zero, a = np.zeros((2, 1)), np.full((2, 1), alpha)
    report = drive_requirements(robot, (t, zero, zero, a), section_modulus={"bar": 1e-6 / 6})
    loads = report.flexible["bar"]
    expected = [mu * alpha * length**3 / 3, mu * g * length**2 / 2]
    np.testing.assert_allclose(loads.root_moment[0], expected, rtol=1e-9)
    np.testing.assert_allclose(loads.stress[0], sum(expected) / (1e-6 / 6), rtol=1e-9)
    sag = mu * g * length**4 / (8 * 1e11 * second_moment)
    assert loads.tip_deflection[0, 2] == pytest.approx(-sag, rel=1e-2)
