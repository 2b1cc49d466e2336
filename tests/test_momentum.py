"""Kinetic-energy gradient (seed 001 Lemma 1) and the Celentano momentum scheme (Theorem 1)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from scipy.integrate import solve_ivp

from pinext.dynamics import (
    hamel_term,
    kinetic_energy,
    kinetic_energy_gradient,
    kinetic_energy_gradient_error_bound,
    momentum_from_velocity,
    momentum_rhs,
)
from pinext.exceptions import InvalidParameter
from tests.models import humanoid, named, rel
from tests.models import state as _state


def state(model, rng):
    q, v, _ = _state(model, rng)
    return q, v


@pytest.mark.parametrize("which", ["twotr", "manipulator", "ur5"])
def test_exact_gradient_equals_coriolis_transpose(which, request):
    model = named(which, request)
    data = model.createData()
    rng = np.random.default_rng(11)
    for _ in range(3):
        q, v = state(model, rng)
        c = pin.computeCoriolisMatrix(model, model.createData(), q, v)
        assert rel(kinetic_energy_gradient(model, data, q, v), c.T @ v) < 1e-10


def test_free_flyer_gradient_plus_hamel_equals_coriolis_transpose():
    model = humanoid()
    data = model.createData()
    rng = np.random.default_rng(12)
    q, v = state(model, rng)
    c = pin.computeCoriolisMatrix(model, model.createData(), q, v)
    grad = kinetic_energy_gradient(model, data, q, v)
    p = momentum_from_velocity(model, data, q, v)
    assert rel(grad + hamel_term(model, q, v, p), c.T @ v) < 1e-10
    # the kinetic energy does not depend on where the floating base is
    np.testing.assert_allclose(grad[:6], 0.0, atol=1e-10)


@pytest.mark.parametrize("model_fn", [pin.buildSampleModelManipulator, humanoid])
@pytest.mark.parametrize("method", ["forward", "central"])
def test_finite_differences_within_documented_bound(model_fn, method):
    model = model_fn()
    data = model.createData()
    rng = np.random.default_rng(13)
    q, v = state(model, rng)
    exact = kinetic_energy_gradient(model, data, q, v)
    errors = []
    for h in (1e-2, 1e-3, 1e-4):
        fd = kinetic_energy_gradient(model, data, q, v, method=method, step=h)
        bound = kinetic_energy_gradient_error_bound(model, data, q, v, method=method, step=h)
        assert np.all(np.abs(fd - exact) <= bound)
        errors.append(np.max(np.abs(fd - exact)))
    # Lemma 1: O(h) for two points, O(h²) for three points
    order = np.log10(errors[0] / errors[1])
    assert order == pytest.approx(1.0 if method == "forward" else 2.0, abs=0.15)


def test_lemma_1_on_a_single_sinusoid():
    """Seed 001 eq. (9) for d/dq sin(a q): |e2| ≤ a² Δ/2, |e3| ≤ a³ Δ²/6."""
    rng = np.random.default_rng(14)
    for _ in range(20):
        a, q, d = rng.uniform(0.5, 3), rng.uniform(-3, 3), 10 ** rng.uniform(-4, -1)
        e2 = (np.sin(a * (q + d)) - np.sin(a * q)) / d - a * np.cos(a * q)
        e3 = (np.sin(a * (q + d)) - np.sin(a * (q - d))) / (2 * d) - a * np.cos(a * q)
        assert abs(e2) <= a**2 * d / 2 + 1e-12
        assert abs(e3) <= a**3 * d**2 / 6 + 1e-12


def test_gradient_rejects_bad_arguments():
    model = pin.buildSampleModelManipulator()
    q, v = pin.neutral(model), np.zeros(model.nv)
    with pytest.raises(InvalidParameter, match="exact"):
        kinetic_energy_gradient(model, model.createData(), q, v, method="backward")
    with pytest.raises(InvalidParameter):
        kinetic_energy_gradient(model, model.createData(), q, v, method="central", step=0.0)


def test_momentum_rhs_free_flyer_against_aba():
    model = humanoid()
    data, ref = model.createData(), model.createData()
    rng = np.random.default_rng(15)
    q, v = state(model, rng)
    tau = rng.standard_normal(model.nv)
    m = pin.crba(model, ref, q)
    c = pin.computeCoriolisMatrix(model, ref, q, v)
    a = pin.aba(model, ref, q, v, tau)
    out = momentum_rhs(model, data, q, m @ v, tau)
    assert rel(out.v, v) < 1e-12
    assert rel(out.p_dot, (c + c.T) @ v + m @ a) < 1e-10  # d/dt(M v) = Ṁ v + M v̇


def _integrate(model, q0, v0, tau_fn, t_final, method):
    data = model.createData()
    nq = model.nq
    if method == "aba":

        def rhs(t, x):
            q, v = x[:nq], x[nq:]
            return np.concatenate((v, pin.aba(model, data, q, v, tau_fn(t, q, v))))

        x0 = np.concatenate((q0, v0))
    else:

        def rhs(t, x):
            q, p = x[:nq], x[nq:]
            v = momentum_rhs(model, data, q, p, np.zeros(model.nv)).v
            out = momentum_rhs(model, data, q, p, tau_fn(t, q, v))
            return np.concatenate((out.v, out.p_dot))

        x0 = np.concatenate((q0, momentum_from_velocity(model, data, q0, v0)))
    t_eval = np.linspace(0, t_final, 11)
    sol = solve_ivp(rhs, (0, t_final), x0, method="DOP853", rtol=1e-12, atol=1e-12, t_eval=t_eval)
    assert sol.success
    q = sol.y[:nq].T
    if method == "aba":
        v = sol.y[nq:].T
    else:
        v = np.array(
            [
                momentum_rhs(model, data, qi, pi, np.zeros(model.nv)).v
                for qi, pi in zip(q, sol.y[nq:].T, strict=True)
            ]
        )
    return q, v


def test_momentum_scheme_follows_aba_trajectory_and_conserves_energy():
    model = pin.buildSampleModelManipulator()
    rng = np.random.default_rng(16)
    q0, v0 = state(model, rng)
    data = model.createData()

    def torque(t, q, v):
        return np.sin(3 * t) * np.ones(model.nv) - 0.5 * v

    qa, va = _integrate(model, q0, v0, torque, 0.5, "aba")
    qm, vm = _integrate(model, q0, v0, torque, 0.5, "momentum")
    assert np.max(np.abs(qa - qm)) < 1e-8
    assert np.max(np.abs(va - vm)) < 1e-8

    def free(t, q, v):
        return np.zeros(model.nv)

    qm, vm = _integrate(model, q0, v0, free, 1.0, "momentum")
    energy = [
        kinetic_energy(model, data, q, v) + pin.computePotentialEnergy(model, data, q)
        for q, v in zip(qm, vm, strict=True)
    ]
    assert np.max(np.abs(np.array(energy) - energy[0])) < 1e-7


def test_momentum_scheme_with_central_differences():
    """Seed 001 Remark 2: the scheme needs only M(q); with central differences of M (Lemma 1)
    the right-hand side stays within the documented bound of the exact one."""
    from functools import partial

    model = pin.buildSampleModelManipulator()
    data = model.createData()
    rng = np.random.default_rng(17)
    q, v = state(model, rng)
    p = momentum_from_velocity(model, data, q, v)
    tau = rng.standard_normal(model.nv)
    exact = momentum_rhs(model, data, q, p, tau)
    fd = momentum_rhs(
        model,
        data,
        q,
        p,
        tau,
        gradient=partial(kinetic_energy_gradient, method="central", step=1e-3),
    )
    bound = kinetic_energy_gradient_error_bound(model, data, q, v, method="central", step=1e-3)
    assert np.all(np.abs(fd.p_dot - exact.p_dot) <= bound + 1e-12)
