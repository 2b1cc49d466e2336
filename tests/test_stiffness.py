"""estimate_stiffness: the spectral radius of the linearised system, against closed forms and
Pinocchio's computeABADerivatives."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.drives import DCMotor, Drive, ElasticTransmission
from pinext.simulation.stiffness import (
    DOP853_STABILITY_BOUND,
    dop853_steps,
    estimate_stiffness,
    linearised_matrix,
    unresolvable_vibrations,
)
from tests.conftest import URDF, pendulum_urdf

#: Central differences with step sqrt(eps): relative error about sqrt(eps) times the ratio of
#: the right-hand side's size to its derivative's; 1e-6 leaves a margin of a hundred.
RTOL = 1e-6


def _link(tmp_path, stiffness: float, damping: float) -> tuple[px.Robot, float]:
    path = tmp_path / "link.urdf"
    path.write_text(pendulum_urdf(n=1, length=0.5, mass=2.0))
    robot = px.load_urdf(path)
    robot.model.gravity.linear[:] = 0.0
    robot.joint_stiffness[:] = stiffness
    robot.joint_damping[:] = damping
    inertia = pin.crba(robot.model, robot.model.createData(), robot.neutral())[0, 0]
    return robot, inertia


def test_undamped_spring_gives_its_natural_frequency(tmp_path):
    robot, J = _link(tmp_path, stiffness=4.0e3, damping=0.0)
    assert estimate_stiffness(px.System(robot)) == pytest.approx(np.sqrt(4.0e3 / J), rel=RTOL)


def test_overdamped_spring_gives_its_fast_decay_rate(tmp_path):
    K, D = 4.0e3, 5.0e2
    robot, J = _link(tmp_path, stiffness=K, damping=D)
    fast = (D + np.sqrt(D**2 - 4 * K * J)) / (2 * J)  # roots of J s^2 + D s + K
    assert estimate_stiffness(px.System(robot)) == pytest.approx(fast, rel=RTOL)


def test_very_stiff_transmission_asks_dop853_for_millions_of_steps(tmp_path):
    robot, J_link = _link(tmp_path, stiffness=0.0, damping=0.0)
    c, N = 1e15, 50.0
    drive = Drive(DCMotor(1.0, 0.05, 0.0, 3e-5), ElasticTransmission(N, c, input_inertia=1e-5))
    system = px.System(robot, drives={"j0": drive})
    J_m = 3e-5 + 1e-5
    resonance = np.sqrt(c * (1 / J_link + 1 / (N**2 * J_m)))  # two-inertia closed form
    assert estimate_stiffness(system) == pytest.approx(resonance, rel=RTOL)
    steps = dop853_steps(system, 1.0)
    assert steps == pytest.approx(resonance / DOP853_STABILITY_BOUND, rel=RTOL)
    assert steps > 1e7  # for one simulated second


def test_matrix_matches_aba_derivatives_away_from_rest():
    robot = px.load_urdf(URDF / "planar3r.urdf")
    system = px.System(robot)
    rng = np.random.default_rng(7)
    q, v = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
    x0 = system.initial_state(q, v)
    data = robot.model.createData()
    pin.computeABADerivatives(robot.model, data, q, v, np.zeros(3))
    n = robot.nv
    reference = np.block([[np.zeros((n, n)), np.eye(n)], [data.ddq_dq, data.ddq_dv]])
    matrix = linearised_matrix(system, x0)
    scale = np.abs(reference).max()
    np.testing.assert_allclose(matrix, reference, rtol=0, atol=RTOL * scale)
    rho = np.abs(np.linalg.eigvals(reference)).max()
    assert estimate_stiffness(system, x0) == pytest.approx(rho, rel=RTOL)


def test_floating_base_is_linearised_in_the_tangent_space(tmp_path):
    base = (
        '<link name="base"><inertial><mass value="3"/>'
        '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>'
    )
    path = tmp_path / "floating.urdf"
    path.write_text(pendulum_urdf(n=2).replace('<link name="base"/>', base))
    robot = px.load_urdf(path, root_joint="freeflyer")
    system = px.System(robot)
    matrix = linearised_matrix(system, system.initial_state())
    assert matrix.shape == (2 * robot.nv, 2 * robot.nv)
    # a free-falling body: the velocity rows do not depend on the base position
    np.testing.assert_allclose(matrix[robot.nv :, :3], 0.0, atol=1e-6)
    assert np.isfinite(estimate_stiffness(system))


def test_simulate_switches_to_radau_when_stiff_from_the_start(tmp_path, monkeypatch, caplog):
    """A transmission of 1e15 N.m/rad: the default method becomes Radau (an INFO record of the
    ``pinext`` logger, no warning) and the run finishes; an explicit DOP853 is kept, with the
    advice (a warning: the user chose the method)."""
    robot, _ = _link(tmp_path, 0.0, 0.0)
    motor = DCMotor(1.0, 0.05, 0.05, 1e-5)
    system = px.System(robot, drives={"j0": Drive(motor, ElasticTransmission(50.0, 1e15))})
    with warnings.catch_warnings(), caplog.at_level("INFO", logger="pinext"):
        warnings.simplefilter("error")
        traj = px.simulate(system, 0.5)
    assert "integrating with method='Radau'" in caplog.text
    assert traj.meta["stats"]["method"] == "Radau"
    assert traj.t[-1] == 0.5
    # an explicit DOP853 is kept (a short run, with the threshold lowered to reach it)
    monkeypatch.setattr(sys.modules["pinext.simulation.simulate"], "STIFF_STEPS", 10.0)
    with pytest.warns(RuntimeWarning, match="stiff from the start"):
        traj = px.simulate(system, 1e-6, control=[1.0], method="DOP853")
    assert traj.meta["stats"]["method"] == "DOP853"


def test_python_path_keeps_dop853_where_radau_has_no_analytic_jacobian(robots_dir, monkeypatch):
    """On the Python path a phase with constraint rows (the Allegro hand's joints stuck by
    their URDF friction) gives scipy's Radau no analytic Jacobian: it estimates one by finite
    differences, again whenever Newton stalls (5 980 of them in 6 118 steps, 165 000
    evaluations). DOP853's stiffness test fires at 0.84 s, but its stability needs only
    t ρ / 6.1 ≈ 2 700 steps for the run, far below STIFF_STEPS: DOP853 keeps the run."""
    from pinext.simulation.simulate import STIFF_STEPS
    from tests.models import assert_sound_run, random_pose

    monkeypatch.setenv("PINEXT_NO_COMPILED", "1")
    path = next(robots_dir.rglob("allegro_left_hand.urdf"))
    robot = px.load_urdf(path, package_dirs=[str(path.parents[2])])
    q0 = random_pose(robot.model, np.random.default_rng(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj = px.simulate(robot, 2.0, q0=q0, progress=False)
    stats = traj.meta["stats"]
    assert 2.0 * stats["spectral_radius"] / DOP853_STABILITY_BOUND < STIFF_STEPS
    assert stats["method"] == "DOP853" and stats["switched_to_radau_at"] is None
    assert stats["compiled_segments"] == 0
    assert_sound_run(robot.model, traj)


@pytest.mark.parametrize(
    ("damping", "t_final"),
    [(2.0, 1.0), (2.0, 0.01), (0.05, 1.0), (0.0, 1.0), (0.5, 1.0), (0.5, 0.05)],
)
def test_decaying_fast_modes_against_the_closed_form(tmp_path, damping, t_final):
    """A link on a spring and a damper, J q̈ + c q̇ + k q = 0: the eigenvalues are the roots of
    J s² + c s + k; the run is classed stiff exactly when a root is fast
    (t_final |s| / 6.1 > FAST_STEPS) and every fast root decays by e^-DECAY within the run.
    The cases sit on both sides of both bounds; a stiff class makes simulate start with
    Radau, the other keeps DOP853."""
    from pinext.simulation.stiffness import DECAY, FAST_STEPS, decaying_fast_modes, spectrum

    robot, J = _link(tmp_path, stiffness=4.0e6, damping=damping)
    roots = np.roots([J, damping, 4.0e6])
    fast = np.abs(roots) * t_final / DOP853_STABILITY_BOUND > FAST_STEPS
    expected = bool(fast.any() and np.all(-roots[fast].real * t_final >= DECAY))
    system = px.System(robot)
    eigenvalues = spectrum(system)
    np.testing.assert_allclose(np.sort_complex(eigenvalues), np.sort_complex(roots), rtol=RTOL)
    assert decaying_fast_modes(eigenvalues, t_final) is expected
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        run = px.simulate(system, t_final, q0=np.array([0.01]), rtol=1e-6)
    assert run.meta["stats"]["method"] == ("Radau" if expected else "DOP853")


def test_an_undamped_vibration_too_fast_to_resolve_is_reported_at_the_start(tmp_path):
    """An undamped elastic transmission of 1e11 N.m/rad on a pendulum rings at
    ``ω² = k (1 / (J_rotor n²) + 1 / J_link)``: the start of the run says so, with its
    frequency, before any step is taken (the control law stops the run at its first call)."""

    path = tmp_path / "p.urdf"
    path.write_text(pendulum_urdf(1))
    motor = DCMotor(
        resistance=200.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=1e-5
    )
    system = px.System(
        px.load_urdf(path), drives={"j0": Drive(motor, ElasticTransmission(50.0, 1e11, 0.0))}
    )
    robot = px.load_urdf(path)
    link = pin.crba(robot.model, robot.data, np.zeros(1))[0, 0]  # [kg.m^2]
    rotor = 1e-5 * 50.0**2  # reflected to the joint [kg.m^2]
    expected = np.sqrt(1e11 * (1 / rotor + 1 / link)) / (2 * np.pi)  # two masses, one spring

    class Stop(Exception):
        pass

    def law(t, x):
        if t > 0.0:  # past the checks at the start
            raise Stop
        return np.zeros(1)

    with pytest.warns(RuntimeWarning, match="undamped vibration at") as caught:
        with pytest.raises(Stop):
            px.simulate(system, 1.0, control=law)
    assert unresolvable_vibrations(np.array([-1.0 + 1e3j, -1.0 - 1e3j]), 1.0)[1] > 0
    assert unresolvable_vibrations(np.array([-1e4 + 1e3j, -1e4 - 1e3j]), 1.0) == (0.0, 0.0)
    message = next(str(w.message) for w in caught if "undamped" in str(w.message))
    frequency = float(message.split("vibration at ")[1].split(" Hz")[0])
    assert frequency == pytest.approx(expected, rel=2e-3)  # printed to 3 digits


def test_an_excited_vibration_takes_between_the_reported_bounds(tmp_path):
    """A pendulum behind an undamped elastic transmission (k = 1e6 N.m/rad), started with the
    link moving and the rotor at rest, rings at its two-mass frequency f. The start of a run
    reports at least ``2π f T / 6.1`` steps (DOP853's stability) and up to about
    ``excited_steps`` once the vibration is excited (its local error grows as (h ω)^8,
    calibrated where the vibration sets the error's scale: a harmonic oscillator). The steps
    taken lie between the two at rtol 1e-8 and 1e-10 (20 % margin on the upper one, its
    calibration's spread)."""
    from pinext.simulation.stiffness import DOP853_STABILITY_BOUND, excited_steps

    path = tmp_path / "p.urdf"
    path.write_text(pendulum_urdf(1))
    robot = px.load_urdf(path)
    motor = DCMotor(
        resistance=200.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=1e-5
    )
    link = pin.crba(robot.model, robot.data, np.zeros(1))[0, 0]
    frequency = np.sqrt(1e6 * (1 / (1e-5 * 50.0**2) + 1 / link)) / (2 * np.pi)
    t_final = 0.05
    least = 2 * np.pi * frequency * t_final / DOP853_STABILITY_BOUND
    for rtol in (1e-8, 1e-10):
        system = px.System(robot, drives={"j0": Drive(motor, ElasticTransmission(50.0, 1e6, 0.0))})
        run = px.simulate(
            system, t_final, q0=np.zeros(1), v0=np.ones(1), rtol=rtol, method="DOP853"
        )
        steps = run.meta["stats"]["nfev"] / 12
        assert least < steps < 1.2 * excited_steps(frequency, t_final, rtol), (rtol, steps)
