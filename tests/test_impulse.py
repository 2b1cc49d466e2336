"""Simultaneous impacts as one impulse problem (McClamroch (1986) (40)–(42)): the LCP solver,
a rod falling flat on two supports, a joint at its limit while the tip hits a table, and impact
events that never fire on separating motion (the pen tip bouncing with restitution 0.5)."""

import itertools
import warnings

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.contact import Contact, impact_impulse, plane, solve_lcp

G = 9.81


def _enumerate_lcp(delassus, b):
    """The LCP's solution by trying every active set (reference)."""
    m = b.size
    for active in itertools.product([False, True], repeat=m):
        active = np.array(active)
        P = np.zeros(m)
        if active.any():
            P[active] = np.linalg.solve(delassus[np.ix_(active, active)], -b[active])
        w = delassus @ P + b
        if P.min() >= -1e-12 and w[~active].min(initial=0.0) >= -1e-12:
            return P
    raise AssertionError("no solution")


def test_lcp_equals_enumeration_on_random_problems():
    rng = np.random.default_rng(7)
    for _ in range(200):
        m = int(rng.integers(1, 6))
        A = rng.normal(size=(m, m + 2))
        delassus = A @ A.T + 1e-3 * np.eye(m)
        b = rng.normal(size=m)
        P, active = solve_lcp(delassus, b)
        w = delassus @ P + b
        assert P.min() >= 0.0 and w.min() >= -1e-10 * np.abs(b).max()
        assert abs(P @ w) < 1e-10 * (1 + np.abs(P).max() * np.abs(b).max())
        np.testing.assert_allclose(P, _enumerate_lcp(delassus, b), atol=1e-10)


def test_lcp_with_dependent_rows_equals_nnls_on_1000_problems():
    """Redundant rows (duplicates and non-negative combinations of other rows: both finger
    stops of a gripper, a stop and a stuck joint's friction row) leave the feasible set and
    hence the post-impact velocity unchanged, and make the Delassus matrix only semi-definite.
    Reference: the plastic impact as a non-negative least-squares problem,
    ``min ½|A P + Lᵀ v⁻|²`` over ``P ≥ 0`` with ``A = L⁻¹ Jᵀ`` and ``M = L Lᵀ``, whose
    normal equations are the LCP (scipy's NNLS, Lawson & Hanson); the velocity after is
    unique."""
    import scipy.optimize

    rng = np.random.default_rng(2026)
    for _ in range(1000):
        n = int(rng.integers(2, 9))
        independent = rng.normal(size=(int(rng.integers(1, n + 1)), n))
        combos = rng.uniform(0.0, 1.0, size=(int(rng.integers(1, 5)), independent.shape[0]))
        combos[rng.uniform(size=combos.shape) < 0.5] = 0.0  # duplicates and partial sums
        jacobian = rng.permutation(np.vstack([independent, combos @ independent]))
        factor = rng.normal(size=(n, n))
        mass = factor @ factor.T + 0.1 * np.eye(n)
        v = rng.normal(size=n)
        lower = np.linalg.cholesky(mass)
        delassus = jacobian @ np.linalg.solve(mass, jacobian.T)
        b = jacobian @ v
        P, active = solve_lcp(delassus, b)
        w = delassus @ P + b
        scale = np.abs(b).max()
        assert P.min() >= 0.0 and w.min() >= -1e-9 * scale
        assert np.abs(w[active]).max(initial=0.0) <= 1e-9 * scale
        assert abs(P @ w) <= 1e-9 * scale * (1.0 + np.abs(P).sum())
        A = np.linalg.solve(lower, jacobian.T)
        reference = scipy.optimize.nnls(A, -lower.T @ v)[0]
        v_plus = v + np.linalg.solve(mass, jacobian.T @ P)
        v_ref = v + np.linalg.solve(mass, jacobian.T @ reference)
        assert np.abs(v_plus - v_ref).max() <= 1e-8 * max(1.0, np.abs(v).max())


def test_lcp_holds_a_heavy_row_next_to_light_dependent_ones_to_its_own_rounding():
    """A torso (G = 0.03) hits its stop while a light finger (G = 1e6) rests on its stop and
    its `<mimic>` coupling repeats that row: the torso's velocity after the impact is zero to
    the LCP's tolerance of the approach speeds (1e-10 of them) or the rounding of its own
    products, not to the finger's scale (it kept -1.8e-7 m/s, which its Baumgarte row turned
    into a stop 1.2e-9 m past on tiago_pro)."""
    jacobian = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    delassus = jacobian @ np.diag([1e6, 0.03]) @ jacobian.T
    b = np.array([-1e-3, -0.169, -1e-3])
    impulse, active = solve_lcp(delassus, b)
    w = delassus @ impulse + b
    assert active.all() and np.all(impulse >= 0)
    bound = 1e-10 * np.abs(b).max() + 1e-13 * np.abs(delassus) @ np.abs(impulse)
    assert np.all(np.abs(w) <= bound), (w, bound)
    assert abs(w[1]) < 1e-11  # the heavy row's own scale: 0.169 m/s approach


def test_lcp_of_rows_that_contradict_each_other_says_so():
    """A bilateral row that drives a unilateral one through its surface: no solution."""
    delassus = np.array([[1.0, 1.0], [1.0, 1.0]])  # the same direction twice
    b = np.array([1.0, -1.0])  # held at +1 by the bilateral row, approaching at -1
    with pytest.raises(px.exceptions.ConstraintError, match="contradict"):
        solve_lcp(delassus, b, np.array([True, False]))


def test_contact_forces_hold_complementarity_at_the_acceleration_level():
    """``contact_forces``, McClamroch (1986) (40)–(42), on 300 seeded random problems with
    unilateral, bilateral and compliant rows: the accelerations ``a = M⁻¹(τ − h + Jᵀλ)``
    of its reactions, formed here, give ``w = J a + C λ + γ`` with ``λ ≥ 0, w ≥ 0, λᵀw = 0``
    on the unilateral rows and ``w = 0`` on the bilateral ones (to the rounding of the
    products, relative to their largest term)."""
    from pinext.contact.impulse import contact_forces
    from pinext.simulation.component import ConstraintRows, RowKind

    rng = np.random.default_rng(11)
    for _ in range(300):
        n = int(rng.integers(2, 9))
        factor = rng.normal(size=(n, n))
        mass = factor @ factor.T + 0.1 * np.eye(n)
        bias, tau = rng.normal(size=n), rng.normal(size=n)
        m_uni = int(rng.integers(1, n + 1))
        m_bi = int(rng.integers(0, n - m_uni + 1))
        rows = []
        for kind, m in ((RowKind.UNILATERAL, m_uni), (RowKind.BILATERAL, m_bi)):
            if m:
                compliance = rng.uniform(0.0, 0.5, size=m) * (rng.uniform(size=m) < 0.3)
                jacobian, drift = rng.normal(size=(m, n)), rng.normal(size=m)
                rows.append(("rows", ConstraintRows(jacobian, drift, compliance, kind)))
        lam, active = contact_forces(rows, mass, bias, tau)
        jacobian = np.vstack([r.jacobian for _, r in rows])
        a = np.linalg.solve(mass, tau - bias + jacobian.T @ lam)
        w = (
            jacobian @ a
            + np.concatenate([r.compliance for _, r in rows]) * lam
            + np.concatenate([r.drift for _, r in rows])
        )
        scale = 1e-9 * (1.0 + np.abs(jacobian).max() * np.abs(a).max() + np.abs(lam).max())
        uni = slice(0, m_uni)
        assert lam[uni].min() >= -scale and w[uni].min() >= -scale
        assert np.abs(lam[uni] * w[uni]).max() <= scale * (1.0 + np.abs(lam[uni]).max())
        assert np.abs(w[m_uni:]).max(initial=0.0) <= scale
        np.testing.assert_array_equal(active[m_uni:], True)


def _rod(length=1.0, mass=1.0):
    """A planar rod (x, z, pitch) with frames "left" and "right" at its ends."""
    model = pin.Model()
    model.name = "rod"
    jx = model.addJoint(0, pin.JointModelPX(), pin.SE3.Identity(), "x")
    jz = model.addJoint(jx, pin.JointModelPZ(), pin.SE3.Identity(), "z")
    jr = model.addJoint(jz, pin.JointModelRY(), pin.SE3.Identity(), "pitch")
    inertia = np.diag([1e-4, mass * length**2 / 12, mass * length**2 / 12])
    model.appendBodyToJoint(jr, pin.Inertia(mass, np.zeros(3), inertia), pin.SE3.Identity())
    for name, x in (("left", -length / 2), ("right", length / 2)):
        placement = pin.SE3(np.eye(3), np.array([x, 0.0, 0.0]))
        model.addFrame(pin.Frame(name, jr, 0, placement, pin.FrameType.OP_FRAME))
    return model


def test_rod_falling_flat_closes_both_supports_in_one_impulse():
    model = _rod()
    contacts = [Contact(plane(name, (0.0, 0.0, 0.0)), name=name) for name in ("left", "right")]
    system = px.System(model, contacts=contacts)
    h = 0.3
    traj = px.simulate(system, 1.0, q0=np.array([0.0, h, 0.0]))
    (impact,) = traj.events
    assert impact.t == pytest.approx(np.sqrt(2 * h / G), abs=1e-10)
    assert impact.info["simultaneous"] == ["right"]
    # one impulse: both ends stop, each support takes half the momentum, none pulls
    assert impact.info["impulse"][0] == pytest.approx(0.5 * np.sqrt(2 * G * h), rel=1e-10)
    assert traj.phases[-1].name == "constrained,constrained"
    after = traj.t > impact.t
    assert np.abs(traj.v[after]).max() < 1e-9
    force = traj.outputs["contact.force"][-1]
    np.testing.assert_allclose(force, [G / 2, G / 2], rtol=1e-9)
    assert np.abs(traj.energy_balance().residual).max() < 1e-9


def test_tilted_rod_lands_on_one_end_then_the_other_without_pulling():
    # the left end lands first and the rod rotates about it; when the right end lands, one
    # impulse problem decides both rows: no support pulls, none separates with v < 0
    model = _rod()
    contacts = [Contact(plane(name, (0.0, 0.0, 0.0)), name=name) for name in ("left", "right")]
    system = px.System(model, contacts=contacts)
    traj = px.simulate(system, 1.5, q0=np.array([0.0, 0.3, -0.2]))
    impacts = [e for e in traj.events if e.name.startswith("contact:")]
    assert [e.name for e in impacts][:2] == ["contact:left", "contact:right"]
    for e in impacts:
        assert e.info["approach_velocity"] < 0 and e.info["impulse"][0] >= 0
    gaps = traj.outputs["contact.gap"]
    assert gaps.min() > -1e-8  # no end below its support
    assert traj.phases[-1].name == "constrained,constrained"
    forces = traj.outputs["contact.force"]
    assert forces.min() >= -1e-9  # no support pulls
    assert np.abs(traj.energy_balance().residual).max() < 1e-9


def _two_link_arm():
    """Two links (0.4 m, 1 kg) about y; joint j0 limited to [0.3, 3], a frame "tip"."""
    model = pin.Model()
    model.name = "arm2"
    parent = 0
    for i in range(2):
        origin = pin.SE3(np.eye(3), np.array([0.0, 0.0, -0.4 if i else 0.0]))
        parent = model.addJoint(parent, pin.JointModelRY(), origin, f"j{i}")
        inertia = pin.Inertia(1.0, np.array([0.0, 0.0, -0.2]), np.diag([0.0134, 0.0134, 1e-4]))
        model.appendBodyToJoint(parent, inertia, pin.SE3.Identity())
    tip = pin.SE3(np.eye(3), np.array([0.0, 0.0, -0.4]))
    model.addFrame(pin.Frame("tip", parent, 0, tip, pin.FrameType.OP_FRAME))
    model.lowerPositionLimit[:] = [0.3, -3.0]
    model.upperPositionLimit[:] = [3.0, 3.0]
    return model


def test_joint_at_its_limit_while_the_tip_hits_a_table():
    model = _two_link_arm()
    data = model.createData()
    q0 = np.array([0.3, -1.4])  # j0 rests on its lower limit, link 2 swings down
    pin.framesForwardKinematics(model, data, np.array([0.3, 0.0]))
    table = data.oMf[model.getFrameId("tip")].translation[2] + 0.1
    system = px.System(model, contacts=[Contact(plane("tip", (0.0, 0.0, table)))])
    assert system.initial_phase(0.0, system.initial_state(q0)).name == "free+limit:j0@lower"
    traj = px.simulate(system, 1.5, q0=q0)
    first = traj.events[0]
    assert first.name == "contact:tip"
    # the impulse problem held the limit row: j0 did not move into its limit
    i = np.flatnonzero(traj.t == first.t)[-1]
    assert traj.v[i, 0] >= -1e-12
    assert traj.q[:, 0].min() > 0.3 - 1e-9
    assert traj.outputs["contact.gap"].min() > -1e-8
    impacts = [e for e in traj.events if e.name.startswith(("contact:", "limit:"))]
    assert all(e.info["approach_velocity"] < 0 for e in impacts if e.info["impulse"].any())
    assert all(e.info["energy_loss"] > -1e-12 for e in traj.events)
    assert len(traj.events) < 40  # the Zeno cut ends the alternating impacts
    assert np.abs(traj.energy_balance().residual).max() < 1e-9
    # a joint's limit row and the tip's row in one impulse: against a direct solve
    v = np.array([0.0, -2.0])
    pin.computeAllTerms(model, data, q0, v)
    J = np.vstack([[1.0, 0.0], _tip_z_jacobian(model, data, q0)])
    result = impact_impulse(model, data, q0, v, J)
    assert result.impulse.min() >= 0.0 and (J @ result.v_plus).min() > -1e-12


def _tip_z_jacobian(model, data, q):
    fid = model.getFrameId("tip")
    J = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)
    return J[2]


def test_pen_tip_bounces_once_per_impact_and_never_on_separating_motion():
    """The pen tip (restitution 0.5) bounces on a table until the Zeno cut holds it. Each
    impact obeys Newton's law at the impulse level with one frictionless row ``J`` (the
    tip's world z velocity, Pinocchio's frame Jacobian): ``J v⁺ = −e J v⁻`` when it bounces
    (``e |J v⁻| > rest_velocity``), ``J v⁺ = 0`` when it rests, ``M (v⁺ − v⁻) = Jᵀ P`` with
    Pinocchio's ``crba``, and the impulse is the closed form ``P = −(1 + e) J v⁻ / (J M⁻¹
    Jᵀ)``. Tolerances are rounding: ``4 nv ε`` times the sums of the absolute products of
    the velocities v⁻, v⁺ (each rounded to ε |v|, the jump being their difference) with J
    or M, and ``4 nv ε κ(M)`` relative for P, whose Delassus scalar comes from a solve with
    M."""
    robot = px.load_urdf(px.robot_path("six_dof_arm"))
    model, data = robot.model, robot.model.createData()
    q0 = np.array([0.0, 0.6, -0.9, 0.0, 0.5, 0.0])
    pin.framesForwardKinematics(model, data, q0)
    tip = data.oMf[model.getFrameId("pen_tip")].translation.copy()
    contact = Contact(plane("pen_tip", tip - [0.0, 0.0, 0.05]), restitution=0.5)
    system = px.System(robot, contacts=[contact])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", px.contact.VelocityLimitWarning)
        traj = px.simulate(system, 1.0, q0=q0)
    impacts = [e for e in traj.events if e.name == "contact:pen_tip"]
    bounces = [e for e in impacts if e.info["bounce"]]
    assert len(bounces) >= 5 and impacts[-1].info["bounce"] is False  # Zeno cut: it rests
    assert all(e.info["approach_velocity"] < 0 for e in impacts)
    times = [e.t for e in impacts]
    assert np.all(np.diff(times) > 0)  # one impact per bounce, never at a flight's start
    for impact in impacts:
        _assert_newtons_impact(model, traj, impact, restitution=0.5, rest=contact.rest_velocity)
    assert len(traj.events) < 50
    assert np.abs(traj.energy_balance().residual).max() < 1e-9


def _assert_newtons_impact(model, traj, impact, restitution, rest):
    """Newton's law, the impulse–momentum balance and the closed-form impulse of one
    frictionless pen-tip impact on a horizontal table, from the samples before and after it
    (see :func:`test_pen_tip_bounces_once_per_impact_and_never_on_separating_motion`)."""
    data = model.createData()
    before, after = np.flatnonzero(traj.t == impact.t)[[0, -1]]
    q, v_minus, v_plus = traj.q[after], traj.v[before], traj.v[after]
    np.testing.assert_array_equal(traj.q[before], q)  # an impulse jumps the velocity only
    fid = model.getFrameId("pen_tip")
    J = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)[2]
    mass = pin.crba(model, data, q)
    mass = np.triu(mass) + np.triu(mass, 1).T
    rounding = 4 * model.nv * np.finfo(float).eps
    approach = J @ v_minus
    row_scale = rounding * np.abs(J) @ (np.abs(v_minus) + np.abs(v_plus))
    assert abs(impact.info["approach_velocity"] - approach) <= row_scale, impact
    bounce = restitution * abs(approach) > rest  # the Zeno cut
    assert impact.info["bounce"] == bounce, (impact.t, approach)
    e = restitution if bounce else 0.0
    assert abs(J @ v_plus + e * approach) <= row_scale, (impact.t, J @ v_plus, -e * approach)
    (P,) = impact.info["impulse"]
    balance = mass @ (v_plus - v_minus) - J * P  # v± carry ε |v±|: the jump their difference
    magnitude = np.abs(mass) @ (np.abs(v_minus) + np.abs(v_plus)) + np.abs(J * P)
    assert np.abs(balance).max() <= rounding * magnitude.max(), (impact.t, balance)
    expected = -(1.0 + e) * approach / (J @ np.linalg.solve(mass, J))
    assert abs(P - expected) <= rounding * np.linalg.cond(mass) * abs(expected), (P, expected)


def test_a_first_impact_that_compiles_says_so_once(monkeypatch, capsys):
    """The impulse kernels compile at the first impact of a fresh installation (10–20 s):
    they are called through a ``FirstCallNotice``, so a first call that outlasts its delay
    prints the impact kernels' notice, once; later calls run the kernel directly."""
    import time
    import types

    from pinext.contact import impulse
    from pinext.dynamics.first_call import FirstCallNotice

    kernel = impulse._proximal_lcp

    def slow(*args):  # stands for a kernel that numba is compiling
        time.sleep(0.3)
        return kernel(*args)

    kernels = FirstCallNotice(types.SimpleNamespace(_proximal_lcp=slow), impulse._k._message, 0.1)
    monkeypatch.setattr(impulse, "_k", kernels)
    delassus, b = np.array([[2.0]]), np.array([-1.0])
    for _ in range(2):
        np.testing.assert_allclose(solve_lcp(delassus, b)[0], [0.5])
    assert capsys.readouterr().err.count("pinext: compiling the impact kernels") == 1
    assert kernels._proximal_lcp is slow  # later calls go straight to the kernel


def test_bilateral_rows_keep_their_velocity_or_come_to_rest_as_told():
    """A bilateral row of an impact keeps its velocity (a loop, a coupling: satisfied before
    the impact), or, told ``stopping`` (a joint that friction holds, creeping at the rounding
    of earlier impacts), comes to rest: on 100 seeded problems of one approaching unilateral
    row and two bilateral rows, v⁺ is the plastic impact's closed form
    ``v⁺ = v⁻ − M⁻¹Jᵀ (J M⁻¹ Jᵀ)⁻¹ (J v⁻ − target)`` over the held rows, the unilateral row
    held when its impulse is then ≥ 0, else free (and then not approaching)."""
    rng = np.random.default_rng(5)
    model = pin.buildSampleModelManipulator()
    data = model.createData()

    def plastic(mass, v, jacobian, target):
        minv_jt = np.linalg.solve(mass, jacobian.T)
        impulse = np.linalg.solve(jacobian @ minv_jt, target - jacobian @ v)
        return v + minv_jt @ impulse, impulse

    for _ in range(100):
        q = pin.randomConfiguration(model)
        v = rng.normal(size=model.nv)
        jacobian = rng.normal(size=(3, model.nv))
        jacobian[0] *= -np.sign(jacobian[0] @ v)  # the unilateral row approaches
        stopping = np.array([False, rng.uniform() < 0.5, rng.uniform() < 0.5])
        result = impact_impulse(
            model, data, q, v, jacobian, bilateral=np.array([False, True, True]),
            stopping=stopping,
        )  # fmt: skip
        mass = pin.crba(model, data, q)
        mass = np.triu(mass) + np.triu(mass, 1).T
        target = np.where(stopping, 0.0, jacobian @ v)
        target[0] = 0.0
        expected, impulse = plastic(mass, v, jacobian, target)
        if impulse[0] < 0.0:  # the unilateral row is free: the bilateral rows alone
            expected, _ = plastic(mass, v, jacobian[1:], target[1:])
            assert jacobian[0] @ expected >= 0.0
        np.testing.assert_allclose(result.v_plus, expected, rtol=0, atol=1e-9 * np.abs(v).max())


def test_the_compiled_spd_solve_equals_lapack_and_refuses_an_indefinite_matrix():
    """The impulse kernels' Cholesky solve (read from the upper triangle, as crba fills M)
    against numpy's LAPACK solve on seeded SPD matrices of condition up to 1e8: the gap is
    within the backward error the condition allows, κ ε times a few n."""
    from pinext.contact.impulse import _spd_solve

    rng = np.random.default_rng(7)
    for n, condition in ((1, 1.0), (6, 1e3), (12, 1e8)):
        Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
        A = Q @ np.diag(np.geomspace(1.0, condition, n)) @ Q.T
        B = rng.standard_normal((n, 3))
        upper = np.triu(A) + np.tril(rng.standard_normal((n, n)), -1)  # below: not read
        X = _spd_solve(upper, B)
        reference = np.linalg.solve(A, B)
        bound = 10 * n * condition * np.finfo(float).eps
        assert np.abs(X - reference).max() <= bound * np.abs(reference).max()
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        _spd_solve(np.array([[1.0, 2.0], [2.0, 1.0]]), np.ones((2, 1)))
