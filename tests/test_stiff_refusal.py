"""Cost and stability before the run (issue 59): sampled laws whose gains the period cannot
carry are refused at the start with the stable period, a diverging sampled run stops at its
first sign, and absurd sample counts of ``pinext check`` are refused at the boundary.

The runs here take the Python path (``PINEXT_NO_COMPILED=1``): what is tested happens before
the integration (the held loop's check) or at the law's samples (the divergence guard), which
both paths share, and the Python path needs no kernel compilation.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.check import MAX_SAMPLES, check_model
from pinext.control import ImpedanceController, JointPD
from pinext.exceptions import IntegrationError, InvalidParameter, SingularConfiguration
from pinext.simulation.arguments import MIN_CONTROL_PERIOD
from pinext.simulation.held_loop import held_pd_period

SLIDER = """<robot name="slider">
  <link name="base"/>
  <link name="cart">
    <inertial><origin xyz="0 0 0"/><mass value="{mass}"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
  </link>
  <joint name="slide" type="prismatic">
    <parent link="base"/><child link="cart"/><axis xyz="1 0 0"/>
    <limit lower="-100" upper="100" effort="1e9" velocity="1e9"/>
  </joint>
</robot>
"""
#: A pose of the six-DOF arm away from its singularities [rad].
ARM_Q0 = np.array([0.3, -0.6, 1.2, -0.4, 0.8, 0.2])


@pytest.fixture(autouse=True)
def _python_path(monkeypatch):
    monkeypatch.setenv("PINEXT_NO_COMPILED", "1")


def _slider(tmp_path: Path, mass: float) -> px.System:
    path = tmp_path / "slider.urdf"
    path.write_text(SLIDER.format(mass=mass), encoding="utf-8")
    return px.System(px.load_urdf(str(path)))


def _closed_form_growth(mass, kp, kd, period, periods):
    """|z|^N of the held PD's one-period map [[1 - kT²/2m, T - dT²/2m], [-kT/m, 1 - dT/m]]."""
    a, b = kp * period / mass, kd * period / mass
    step = np.array([[1 - a * period / 2, period * (1 - b / 2)], [-a, 1 - b]])
    return float(np.abs(np.linalg.eigvals(step)).max() ** periods)


def _held_run(system, kp, kd, period, **kw):
    law = JointPD(system, 0.0, kp, kd)
    return px.simulate(
        system,
        300 * period,
        q0=np.array([0.1]),
        control=law,
        control_period=period,
        output_dt=period,
        progress=False,
        **kw,
    )


@pytest.mark.parametrize(("mass", "kp", "kd"), [(2.0, 400.0, 20.0), (0.5, 1e4, 10.0)])
def test_held_pd_bound_against_the_closed_form(tmp_path, mass, kp, kd):
    """T* = min(2m/d, 2d/k) (Jury's test on the held double integrator): 10 % below it the
    run decays over 300 periods as |z|^300 of the closed form (to the factor 4 that the
    mode shape and the phase of the last peak allow), 10 % above it is refused with the
    stable period (the check's bisection finds
    T* to its 1 % step), and it grows."""
    system = _slider(tmp_path, mass)
    bound = held_pd_period(mass, kp, kd)
    assert bound == pytest.approx(min(2 * mass / kd, 2 * kd / kp), rel=1e-15)
    below = _held_run(system, kp, kd, 0.9 * bound)
    expected = _closed_form_growth(mass, kp, kd, 0.9 * bound, 300)
    envelope = np.abs(below.q[-20:, 0]).max() / 0.1  # the last ~ oscillation's peak
    assert envelope < 1.0 and expected / 4 < envelope < 4 * expected
    with pytest.warns(RuntimeWarning) as caught:  # |z| ~ 1.05 a period: warned, not refused
        above = _held_run(system, kp, kd, 1.1 * bound)
    message = str(caught[0].message)
    assert "control_period" in message and "slide" in message
    stable = float(message.split("longest stable period here is ")[1].split(" s")[0])
    assert stable == pytest.approx(bound, rel=0.02)
    expected = _closed_form_growth(mass, kp, kd, 1.1 * bound, 300)
    envelope = np.abs(above.q[-20:, 0]).max() / 0.1  # the stops at ±100 m cap it at 1000
    assert envelope > 1.0 and min(expected / 4, 900.0) < envelope < 4 * expected


def test_held_p_term_without_damping_is_never_stable(tmp_path):
    assert held_pd_period(1.0, 100.0, 0.0) == 0.0
    system = _slider(tmp_path, 1.0)
    with pytest.raises(InvalidParameter, match="control_period"):
        _held_run(system, 1e8, 0.0, 1e-3)


def _arm_impedance(stiffness: float):
    robot = px.load_robot("six_dof_arm")
    system = px.System(robot)
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, ARM_Q0)
    pose = data.oMf[robot.model.getFrameId("tool")]
    return system, ImpedanceController(system, "tool", pose, stiffness)


@pytest.mark.parametrize("stiffness", [500.0, 1e9, 1e11, 1e13, 1e15])
def test_impedance_gain_the_period_cannot_carry_is_refused_at_the_start(stiffness):
    """The issue's ImpedanceController(…, 500) at the default 1 ms, and gains up to 1e15:
    refused before the run, naming control_period, the joint and the stable period; a
    stable period shorter than any control_period a run accepts is said to be so, with the
    other ways out (continuous control, lower gains) instead of an impossible period."""
    system, law = _arm_impedance(stiffness)
    with pytest.raises(InvalidParameter) as caught:
        px.simulate(system, 0.1, q0=ARM_Q0, control=law, progress=False)
    message = str(caught.value)
    assert "control_period=0.001 s is too long" in message
    assert "wrist_3" in message and "longest stable period" in message
    assert "control_period=0" in message and "lower the gains" in message
    stable = float(message.split("longest stable period here is ")[1].split(" s")[0])
    if stable >= MIN_CONTROL_PERIOD:  # K = 500: 0.61 ms, a period the user can choose
        assert "shorten control_period" in message
    else:  # K >= 1e9: 0.4 µs and below, shorter than any period a run accepts
        assert f"below the shortest control_period a run accepts ({MIN_CONTROL_PERIOD:g} s)" in (
            message
        )
        assert "no sampled period carries these gains" in message
        assert "shorten control_period" not in message


def test_diverging_sampled_run_stops_at_its_first_sign():
    """Forced, the unstable held impedance loop stops at its first sign: when a joint passes
    1e5 rad/s (the run's divergence, naming the joint), or when the diverging arm reaches a
    singular configuration the law refuses, whichever comes first (the latter, about 0.04 s
    into the run, on this arm)."""
    system, law = _arm_impedance(500.0)
    with pytest.raises((IntegrationError, SingularConfiguration)) as caught:
        px.simulate(system, 0.1, q0=ARM_Q0, control=law, progress=False, force=True)
    if isinstance(caught.value, IntegrationError):
        assert caught.value.time < 0.06
        assert "diverges: joint wrist" in str(caught.value)


def test_stable_impedance_runs():
    system, law = _arm_impedance(50.0)
    traj = px.simulate(system, 0.05, q0=ARM_Q0, control=law, progress=False)
    assert traj.t[-1] == pytest.approx(0.05, abs=1e-12)


def test_check_refuses_absurd_sample_counts():
    model = px.load_robot("planar3r").model
    with pytest.raises(InvalidParameter, match=f"samples = 100000000 .* at most {MAX_SAMPLES}"):
        check_model(model, samples=100_000_000)
