"""Kinetic-energy gradient (seed 001 Lemma 1) and the Celentano momentum scheme (Theorem 1).

The references are Pinocchio's (the Coriolis matrix, RNEA, the centroidal momentum, the kinetic
energy) and closed forms: along a revolute direction the kinetic energy is a trigonometric
polynomial of degree 2, whose difference quotients are known exactly. Tolerances are rounding
bounds stated where they are used, or an integrator's error control summed over its steps."""

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

EPS = np.finfo(float).eps
#: Harmonics 1 and 2 of the kinetic energy along a direction.
ORDERS = np.array([1.0, 2.0])


def state(model, rng):
    q, v, _ = _state(model, rng)
    return q, v


def _assert_within(error: np.ndarray, tolerance: np.ndarray, what: str) -> None:
    """Every |error| within its tolerance; the message names the worst row."""
    excess = np.abs(error) - tolerance
    i = int(np.argmax(excess))
    within = bool(excess[i] <= 0.0)
    assert within, f"{what}, row {i}: off by {abs(error[i]):.3g}, bound {tolerance[i]:.3g}"


def _kinetic_rounding(model: pin.Model, q: np.ndarray, v: np.ndarray) -> float:
    """Bound on the rounding error of one evaluation of T = ½ vᵀ M(q) v, by CRBA or by
    Pinocchio's computeKineticEnergy: a sum of nv² products of entries that recursions of
    depth ≤ nv compute, off by at most nv ε · ½ |v|ᵀ|M||v| (Higham's γ_n on the terms)."""
    mass = pin.crba(model, model.createData(), q)
    return model.nv * EPS * 0.5 * float(np.abs(v) @ np.abs(mass) @ np.abs(v))


def _harmonics(model: pin.Model, q: np.ndarray, v: np.ndarray):
    """T(q ⊕ δ e_k) = c₀ + Σ_f a_f cos fδ + b_f sin fδ (f = 1, 2) along each tangent direction
    k, from Pinocchio's computeKineticEnergy at the 8 angles δ = 2πj/8 (a discrete Fourier
    transform: exact for a polynomial of degree ≤ 3). Along a revolute joint the subtree's
    twists are linear in (1, cos δ, sin δ), so T has degree 2; along a free flyer's directions
    T is constant (M is expressed in the base frame). Returns a and b, each (nv, 2), and the
    largest harmonic of order 3 or 4 per direction (zero but for rounding: the law checked)."""
    data = model.createData()
    n = 8
    a, b, rest = np.empty((model.nv, 2)), np.empty((model.nv, 2)), np.empty(model.nv)
    for k in range(model.nv):
        e = np.zeros(model.nv)
        samples = []
        for j in range(n):
            e[k] = 2.0 * np.pi * j / n
            samples.append(pin.computeKineticEnergy(model, data, pin.integrate(model, q, e), v))
        spectrum = np.fft.rfft(samples) / n
        a[k], b[k] = 2.0 * spectrum[1:3].real, -2.0 * spectrum[1:3].imag
        rest[k] = np.abs(spectrum[3:]).max()
    return a, b, rest


def _quotient(a: np.ndarray, b: np.ndarray, h: float, method: str) -> np.ndarray:
    """The difference quotient of the trigonometric polynomial in closed form (its truncation
    error included): (T(h) − T(−h)) / 2h = Σ b_f sin(fh) / h, or
    (T(h) − T(0)) / h = Σ (a_f (cos fh − 1) + b_f sin fh) / h."""
    if method == "central":
        return (b * np.sin(ORDERS * h)).sum(axis=1) / h
    return (a * (np.cos(ORDERS * h) - 1.0) + b * np.sin(ORDERS * h)).sum(axis=1) / h


def _quotient_rounding(model, q, v, a, b, h: float, method: str) -> np.ndarray:
    """Bound on |package's quotient − :func:`_quotient`| from rounding alone, per direction:
    the quotient's two evaluations of T, each off by η (:func:`_kinetic_rounding`), give η/h
    (central) or 2η/h (forward); ``pin.integrate`` rounds q_k ± h, a step off by
    ε max(1, |q|) that moves T by at most that times |T'| ≤ Σ f |c_f|, again over h; the
    closed form's coefficients are means of 8 samples, each off by ≤ 2η, which moves it by
    at most 8η."""
    eta = _kinetic_rounding(model, q, v)
    evaluations = 1.0 if method == "central" else 2.0
    slope = np.hypot(a, b) @ ORDERS
    step = EPS * max(1.0, float(np.abs(q).max()))
    return evaluations * (eta + step * slope) / h + 8.0 * eta


def _exact_gradient(model, q, v) -> tuple[np.ndarray, np.ndarray]:
    """∂T/∂q from Pinocchio: Cᵀ v (Ṁ = C + Cᵀ) along the Euclidean directions, 0 along a free
    flyer's (T does not depend on where the base is); and its rounding bound
    nv ε |C|ᵀ |v|."""
    coriolis = pin.computeCoriolisMatrix(model, model.createData(), q, v)
    gradient = coriolis.T @ v
    for joint in model.joints[1:]:
        if joint.shortname() == "JointModelFreeFlyer":
            gradient[joint.idx_v : joint.idx_v + 6] = 0.0
    return gradient, model.nv * EPS * (np.abs(coriolis).T @ np.abs(v))


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


def test_momentum_from_velocity_against_pinocchio():
    """p = M(q) v against Pinocchio's RNEA (gravity off: rnea(q, 0, v) = M v, an algorithm
    other than the CRBA), and the free flyer's six rows against the system's spatial
    momentum from computeCentroidalMomentum (at the centre of mass, world axes) expressed in
    the base frame. Tolerance: nv ε |M||v| per row (a product of length nv on entries that
    recursions of depth ≤ nv compute); the two changes of frame add 4 ε (1 + |c| + |r|) |h|
    (c the centre of mass, r the base's position, h the momentum)."""
    model = humanoid()
    rng = np.random.default_rng(21)
    q, v = state(model, rng)
    p = momentum_from_velocity(model, model.createData(), q, v)
    tolerance = model.nv * EPS * (np.abs(pin.crba(model, model.createData(), q)) @ np.abs(v))
    free = pin.Model(model)
    free.gravity.setZero()
    rnea = pin.rnea(free, free.createData(), q, np.zeros(model.nv), v)
    _assert_within(p - rnea, tolerance, "p against RNEA's M v")
    data = model.createData()
    centroidal = pin.computeCentroidalMomentum(model, data, q, v)  # at the CoM, world axes
    world = pin.SE3(np.eye(3), data.com[0]).act(centroidal)  # at the world's origin
    pin.forwardKinematics(model, data, q)
    base = data.oMi[1].actInv(world)
    spatial = np.r_[base.linear, base.angular]
    arms = 1.0 + np.linalg.norm(data.com[0]) + np.linalg.norm(data.oMi[1].translation)
    frames = 4.0 * EPS * arms * np.abs(centroidal.vector).max()
    _assert_within(p[:6] - spatial, tolerance[:6] + frames, "the base's rows against h")


@pytest.mark.parametrize("model_fn", [pin.buildSampleModelManipulator, humanoid])
@pytest.mark.parametrize("method", ["forward", "central"])
def test_finite_differences_within_documented_bound(model_fn, method):
    """Celentano (2008) Lemma 1 on the kinetic energy, whose restriction to each direction is
    a trigonometric polynomial of degree 2 (:func:`_harmonics`, Pinocchio's kinetic energy;
    the higher harmonics checked to vanish to rounding). Its difference quotients are then
    known exactly (:func:`_quotient`): the finite differences equal them, truncation error
    included, to rounding (:func:`_quotient_rounding`), at h = 1e-2, 1e-3, 1e-4. The exact
    gradient is Pinocchio's Cᵀ v (the harmonics' T'(0) = Σ f b_f agrees to rounding).

    The documented bound covers the error at every step, and it is Lemma 1's:
    ``h/2 Σ f²|c_f|`` (forward) or ``h²/6 Σ f³|c_f|`` (central) plus a rounding term r/h;
    the truncation coefficient, read from the bound at two steps (r cancels), equals the one
    from the test's own harmonics to the rounding of the two Fourier fits (10 η)."""
    model = model_fn()
    data = model.createData()
    rng = np.random.default_rng(13)
    q, v = state(model, rng)
    eta = _kinetic_rounding(model, q, v)
    a, b, rest = _harmonics(model, q, v)
    _assert_within(rest, np.full_like(rest, 2.0 * eta), "harmonics 3 and 4")  # degree 2
    exact, exact_rounding = _exact_gradient(model, q, v)
    slope = b @ ORDERS  # T'(0)
    _assert_within(slope - exact, 6.0 * eta + exact_rounding, "T'(0) against C^T v")
    bounds = {}
    for h in (1e-2, 1e-3, 1e-4):
        fd = kinetic_energy_gradient(model, data, q, v, method=method, step=h)
        expected = _quotient(a, b, h, method)
        tolerance = _quotient_rounding(model, q, v, a, b, h, method)
        _assert_within(fd - expected, tolerance, f"quotient at h = {h:g}")
        bounds[h] = kinetic_energy_gradient_error_bound(model, data, q, v, method=method, step=h)
        _assert_within(fd - exact, bounds[h] + exact_rounding, f"documented bound at h = {h:g}")
    # the bound is p h^m + r/h: h·bound = p h^(m+1) + r at h = 1e-2 and 1e-3 gives p
    power = 1 if method == "forward" else 2
    h1, h2 = 1e-2, 1e-3
    coefficient = (h1 * bounds[h1] - h2 * bounds[h2]) / (h1 ** (power + 1) - h2 ** (power + 1))
    amplitude = np.hypot(a, b)  # |c_f|
    lemma = amplitude @ ORDERS**2 / 2.0 if method == "forward" else amplitude @ ORDERS**3 / 6.0
    _assert_within(coefficient - lemma, 10.0 * eta + 4.0 * EPS * lemma, "bound's h^m term")


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
    """The scheme follows the aba route (both DOP853 at 1e-12). Free, it conserves the energy
    H(q, p) = ½ pᵀ M⁻¹ p + V(q) to what DOP853's error control allows: each accepted step's
    estimated local error is below √n (atol + rtol |y|) per component (scipy's RMS norm ≤ 1),
    and since the exact flow keeps H, the drift is to first order the sum over the steps of
    |∇H|·that, ∇H = (−ṗ, v) (ṗ = −∂H/∂q with no torque); plus the rounding of two
    evaluations of H (v = M⁻¹ p by a backward-stable Cholesky solve: 2 η each, η of
    :func:`_kinetic_rounding`, and nv ε |V|)."""
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

    nq, rtol, atol = model.nq, 1e-12, 1e-12
    zero = np.zeros(model.nv)

    def free(t, x):
        out = momentum_rhs(model, data, x[:nq], x[nq:], zero)
        return np.concatenate((out.v, out.p_dot))

    x0 = np.concatenate((q0, momentum_from_velocity(model, data, q0, v0)))
    sol = solve_ivp(free, (0, 1.0), x0, method="DOP853", rtol=rtol, atol=atol)
    assert sol.success
    energy, gradient, rounding = [], [], []
    for x in sol.y.T:  # every accepted step
        out = momentum_rhs(model, data, x[:nq], x[nq:], zero)
        potential = pin.computePotentialEnergy(model, data, x[:nq])
        energy.append(kinetic_energy(model, data, x[:nq], out.v) + potential)
        gradient.append(np.r_[np.abs(out.p_dot), np.abs(out.v)])
        eta = _kinetic_rounding(model, x[:nq], out.v)
        rounding.append(2.0 * eta + model.nv * EPS * abs(potential))
    y = np.abs(sol.y.T)
    local = np.sqrt(len(x0)) * (atol + rtol * np.maximum(y[:-1], y[1:]))  # per step
    drift = float(np.sum(np.array(gradient)[1:] * local)) + 2.0 * max(rounding)
    worst = float(np.max(np.abs(np.array(energy) - energy[0])))
    assert worst <= drift, f"energy drift {worst:.3g} J, the error control allows {drift:.3g} J"


def test_momentum_scheme_with_central_differences():
    """Seed 001 Remark 2: the scheme needs only M(q). Exactly, ṗ = Cᵀ v + τ − g (Pinocchio's
    Coriolis matrix and gravity; rounding nv ε (|C|ᵀ|v| + |g| + |τ|)); with central
    differences of M (Lemma 1) it differs from the exact right-hand side by the quotient's
    truncation error, known in closed form from the kinetic energy's harmonics
    (:func:`_quotient` − T'(0)), to rounding (:func:`_quotient_rounding`)."""
    from functools import partial

    model = pin.buildSampleModelManipulator()
    data = model.createData()
    rng = np.random.default_rng(17)
    q, v = state(model, rng)
    p = momentum_from_velocity(model, data, q, v)
    tau = rng.standard_normal(model.nv)
    exact = momentum_rhs(model, data, q, p, tau)
    reference, gradient_rounding = _exact_gradient(model, q, v)
    gravity = pin.computeGeneralizedGravity(model, model.createData(), q)
    rounding = gradient_rounding + model.nv * EPS * (np.abs(gravity) + np.abs(tau))
    _assert_within(exact.p_dot - (reference + tau - gravity), rounding, "ṗ against C^T v + τ − g")
    h = 1e-3
    fd = momentum_rhs(
        model,
        data,
        q,
        p,
        tau,
        gradient=partial(kinetic_energy_gradient, method="central", step=h),
    )
    a, b, _ = _harmonics(model, q, v)
    truncation = _quotient(a, b, h, "central") - b @ ORDERS
    tolerance = _quotient_rounding(model, q, v, a, b, h, "central") + 2.0 * rounding
    _assert_within(fd.p_dot - exact.p_dot - truncation, tolerance, "ṗ's truncation error")
