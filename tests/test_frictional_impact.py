"""Impacts with Coulomb friction (pinext.contact.impulse.frictional_impulse): a ball thrown
spinning onto the ground leaves with the velocities of Newton's law with the friction cone
(worked by hand below), a bouncing ball never gains energy at an event, and a rocking block
on two frictional corners loses Housner's (1963) fraction of its angular velocity at every
impact, the old corner lifting off in the same impulse problem."""

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.contact import Contact, plane
from pinext.contact.impulse import frictional_impulse

G = 9.81


def _ball(mass, radius):
    """A sphere moving in the x-z plane (x, z, pitch about y) with a frame at its bottom point
    (in the body: it is the touching point when the pitch is zero)."""
    model = pin.Model()
    model.name = "ball"
    jx = model.addJoint(0, pin.JointModelPX(), pin.SE3.Identity(), "x")
    jz = model.addJoint(jx, pin.JointModelPZ(), pin.SE3.Identity(), "z")
    jr = model.addJoint(jz, pin.JointModelRY(), pin.SE3.Identity(), "pitch")
    model.appendBodyToJoint(jr, pin.Inertia.FromSphere(mass, radius), pin.SE3.Identity())
    bottom = pin.SE3(np.eye(3), np.array([0.0, 0.0, -radius]))
    model.addFrame(pin.Frame("bottom", jr, 0, bottom, pin.FrameType.OP_FRAME))
    return model


def _throw(vx, spin, mu, e, mass=1.0, radius=0.1, height=0.5):
    """Drop the ball from ``height`` (bottom above the ground) with horizontal speed vx and
    spin ω about y, timed so that the pitch is zero at the touchdown; returns (v⁻, v⁺, event)."""
    t_hit = np.sqrt(2 * height / G)
    system = px.System(
        _ball(mass, radius),
        contacts=[Contact(plane("bottom"), friction=mu, restitution=e, name="ground")],
    )
    q0 = np.array([0.0, radius + height, -spin * t_hit])
    traj = px.simulate(system, t_hit + 1e-5, q0=q0, v0=np.array([vx, 0.0, spin]))
    event = traj.events[0]
    assert event.name == "contact:ground"
    assert event.t == pytest.approx(t_hit, abs=1e-10)
    at = np.flatnonzero(traj.t == event.t)
    return traj.v[at[0]], traj.v[at[1]], event


def _hand(vx, vz, spin, mu, e, mass=1.0, radius=0.1):
    """Newton's impact law with the friction cone for a sphere on a plane, by hand.

    Bottom point: velocity v + ω e_y × (−r e_z) = (vx − r ω, vz). Impulse P = (P_t, P_n) at
    the bottom point: m Δvx = P_t, m Δvz = P_n, I Δω = (−r e_z × P)_y = −r P_t, I = 2/5 m r².
    Normal: vz⁺ = −e vz⁻, so P_n = m (1 + e)|vz⁻|. Tangential velocity after:
    u⁺ = u⁻ + P_t (1/m + r²/I) = u⁻ + 7 P_t / (2 m). Sticking needs P_t = −2 m u⁻ / 7 with
    |P_t| ≤ μ P_n; else it slides through the impact with P_t = −μ P_n sign(u⁻).
    """
    inertia = 0.4 * mass * radius**2
    slip = vx - radius * spin
    p_n = mass * (1 + e) * abs(vz)
    p_t = -2 * mass * slip / 7
    stick = abs(p_t) <= mu * p_n
    if not stick:
        p_t = -mu * p_n * np.sign(slip)
    v_plus = np.array([vx + p_t / mass, vz + p_n / mass, spin - radius * p_t / inertia])
    return v_plus, p_n, p_t, stick


@pytest.mark.parametrize(
    ("vx", "spin", "mu", "e"),
    [
        (2.0, 10.0, 0.3, 0.5),  # sticking, bouncing
        (2.0, 10.0, 0.3, 0.0),  # plastic sticking: leaves rolling, vx⁺ = (5 vx + 2 r ω)/7
        (10.0, -20.0, 0.3, 0.5),  # sliding through the impact
        (-1.0, 30.0, 0.2, 0.8),  # back-spin, sliding
    ],
)
def test_spinning_ball_leaves_with_the_hand_computed_velocities(vx, spin, mu, e):
    v_minus, v_plus, event = _throw(vx, spin, mu, e)
    expected, p_n, p_t, stick = _hand(v_minus[0], v_minus[1], v_minus[2], mu, e)
    np.testing.assert_allclose(v_plus, expected, rtol=1e-10, atol=1e-10)
    assert event.info["cone"] == ("stick" if stick else "slip")
    np.testing.assert_allclose(event.info["impulse"][:2], [p_n, p_t], rtol=1e-10, atol=1e-12)
    if stick and e == 0.0:  # rolling after a plastic sticking impact
        assert v_plus[0] == pytest.approx((5 * vx + 2 * 0.1 * spin) / 7, rel=1e-10)
        assert v_plus[0] - 0.1 * v_plus[2] == pytest.approx(0.0, abs=1e-10)
    assert event.info["energy_loss"] > 0.0


def test_bouncing_spinning_ball_never_gains_energy_at_an_event():
    system = px.System(
        _ball(1.0, 0.1),
        contacts=[Contact(plane("bottom"), friction=0.3, restitution=0.8, name="ground")],
    )
    traj = px.simulate(system, 1.8, q0=np.array([0.0, 0.6, -0.3]), v0=np.array([1.5, 0.0, 25.0]))
    assert len(traj.events) >= 4
    energy = traj.energy()
    for event in traj.events:
        at = np.flatnonzero(traj.t == event.t)
        assert event.info["energy_loss"] >= -1e-12 * energy[0]
        assert energy[at[-1]] <= energy[at[0]] + 1e-12 * energy[0]
    assert np.abs(traj.energy_balance().residual).max() < 1e-9


def _random_problem(seed):
    """A seeded random impact problem: an SPD mass matrix, a random mix of frictional cones
    (planar and 3D, μ from 0 to 3), frictionless unilateral rows and bilateral rows, often
    with redundant rows (a contact repeated, a row a combination of others, more rows than
    velocities), a pre-impact velocity that keeps the bilateral rows and makes the first
    normal row approach, and a restitution coefficient per row."""
    rng = np.random.default_rng(seed)
    nv = int(rng.integers(2, 9))
    A = rng.normal(size=(nv, nv))
    mass = A @ A.T + float(rng.choice([1e-2, 0.5, 2.0])) * np.eye(nv)
    blocks = []  # (kind, width, μ)
    for _ in range(int(rng.integers(1, 4))):
        blocks.append(
            (
                "cone",
                int(rng.integers(2, 4)),
                float(rng.choice([0.0, 0.3, 1.0, 3.0]) * rng.uniform(0.5, 1.0)),
            )
        )
    for _ in range(int(rng.integers(0, 3))):
        blocks.append(("unilateral", 1, 0.0))
    for _ in range(int(rng.integers(0, 2 if nv > 3 else 1))):
        blocks.append(("bilateral", 1, 0.0))
    rows, cones, bilateral = [], [], []
    for kind, width, mu in blocks:
        start = len(rows)
        rows.extend(rng.normal(size=(width, nv)))
        bilateral.extend([kind == "bilateral"] * width)
        if kind == "cone":
            cones.append((start, list(range(start + 1, start + width)), mu))
    J = np.array(rows)
    redundancy = rng.integers(0, 3)
    if redundancy == 1 and cones:  # a contact repeated (two points with one Jacobian)
        n, t, mu = cones[int(rng.integers(len(cones)))]
        J[cones[-1][0] : cones[-1][0] + 1 + len(cones[-1][1])] = 0.0
        width = min(1 + len(t), 1 + len(cones[-1][1]))
        J[cones[-1][0] : cones[-1][0] + width] = J[n : n + width]
    elif redundancy == 2 and len(J) > 2:  # a row a combination of two others
        i, j, k = rng.choice(len(J), size=3, replace=False)
        J[i] = rng.normal() * J[j] + rng.normal() * J[k]
    bilateral = np.array(bilateral)
    v = rng.normal(size=nv)
    if bilateral.any():  # the bilateral rows are held before the impact
        Jb = J[bilateral]
        minv_jt = np.linalg.solve(mass, Jb.T)
        v -= minv_jt @ np.linalg.lstsq(Jb @ minv_jt, Jb @ v, rcond=None)[0]
    n = cones[0][0]
    direction = np.linalg.solve(mass, J[n])
    if bilateral.any():
        Jb = J[bilateral]
        minv_jt = np.linalg.solve(mass, Jb.T)
        direction -= minv_jt @ np.linalg.lstsq(Jb @ minv_jt, Jb @ direction, rcond=None)[0]
    if J[n] @ direction > 1e-8:
        v -= (J[n] @ v + rng.uniform(0.1, 2.0)) / (J[n] @ direction) * direction
    e = rng.choice([0.0, 0.5, 1.0], size=len(J)) * (rng.uniform() < 0.7)
    return mass, v, J, cones, bilateral, e


def _check_impact(mass, v, J, cones, bilateral, e, result, plastic):
    """The law's conditions on one result, tolerances relative to the problem's scales (the
    solver checks the law to 1e-9 of them, ``LAW_TOLERANCE``): a solution (no fallback),
    no energy created, momentum balance, bilateral rows kept, normal impulses >= 0,
    impulses in their cones, no penetration; with ``plastic`` also complementarity and the
    stick/slip conditions."""
    assert not result.jammed
    before = 0.5 * v @ mass @ v
    after = 0.5 * result.v_plus @ mass @ result.v_plus
    assert after <= before + 1e-10 * before
    P = result.impulse
    sigma = J @ result.v_plus
    rounding = 1e-12 * np.abs(J).max() * np.abs(v).max()
    speed = max(np.abs(J @ v).max(), rounding)
    vel = 1e-9 * speed + rounding
    g_max = max(np.diag(J @ np.linalg.solve(mass, J.T)).max(), 1e-300)
    imp = 1e-9 * max(np.abs(P).max(), speed / g_max)
    np.testing.assert_allclose(
        mass @ (result.v_plus - v), J.T @ P, atol=1e-9 * max(1.0, np.abs(J.T @ P).max())
    )
    assert np.abs(sigma[bilateral]).max(initial=0.0) <= vel
    in_cone = bilateral.copy()
    for (n, t, mu), state in zip(cones, result.cones, strict=True):
        in_cone[[n, *t]] = True
        assert P[n] >= -imp and sigma[n] >= -vel  # pushes, does not penetrate
        assert np.linalg.norm(P[t]) <= mu * P[n] + imp  # in the cone
        if plastic:
            assert abs(P[n] * sigma[n]) <= vel * max(np.abs(P).max(), 1e-300)  # complementarity
            if state == "stick":
                assert np.linalg.norm(sigma[t]) <= vel
            elif state == "slip":  # maximal dissipation against the sliding after
                slip = sigma[t]
                np.testing.assert_allclose(P[t], -mu * P[n] * slip / np.linalg.norm(slip), atol=imp)
            else:
                assert abs(P[n]) <= imp
    for i in np.flatnonzero(~in_cone):
        assert P[i] >= -imp and sigma[i] >= -vel
        if plastic:
            assert abs(P[i] * sigma[i]) <= vel * max(np.abs(P).max(), 1e-300)


def _solve_random_problems(seeds):
    """Each problem plastic and with its restitution: every condition of the law on each."""
    for seed in seeds:
        mass, v, J, cones, bilateral, e = _random_problem(seed)
        plastic = frictional_impulse(mass, v, J, cones=cones, bilateral=bilateral)
        bouncing = frictional_impulse(mass, v, J, cones=cones, bilateral=bilateral, restitution=e)
        _check_impact(mass, v, J, cones, bilateral, e, plastic, True)
        _check_impact(mass, v, J, cones, bilateral, e, bouncing, not e.any())


def test_frictional_impulse_solves_random_problems(simulation_path):
    """200 seeded random problems (coupled, redundant and dependent rows, more rows than
    velocities, μ up to 3): every one solved (no fallback), satisfying the law to 1e-9 and
    creating no energy, plastic and with Stronge's restitution. (No simulation: one path.)"""
    if simulation_path != "compiled":
        pytest.skip("no simulation: the compiled path runs it")
    _solve_random_problems(range(200))


@pytest.mark.slow
def test_frictional_impulse_solves_a_thousand_random_problems(simulation_path):
    """The same on 1 000 seeded random problems (about 2½ minutes)."""
    if simulation_path != "compiled":
        pytest.skip("no simulation: the compiled path runs it")
    _solve_random_problems(range(1000))


def _block(mass, b, h):
    """A rectangular block 2b wide and 2h high moving in the x-z plane (x, z, pitch), with
    frames at its two bottom corners."""
    model = pin.Model()
    model.name = "block"
    jx = model.addJoint(0, pin.JointModelPX(), pin.SE3.Identity(), "x")
    jz = model.addJoint(jx, pin.JointModelPZ(), pin.SE3.Identity(), "z")
    jr = model.addJoint(jz, pin.JointModelRY(), pin.SE3.Identity(), "pitch")
    inertia = np.diag([(b * b + h * h), (b * b + h * h), (b * b + h * h)]) * mass / 3
    model.appendBodyToJoint(jr, pin.Inertia(mass, np.zeros(3), inertia), pin.SE3.Identity())
    for name, x in (("left", -b), ("right", b)):
        corner = pin.SE3(np.eye(3), np.array([x, 0.0, -h]))
        model.addFrame(pin.Frame(name, jr, 0, corner, pin.FrameType.OP_FRAME))
    return model


def _housner_ratio(mass, b, h):
    """ω⁺/ω⁻ from first principles: angular momentum about the new corner O' is conserved
    (the only impulse acts at O'). Before, the block turns about the old corner O with ω⁻;
    its centre G at (0, h) above the midpoint has velocity ω⁻ × (G − O). About O',
    H⁻ = I_G ω⁻ + m (G − O') × v_G; after, it turns about O': H⁺ = (I_G + m |G − O'|²) ω⁺."""
    i_g = mass * (b * b + h * h) / 3  # (m/12)((2b)² + (2h)²)
    old, new, centre = np.array([b, 0.0]), np.array([-b, 0.0]), np.array([0.0, h])

    def cross(a, c):
        return a[0] * c[1] - a[1] * c[0]

    omega = 1.0
    v_g = omega * np.array([-(centre - old)[1], (centre - old)[0]])  # ω ẑ × r in the plane
    h_minus = i_g * omega + mass * cross(centre - new, v_g)
    h_plus_per_omega = i_g + mass * (centre - new) @ (centre - new)
    return h_minus / h_plus_per_omega


@pytest.mark.parametrize(("b", "h", "t_final"), [(0.1, 0.3, 1.5), (0.15, 0.25, 0.78)])
def test_rocking_block_loses_housners_fraction_at_every_impact(b, h, t_final):
    """(The impacts accumulate at a finite time, inelastic collapse: the run stops before.)"""
    mass = 2.0
    contacts = [Contact(plane(n), friction=2.0, name=n) for n in ("left", "right")]
    system = px.System(_block(mass, b, h), contacts=contacts)
    theta = 0.5 * np.arctan(b / h)  # on the right corner, half way to tipping over
    corner = pin.utils.rotate("y", theta) @ np.array([b, 0.0, -h])
    traj = px.simulate(system, t_final, q0=np.array([-corner[0], -corner[2], theta]))
    alpha = np.arctan(b / h)
    housner = 1 - 1.5 * np.sin(alpha) ** 2
    assert _housner_ratio(mass, b, h) == pytest.approx(housner, rel=1e-12)
    assert len(traj.events) >= 4
    names = [e.name for e in traj.events]
    assert names[:4] == ["contact:left", "contact:right", "contact:left", "contact:right"]
    for event in traj.events:
        at = np.flatnonzero(traj.t == event.t)
        ratio = traj.v[at[-1], 2] / traj.v[at[0], 2]
        assert ratio == pytest.approx(housner, abs=1e-3)
        assert event.info["cone"] == "stick"
        assert event.info["energy_loss"] >= 0.0
    # the old corner lifts off in the same impulse: one corner on the ground in every phase
    assert all(sorted(p.name.split("+")) == ["free", "stick"] for p in traj.phases)
    assert np.abs(traj.energy_balance().residual).max() < 1e-9


@pytest.mark.parametrize(("vx", "mu"), [(0.5, 0.5), (3.0, 0.1)])
def test_rod_falling_flat_closes_both_frictional_ends_in_one_impulse(vx, mu):
    """A rod (mass m) falls flat with horizontal speed vx onto two frictional supports: one
    impulse problem for both ends. By symmetry each end takes P_n = m |vz⁻| / 2; the ends
    stick when the tangential impulse m vx / 2 per end stays within μ P_n (then vx⁺ = 0),
    else slide with P_t = −μ P_n each (vx⁺ = vx − 2 μ P_n / m)."""
    from tests.test_impulse import _rod

    mass, height = 1.0, 0.3
    contacts = [Contact(plane(n), friction=mu, name=n) for n in ("left", "right")]
    system = px.System(_rod(mass=mass), contacts=contacts)
    traj = px.simulate(system, 0.3, q0=np.array([0.0, height, 0.0]), v0=np.array([vx, 0, 0]))
    (impact,) = traj.events
    vz = np.sqrt(2 * G * height)
    p_n = mass * vz / 2
    stick = mass * vx / 2 <= mu * p_n
    p_t = -mass * vx / 2 if stick else -mu * p_n
    np.testing.assert_allclose(impact.info["impulse"][:2], [p_n, p_t], rtol=1e-10)
    assert impact.info["cone"] == ("stick" if stick else "slip")
    at = np.flatnonzero(traj.t == impact.t)[-1]
    np.testing.assert_allclose(traj.v[at], [vx + 2 * p_t / mass, 0.0, 0.0], atol=1e-10)
    expected_phase = "stick+stick" if stick else "slip+slip"
    assert traj.phases[1].name == expected_phase
    assert np.abs(traj.energy_balance().residual).max() < 1e-9


def test_solo12_drops_onto_four_frictional_feet_and_stands():
    """Solo12 (example-robot-data, free flyer) dropped from 0.3 m in its standing posture
    under a PD posture law, with four 3D frictional point contacts at its feet (μ = 0.8),
    event-driven: the four feet close in one impulse problem, no foot penetrates more than
    1e-6 m, the feet stick for 5 s, the impact dissipates and the audit closes."""
    robot = px.load_robot("solo12")
    model = robot.model
    data = model.createData()
    feet = ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]
    posture = np.array([0, 0.8, -1.6, 0, 0.8, -1.6, 0, -0.8, 1.6, 0, -0.8, 1.6], float)
    q0 = pin.neutral(model)
    q0[7:] = posture
    pin.framesForwardKinematics(model, data, q0)
    q0[2] = 0.3 - min(data.oMf[model.getFrameId(f)].translation[2] for f in feet)
    kp, kd = 8.0, 0.3  # [N.m/rad], [N.m.s/rad]

    def posture_law(t, x):
        u = np.zeros(model.nv)
        u[6:] = kp * (posture - x[7 : model.nq]) - kd * x[model.nq + 6 : model.nq + model.nv]
        return u

    contacts = [Contact(plane(f), friction=0.8, name=f) for f in feet]
    system = px.System(robot, contacts=contacts)
    traj = px.simulate(system, 5.0, q0=q0, control=posture_law, output_dt=0.01)
    (impact,) = traj.events
    assert impact.t == pytest.approx(np.sqrt(2 * 0.3 / G), abs=1e-9)
    assert impact.info["energy_loss"] > 0.0 and impact.info["cone"] == "stick"
    assert [p.name for p in traj.phases] == ["free+free+free+free", "stick+stick+stick+stick"]
    lowest = np.inf
    for q in traj.q:
        pin.framesForwardKinematics(model, data, q)
        lowest = min(lowest, *(data.oMf[model.getFrameId(f)].translation[2] for f in feet))
    assert lowest > -1e-6
    after = traj.t > impact.t
    for f in feet:
        assert np.abs(traj.outputs[f"friction:{f}.slip_velocity"][after]).max() < 1e-9
        assert traj.outputs[f"friction:{f}.normal_force"][after].min() > 0.0
    weight = pin.computeTotalMass(model) * G
    total = sum(traj.outputs[f"friction:{f}.normal_force"][-1, 0] for f in feet)
    assert total == pytest.approx(weight, rel=1e-6)  # standing still at the end
    assert np.abs(traj.energy_balance().residual).max() < 1e-9


def test_stronge_restitution_is_newtons_on_an_uncoupled_row_and_never_creates_energy():
    """One frictionless row: Stronge's energetic coefficient is Newton's (the row leaves at
    −e times its approach, the kinetic energy along it falls by e²); e = 1 on coupled
    frictional rows creates no energy (the restitution scaled down where it would)."""
    rng = np.random.default_rng(5)
    mass = np.diag([2.0, 3.0])
    J = np.array([[1.0, 0.0], [0.0, 1.0]])
    v = np.array([-1.5, 0.4])
    for e in (0.0, 0.3, 1.0):
        result = frictional_impulse(mass, v, J, cones=[(0, [1], 0.0)], restitution=e)
        np.testing.assert_allclose(result.v_plus, [1.5 * e, 0.4], rtol=1e-12)
        assert result.restitution_scale == 1.0
    scaled = 0
    for _ in range(100):
        J = np.eye(3) + rng.normal(scale=0.6, size=(3, 3))
        v = np.linalg.solve(J, np.array([-1.0, *rng.normal(size=2)]))
        result = frictional_impulse(np.eye(3), v, J, cones=[(0, [1, 2], 0.5)], restitution=1.0)
        assert result.v_plus @ result.v_plus <= v @ v * (1 + 1e-10)
        assert J[0] @ result.v_plus >= -1e-10
        scaled += result.restitution_scale < 1.0
    print(f"{scaled} of 100 with the restitution scaled down")


def test_rows_that_contradict_each_other_fall_back_without_creating_energy():
    """The one class of problems known to have no solution: a bilateral row that moves
    before the impact equal to an approaching normal row (keeping its velocity keeps the
    contact approaching). The fallback (the convex relaxation) says so (``jammed``), keeps
    the impulse in the cone and creates no energy."""
    mass = np.diag([1.0, 2.0, 3.0])
    J = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    v = np.array([0.5, -1.0, 0.2])
    for mu in (0.0, 0.5):
        result = frictional_impulse(
            mass, v, J, cones=[(0, [1], mu)], bilateral=np.array([False, False, True])
        )
        assert result.jammed
        P = result.impulse
        assert P[0] >= 0.0 and abs(P[1]) <= mu * P[0] * (1 + 1e-12)
        assert result.v_plus @ mass @ result.v_plus <= v @ mass @ v * (1 + 1e-12)
