"""Impact (20.90)–(20.91), restitution, the environment-mass law; bouncing ball and Zeno."""

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.contact import Contact, plane, plastic_impact, seed_impact_as_printed
from pinext.exceptions import InvalidParameter

from ._contact_models import arm, ball, mass_matrix

G = 9.81


def _tip_jacobian(model, q):
    data = model.createData()
    fid = model.getFrameId("pen_tip")
    return pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)[:3]


def test_plastic_impact_equals_pin_impulse_dynamics():
    model = arm()
    rng = np.random.default_rng(20)
    for _ in range(3):
        q, v = rng.uniform(-1, 1, 6), rng.normal(size=6)
        J = _tip_jacobian(model, q)
        ref_data = model.createData()
        v_ref = pin.impulseDynamics(model, ref_data, q, v, J, 0.0, 0.0)
        v_plus, impulse = plastic_impact(model, model.createData(), q, v, J)
        np.testing.assert_allclose(v_plus, v_ref, atol=1e-10)
        np.testing.assert_allclose(impulse, ref_data.impulse_c, atol=1e-10)
        assert np.abs(J @ v_plus).max() < 1e-12


def test_restitution_equals_pin_impulse_dynamics_and_energy_never_increases():
    model = arm()
    rng = np.random.default_rng(21)
    data = model.createData()
    for e in (0.0, 0.3, 1.0):
        q, v = rng.uniform(-1, 1, 6), rng.normal(size=6)
        J = _tip_jacobian(model, q)
        v_ref = pin.impulseDynamics(model, model.createData(), q, v, J, e, 0.0)
        res = plastic_impact(model, data, q, v, J, restitution=e)
        np.testing.assert_allclose(res.v_plus, v_ref, atol=1e-10)
        np.testing.assert_allclose(J @ res.v_plus, -e * (J @ v), atol=1e-12)
        M = mass_matrix(model, data, q)
        assert 0.5 * res.v_plus @ M @ res.v_plus <= 0.5 * v @ M @ v * (1 + 1e-14)
    with pytest.raises(InvalidParameter):
        plastic_impact(model, data, q, v, J, restitution=1.5)


def test_environment_mass_law_and_its_rigid_limit():
    model = arm()
    data = model.createData()
    rng = np.random.default_rng(22)
    q, v = rng.uniform(-1, 1, 6), rng.normal(size=6)
    J = _tip_jacobian(model, q)[2:3]  # the normal (z) row
    m_e = 3.0
    v_plus, P = plastic_impact(model, data, q, v, J, environment_mass=m_e)
    # independent KKT solve of H dv = J^T P, m_e s_e+ = -P, J v+ = s_e+
    M = mass_matrix(model, data, q)
    K = np.zeros((8, 8))
    K[:6, :6], K[:6, 7] = M, -J[0]
    K[6, 6], K[6, 7] = m_e, 1.0
    K[7, :6], K[7, 6] = J[0], -1.0
    sol = np.linalg.solve(K, np.concatenate([M @ v, [0.0, 0.0]]))
    np.testing.assert_allclose(v_plus, sol[:6], atol=1e-12)
    np.testing.assert_allclose(P, sol[7:], atol=1e-12)
    # momentum-like check: the tip and the mass move together after the impact
    np.testing.assert_allclose(J @ v_plus, -P / m_e, atol=1e-12)
    # energy never increases (robot + environment mass)
    assert 0.5 * v_plus @ M @ v_plus + 0.5 * m_e * (P[0] / m_e) ** 2 <= 0.5 * v @ M @ v
    # m_e -> infinity recovers the rigid wall
    rigid = plastic_impact(model, data, q, v, J)
    heavy = plastic_impact(model, data, q, v, J, environment_mass=1e12)
    np.testing.assert_allclose(heavy.v_plus, rigid.v_plus, atol=1e-9)


def test_seed_equations_as_printed_give_zero_impulse():
    model = arm()
    rng = np.random.default_rng(23)
    q, v = rng.uniform(-1, 1, 6), rng.normal(size=6)
    J = _tip_jacobian(model, q)[2:3]
    printed = seed_impact_as_printed(model, model.createData(), q, v, J, 3.0)
    assert np.all(printed.impulse == 0.0)
    np.testing.assert_array_equal(printed.v_plus, v)


def test_rank_deficient_impact_warns():
    model = arm()
    rng = np.random.default_rng(24)
    q, v = rng.uniform(-1, 1, 6), rng.normal(size=6)
    J = _tip_jacobian(model, q)
    with pytest.warns(px.contact.RedundantConstraintWarning):
        res = plastic_impact(model, model.createData(), q, v, np.vstack([J, J[:1]]))
    assert np.abs(J @ res.v_plus).max() < 1e-10


def _bouncing_ball(e, h0=1.0, t_final=5.0):
    system = px.System(ball(), contacts=[Contact(plane("ball"), restitution=e)])
    return px.simulate(system, t_final, q0=np.array([h0]), v0=np.zeros(1))


def test_bouncing_ball_apex_heights_and_zeno_rest():
    e, h0 = 0.8, 1.0
    traj = _bouncing_ball(e, h0)
    bounces = [ev for ev in traj.events if ev.info.get("bounce")]
    assert len(bounces) > 20
    # apex after bounce k from the post-impact speed: h_k = e^{2k} h0
    for k, ev in enumerate(bounces[:10], start=1):
        i = np.flatnonzero(traj.t == ev.t)[-1]  # sample after the map
        apex = traj.q[i, 0] + traj.v[i, 0] ** 2 / (2 * G)
        assert apex == pytest.approx(e ** (2 * k) * h0, rel=1e-8)
    # Zeno: the ball comes to rest near t_inf = t1 + 2 e v0 / (g (1 - e)); finite event count
    v0 = np.sqrt(2 * G * h0)
    t_inf = v0 / G + 2 * e * v0 / (G * (1 - e))
    rest = next(ev for ev in traj.events if ev.info.get("bounce") is False)
    assert rest.t == pytest.approx(t_inf, abs=2e-3)
    assert traj.phases[-1].name == "constrained"
    assert abs(traj.q[-1, 0]) < 1e-9 and abs(traj.v[-1, 0]) < 1e-9
    np.testing.assert_allclose(traj.outputs["contact.force"][-1], [G], rtol=1e-9)
    # energy never increases at an impact; the audit closes
    assert all(ev.info["energy_loss"] >= -1e-12 for ev in traj.events)
    assert traj.energy_balance().max_relative() < 1e-6


def test_lift_off_when_the_force_would_pull():
    # the ball rests on the plane, then a growing upward force lifts it off at m g
    system = px.System(ball(), contacts=[Contact(plane("ball"))])
    traj = px.simulate(
        system, 1.0, q0=np.zeros(1), v0=np.zeros(1), control=lambda t, x: np.array([20.0 * t])
    )
    names = [ev.name for ev in traj.events]
    assert names == ["lift-off:ball"]
    assert traj.events[0].t == pytest.approx(G / 20.0, abs=1e-10)
    assert traj.phases[-1].name == "free" and traj.q[-1, 0] > 0


def test_a_bounce_cascade_is_named_by_its_events_not_blamed_on_joint_limits():
    """Past max_events, the error names the bouncing contact and the remedies of a bounce
    (rest_velocity, restitution), not the joint limits the ball does not have."""
    system = px.System(ball(), contacts=[Contact(plane("ball"), restitution=0.99)])
    with pytest.raises(px.exceptions.IntegrationError) as caught:
        px.simulate(system, 5.0, q0=np.array([1.0]), v0=np.zeros(1), max_events=5)
    message = str(caught.value)
    assert "max_events = 5" in message and "contact" in message
    assert "restitution" in message and "joint_limits" not in message
