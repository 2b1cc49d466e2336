"""Gear efficiency (seed 000 after (20.69)) and the energy audit of driven robots."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from scipy.integrate import simpson

import pinext as px
from pinext.drives import DCMotor, Drive, ElasticTransmission, Gear

from .conftest import pendulum_urdf
from .test_drives import rhs

ETA_D, ETA_B = 0.8, 0.5


def motor(**kw) -> DCMotor:
    params = dict(resistance=1.2, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=2e-5)
    params.update(kw)
    return DCMotor(**params)


@pytest.fixture
def link(tmp_path: Path) -> px.Robot:
    path = tmp_path / "link.urdf"
    path.write_text(pendulum_urdf(n=1, length=0.4, mass=1.5))
    return px.load_urdf(path)


def test_driving_and_backdriving_scale_torque_and_reflected_inertia(link):
    """(20.69) with N eta' (driving) or N / eta'' (backdriving), rotor inertia included."""
    m, N = motor(), 50.0
    system = px.System(
        link, drives={"j0": Drive(m, Gear(N, efficiency=ETA_D, backdrive_efficiency=ETA_B))}
    )
    model, data = link.model, link.model.createData()
    q, v = np.array([0.3]), np.array([0.2])
    H = pin.crba(model, data, q)[0, 0]
    h = pin.nonLinearEffects(model, data, q, v)[0]
    for u, expected in ((12.0, "D"), (-12.0, "B")):
        x = system.initial_state(q, v)
        phase = system.initial_phase(0.0, x, [u])
        assert str(phase.get("drives")) == expected
        e = ETA_D if expected == "D" else 1 / ETA_B
        tau_s = m.torque_constant * (u - m.back_emf_constant * N * v[0]) / m.resistance
        a_hand = (e * N * tau_s - h) / (H + e * m.rotor_inertia * N**2)
        a = rhs(system, x, [u], phase)[system.layout["v"]][0]
        assert a == pytest.approx(a_hand, rel=1e-12)
        M = tau_s - m.rotor_inertia * N * a_hand  # torque entering the gear
        assert M * N * v[0] * (1 if expected == "D" else -1) > 0  # the mode's power flow


def test_gear_holds_a_load_between_its_efficiency_bounds(link):
    """At rest the gear holds the joint while eta'' tau_req <= N tau_s <= tau_req / eta'."""
    m, N = motor(), 50.0
    gear = Gear(N, efficiency=ETA_D, backdrive_efficiency=ETA_B)
    system = px.System(link, drives={"j0": Drive(m, gear)})
    q0 = np.array([1.0])
    g = pin.computeGeneralizedGravity(link.model, link.model.createData(), q0)[0]
    hold = 0.5 * (ETA_B + 1 / ETA_D) * g  # N tau_s in the middle of the holding band
    u_hold = hold / N * m.resistance / m.torque_constant
    traj = px.simulate(system, 0.2, q0=q0, control=[u_hold])
    assert traj.phases[0].name == "S" and not traj.events
    assert np.abs(traj.q - q0).max() == 0.0
    # below the band gravity backdrives the gear; above it the motor drives the joint
    for factor in (0.9 * ETA_B, 1.1 / ETA_D):
        u = factor * g / N * m.resistance / m.torque_constant
        traj = px.simulate(system, 0.05, q0=q0, control=[u])
        first = traj.phases[0].name
        assert first.upper() == ("B" if factor < 1 else "D"), first
        # the joint moves the way the stronger side pushes it
        assert np.sign(traj.q[-1, 0] - q0[0]) == (-np.sign(g) if factor < 1 else np.sign(g))


def _integral(traj: px.Trajectory, values: np.ndarray) -> float:
    """Simpson's rule phase by phase (samples at events appear twice)."""
    total = 0.0
    for k in range(len(traj.phases)):
        idx = np.flatnonzero(traj.phase_index == k)
        if idx.size >= 3:
            total += simpson(values[idx], x=traj.t[idx])
        elif idx.size == 2:
            total += np.trapezoid(values[idx], traj.t[idx])
    return total


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    path = tmp_path_factory.mktemp("audit") / "arm.urdf"
    path.write_text(pendulum_urdf(n=2, length=0.3, mass=1.0))
    robot = px.load_urdf(path)
    drives = {
        "j0": Drive(
            motor(inductance=2e-3, viscous_friction=2e-6),
            Gear(
                50.0,
                efficiency=ETA_D,
                backdrive_efficiency=ETA_B,
                input_inertia=5e-6,
                output_inertia=0.01,
            ),
        ),
        "j1": Drive(
            motor(viscous_friction=1e-6, voltage_limit=4.0),
            ElasticTransmission(30.0, 300.0, 0.05, input_inertia=1e-6),
        ),
    }
    system = px.System(robot, drives=drives)

    def voltage(t, x):
        return np.array([6.0 * np.sin(2 * np.pi * 1.5 * t), 5.0 * np.sin(2 * np.pi * t)])

    traj = px.simulate(system, 1.0, q0=np.array([0.5, -0.4]), control=voltage, output_dt=2.5e-4)
    return system, traj


def test_energy_audit_closes(audited):
    """∫ u i dt = copper + friction + efficiency losses + Δ(kinetic + gravity + spring + ...)."""
    system, traj = audited
    balance = traj.energy_balance()
    assert balance.max_relative() < 1e-6
    out = traj.outputs
    supplied = _integral(traj, out["drives.electrical_power"].sum(axis=1))
    losses = sum(
        _integral(traj, out[f"drives.{k}"].sum(axis=1))
        for k in ("copper_loss", "friction_loss", "efficiency_loss", "conversion_loss")
    )
    stored = out["energy.kinetic"] + out["energy.gravity"] + out["energy.drives"]
    jumps = sum(e.info.get("energy_loss", 0.0) for e in traj.events)
    residual = supplied - losses - (stored[-1] - stored[0]) - jumps
    scale = max(abs(supplied), abs(losses), np.abs(stored - stored[0]).max())
    assert abs(residual) < 1e-6 * scale
    # the efficiency losses are real and only ever remove energy
    eff = out["drives.efficiency_loss"][:, 0]
    assert eff.min() >= -1e-12 * np.abs(eff).max() and _integral(traj, eff) > 0.01 * losses
    # the spring and rotor of the elastic drive store energy that the audit counts
    assert np.abs(out["energy.drives"]).max() > 0
    # the voltage limit holds
    assert np.nanmax(np.abs(out["drives.voltage"][:, 1])) == pytest.approx(4.0)


def test_driving_backdriving_switch_does_not_chatter(audited):
    system, traj = audited
    gear_events = [e for e in traj.events if e.name.startswith("j0.")]
    # 1.5 periods of the voltage: a few sign changes of torque and speed per period
    assert 2 <= len(gear_events) <= 16, [e.name for e in gear_events]
    times = np.array([e.t for e in gear_events])
    assert np.all(np.diff(times) > 1e-4)  # no burst of events at one switch
    modes = {p.name for p in traj.phases}
    assert {"D", "B"} <= {m.upper() for m in modes}
