"""Gear backlash (pinext.drives.backlash) and the amplifier's limits of a DC motor: lost motion,
flank impacts against the two-body closed form, the energy audit, the speed-torque envelope,
and combinations with flexible links and joint limits."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.drives import DCMotor, Drive, ElasticTransmission, Gear
from pinext.exceptions import InvalidParameter
from pinext.robots import robot_path

from .conftest import pendulum_urdf

ROOT = Path(__file__).resolve().parents[1]
#: Inertia of the disc about its vertical joint axis [kg.m^2].
J_LINK = 0.05
B = np.deg2rad(0.5)  # total play [rad]
N = 50.0
J_IN = 2e-5  # motor-side inertia [kg.m^2]
I_M = J_IN * N**2  # reflected [kg.m^2]


def turntable_urdf(lower: float = -100.0, upper: float = 100.0) -> str:
    """A disc on a vertical revolute joint: no gravity torque."""
    return (
        '<robot name="turntable"><link name="base"/>'
        '<joint name="j" type="revolute"><parent link="base"/><child link="disc"/>'
        f'<axis xyz="0 0 1"/><limit lower="{lower}" upper="{upper}" effort="100" velocity="100"/>'
        '</joint><link name="disc"><inertial><origin xyz="0 0 0"/><mass value="2"/>'
        f'<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="{J_LINK}"/></inertial>'
        "</link></robot>"
    )


@pytest.fixture
def turntable(tmp_path: Path) -> px.Robot:
    path = tmp_path / "turntable.urdf"
    path.write_text(turntable_urdf())
    return px.load_urdf(path)


def _system(robot, restitution=0.0, actuator=None, **kw) -> px.System:
    gear = Gear(N, input_inertia=J_IN, backlash=B, restitution=restitution)
    return px.System(robot, drives={"j": Drive(actuator, gear)}, **kw)


def _on_backward_flank(system: px.System, q=0.0) -> np.ndarray:
    x0 = system.initial_state(np.array([q]), np.zeros(1))
    x0[system.layout["drives.play_angle"]] = -B / 2
    return x0


def _at(traj: px.Trajectory, t: float) -> tuple[int, int]:
    """The samples just before and just after an event at t."""
    at = np.flatnonzero(traj.t == t)
    return int(at[0]), int(at[-1])


# ------------------------------------------------------------------------ lost motion
def test_lost_motion_equals_the_backlash(turntable):
    """From rest on the backward flank, a constant motor torque T turns the motor through the
    play while the link stays: it meets the forward flank after the motor travelled b (at the
    joint), at t* = sqrt(2 b I_m / (N T)) (uniform acceleration N T / I_m)."""
    T = 0.02
    system = _system(turntable)
    x0 = _on_backward_flank(system)
    traj = px.simulate(system, 0.04, x0=x0, control=[T])
    engage = traj.events[0]
    assert engage.name == "j.backlash_engages" and engage.info["flank"] == ">"
    assert engage.t == pytest.approx(np.sqrt(2 * B * I_M / (N * T)), rel=1e-9)
    before, _ = _at(traj, engage.t)
    motor = traj.outputs["drives.motor_angle"][:, 0] / N
    assert abs(traj.q[before, 0] - traj.q[0, 0]) == 0.0  # the link never moved
    assert abs((motor[before] - motor[0]) - B) < 1e-9  # the lost motion
    assert np.abs(traj.outputs["drives.joint_torque"][:before, 0]).max() == 0.0


def test_lost_motion_of_a_reversal_on_a_two_link_arm(tmp_path):
    """A pendulum of two links: the drive of j0 reverses its torque while the arm hangs on the
    forward flank; the motor crosses the play (b at the joint) before the arm feels it, and
    the arm's motion over the crossing is its own (gravity), not the motor's."""
    path = tmp_path / "p.urdf"
    path.write_text(pendulum_urdf(n=2, length=0.3, mass=0.8))
    robot = px.load_urdf(path)
    gear = Gear(N, input_inertia=J_IN, backlash=B)
    system = px.System(robot, drives={"j0": Drive(None, gear)}, joint_limits=False)
    q0 = np.array([0.0, 0.0])  # hanging: no gravity torque, the gear centred in its play
    x0 = system.initial_state(q0, np.zeros(2))
    assert x0[system.layout["drives.play_angle"]][0] == 0.0
    traj = px.simulate(system, 0.05, x0=x0, control=[-0.05])
    engage = traj.events[0]
    assert engage.info["flank"] == "<"
    before, _ = _at(traj, engage.t)
    play = traj.outputs["drives.play"][:, 0]
    assert abs(play[before] - play[0] + B / 2) < 1e-9  # half the play from the centre
    assert np.abs(traj.q[: before + 1] - q0).max() == 0.0  # hanging at rest, untouched


# ------------------------------------------------------------------------ impacts
@pytest.mark.parametrize("e", [0.0, 0.3, 0.8])
def test_engagement_impulse_is_the_two_body_impact(turntable, e):
    """Two rotating inertias I_m = J N² and J_l meeting at Δω:
    P = (1 + e) I_m J_l/(I_m + J_l) Δω, the link leaves at P/J_l, the motor at Δω − P/I_m
    (joint side), and the energy audit books ½ (1 − e²) μ Δω²."""
    T = 0.02
    system = _system(turntable, restitution=e)
    traj = px.simulate(system, 0.035, x0=_on_backward_flank(system), control=[T])
    event = traj.events[0]
    dw = np.sqrt(2 * B * N * T / I_M)  # approach speed at the forward flank
    mu = I_M * J_LINK / (I_M + J_LINK)
    P = (1 + e) * mu * dw
    assert -event.info["approach_velocity"] == pytest.approx(dw, rel=1e-9)
    assert event.info["impulse"] == pytest.approx(P, rel=1e-9)
    assert event.info["bounce"] is (e > 0)
    _, after = _at(traj, event.t)
    assert traj.v[after, 0] == pytest.approx(P / J_LINK, rel=1e-9)
    motor = traj.outputs["drives.motor_velocity"][after, 0] / N
    assert motor == pytest.approx(dw - P / I_M, rel=1e-9, abs=1e-12)
    assert event.info["energy_loss"] == pytest.approx(0.5 * (1 - e * e) * mu * dw**2, rel=1e-9)


def test_default_restitution_is_the_documented_plastic_impact(turntable):
    """Gear's docstring: ``restitution`` is Newton's e of the flanks' impact, "0: plastic", and
    the field's default is 0. A gear built without it therefore meets the forward flank as a
    plastic two-body impact: no bounce, the impulse μ Δω (Newton's law with e = 0), and the
    motor and the link leave the flank together at the momentum-conserving speed
    I_m Δω / (I_m + J_l), i.e. no relative velocity at the flank after the impact."""
    assert inspect.signature(Gear).parameters["restitution"].default == 0.0
    gear = Gear(N, input_inertia=J_IN, backlash=B)  # restitution not given
    assert gear.restitution == 0.0
    system = px.System(turntable, drives={"j": Drive(None, gear)})
    T = 0.02
    traj = px.simulate(system, 0.035, x0=_on_backward_flank(system), control=[T])
    event = traj.events[0]
    assert event.name == "j.backlash_engages" and event.info["bounce"] is False
    dw = np.sqrt(2 * B * N * T / I_M)  # approach speed at the forward flank (uniform accel.)
    mu = I_M * J_LINK / (I_M + J_LINK)
    # rel=1e-9: the event's instant and the state are located to the integrator's tolerance
    assert event.info["impulse"] == pytest.approx(mu * dw, rel=1e-9)
    _, after = _at(traj, event.t)
    link = traj.v[after, 0]
    motor = traj.outputs["drives.motor_velocity"][after, 0] / N  # at the joint
    assert link == pytest.approx(I_M * dw / (I_M + J_LINK), rel=1e-9)
    assert abs(motor - link) <= 1e-9 * link  # plastic: the flanks stay together


def test_engagement_impulse_on_a_two_link_arm_against_the_effective_inertia(tmp_path):
    """With a mechanism of several joints the flank meets the joint's effective inertia
    1/(M⁻¹)_jj (Pinocchio's crba without the motor): P = (1+e) |ġ⁻| / (1/I_m + (M⁻¹)_jj)."""
    path = tmp_path / "p.urdf"
    path.write_text(pendulum_urdf(n=2, length=0.3, mass=0.8))
    robot = px.load_urdf(path)
    e = 0.5
    gear = Gear(N, input_inertia=J_IN, backlash=B, restitution=e)
    system = px.System(robot, drives={"j0": Drive(None, gear)}, joint_limits=False)
    rng = np.random.default_rng(7)
    q0, v0 = rng.uniform(-0.5, 0.5, 2), rng.uniform(-1, 1, 2)
    x0 = system.initial_state(q0, v0)
    x0[system.layout["drives.play_angle"]] = 0.0
    x0[system.layout["drives.play_velocity"]] = 3.0  # the motor runs ahead into the flank
    traj = px.simulate(system, 0.01, x0=x0, control=[0.0])
    event = traj.events[0]
    before, after = _at(traj, event.t)
    model = robot.model  # no armature: the mechanism without the motor
    minv = np.linalg.inv(pin.crba(model, model.createData(), traj.q[before]))
    closing = -event.info["approach_velocity"]
    P = (1 + e) * closing / (1 / I_M + minv[0, 0])
    assert event.info["impulse"] == pytest.approx(P, rel=1e-9)
    assert traj.v[after] - traj.v[before] == pytest.approx(minv[:, 0] * P, rel=1e-9, abs=1e-12)


def test_energy_audit_books_every_engagement_loss(turntable):
    """Torque reversals with e = 0.5: every flank impact (bounces, then the plastic one that
    ends a cascade) books ½ (1 − e_k²) μ ġ⁻² (e_k = e on a bounce, 0 on the last one), and
    the energy balance closes."""
    T, e = 0.02, 0.5
    system = _system(turntable, restitution=e)

    def torque(t, x):
        return [T if t < 0.2 else (-T if t < 0.4 else 0.0)]

    traj = px.simulate(system, 0.5, x0=_on_backward_flank(system), control=torque)
    impacts = [ev for ev in traj.events if ev.info.get("impulse")]
    assert len(impacts) >= 8 and any(not ev.info["bounce"] for ev in impacts)
    mu = I_M * J_LINK / (I_M + J_LINK)
    for ev in impacts:
        ek = e if ev.info["bounce"] else 0.0
        expected = 0.5 * (1 - ek * ek) * mu * ev.info["approach_velocity"] ** 2
        assert ev.info["energy_loss"] == pytest.approx(expected, rel=1e-9)
    balance = traj.energy_balance()
    assert balance.max_relative() < 1e-8
    assert balance.jump_losses[-1] == pytest.approx(sum(ev.info["energy_loss"] for ev in impacts))


def test_engaged_gear_is_the_rigid_gear(turntable):
    """On its flank and pressed into it, the gear moves the link exactly as the rigid gear:
    the same trajectory, the play fixed at b/2."""
    T = 0.02
    rigid = px.System(turntable, drives={"j": Drive(None, Gear(N, input_inertia=J_IN))})
    system = _system(turntable)
    x0 = system.initial_state(np.zeros(1), np.zeros(1))
    x0[system.layout["drives.play_angle"]] = B / 2  # forward flank, pushed forward
    a = px.simulate(system, 0.1, x0=x0, control=[T])
    r = px.simulate(rigid, 0.1, control=[T], output_dt=0.01)
    assert not a.events and str(a.phases[0].name) == ">"
    assert a.q[-1, 0] == pytest.approx(r.q[-1, 0], rel=1e-9)
    assert a.q[-1, 0] == pytest.approx(0.5 * N * T / (I_M + J_LINK) * 0.1**2, rel=1e-9)
    assert np.abs(a.outputs["drives.play"][:, 0] - B / 2).max() == 0.0


def test_elastic_transmission_with_backlash_is_a_dead_zone_spring(turntable):
    """An elastic transmission with backlash: no torque inside the play, c (δ − s b/2)
    beyond it; the flanks meet without loss (no damping: the energy is conserved)."""
    c = 500.0
    motor = DCMotor(
        resistance=1.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=2e-5
    )
    drive = Drive(motor, ElasticTransmission(N, stiffness=c, backlash=B))
    system = px.System(turntable, drives={"j": drive})
    traj = px.simulate(system, 0.3, control=lambda t, x: [2.0 if t < 0.1 else -2.0])
    assert {ev.name for ev in traj.events} == {"j.backlash_engages", "j.backlash_separates"}
    delta = traj.outputs["drives.play"][:, 0]
    spring = traj.outputs["drives.spring_torque"][:, 0]
    beyond = np.sign(delta) * np.maximum(np.abs(delta) - B / 2, 0.0)
    assert np.abs(spring - c * beyond).max() < 1e-9 * np.abs(spring).max()
    assert traj.energy_balance().max_relative() < 1e-8
    assert all(abs(ev.info["energy_loss"]) < 1e-15 for ev in traj.events)


# ------------------------------------------------------------------------ amplifier limits
def test_amplifier_envelope_closed_form():
    """Stall torque k_t I_max, no-load speed U_max/k_e, and between them the flat current
    limit up to the corner (U − R I)/k_e, then the voltage line (four quadrants)."""
    R, k, U, Imax = 0.8, 0.05, 24.0, 3.0
    m = DCMotor(resistance=R, torque_constant=k, back_emf_constant=k, rotor_inertia=1e-5,
                voltage_limit=U, current_limit=Imax)  # fmt: skip
    assert m.stall_torque == pytest.approx(k * Imax, rel=1e-15)
    assert m.no_load_speed == pytest.approx(U / k, rel=1e-15)
    corner = (U - R * Imax) / k
    w = np.linspace(-1.5 * U / k, 1.5 * U / k, 301)
    low, high = m.torque_speed_envelope(w)
    line = k * (U - k * w) / R
    assert high == pytest.approx(np.where(w < corner, k * Imax, line), abs=1e-15)
    assert low == pytest.approx(-np.flip(high), abs=1e-15)  # symmetric quadrants
    assert m.torque_speed_envelope(U / k)[1] == pytest.approx(0.0, abs=1e-15)
    voltage_only = DCMotor(R, k, k, 1e-5, voltage_limit=U)
    assert voltage_only.stall_torque == pytest.approx(k * U / R)


def test_current_limited_run_follows_the_envelope_closed_form(turntable):
    """A full-voltage start through a rigid gear: constant current I_max (uniform
    acceleration k_t I / J) up to the corner speed (U − R I)/k_e, then the exponential approach
    to the no-load speed U/k_e with the time constant J R / (k_t k_e); the amplifier applies
    R i + k_e ω, the torque stays on the envelope, and the energy audit closes."""
    R, k, U, Imax, J = 1.0, 0.05, 24.0, 3.0, 2e-5
    m = DCMotor(R, k, k, J, voltage_limit=U, current_limit=Imax)
    system = px.System(turntable, drives={"j": Drive(m, Gear(N))})
    traj = px.simulate(system, 1.5, control=[100.0], output_dt=0.01)
    j_total = J + J_LINK / N**2
    corner = (U - R * Imax) / k
    t_corner = corner * j_total / (k * Imax)
    tau = j_total * R / (k * k)
    t = traj.t
    expected = np.where(
        t < t_corner,
        k * Imax / j_total * t,
        U / k - (U / k - corner) * np.exp(-(t - t_corner) / tau),
    )
    w = traj.outputs["drives.motor_velocity"][:, 0]
    assert np.abs(w - expected).max() < 1e-7 * U / k
    torque = traj.outputs["drives.motor_torque"][:, 0]
    assert np.abs(torque - m.torque_speed_envelope(w)[1]).max() < 1e-12
    i = traj.outputs["drives.current"][:, 0]
    assert np.abs(traj.outputs["drives.voltage"][:, 0] - (R * i + k * w)).max() < 1e-12
    assert traj.energy_balance().max_relative() < 1e-8


# ------------------------------------------------------------------------ combinations
def test_backlash_drives_a_flexible_bar():
    """The 2 m steel bar of flexible_arm split in 3 sublinks, driven through 0.5° of backlash
    by a torque that reverses: the bar's vibration knocks the flanks; energy balances."""
    bar = px.FlexibleLink("bar", 3, 2.1e11, 0.01**4 / 12, damping_ratio=0.01)
    robot = px.load_urdf(robot_path("flexible_arm"), flexible=[bar], extensions=False)
    gear = Gear(100.0, input_inertia=3e-5, backlash=B, restitution=0.2)
    system = px.System(robot, drives={"hub": Drive(None, gear)})
    traj = px.simulate(
        system, 0.4, control=lambda t, x: [0.05 if t < 0.15 else -0.05], rtol=1e-9, atol=1e-11
    )
    assert sum(ev.name == "hub.backlash_engages" for ev in traj.events) >= 2
    assert traj.energy_balance().max_relative() < 1e-8
    play = traj.outputs["drives.play"][:, 0]
    assert np.abs(play).max() <= B / 2 * (1 + 1e-9)


def test_engaged_gear_drives_its_joint_into_the_limit(tmp_path):
    """A joint driven on its flank into its upper stop: the limit's plastic impact stops the
    link and the motor together (engaged: the motor's inertia takes part), the flank stays
    loaded, and the energy audit books the impact."""
    path = tmp_path / "stop.urdf"
    path.write_text(turntable_urdf(-0.3, 0.05))
    robot = px.load_urdf(path)
    system = _system(robot)
    x0 = system.initial_state(np.zeros(1), np.zeros(1))
    x0[system.layout["drives.play_angle"]] = B / 2
    T = 0.02
    traj = px.simulate(system, 0.2, x0=x0, control=[T])
    hit = next(ev for ev in traj.events if ev.name.startswith("limit"))
    before, after = _at(traj, hit.t)
    assert traj.v[after, 0] == pytest.approx(0.0, abs=1e-12)
    assert traj.outputs["drives.motor_velocity"][after, 0] == pytest.approx(0.0, abs=1e-12)
    v = traj.v[before, 0]
    assert hit.info["energy_loss"] == pytest.approx(0.5 * (I_M + J_LINK) * v * v, rel=1e-9)
    assert traj.q[-1, 0] == pytest.approx(0.05, abs=1e-9)
    assert not any(ev.name.endswith("separates") for ev in traj.events)
    assert traj.energy_balance().max_relative() < 1e-8


def test_backlash_runs_compiled_as_on_the_python_path(turntable, monkeypatch):
    """A gear with backlash runs compiled, in its play and on its flanks (the flanks' impacts
    between segments), and gives the Python path's run: the same events at the same instants,
    the same states to the tolerance of two integrations."""
    system = _system(turntable, restitution=0.4)
    x0 = _on_backward_flank(system)
    monkeypatch.setenv("PINEXT_NO_COMPILED", "0")  # (each path in turn, whatever the test's)
    traj = px.simulate(system, 0.05, x0=x0, control=[0.02])
    stats = traj.meta["stats"]
    assert stats["compiled_segments"] == stats["segments"] > 1
    monkeypatch.setenv("PINEXT_NO_COMPILED", "1")
    again = px.simulate(system, 0.05, x0=x0, control=[0.02])
    assert again.meta["stats"]["compiled_segments"] == 0
    assert [e.name for e in again.events] == [e.name for e in traj.events]
    assert max(abs(a.t - b.t) for a, b in zip(again.events, traj.events, strict=True)) < 1e-10
    assert np.abs(again.x[-1] - traj.x[-1]).max() < 1e-8 * max(1.0, np.abs(traj.x).max())


# ------------------------------------------------------------------------ format and input
def test_extension_format_reads_backlash_and_current_limit(tmp_path):
    """``[drives.J.gear] backlash = rad`` (and restitution) and ``[drives.J.motor]
    current_limit = A`` in the sidecar."""
    path = tmp_path / "t.urdf"
    path.write_text(turntable_urdf())
    sidecar = tmp_path / "t.pinext.toml"
    sidecar.write_text(
        "[drives.j.motor]\nresistance = 1.0\ntorque_constant = 0.05\nback_emf_constant = 0.05\n"
        "rotor_inertia = 2e-5\nvoltage_limit = 24.0\ncurrent_limit = 3.0\n"
        f"[drives.j.gear]\nratio = 50\nbacklash = {float(B)!r}\nrestitution = 0.3\n"
    )
    robot = px.load_urdf(path, extensions=sidecar)
    drive = robot.drives["j"]
    assert drive.transmission.backlash == B and drive.transmission.restitution == 0.3
    assert drive.actuator.current_limit == 3.0
    assert "drives.play_angle" in px.System(robot).layout


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: Gear(50, backlash=-1e-3), "backlash must be >= 0"),
        (
            lambda: Gear(50, backlash=1e-3, restitution=1.5),
            "restitution must be a finite number in \\[0, 1\\]",
        ),
        (lambda: Gear(50, efficiency=0.8, backlash=1e-3), "backlash must be lossless"),
        (lambda: Drive(None, Gear(50, backlash=1e-3)), "positive inertia on the motor side"),
        (lambda: DCMotor(1, 0.05, 0.05, 1e-5, inductance=1e-3, current_limit=2), "second-order"),
        (lambda: DCMotor(1, 0.05, 0.05, 1e-5, current_limit=-2), "current_limit must be"),
        (lambda: ElasticTransmission(50, 100.0, backlash=float("nan")), "backlash must be"),
    ],
)
def test_bad_input_names_the_argument(build, match):
    with pytest.raises(InvalidParameter, match=match):
        build()


def test_start_beyond_the_play_is_reported(turntable):
    system = _system(turntable)
    x0 = system.initial_state(np.zeros(1), np.zeros(1))
    x0[system.layout["drives.play_angle"]] = B
    with pytest.raises(px.exceptions.ConstraintError, match="beyond its backlash"):
        px.simulate(system, 0.01, x0=x0)


# ------------------------------------------------------------------------ example
def test_example_runs_and_loses_the_backlash_at_each_crossing(tmp_path):
    spec = importlib.util.spec_from_file_location("backlash", ROOT / "examples" / "backlash.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.main([str(tmp_path / "out" / "b.png"), "--duration", "0.45"])  # out/ is made
    assert out.stat().st_size > 10_000
    _, traj = mod.run(0.45)
    lost = mod.lost_motion(traj)
    assert lost and np.abs(np.array(lost) - mod.BACKLASH).max() < 1e-9
    assert traj.energy_balance().max_relative() < 1e-8


def test_design_figure_draws_the_amplifier_envelope(turntable):
    """The speed-torque figure of drive_requirements draws the current-limited envelope of a
    motor with a current_limit: its line equals DCMotor.torque_speed_envelope."""
    from pinext.planning import RestToRest, drive_requirements
    from pinext.planning.design_report import speed_torque_figure

    m = DCMotor(1.0, 0.05, 0.05, 2e-5, voltage_limit=24.0, current_limit=3.0)
    system = px.System(turntable, drives={"j": Drive(m, Gear(N))})
    report = drive_requirements(system, RestToRest(np.array([0.0]), np.array([1.0]), 1.0))
    fig = speed_torque_figure(report)
    line = next(ln for ln in fig.axes[0].lines if ln.get_label() == "amplifier envelope")
    w, torque = line.get_data()
    assert np.array_equal(torque, m.torque_speed_envelope(w)[1])
    assert torque.max() == pytest.approx(0.05 * 3.0, rel=1e-15)
