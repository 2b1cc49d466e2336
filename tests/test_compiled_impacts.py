"""Contact bounces applied inside the compiled run (pinext.compiled.impacts): against the same
bounces applied by the contact component between segments (Pinocchio's kinematics and CRBA,
the impulse problem of pinext.contact.impulse), and against the Python path, alone and with
joint limits, elastic drives and joint friction in the same System."""

from __future__ import annotations

import warnings

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
import pinext.compiled
from pinext.contact.limits import VelocityLimitWarning
from tests.models import arm_with_friction_and_drives

#: The tests compare the paths themselves.
BOTH_PATHS = False
Q0 = np.array([0.2, 0.6, -1.1, 0.3, 1.2, 0.0])


def _table(robot, drop, restitution=0.5):
    """A plane tilted by 0.2 rad, ``drop`` below the six-DOF arm's tool at Q0."""
    from pinext.contact import Contact, plane

    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, Q0)
    normal = pin.rpy.rpyToMatrix(0.2, -0.1, 0.0) @ np.array([0.0, 0.0, 1.0])
    point = data.oMf[robot.model.getFrameId("tool")].translation - drop * normal
    return Contact(plane("tool", point, normal), restitution=restitution)


def _run(monkeypatch, system, *, in_loop=True, compiled=True, **options):
    """The run on the compiled path (its bounces in the loop, or each in a segment of its
    own: ``in_loop=False``) or on the Python path."""
    monkeypatch.setenv("PINEXT_NO_COMPILED", "0" if compiled else "1")
    if not in_loop:
        solve = pinext.compiled.solve
        monkeypatch.setattr(
            pinext.compiled, "solve", lambda *a, **k: solve(*a, **{**k, "bounces": 0})
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", VelocityLimitWarning)
            return px.simulate(system, **{"q0": Q0, "rtol": 1e-10, "atol": 1e-12, **options})
    finally:
        monkeypatch.undo()


def _same_events(a, b, time_tol, record_tol=1e-9):
    """The same events with the same records: times to ``time_tol``, approach velocities,
    impulses and energy losses to ``record_tol`` relative to their largest."""
    assert [(e.name, e.info.get("bounce")) for e in a.events] == [
        (e.name, e.info.get("bounce")) for e in b.events
    ]
    assert np.abs([e.t for e in a.events] - np.array([e.t for e in b.events])).max() < time_tol
    for key in ("approach_velocity", "impulse", "energy_loss"):
        x = np.array([np.sum(e.info.get(key, 0.0)) for e in a.events])
        y = np.array([np.sum(e.info.get(key, 0.0)) for e in b.events])
        assert np.abs(x - y).max() <= record_tol * np.abs(y).max(), key


@pytest.mark.parametrize("method", ["DOP853", "Radau"])
def test_bounces_in_the_loop_equal_bounces_in_their_own_segments(monkeypatch, method):
    """The six-DOF arm falling limp onto a tilted table (e = 0.5), 2 s: the compiled loop
    applies the bounces itself (the two runs of bounces; the rests below the Zeno cut and the
    lift-off go to the component), and the run applying each in a segment of its own meets
    the same events with the same records, the same phases (each flight's contact leaving at
    the same time) and the same samples to 1e-8 (rad; relative for the velocities). Both
    start the integrator afresh from the same state after each bounce, with the same first
    step; they differ by the rounding of the impulse (Pinocchio's kinematics and CRBA against
    the compiled ones), which moves the steps by ~1e-7 of their size (a 1e-16 change of the
    state is ~1e-6 of the error estimate at rtol 1e-10): the dense output's samples compare,
    not the steps. The energy audit closes (1e-9)."""
    arm = px.load_robot("six_dof_arm")
    system = px.System(arm, contacts=[_table(arm, 0.1)], joint_limits=False)
    options = {"t_final": 2.0, "method": method, "output_dt": 0.01}
    loop = _run(monkeypatch, system, **options)
    apart = _run(monkeypatch, system, **options, in_loop=False)
    stats = loop.meta["stats"]
    assert stats["loop_events"] >= 15 and stats["segments"] <= 6
    assert stats["compiled_segments"] == stats["segments"]
    assert apart.meta["stats"]["loop_events"] == 0
    _same_events(loop, apart, 1e-9)
    modes = [[dict(p.modes)["contact"] for p in run.phases] for run in (loop, apart)]
    assert [m.structure for m in modes[0]] == [m.structure for m in modes[1]]
    for a, b in zip(*modes, strict=True):  # each flight leaves at the bounce's time
        pairs = zip(sorted(a.leaving), sorted(b.leaving), strict=True)
        assert all(abs(x[1] - y[1]) < 1e-9 for x, y in pairs)
    assert loop.t.size == apart.t.size
    assert np.abs(loop.q - apart.q).max() < 1e-8
    assert np.abs(loop.v - apart.v).max() < 1e-8 * np.abs(apart.v).max()
    assert loop.energy_balance().max_relative() < 1e-9


def test_bounces_in_the_loop_with_limits_drives_and_friction_on_both_paths(tmp_path, monkeypatch):
    """The same fall with the URDF's joint limits, Coulomb friction (μ-free torque 0.3 N m)
    in two joints and elastic DC drives on three, 1.5 s: the compiled loop applies bounces
    itself while the stops and the friction's events watch (a bounce that moves one of them
    to zero goes to the components), and the run meets the Python path's events with the
    same records (times 1e-8 s) and follows it to 1e-7 (both at rtol 1e-10); each run's
    energy audit closes (1e-8)."""
    arm, drives = arm_with_friction_and_drives(tmp_path)
    system = px.System(arm, drives=drives, contacts=[_table(arm, 0.1)])
    compiled = _run(monkeypatch, system, t_final=1.5, output_dt=0.01)
    python = _run(monkeypatch, system, t_final=1.5, output_dt=0.01, compiled=False)
    assert compiled.meta["stats"]["loop_events"] >= 1
    assert compiled.meta["stats"]["compiled_segments"] == compiled.meta["stats"]["segments"]
    _same_events(compiled, python, 1e-8)
    assert np.abs(compiled.x[:, :-2] - python.x[:, :-2]).max() < 1e-7
    for traj in (compiled, python):
        assert traj.energy_balance().max_relative() < 1e-8


def test_a_simultaneous_impact_goes_to_the_component(monkeypatch):
    """Two contacts of the tool point with one table touch together at every impact: the
    loop hands each to the component, whose impulse problem takes both rows, and the run
    equals, bit for bit, the run that applies every bounce in a segment of its own."""
    arm = px.load_robot("six_dof_arm")
    first, second = _table(arm, 0.1), _table(arm, 0.1)
    second.name = "tool_again"
    system = px.System(arm, contacts=[first, second], joint_limits=False)
    loop = _run(monkeypatch, system, t_final=0.4, output_dt=0.01)
    apart = _run(monkeypatch, system, t_final=0.4, output_dt=0.01, in_loop=False)
    assert loop.meta["stats"]["loop_events"] == 0
    assert sum(bool(e.info.get("simultaneous")) for e in loop.events) > 5
    assert [(e.t, e.name) for e in loop.events] == [(e.t, e.name) for e in apart.events]
    np.testing.assert_array_equal(loop.x, apart.x)


def test_a_free_flying_box_bouncing_on_a_corner(monkeypatch):
    """A free-flying box (2 kg, the free flyer on its chart of rotation vectors) dropped
    tilted and spinning, a corner on the ground (e = 0.6), 1.5 s: the loop applies its bounces
    (the chart's re-centring still ends segments), and the run meets the events of the run
    applying each in a segment of its own and of the Python path with the same records (times
    1e-8 s), the same samples (1e-7 m and rad, 1e-6 of the largest velocity: the spin carries
    the bounces' rounding; the records to 1e-8 of their largest), and the energy audit closes
    (1e-9)."""
    from pinext.contact import Contact, plane

    model = pin.Model()
    model.name = "box"
    joint = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "base")
    model.appendBodyToJoint(joint, pin.Inertia.FromBox(2.0, 0.3, 0.2, 0.1), pin.SE3.Identity())
    corner = pin.SE3(np.eye(3), np.array([0.15, 0.1, -0.05]))
    model.addFrame(pin.Frame("corner", joint, 0, corner, pin.FrameType.OP_FRAME))
    system = px.System(model, contacts=[Contact(plane("corner"), restitution=0.6)])
    turn = pin.Quaternion(pin.rpy.rpyToMatrix(0.3, -0.2, 0.1)).coeffs()
    start = {"q0": np.concatenate([[0.0, 0.0, 0.5], turn]), "v0": [0.3, 0.0, 0.0, 1.0, -2.0, 0.5]}
    runs = [
        _run(monkeypatch, system, t_final=1.5, output_dt=0.01, **start, **flags)
        for flags in ({}, {"in_loop": False}, {"compiled": False})
    ]
    assert runs[0].meta["stats"]["loop_events"] >= 10
    assert runs[2].meta["stats"]["compiled_segments"] == 0
    for other in runs[1:]:
        _same_events(runs[0], other, 1e-8, 1e-8)
        assert np.abs(runs[0].q - other.q).max() < 1e-7
        assert np.abs(runs[0].v - other.v).max() < 1e-6 * np.abs(other.v).max()
    assert runs[0].energy_balance().max_relative() < 1e-9


def test_a_second_run_of_the_same_system_bounces_the_same(monkeypatch):
    """A phase's compiled events are kept per its modes (pinext.compiled.phase_events) and the
    loop writes each bounce's time and distance into the arrays it was given: a second run of
    the same System, whose phases' events come from that cache, meets the same bounces at the
    same times with the same samples, bit for bit (the same code on the same state)."""
    arm = px.load_robot("six_dof_arm")
    system = px.System(arm, contacts=[_table(arm, 0.1)], joint_limits=False)
    options = {"t_final": 1.0, "output_dt": 0.01}
    first = _run(monkeypatch, system, **options)
    second = _run(monkeypatch, system, **options)
    assert first.meta["stats"]["loop_events"] > 2  # bounces the loop applied itself
    assert [(e.t, e.name) for e in second.events] == [(e.t, e.name) for e in first.events]
    np.testing.assert_array_equal(second.x, first.x)


def test_a_bounce_in_the_loop_needs_the_record_after_it():
    """An event whose Gap lets the loop apply its bounces, without ``mapped`` (the owner's mode
    and record after a bounce), is refused where it is made, naming the event and what it
    lacks; without the restitution it is an ordinary approach event."""
    from pinext.exceptions import InvalidParameter
    from pinext.simulation.component import Event, FrameRows, Gap

    gap = Gap(FrameRows.stack([]), restitution=0.5, rest_velocity=0.01)
    with pytest.raises(InvalidParameter, match="'contact:tool'.*`mapped`"):
        Event("contact:tool", lambda t, x: 1.0, -1.0, compiled=gap)
    assert Event("contact:tool", lambda t, x: 1.0, -1.0, compiled=gap._replace(restitution=0.0))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_bounces_in_the_loop_on_the_ur5_from_random_poses(tmp_path, monkeypatch, ur5_urdf, seed):
    """example-robot-data's UR5 (no ``<mimic>`` rows; its joint limits and URDF Coulomb
    friction, 0.3 N m, in the two shoulder joints on) falling limp from a seeded random pose
    onto a table tilted by 0.2 rad, 5 cm below its tool (e = 0.5), 1 s: the loop applies the
    runs of bounces down to the Zeno cut while the stops and the friction's events watch.
    The run applying each bounce in a segment of its own meets the same events with the same
    records (1e-9 of their largest) and samples (1e-8 rad and of the largest velocity, times
    1e-8 s): both restart from the same state after each bounce and differ by the impulse's
    rounding (Pinocchio's kinematics and CRBA against the compiled ones), which a time carries
    divided by approach speeds down to ~3e-4 m/s. The Python path meets the same events (1e-7 s:
    both runs at rtol 1e-10, an event time inherits a path error of ~1e-10 divided by those
    speeds) with the same records (1e-8) and samples (1e-8 rad), and the run is sound (limits
    hold, the energy balances: :func:`tests.models.assert_sound_run`)."""
    from pinext.contact import Contact, plane
    from tests.models import assert_sound_run, random_pose

    urdf = tmp_path / "ur5.urdf"
    urdf.write_text(ur5_urdf.read_text().replace('friction="0.0"', 'friction="0.3"', 2))
    ur5 = px.load_urdf(urdf, package_dirs=[str(ur5_urdf.parents[4])])
    q0 = random_pose(ur5.model, np.random.default_rng(seed))
    data = ur5.model.createData()
    pin.framesForwardKinematics(ur5.model, data, q0)
    normal = pin.rpy.rpyToMatrix(0.2, -0.1, 0.0) @ np.array([0.0, 0.0, 1.0])
    point = data.oMf[ur5.model.getFrameId("tool0")].translation - 0.05 * normal
    system = px.System(ur5, contacts=[Contact(plane("tool0", point, normal), restitution=0.5)])
    options = {"q0": q0, "t_final": 1.0, "output_dt": 0.01}
    loop, apart, python = (
        _run(monkeypatch, system, **options, **flags)
        for flags in ({}, {"in_loop": False}, {"compiled": False})
    )
    assert loop.meta["stats"]["loop_events"] >= 1
    assert loop.meta["stats"]["compiled_segments"] == loop.meta["stats"]["segments"]
    assert apart.meta["stats"]["loop_events"] == python.meta["stats"]["compiled_segments"] == 0
    _same_events(loop, apart, 1e-8)
    _same_events(loop, python, 1e-7, 1e-8)
    for other in (apart, python):
        assert np.abs(loop.q - other.q).max() < 1e-8
    assert np.abs(loop.v - apart.v).max() < 1e-8 * np.abs(apart.v).max()
    assert_sound_run(ur5.model, loop)
