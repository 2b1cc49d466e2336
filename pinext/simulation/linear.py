"""The fused right-hand side of a System whose components act linearly.

DC motors, gears without losses, elastic transmissions and inductances, like the mechanism's own
joint springs and dampers, act on the mechanism through efforts that are affine in
``z = [q, v, component states, u, 1]`` and evolve their states by an affine law in z; the
power they take from the inputs and the power they dissipate are quadratic forms of z
(seed 000, (20.78)–(20.82): ẋ = Ĉ(x) + D̂(x) u with an actuator part linear in x and u). When
every component says so in the current phase (:meth:`Component.linear`), the whole non-inertial
part of the right-hand side is two matrices,

.. math::

    [\\tau;\\ \\dot s] = A z, \\qquad [p_{in};\\ p_{diss}] = [z^T Q_{in} z;\\ z^T Q_{diss} z],

identified once from the components' own ``effort``/``derivative``/``power`` (exact for affine
and quadratic functions: first and second differences at unit steps), checked at a random
point, and evaluated as a few matrix products around one ``pin.aba`` per call.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pinocchio as pin

from .component import Phase
from .system import System


def forces(system: System, phase: Phase, z: np.ndarray) -> np.ndarray:
    """``[tau, component state derivatives, p_in, p_diss]`` at ``z = [x without the work
    accumulators, u, 1]``, from the System's springs and dampers and its components' hooks."""
    model = system.model
    nq, nv, nx = model.nq, model.nv, system.nx
    x = np.concatenate((z[: nx - 2], (0.0, 0.0)))
    u = z[nx - 2 : -1]
    q, v = x[:nq], x[nq : nq + nv]
    tau = -system.damping * v - system.stiffness * system.deflection(q)
    p_in, p_diss = 0.0, float(v @ (system.damping * v))
    if system.torque_inputs:
        tau = tau + u
        p_in += float(u @ v)
    out = np.zeros(nx)
    for comp in system.components:
        mode = phase.get(comp.name)
        effort = comp.effort(0.0, x, q, v, u, mode)
        if effort is not None:
            tau = tau + effort
        comp.derivative(0.0, x, q, v, u, mode, out)
        p = comp.power(0.0, x, q, v, u, mode)
        p_in += p[0]
        p_diss += p[1]
    return np.concatenate((tau, out[nq + nv : nx - 2], (p_in, p_diss)))


def identify(system: System, phase: Phase) -> tuple[np.ndarray, np.ndarray] | None:
    """(A, Q) of the module docstring for this phase, or None when a component is not linear
    in it, the model is not Euclidean, or the identified form fails its check."""
    if not system.euclidean or not all(c.linear(phase.get(c.name)) for c in system.components):
        return None
    m = system.nx - 2 + system.n_inputs + 1
    n_lin = system.nx - 2 - system.model.nq  # tau and the component state derivatives
    base = np.zeros(m)
    base[-1] = 1.0

    def f(*steps: tuple[int, float]) -> np.ndarray:
        z = base.copy()
        for k, s in steps:
            z[k] += s
        return forces(system, phase, z)

    f0 = f()
    plus = [f((k, 1.0)) for k in range(m - 1)]
    minus = [f((k, -1.0)) for k in range(m - 1)]
    a = np.empty((n_lin, m))
    a[:, -1] = f0[:n_lin]
    q = np.empty((2, m, m))
    q[:, -1, -1] = f0[n_lin:]
    for k in range(m - 1):
        a[:, k] = plus[k][:n_lin] - f0[:n_lin]
        q[:, k, k] = 0.5 * (plus[k][n_lin:] + minus[k][n_lin:]) - f0[n_lin:]
        q[:, k, -1] = q[:, -1, k] = 0.25 * (plus[k][n_lin:] - minus[k][n_lin:])
        for j in range(k):
            q[:, k, j] = q[:, j, k] = 0.5 * (
                f((k, 1.0), (j, 1.0))[n_lin:] - plus[k][n_lin:] - plus[j][n_lin:] + f0[n_lin:]
            )
    z = np.random.default_rng(0).standard_normal(m)
    z[-1] = 1.0
    exact = forces(system, phase, z)
    fused = np.concatenate((a @ z, q @ z @ z))
    if not np.allclose(fused, exact, rtol=1e-9, atol=1e-9 * (1.0 + np.abs(exact).max())):
        return None
    return a, q


def fused_rhs(system: System, phase: Phase, control, progress) -> Any:
    """The right-hand side ``[v, aba(q, v, A z), s', p_in, p_diss]`` of a linear phase, or None
    when the phase is not linear (the caches of :func:`identify` live on the System)."""
    cache = system.__dict__.setdefault("_linear_forms", {})
    if phase.modes not in cache:
        cache[phase.modes] = identify(system, phase)
    form = cache[phase.modes]
    if form is None:
        return None
    a_mat, q_mat = form
    model, data = system.model, system.data
    nv, n_core = model.nv, system.nx - 2
    one = np.ones(1)
    zero_u = np.zeros(system.n_inputs) if getattr(control, "zero", False) else None
    aba, concatenate = pin.aba, np.concatenate

    def rhs(t: float, y: np.ndarray) -> np.ndarray:
        u = zero_u if zero_u is not None else control(t, y)
        z = concatenate((y[:n_core], u, one))
        lin = a_mat @ z
        v = y[nv : 2 * nv]
        if progress is not None and t > progress.n + progress.step:
            progress.update(min(t, progress.total) - progress.n)
        return concatenate((v, aba(model, data, y[:nv], v, lin[:nv]), lin[nv:], q_mat @ z @ z))

    return rhs
