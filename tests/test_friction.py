"""Coulomb friction at a planar contact (pinext.contact.friction): a block on an incline sticks
for tan θ < μ and slides with g (sin θ − μ cos θ) otherwise; a sliding block stops and sticks;
the dissipation closes the energy audit."""

import warnings

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.contact import Contact, FrictionalContact, plane
from pinext.contact.friction import SLIP, STICK, FrictionMode

G = 9.81


def _block(mass=2.0):
    """A point mass on x and z prismatic joints with a frame "block"."""
    model = pin.Model()
    model.name = "block"
    jx = model.addJoint(0, pin.JointModelPX(), pin.SE3.Identity(), "x")
    jz = model.addJoint(jx, pin.JointModelPZ(), pin.SE3.Identity(), "z")
    model.appendBodyToJoint(jz, pin.Inertia.FromSphere(mass, 0.05), pin.SE3.Identity())
    model.addFrame(pin.Frame("block", jz, 0, pin.SE3.Identity(), pin.FrameType.OP_FRAME))
    return model


def block_against_its_stop():
    """(system, μ, mass, v0): the 2 kg block on a floor with μ = 0.3, its x joint stopped at
    0.1 m, launched at v0 = 1 m/s towards the stop."""
    model = _block()
    model.lowerPositionLimit[:] = [-1.0, -1.0]
    model.upperPositionLimit[:] = [0.1, 1.0]
    model.velocityLimit[:] = 100.0
    model.effortLimit[:] = 100.0
    mu, mass, v0 = 0.3, 2.0, 1.0
    system = px.System(model, contacts=[Contact(plane("block"), friction=mu, name="floor")])
    return system, mu, mass, v0


def _incline(theta, mu, t_final=1.0, v0=(0.0, 0.0)):
    normal = (-np.sin(theta), 0.0, np.cos(theta))
    contact = Contact(plane("block", (0.0, 0.0, 0.0), normal), friction=mu, name="incline")
    system = px.System(_block(), contacts=[contact])
    assert isinstance(system.components[-1], FrictionalContact)
    return px.simulate(system, t_final, q0=np.zeros(2), v0=np.asarray(v0), output_dt=0.05)


@pytest.mark.parametrize("theta", [0.2, 0.4])
def test_block_sticks_below_the_friction_angle(theta):
    mu = np.tan(theta) + 0.05
    traj = _incline(theta, mu)
    assert [p.name for p in traj.phases] == ["stick"] and not traj.events
    assert np.abs(traj.q).max() < 1e-9
    normal = traj.outputs["friction:incline.normal_force"][:, 0]
    friction = traj.outputs["friction:incline.friction_force"]
    np.testing.assert_allclose(normal, 2.0 * G * np.cos(theta), rtol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(friction, axis=1), 2.0 * G * np.sin(theta), rtol=1e-9)


@pytest.mark.parametrize(("theta", "mu"), [(0.5, 0.3), (0.3, 0.0001), (0.7, 0.6)])
def test_block_slides_with_g_sin_minus_mu_cos(theta, mu):
    traj = _incline(theta, mu)
    assert [p.name for p in traj.phases] == ["slip"]
    down = np.array([-np.cos(theta), -np.sin(theta)])  # down the slope in (x, z)
    along = traj.q @ down
    expected = 0.5 * G * (np.sin(theta) - mu * np.cos(theta)) * traj.t**2
    np.testing.assert_allclose(along, expected, atol=1e-9)
    across = traj.q @ np.array([-np.sin(theta), np.cos(theta)])
    assert np.abs(across).max() < 1e-9  # on the plane
    balance = traj.energy_balance()
    assert balance.dissipated[-1] == pytest.approx(
        mu * 2.0 * G * np.cos(theta) * along[-1], rel=1e-9
    )
    assert np.abs(balance.residual).max() < 1e-9


def test_sliding_block_stops_then_sticks():
    mu, v0 = 0.4, 2.0
    traj = _incline(0.0, mu, t_final=1.0, v0=(v0, 0.0))
    (stop,) = traj.events
    assert stop.name == "stick:incline"
    assert stop.t == pytest.approx(v0 / (mu * G), abs=1e-10)
    assert [p.name for p in traj.phases] == ["slip", "stick"]
    assert traj.q[-1, 0] == pytest.approx(v0**2 / (2 * mu * G), abs=1e-9)
    assert abs(traj.v[-1, 0]) < 1e-9
    balance = traj.energy_balance()
    assert balance.dissipated[-1] == pytest.approx(0.5 * 2.0 * v0**2, rel=1e-9)
    assert np.abs(balance.residual).max() < 1e-9


@pytest.mark.parametrize("mu", [0.1, 0.3])
def test_an_arm_tip_at_rest_slides_where_its_acceleration_points(mu):
    """The six-DOF arm's pen tip at rest on a table, the cone too narrow to hold it: the slide
    starts from rest in the direction d whose Coulomb force ``−μ λ_n d`` accelerates the tip
    along d (the arm's tangential Delassus operator is not isotropic, so d is not the stick
    reaction's −λ_t, which the slide took before: it decelerated at once, the stop event fired
    at its start and stick and slip alternated at t = 0 until the Zeno guard stopped the
    run). The tip then moves along d, stays on the table, and the energy audit closes."""
    robot = px.load_robot("six_dof_arm")
    q0 = np.array([0.3, -0.6, 1.2, -2.1, 0.8, 0.2])
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, q0)
    tip = robot.model.getFrameId("pen_tip")
    table = data.oMf[tip].translation.copy()
    system = px.System(robot, contacts=[px.Contact(px.plane("pen_tip", table), friction=mu)])
    x0 = system.initial_state(q0)
    phase = system.initial_phase(0.0, x0)
    mode = phase.get("friction:pen_tip")
    assert str(mode) == "slip" and mode.started == 0.0
    d = np.array(mode.direction)
    held = system.step(0.0, x0, None, phase.replace("friction:pen_tip", FrictionMode(STICK)))
    reaction = held.force("friction:pen_tip", 3)[1:]
    assert d @ -reaction / np.linalg.norm(reaction) < np.cos(np.deg2rad(1.0))  # not −λ_t
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # force: the cost probe judges the slide's first steps, which the direction law's
        # stiffness at rest (μ λ_n / |ṡ|) keeps tiny, and refuses a run of seconds
        traj = px.simulate(system, 0.02, x0=x0, output_dt=1e-3, progress=False, force=True)
    assert [p.name for p in traj.phases] == ["slip"]
    for q, v in zip(traj.q[1:6], traj.v[1:6], strict=True):  # the first milliseconds
        pin.forwardKinematics(robot.model, data, q, v)
        velocity = pin.getFrameVelocity(robot.model, data, tip, pin.LOCAL_WORLD_ALIGNED).linear
        assert abs(velocity[2]) < 1e-9 * np.linalg.norm(velocity)  # on the table
        assert d @ velocity[:2] / np.linalg.norm(velocity[:2]) > 1.0 - 1e-6  # along d
    assert traj.constraint_residual().max() < 1e-9
    assert traj.energy_balance().max_relative() < 1e-8


def test_the_friction_direction_is_continuous_as_a_slide_starts():
    """t̂ (:meth:`FrictionalContact._direction`) is the mode's d at rest and the sliding
    direction once the contact slides, continuous in between: a sliding velocity across d
    turns it by atan(ε/|ṡ|) < ε/|ṡ| rad from ṡ (ε = VELOCITY_TOLERANCE; the angle from
    atan2, to a few ulps, not from arccos of a cosine near 1), and a speed crossing ε moves
    it by no more than the speed moved. (A switch at |ṡ| = ε once turned it by 90° there.)"""
    from pinext.contact.component import VELOCITY_TOLERANCE as eps

    mode = FrictionMode(SLIP, (1.0, 0.0))
    across = np.array([0.0, 1.0])
    np.testing.assert_array_equal(FrictionalContact._direction(np.zeros(2), mode), [1.0, 0.0])
    for speed in (1e-6, 1e-3, 1.0):
        t_hat = FrictionalContact._direction(speed * across, mode)
        angle = np.arctan2(abs(t_hat[0] * across[1] - t_hat[1] * across[0]), t_hat @ across)
        assert angle == pytest.approx(np.arctan(eps / speed), rel=1e-12)
    below, above = (
        FrictionalContact._direction(s * across, mode) for s in (0.999 * eps, 1.001 * eps)
    )
    assert np.linalg.norm(above - below) < 1e-2  # |Δt̂| ≲ |Δṡ| / ε = 0.002


def test_an_arm_tip_that_sticks_slips_again_from_rest():
    """The six-DOF arm's pen on a table at μ = 0.3 (the scene above): it slides, stops and
    sticks at 0.132 s; at 0.1906 s its growing tangential reaction leaves the cone and it
    slides again from rest. That second start once ended the run ("Required step size is
    less than spacing between numbers"): the friction force jumped where its direction
    switched from d to ṡ/|ṡ| at |ṡ| = ε. Through it now, Coulomb's law holds at every sample
    (stick: at rest, |λ_t| ≤ μ λ_n; slip: the force μ λ_n against the sliding velocity, to
    the ε/|ṡ| rad of :meth:`FrictionalContact._direction`), the tip stays on the table and the
    energy audit closes."""
    mu = 0.3
    robot = px.load_robot("six_dof_arm")
    q0 = np.array([0.3, -0.6, 1.2, -2.1, 0.8, 0.2])
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, q0)
    table = data.oMf[robot.model.getFrameId("pen_tip")].translation.copy()
    system = px.System(robot, contacts=[px.Contact(px.plane("pen_tip", table), friction=mu)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traj = px.simulate(system, 0.2, q0=q0, output_dt=1e-3, progress=False, force=True)
    assert [p.name for p in traj.phases] == ["slip", "stick", "slip"]
    assert [e.name for e in traj.events] == ["stick:pen_tip", "slip:pen_tip"]
    assert traj.events[1].t == pytest.approx(0.1906, abs=1e-4)
    out = {k: traj.outputs[f"friction:pen_tip.{k}"] for k in ("state", "normal_force")}
    normal = out["normal_force"][:, 0]
    friction = traj.outputs["friction:pen_tip.friction_force"]
    slip = traj.outputs["friction:pen_tip.slip_velocity"]
    speed = np.linalg.norm(slip, axis=1)
    assert normal.min() > 0.0
    stick = out["state"][:, 0] == 1.0
    assert stick.any() and np.all(speed[stick] < 1e-9)
    assert np.all(np.linalg.norm(friction[stick], axis=1) <= mu * normal[stick] * (1 + 1e-9))
    sliding = (out["state"][:, 0] == 2.0) & (speed > 1e-6)
    assert sliding.sum() > 100
    coulomb = -mu * normal[sliding, None] * slip[sliding] / speed[sliding, None]
    bound = mu * normal[sliding] * (2e-9 / speed[sliding] + 1e-9)
    assert np.all(np.linalg.norm(friction[sliding] - coulomb, axis=1) <= bound)
    assert speed[-1] > 1e-3  # sliding again at the end
    assert traj.constraint_residual().max() < 1e-9
    assert traj.energy_balance().max_relative() < 1e-8


def test_friction_coefficient_is_checked():
    with pytest.raises(px.exceptions.InvalidParameter, match="friction"):
        Contact(plane("block"), friction=-0.1)


def test_viewer_draws_the_cone_coloured_by_stick_or_slip_and_the_force_plot(tmp_path):
    """Playback of a block that slides then sticks: the friction cone sits on the contact
    point, opens along the normal with half-angle atan μ, shows the slip mesh while sliding
    and the stick mesh after; the plot draws λ_n, |λ_t| and μ λ_n with |λ_t| = μ λ_n while
    sliding; the self-contained HTML export animates both cone meshes."""
    from pinext.visualization import Viewer, export_html, plots
    from pinext.visualization.sampling import resample
    from tests.test_viewer import _scene_commands

    mu, v0 = 0.4, 2.0
    contact = Contact(plane("block", (0.0, 0.0, 0.0)), friction=mu, name="floor")
    system = px.System(_block(), contacts=[contact])
    traj = px.simulate(system, 1.0, q0=np.zeros(2), v0=np.array([v0, 0.0]), output_dt=0.05)
    t_stop = v0 / (mu * G)
    viewer = Viewer(system)
    (view,) = viewer.contacts
    assert view.friction == mu and view.state == "friction:floor.state"
    frames = resample(system.model, traj, 20.0)
    for k in range(len(frames.t)):
        poses = viewer._poses(frames, k, (0.01, 0.2), traj.events)
        pose, stick_scale = poses["pinext/cones/floor/stick"]
        _, slip_scale = poses["pinext/cones/floor/slip"]
        apex = pose[:3, 3] + pose[:3, :3] @ [0, 0.5 * viewer.cone_height, 0]
        np.testing.assert_allclose(apex, [frames.q[k][0], 0.0, 0.0], atol=1e-12)
        np.testing.assert_allclose(pose[:3, :3] @ [0, -1, 0], [0, 0, 1], atol=1e-12)
        sliding = frames.t[k] < t_stop - 1e-6
        sticking = frames.t[k] > t_stop + 1e-6
        if sliding or sticking:
            assert (slip_scale[0] == 1.0) == sliding and (stick_scale[0] == 1.0) == sticking
    commands = _scene_commands(export_html(traj, tmp_path / "cone.html", system).read_text())
    cones = [c for c in commands if c["type"] == "set_object" and "/cones/floor/" in c["path"]]
    assert sorted(c["path"].rsplit("/", 1)[1] for c in cones) == ["slip", "stick"]
    for c in cones:
        (geometry,) = c["object"]["geometries"]
        assert geometry["type"] == "ConeGeometry"
        assert geometry["radius"] == pytest.approx(mu * geometry["height"], rel=1e-12)
    (animation,) = [c for c in commands if c["type"] == "set_animation"]
    animated = {a["path"] for a in animation["animations"]}
    assert {"pinext/cones/floor/stick", "pinext/cones/floor/slip"} <= {
        p.split("/meshcat/", 1)[-1] for p in animated
    }
    fig = plots.contact_friction(traj, "floor")
    ax = fig.axes[0]
    normal, tangential, limit = (line.get_ydata() for line in ax.lines[:3])
    np.testing.assert_allclose(normal, 2.0 * G, rtol=1e-9)
    np.testing.assert_allclose(limit, mu * 2.0 * G, rtol=1e-9)
    sliding = traj.t < t_stop - 1e-6
    np.testing.assert_allclose(tangential[sliding], limit[sliding], rtol=1e-9)
    assert np.abs(tangential[traj.t > t_stop + 1e-6]).max() < 1e-9
    labels = ax.get_legend_handles_labels()[1]
    assert {"stick", "slip"} <= set(labels)


def test_slowly_growing_push_breaks_the_stick_at_mu_n():
    """A horizontal push F = k t on a block at rest on the floor: it sticks while F < μ m g,
    the cone is left at F = μ N exactly (t* = μ m g / k), then it slides with
    ẍ = (k t − μ m g) / m, so x = k (t − t*)³ / (6 m) — both to 1e-9."""
    mass, mu, k = 2.0, 0.5, 4.0  # push rate [N/s]
    contact = Contact(plane("block", (0.0, 0.0, 0.0), (0.0, 0.0, 1.0)), friction=mu, name="floor")
    system = px.System(_block(mass), contacts=[contact])
    traj = px.simulate(
        system, 4.0, q0=np.zeros(2), control=lambda t, x: np.array([k * t, 0.0]), output_dt=0.05
    )
    t_star = mu * mass * G / k
    (slip,) = traj.events
    assert slip.name.startswith("slip") and slip.t == pytest.approx(t_star, abs=1e-9)
    pushed = traj.outputs["input"][:, 0]
    at = np.flatnonzero(traj.t == slip.t)[0]
    normal = traj.outputs["friction:floor.normal_force"][at, 0]
    assert pushed[at] == pytest.approx(mu * normal, rel=1e-9)  # the cone's edge: F = μ N
    sliding = traj.t > t_star
    expected = k * (traj.t[sliding] - t_star) ** 3 / (6 * mass)
    np.testing.assert_allclose(traj.q[sliding, 0], expected, atol=1e-9)
    assert np.abs(traj.q[~sliding, 0]).max() < 1e-12
    assert np.abs(traj.energy_balance().residual).max() < 1e-9


def test_block_slides_into_a_joint_stop_and_stays():
    """Friction and a joint limit together, event-driven: the block sliding at 1 m/s on a
    floor with μ = 0.3 hits its x stop at 0.1 m when t − μ g t²/2 = 0.1, stops there (one
    plastic impact) and stays, the floor's contact sticking: no cascade of limit events, and
    all the kinetic energy is lost, part to friction, part at the stop."""
    system, mu, mass, v0 = block_against_its_stop()
    traj = px.simulate(system, 0.5, q0=np.zeros(2), v0=np.array([v0, 0.0]), output_dt=0.05)
    t_hit = (1 - np.sqrt(1 - 2 * mu * G * 0.1)) / (mu * G)
    (hit,) = traj.events
    assert hit.name == "limit:x" and hit.t == pytest.approx(t_hit, abs=1e-9)
    assert [p.name for p in traj.phases] == ["slip", "stick"]
    assert traj.q[-1, 0] == pytest.approx(0.1, abs=1e-12) and np.abs(traj.v[-1]).max() < 1e-12
    balance = traj.energy_balance()
    lost = balance.dissipated[-1] + balance.jump_losses[-1]
    assert lost == pytest.approx(0.5 * mass * v0**2, rel=1e-9)
    assert np.abs(balance.residual).max() < 1e-9
