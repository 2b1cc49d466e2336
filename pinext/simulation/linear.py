"""The fused right-hand side of a System whose components act linearly.

DC motors, gears without losses, elastic transmissions and inductances, like the mechanism's own
joint springs and dampers, act on the mechanism through efforts that are affine in
``z = [q, v, component states, u, 1]`` and evolve their states by an affine law in z; the
power they take from the inputs and the power they dissipate are quadratic forms of z
(Vukobratović & Potkonjak (20.78)–(20.82): ẋ = Ĉ(x) + D̂(x) u, an actuator part linear in x, u). When
every component says so in the current phase (:meth:`Component.linear`), the whole non-inertial
part of the right-hand side is

.. math::

    [\\tau;\\ \\dot s] = A z, \\qquad
    p_{in} = u^T v|_{\\text{torque inputs}} + z_c^T Q_{in} z_c, \\qquad
    p_{diss} = v^T D v + z_c^T Q_{diss} z_c,

where the System's springs, dampers and torque inputs enter A in closed form and the
components' part is identified once from their own ``effort``/``derivative``/``power``: A by
first differences at unit steps (exact for affine functions), Q over the few variables
``z_c`` the components' powers depend on: by first differences when the powers are linear in
each of them, else by second differences (exact for quadratic forms); the squares, then the
products of two variables, are probed only when the form without them misses a random check
point. The result is checked at that point and evaluated as a few matrix products around one
``pin.aba``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pinocchio as pin

from ..exceptions import InvalidParameter
from .caches import cache as engine_cache
from .chart import angles
from .component import Phase, overrides

if TYPE_CHECKING:
    from .system import System


class LinearForm(NamedTuple):
    """The components' matrices in a linear phase (module docstring)."""

    a: np.ndarray  # (nv + n_states, m): the components' [tau; s_dot] = a z
    active: np.ndarray  # indices into z of the variables of the components' powers
    q: np.ndarray  # (2, n_active, n_active): the components' [p_in, p_diss] quadratic forms


def component_forces(
    system: System, phase: Phase, z: np.ndarray, replaced: frozenset[str] = frozenset()
) -> np.ndarray:
    """The components' ``[tau, state derivatives, p_in, p_diss]`` at ``z = [y without the
    work accumulators, u, 1]``, y the internal state (the public one for Euclidean models; the
    angle chart's, :class:`pinext.simulation.chart.Angles`, for flat ones), without the
    System's own springs, dampers and torque inputs, nor the components ``replaced``."""
    model = system.model
    nq, nv, nx = model.nq, model.nv, system.nx
    n_core = _core(system)
    chart = None if system.euclidean else angles(system)
    head = z[:nv] if chart is None else chart.configuration(z[:nv], nq)
    x = np.concatenate((head, z[nv:n_core], (0.0, 0.0)))
    u = z[n_core:-1]
    q, v = x[:nq], x[nq : nq + nv]
    tau = np.zeros(nv)
    p_in = p_diss = 0.0
    out = np.zeros(nx)
    for comp in system.components:
        if comp.name in replaced:
            continue
        mode = phase.get(comp.name)
        effort = comp.effort(0.0, x, q, v, u, mode)
        if effort is not None:
            tau = tau + effort
        comp.derivative(0.0, x, q, v, u, mode, out, None)
        p = comp.power(0.0, x, q, v, u, mode, None)
        p_in += p[0]
        p_diss += p[1]
    return np.concatenate((tau, out[nq + nv : nx - 2], (p_in, p_diss)))


def _core(system: System) -> int:
    """The size of the internal state without the two work accumulators."""
    return system.nx - 2 - (system.model.nq - system.model.nv)


def forces(system: System, phase: Phase, z: np.ndarray) -> np.ndarray:
    """:func:`component_forces` plus the System's springs, dampers and torque inputs: the
    whole ``[tau, state derivatives, p_in, p_diss]`` the fused right-hand side reproduces."""
    nv, n_core = system.model.nv, _core(system)
    v, u = z[nv : 2 * nv], z[n_core:-1]
    f = component_forces(system, phase, z)
    f[:-2] += _own_part(system, z.size) @ z
    f[-1] += v @ (system.damping * v)
    if system.torque_inputs:
        f[-2] += u @ v
    return f


def _own_part(system: System, m: int) -> np.ndarray:
    """The System's springs, dampers and torque inputs as rows of A (tau = -K (q - q0) - D v
    [+ u]), in the internal coordinates (:func:`component_forces`)."""
    nv, n_core = system.model.nv, _core(system)
    a = np.zeros((n_core - nv, m))
    idx = np.arange(nv)
    a[idx, idx] = -system.stiffness
    a[idx, nv + idx] = -system.damping
    chart = None if system.euclidean else angles(system)
    rest = system.q_rest if chart is None else chart.coordinates(system.q_rest, nv)
    a[:nv, -1] = system.stiffness * rest
    if system.torque_inputs:
        a[idx, n_core + idx] = 1.0
    return a


def closed_terms(system: System, modes: Any) -> np.ndarray | None:
    """The sum of the components' closed forms (:meth:`Component.linear_terms`, rows
    ``[τ; ṡ]`` over ``[q, v, states, u, 1]``), or None when a component with an effort or a
    state derivative gives none. ``modes``: (component, mode) pairs of the phase."""
    n_core = _core(system)
    terms = np.zeros((n_core - system.model.nv, n_core + system.n_inputs + 1))
    for comp, mode in modes:
        if overrides(comp, "effort") or overrides(comp, "derivative"):
            part = comp.linear_terms(mode)
            if part is None:
                return None
            if np.shape(part) != terms.shape or not np.all(np.isfinite(part)):
                raise InvalidParameter(
                    f"{comp.name}.linear_terms({mode!r}) must be finite numbers of shape "
                    f"{terms.shape} ([τ; ṡ] over [q, v, states, u, 1]), got shape "
                    f"{np.shape(part)}"
                )
            terms += part
    return terms


def identify(
    system: System,
    phase: Phase,
    rows: frozenset[str] = frozenset(),
    replaced: frozenset[str] = frozenset(),
) -> LinearForm | None:
    """The components' :class:`LinearForm` in this phase, or None when a component is not
    linear in it, the model is curved (not Euclidean nor flat: :func:`pinext.simulation.
    chart.angles`), an effort, a derivative or a power depends on the angle of an unbounded
    revolute joint (periodic, not affine), or the identified form fails its check.

    ``rows``: components whose constraint rows are solved elsewhere (the compiled rows of
    :mod:`pinext.compiled`); their rows do not count, and they add no effort, state or power,
    or are linear in the phase (joint friction: the slipping joints' constant torques beside
    the stuck joints' rows). The form identifies the efforts only, not the constrained
    accelerations. ``replaced``: components whose effort, state derivatives and power are
    evaluated elsewhere (a compiled compliant layer, :class:`pinext.simulation.component.
    Layer`); the form leaves them out."""
    hooks = ("effort", "derivative", "power")
    chart = None if system.euclidean else angles(system)
    if (not system.euclidean and chart is None) or not all(
        c.linear(phase.get(c.name))
        for c in system.components
        if c.name not in replaced and (c.name not in rows or any(overrides(c, h) for h in hooks))
    ):
        return None
    step = system.acceleration_step(phase)
    constrained = [c for c, _ in step.constrained if c.name not in rows]
    dense = bool(constrained) or step.mechanism is not None
    if dense or system.imposing:  # (added inertia: the form holds the efforts alone)
        return None
    if chart is not None:  # a spring on an unbounded angle acts on its wrapped difference,
        three = np.arange(3)  # one on a free flyer or a ball joint on Pinocchio's difference
        curved = np.r_[chart.angle_v, (np.r_[chart.rot_v, chart.fly_v][:, None] + three).ravel()]
        if np.any(system.stiffness[curved.astype(np.int64)]):
            return None
    n_core = _core(system)
    m = n_core + system.n_inputs + 1
    n_lin = n_core - system.model.nv  # rows of A: tau and the component state derivatives
    base = np.zeros(m)
    base[-1] = 1.0
    unit = np.eye(m)

    # the inputs probed at |u| <= bound / 8, within their saturation: the form is identified
    # in z' = z / scale and rescaled at the end (exact for affine and quadratic forms)
    scale = np.ones(m)
    scale[n_core:-1] = np.minimum(1.0, system.input_bounds / 8.0)

    def f(z: np.ndarray) -> np.ndarray:
        return component_forces(system, phase, scale * z, replaced)

    f0 = f(base)
    rng = np.random.default_rng(0)
    weights = 1.0 + rng.random(m)  # random group weights: no two columns cancel
    groups = [list(range(i, min(i + GROUP, m - 1))) for i in range(0, m - 1, GROUP)]

    def steps_from(point: np.ndarray):
        """f at the unit step of variable k from ``point``, each evaluated once."""
        seen: dict[int, np.ndarray] = {}

        def at(k: int) -> np.ndarray:
            if k not in seen:
                seen[k] = f(point + unit[k])
            return seen[k]

        return at

    stepped = steps_from(base)
    # the columns of A: the variables the efforts and state derivatives depend on
    tiny = 1e-13 * (1.0 + np.abs(f0).max())
    changed = _changed(f, base, f0, groups, weights, slice(0, n_lin), tiny, stepped)
    # the variables the components' powers depend on, seen from a random point
    zr = np.concatenate((rng.standard_normal(m - 1), [1.0]))
    exact = f(zr)
    tiny = 1e-13 * (1.0 + np.abs(exact[n_lin:]).max())
    near = steps_from(zr)
    moved = _changed(f, zr, exact, groups, weights, slice(n_lin, None), tiny, near)
    active = np.array(moved + [m - 1])
    a = np.zeros((n_lin, m))
    for k in changed:
        a[:, k] = stepped(k)[:n_lin] - f0[:n_lin]
    a[:, -1] = f0[:n_lin]
    if chart is not None:  # periodic (θ) or anchored (φ) coordinates: no affine form
        wrapped = np.r_[chart.angle_v, (chart.rot_v[:, None] + np.arange(3)).reshape(-1)]
        if a[:, wrapped].any() or np.isin(wrapped, active).any():
            return None
    n_act = active.size
    q = np.zeros((2, n_act, n_act))
    q[:, -1, -1] = f0[n_lin:]

    def fits(z: np.ndarray = zr, ref: np.ndarray = exact) -> bool:
        """Whether the form gives f(z) = ref, each part on its own scale (a large state
        derivative hides no power)."""
        return all(
            np.allclose(fused, part, rtol=1e-9, atol=1e-9 * (1.0 + np.abs(part).max()))
            for fused, part in (
                (a @ z, ref[:n_lin]),
                (q @ z[active] @ z[active], ref[n_lin:]),
            )
        )

    # powers linear in each variable (a Coulomb torque's F_c σ q̇): the slopes the search
    # above saw at the random point, checked there and at a second random point
    for i, k in enumerate(active[:-1]):
        q[:, i, -1] = q[:, -1, i] = 0.5 * (near(k)[n_lin:] - exact[n_lin:])
    check = np.concatenate((rng.standard_normal(m - 1), [1.0]))
    if fits() and fits(check, f(check)):
        return _unscaled(a, active, q, scale)
    for i, k in enumerate(active[:-1]):  # squares too (a resistance's R i²)
        minus = f(base - unit[k])[n_lin:]
        q[:, i, i] = 0.5 * (stepped(k)[n_lin:] + minus) - f0[n_lin:]
        q[:, i, -1] = q[:, -1, i] = 0.25 * (stepped(k)[n_lin:] - minus)
    if fits():  # no products of two variables: done
        return _unscaled(a, active, q, scale)
    for i, k in enumerate(active[:-1]):
        for j_, j in enumerate(active[:i]):
            q[:, i, j_] = q[:, j_, i] = 0.5 * (
                f(base + unit[k] + unit[j])[n_lin:]
                - stepped(k)[n_lin:]
                - stepped(j)[n_lin:]
                + f0[n_lin:]
            )
    return _unscaled(a, active, q, scale) if fits() else None


def _unscaled(a: np.ndarray, active: np.ndarray, q: np.ndarray, scale: np.ndarray) -> LinearForm:
    """The form in z of the form identified in z' = z / scale."""
    s = scale[active]
    return LinearForm(a / scale, active, q / (s[:, None] * s[None, :]))


#: Variables tested together by :func:`_changed` (a group that changes nothing is cleared
#: with one evaluation) [-].
GROUP = 16


def _changed(f, point, ref, groups, weights, part, scale, single) -> list[int]:
    """The variables whose unit step from ``point`` changes ``f(point)[part]`` by more than
    ``scale``, by group testing: a group stepped at once with random ``weights`` that changes
    nothing holds none of them (a sum of affine or quadratic changes cancels only on a set of
    measure zero); the members of a group that changes it are tested one by one
    (``single(k)``: f at the unit step of variable k). Most variables of a phase act on no
    component (the joints of a large robot without drives), so a few evaluations replace one
    per variable; the identified form is checked at a random point in any case."""
    reference = ref[part]
    found: list[int] = []
    for group in groups:
        z = point.copy()
        z[group] += weights[group]
        if len(group) > 1 and np.abs(f(z)[part] - reference).max() <= scale:
            continue
        found += [k for k in group if np.abs(single(k)[part] - reference).max() > scale]
    return found


def fused_rhs(system: System, phase: Phase, control, progress) -> Any:
    """The right-hand side ``[v, aba(q, v, tau), s', p_in, p_diss]`` of a linear phase, or None
    when the phase is not linear (the forms of :func:`identify` are kept in the engine's cache).

    Its attribute ``jac(t, y)`` is the Jacobian for the implicit methods, from Pinocchio's
    ``computeABADerivatives`` (∂a/∂q, ∂a/∂v, M⁻¹) and the identified matrices; it treats the
    inputs as constant during a step (exact for open-loop controls)."""
    if not system.euclidean or system.acceleration_step(phase).added is not None:
        return None  # the rhs below calls pin.aba on the internal coordinates, on M alone
    cache = engine_cache(system, "linear_forms")
    if phase.structure not in cache:
        cache[phase.structure] = identify(system, phase)
    form = cache[phase.structure]
    if form is None:
        return None
    a_mat = form.a + _own_part(system, form.a.shape[1])  # the System's part: never stale
    active, q_mat = form.active, form.q
    model, data = system.model, system.data
    nv, n_core, nx = model.nv, system.nx - 2, system.nx
    damping = system.damping
    damped, torque_inputs = bool(damping.any()), system.torque_inputs
    one = np.ones(1)
    bounds = system.input_bounds
    clip = (lambda u: u) if np.isinf(bounds).all() else (lambda u: np.clip(u, -bounds, bounds))
    constant = getattr(control, "value", None)  # None, or the inputs of a constant control
    constant = None if constant is None else clip(np.asarray(constant, dtype=float))
    tail = None if constant is None else np.concatenate((constant, one))
    whole = active.size == a_mat.shape[1]  # the components' powers involve every variable
    aba, concatenate = pin.aba, np.concatenate

    def rhs(t: float, y: np.ndarray) -> np.ndarray:
        if tail is None:
            u = clip(control(t, y))
            z = concatenate((y[:n_core], u, one))
        else:
            u = constant
            z = concatenate((y[:n_core], tail))
        lin = a_mat.dot(z)
        v = y[nv : 2 * nv]
        zc = z if whole else z[active]
        p_in, p_diss = q_mat.dot(zc).dot(zc)
        if damped:
            p_diss += v.dot(damping * v)
        if torque_inputs:
            p_in += u.dot(v)
        if progress is not None and t > progress.n + progress.step:
            progress.update(min(t, progress.total) - progress.n)
        return concatenate((v, aba(model, data, y[:nv], v, lin[:nv]), lin[nv:], (p_in, p_diss)))

    a_tau, a_states = a_mat[:nv, :n_core], a_mat[nv:, :n_core]
    core_active = active[active < n_core]
    jacobian = np.zeros((nx, nx))
    jacobian[:nv, nv : 2 * nv] = np.eye(nv)
    jacobian[2 * nv : n_core, :n_core] = a_states

    def jac(t: float, y: np.ndarray) -> np.ndarray:
        u = constant if constant is not None else clip(np.asarray(control(t, y), dtype=float))
        z: np.ndarray = concatenate((y[:n_core], u, one))
        v = y[nv : 2 * nv]
        da_dq, da_dv, m_inv = pin.computeABADerivatives(model, data, y[:nv], v, a_mat[:nv] @ z)
        da = m_inv @ a_tau
        da[:, :nv] += da_dq
        da[:, nv : 2 * nv] += da_dv
        jacobian[nv : 2 * nv, :n_core] = da
        power = jacobian[n_core:]
        power[:] = 0.0
        power[:, core_active] = 2.0 * (q_mat @ z[active])[:, : core_active.size]
        power[1, nv : 2 * nv] += 2.0 * damping * v
        if torque_inputs:
            power[0, nv : 2 * nv] += u
        return jacobian.copy()

    rhs.jac = jac  # type: ignore[attr-defined]
    return rhs
