"""Dynamic environment (20.92)–(20.94): limits, statics and energy, on a falling ball."""

import numpy as np
import pytest

import pinext as px
from pinext.contact import Contact, DynamicEnvironment, plane
from pinext.exceptions import InvalidParameter

from ._contact_models import ball

G = 9.81
H0 = 0.1


def _drop(environment, t_final=0.6, restitution=0.0):
    system = px.System(
        ball(), contacts=[Contact(plane("ball"), restitution=restitution)], environment=environment
    )
    return px.simulate(system, t_final, q0=np.array([H0]), v0=np.zeros(1))


def test_heavy_stiff_environment_recovers_the_rigid_wall():
    rigid = _drop(None)
    errors = []
    for scale in (1e4, 1e6):
        env = DynamicEnvironment(mass=scale, stiffness=1e3 * scale, damping=0.0)
        traj = _drop(env)
        assert [e.name for e in traj.events] == ["contact:ball"]
        assert traj.events[0].t == pytest.approx(rigid.events[0].t, abs=1e-12)
        np.testing.assert_allclose(
            traj.events[0].info["impulse"], rigid.events[0].info["impulse"], rtol=2.0 / scale
        )
        errors.append(abs(traj.q[-1, 0] - rigid.q[-1, 0]))
    assert errors[1] < errors[0] and errors[1] < 1e-7


def test_model_c_plastic_impact_and_static_deflection():
    m, m_e, k, b = 1.0, 2.0, 1e3, 40.0
    traj = _drop(DynamicEnvironment(m_e, k, b), t_final=3.0)
    event = traj.events[0]
    v_minus = -np.sqrt(2 * G * H0)
    # plastic impact of two masses: common velocity m v / (m + m_e)
    np.testing.assert_allclose(event.info["impulse"], [-m * (m_e / (m + m_e)) * v_minus], rtol=1e-9)
    loss = 0.5 * m * m_e / (m + m_e) * v_minus**2
    assert event.info["energy_loss"] == pytest.approx(loss, rel=1e-9)
    # the ball rests on the mass: s_e -> -m g / k, contact force -> m g
    np.testing.assert_allclose(traj.outputs["contact.deformation"][-1], [-m * G / k], rtol=1e-6)
    np.testing.assert_allclose(traj.outputs["contact.force"][-1], [m * G], rtol=1e-6)
    np.testing.assert_allclose(traj.q[-1, 0], -m * G / k, rtol=1e-6)
    assert traj.energy_balance().max_relative() < 1e-6


def test_model_d_converges_to_model_c_as_the_contact_stiffness_grows():
    env_c = DynamicEnvironment(2.0, 1e3, 5.0)
    ref = _drop(env_c)
    errors = []
    for kc in (1e4, 1e5, 1e6):
        # the layer's damping grows faster than critical so that its impact becomes plastic
        cc = 2 * np.sqrt(kc * 0.67) * (kc / 1e4) ** 0.25
        traj = _drop(DynamicEnvironment(2.0, 1e3, 5.0, contact_stiffness=kc, contact_damping=cc))
        assert [e.name for e in traj.events] == ["contact:ball"]  # no impact, no lift-off
        assert traj.events[0].info["energy_loss"] == 0.0
        assert traj.energy_balance().max_relative() < 1e-6
        errors.append(abs(traj.q[-1, 0] - ref.q[-1, 0]))
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 1e-4 * H0 * 10


def test_environment_from_dict_and_bad_values():
    env = DynamicEnvironment.from_dict({"mass": 5, "stiffness": 1e4, "damping": 20})
    assert env.model == "c"
    assert DynamicEnvironment(1.0, 1.0, 0.0, contact_stiffness=1e3).model == "d"
    with pytest.raises(InvalidParameter, match="valid keys"):
        DynamicEnvironment.from_dict({"mass": 5, "stifness": 1e4})
    with pytest.raises(InvalidParameter):
        DynamicEnvironment(0.0, 1.0, 1.0)
    with pytest.raises(InvalidParameter):
        DynamicEnvironment(1.0, 1.0, 1.0, contact_stiffness=0.0)
