"""Moreau–Jean time stepping, compiled: every step of a run in one Numba loop.

The scheme is :mod:`pinext.contact.timestepping`'s (Moreau 1988; Jean 1999; its docstring
derives the step and its energy audit): the free velocity ``ṽ = v + h ABA(q, v, τ)``, the
frictional contact, joint-limit and joint-friction impulses ``λ`` of one problem on the
Delassus operator ``G = J M⁻¹ Jᵀ``, ``v⁺ = ṽ + M⁻¹ Jᵀ λ`` and ``q⁺ = q ⊕ h v⁺``. Here the
kinematics, the joint-space inertia (CRBA, with its sparse LTDL factors), the Delassus
operator and the conic problem are compiled, so that a step costs no Python call. The
problem is solved by projected Gauss–Seidel over the blocks (Moreau 1988; Jean 1999): per
contact, the normal impulse ``λ_n ← max(0, λ_n − σ_n / G_nn)`` and then the tangential one
``λ_T ← Π_{‖λ_T‖ ≤ μ λ_n}(λ_T − σ_T / ρ)`` with ``ρ`` the largest eigenvalue of the 2 × 2
block ``G_TT`` (a scalar step keeps the fixed point Coulomb's maximal dissipation); joint
limits ``λ ← max(0, λ − σ / G_ii)``; joint friction ``λ ← clip(λ − σ / G_ii, ±F_c h)``. The
impulses start from the previous step's (warm start). Its fixed points are the solutions of
the problem Pinocchio's ``ADMMConstraintSolver`` solves, the tests' reference.

A control law held over each step is either given (one call per step) or a joint PD law to
a constant reference, ``u = K_p (q_r − q) − K_d v`` on one-degree-of-freedom joints,
evaluated inside the loop.
"""

from __future__ import annotations

import math

from .aba import joint_transforms
from .crba import crba_from_transforms, ltdl, ltdl_half, ltdl_solve
from .model import FREE_FLYER, PRISMATIC, REVOLUTE, REVOLUTE_UNBOUNDED, SPHERICAL, TRANSLATION
from .rnea import nonlinear_effects
from .spatial import helper, kernel

#: Status codes of :func:`run`.
DONE, NON_FINITE = 0, 1


@helper
def _world(pm, rot_w, pos_w):
    """World placements of the joint frames (oMi) from the parent -> joint transforms of the
    workspace (after :func:`pinext.compiled.joint_transforms`)."""
    for i in range(1, pm.parent.shape[0]):
        p = pm.parent[i]
        for r in range(3):
            if p == 0:
                for c in range(3):
                    rot_w[i, r, c] = pm.ws_rotation[i, r, c]
                pos_w[i, r] = pm.ws_translation[i, r]
            else:
                s = pos_w[p, r]
                for c in range(3):
                    s += rot_w[p, r, c] * pm.ws_translation[i, c]
                    acc = 0.0
                    for m in range(3):
                        acc += rot_w[p, r, m] * pm.ws_rotation[i, m, c]
                    rot_w[i, r, c] = acc
                pos_w[i, r] = s


@helper
def _potential(pm, rot_w, pos_w):
    """Gravity's potential energy −Σ m_i gᵀ c_i [J] (Pinocchio's computePotentialEnergy)."""
    e = 0.0
    for i in range(1, pm.parent.shape[0]):
        for r in range(3):
            c = pos_w[i, r]
            for m in range(3):
                c += rot_w[i, r, m] * pm.lever[i, m]
            e -= pm.mass[i] * pm.gravity[r] * c
    return e


@helper
def _quadratic(m, a, b):
    """aᵀ M b."""
    s = 0.0
    for r in range(a.shape[0]):
        row = 0.0
        for c in range(b.shape[0]):
            row += m[r, c] * b[c]
        s += a[r] * row
    return s


@helper
def _quat_multiply(q, i, x, y, z, w, same_side):
    """q[i:i+4] ← q[i:i+4] ⊗ (x, y, z, w), normalised, (x, y, z, w) order; ``same_side``:
    the sign that keeps it on the side of the old q (as Pinocchio's free-flyer
    ``integrate``; its spherical joint keeps the product's sign)."""
    a, b, c, d = q[i], q[i + 1], q[i + 2], q[i + 3]
    nx = d * x + a * w + b * z - c * y
    ny = d * y - a * z + b * w + c * x
    nz = d * z + a * y - b * x + c * w
    nw = d * w - a * x - b * y - c * z
    n = math.sqrt(nx * nx + ny * ny + nz * nz + nw * nw)
    if same_side and nx * a + ny * b + nz * c + nw * d < 0.0:
        n = -n
    q[i], q[i + 1], q[i + 2], q[i + 3] = nx / n, ny / n, nz / n, nw / n


@helper
def _exp_quaternion(w0, w1, w2):
    """The unit quaternion (x, y, z, w) of the rotation vector (w0, w1, w2)."""
    theta = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    half = 0.5 * theta
    k = 0.5 - theta * theta / 48.0 if theta < 1e-4 else math.sin(half) / theta
    return w0 * k, w1 * k, w2 * k, math.cos(half)


@helper
def integrate(pm, q, dv, out):
    """out = q ⊕ dv (Pinocchio's ``integrate``): the exponential map of each joint."""
    for k in range(q.shape[0]):
        out[k] = q[k]
    for i in range(1, pm.parent.shape[0]):
        code, iq, iv = pm.jtype[i], pm.idx_q[i], pm.idx_v[i]
        if code == REVOLUTE or code == PRISMATIC:
            out[iq] = q[iq] + dv[iv]
        elif code == TRANSLATION:
            for r in range(3):
                out[iq + r] = q[iq + r] + dv[iv + r]
        elif code == REVOLUTE_UNBOUNDED:
            c, s = math.cos(dv[iv]), math.sin(dv[iv])
            a, b = q[iq] * c - q[iq + 1] * s, q[iq] * s + q[iq + 1] * c
            n = math.sqrt(a * a + b * b)
            out[iq], out[iq + 1] = a / n, b / n
        elif code == SPHERICAL:
            x, y, z, w = _exp_quaternion(dv[iv], dv[iv + 1], dv[iv + 2])
            _quat_multiply(out, iq, x, y, z, w, False)
        elif code == FREE_FLYER:
            # M ⊕ ν = M exp6(ν): p += R V(ω) ν_lin, R ← R exp3(ω) (Pinocchio's SE3 exp)
            w0, w1, w2 = dv[iv + 3], dv[iv + 4], dv[iv + 5]
            u0, u1, u2 = dv[iv], dv[iv + 1], dv[iv + 2]
            t2 = w0 * w0 + w1 * w1 + w2 * w2
            t = math.sqrt(t2)
            if t < 1e-4:
                b, c = 0.5 - t2 / 24.0, 1.0 / 6.0 - t2 / 120.0
            else:
                b, c = (1.0 - math.cos(t)) / t2, (t - math.sin(t)) / (t2 * t)
            x0, x1, x2 = w1 * u2 - w2 * u1, w2 * u0 - w0 * u2, w0 * u1 - w1 * u0  # ω × u
            y0, y1, y2 = w1 * x2 - w2 * x1, w2 * x0 - w0 * x2, w0 * x1 - w1 * x0  # ω × ω × u
            d0, d1, d2 = u0 + b * x0 + c * y0, u1 + b * x1 + c * y1, u2 + b * x2 + c * y2
            qx, qy, qz, qw = q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]
            # R d with R the rotation of (qx, qy, qz, qw): d + 2 qw (r × d) + 2 r × (r × d)
            c0, c1, c2 = qy * d2 - qz * d1, qz * d0 - qx * d2, qx * d1 - qy * d0
            e0, e1, e2 = qy * c2 - qz * c1, qz * c0 - qx * c2, qx * c1 - qy * c0
            out[iq] = q[iq] + d0 + 2.0 * (qw * c0 + e0)
            out[iq + 1] = q[iq + 1] + d1 + 2.0 * (qw * c1 + e1)
            out[iq + 2] = q[iq + 2] + d2 + 2.0 * (qw * c2 + e2)
            x, y, z, w = _exp_quaternion(w0, w1, w2)
            _quat_multiply(out, iq + 3, x, y, z, w, True)


@helper
def _contact_row(pm, sc, ws, k, row):
    """Rows (t1, t2, n) of contact k's Jacobian in its plane's axes into ws.jac[row:row+3];
    returns the contact point's gap [m]."""
    j = sc.contact_joint[k]
    rot_w, pos_w, point = ws.rotation, ws.position, ws.point
    for r in range(3):
        s = pos_w[j, r]
        for c in range(3):
            s += rot_w[j, r, c] * sc.contact_local[k, c]
        point[r] = s
    gap = 0.0
    for r in range(3):
        gap += sc.plane_rotation[k, r, 2] * (point[r] - sc.plane_origin[k, r])
    for r in range(3):
        for col in range(ws.jac.shape[1]):
            ws.jac[row + r, col] = 0.0
    a = j
    while a > 0:
        r0, r1, r2 = point[0] - pos_w[a, 0], point[1] - pos_w[a, 1], point[2] - pos_w[a, 2]
        for col in range(pm.idx_v[a], pm.idx_v[a] + pm.nv[a]):
            s = pm.motion_subspace[col]
            lin0 = rot_w[a, 0, 0] * s[0] + rot_w[a, 0, 1] * s[1] + rot_w[a, 0, 2] * s[2]
            lin1 = rot_w[a, 1, 0] * s[0] + rot_w[a, 1, 1] * s[1] + rot_w[a, 1, 2] * s[2]
            lin2 = rot_w[a, 2, 0] * s[0] + rot_w[a, 2, 1] * s[1] + rot_w[a, 2, 2] * s[2]
            w0 = rot_w[a, 0, 0] * s[3] + rot_w[a, 0, 1] * s[4] + rot_w[a, 0, 2] * s[5]
            w1 = rot_w[a, 1, 0] * s[3] + rot_w[a, 1, 1] * s[4] + rot_w[a, 1, 2] * s[5]
            w2 = rot_w[a, 2, 0] * s[3] + rot_w[a, 2, 1] * s[4] + rot_w[a, 2, 2] * s[5]
            c0 = lin0 + w1 * r2 - w2 * r1  # velocity of the point per unit dof rate
            c1 = lin1 + w2 * r0 - w0 * r2
            c2 = lin2 + w0 * r1 - w1 * r0
            for r in range(3):
                ws.jac[row + r, col] = (
                    sc.plane_rotation[k, 0, r] * c0
                    + sc.plane_rotation[k, 1, r] * c1
                    + sc.plane_rotation[k, 2, r] * c2
                )
        a = pm.parent[a]
    return gap


@helper
def _gaps(pm, sc, ws):
    """Gaps [m] and closing speeds [m/s] of every contact into ws.gap and ws.closing, from
    the world placements in ws and the body velocities of :func:`nonlinear_effects`."""
    vel = pm.ws_velocity
    for k in range(sc.contact_joint.shape[0]):
        j = sc.contact_joint[k]
        l0, l1, l2 = sc.contact_local[k, 0], sc.contact_local[k, 1], sc.contact_local[k, 2]
        u0 = vel[j, 0] + vel[j, 4] * l2 - vel[j, 5] * l1  # the point's velocity, joint axes
        u1 = vel[j, 1] + vel[j, 5] * l0 - vel[j, 3] * l2
        u2 = vel[j, 2] + vel[j, 3] * l1 - vel[j, 4] * l0
        gap, closing = 0.0, 0.0
        for r in range(3):
            n = sc.plane_rotation[k, r, 2]
            rot = ws.rotation[j, r]
            point = ws.position[j, r] + rot[0] * l0 + rot[1] * l1 + rot[2] * l2
            gap += n * (point - sc.plane_origin[k, r])
            closing -= n * (rot[0] * u0 + rot[1] * u1 + rot[2] * u2)
        ws.gap[k], ws.closing[k] = gap, closing


@helper
def _row_dot(ws, i, x):
    s = 0.0
    for c in range(x.shape[0]):
        s += ws.jac[i, c] * x[c]
    return s


@helper
def _pgs(ws, m, n_contact_rows, mu, tolerance, max_iterations):
    """Projected Gauss–Seidel on σ = G λ + g (see the module docstring); returns
    (iterations, converged). ws.lam holds the warm start on entry, the impulses on exit."""
    g, big, lam = ws.g, ws.delassus, ws.lam
    for it in range(1, max_iterations + 1):
        change = 0.0
        for b in range(0, n_contact_rows, 3):
            s0, s1, s2 = g[b], g[b + 1], g[b + 2]
            for c in range(m):
                s0 += big[b, c] * lam[c]
                s1 += big[b + 1, c] * lam[c]
                s2 += big[b + 2, c] * lam[c]
            ln = max(0.0, lam[b + 2] - s2 / big[b + 2, b + 2])
            dn = ln - lam[b + 2]
            lam[b + 2] = ln
            s0 += big[b, b + 2] * dn
            s1 += big[b + 1, b + 2] * dn
            a, d, off = big[b, b], big[b + 1, b + 1], big[b, b + 1]
            rho = 0.5 * (a + d) + math.sqrt(0.25 * (a - d) * (a - d) + off * off)
            t0, t1 = lam[b] - s0 / rho, lam[b + 1] - s1 / rho
            radius = mu[b // 3] * ln
            norm = math.sqrt(t0 * t0 + t1 * t1)
            if norm > radius:
                scale = radius / norm
                t0, t1 = t0 * scale, t1 * scale
            change = max(change, abs(dn) * big[b + 2, b + 2])
            change = max(change, math.sqrt((t0 - lam[b]) ** 2 + (t1 - lam[b + 1]) ** 2) * rho)
            lam[b], lam[b + 1] = t0, t1
        for i in range(n_contact_rows, m):
            s = g[i]
            for c in range(m):
                s += big[i, c] * lam[c]
            new = lam[i] - s / big[i, i]
            new = max(new, ws.lower[i])
            new = min(new, ws.upper[i])
            change = max(change, abs(new - lam[i]) * big[i, i])
            lam[i] = new
        if change <= tolerance:
            return it, True
    return max_iterations, False


#: Gauss–Seidel sweeps before the solve turns to ADMM.
PGS_SWEEPS = 50
#: ρ adapts every this many ADMM iterations (and the residual is checked).
ADMM_CHECK = 5


@helper
def _solve(ws, m, n_contact_rows, tolerance, max_iterations):
    """The step's contact problem: Gauss–Seidel first (cheap, warm started); where it stalls
    (a singular Delassus operator, coupled friction rows), ADMM from its iterate. Returns
    (iterations, converged)."""
    sweeps = min(PGS_SWEEPS, max_iterations)
    its, done = _pgs(ws, m, n_contact_rows, ws.mu, tolerance, sweeps)
    if done or its >= max_iterations:
        return its, done
    more, done = _admm(ws, m, n_contact_rows, tolerance, max_iterations - its)
    return its + more, done


@helper
def _project(ws, m, n_contact_rows, x, out):
    """out = Π_K(x): each contact's friction cone ‖λ_T‖ ≤ μ λ_n, λ ≥ 0 on the limit rows,
    the friction rows' boxes."""
    for b in range(0, n_contact_rows, 3):
        mu = ws.mu[b // 3]
        t0, t1, n = x[b], x[b + 1], x[b + 2]
        r = math.sqrt(t0 * t0 + t1 * t1)
        if r <= mu * n:
            out[b], out[b + 1], out[b + 2] = t0, t1, n
        elif mu * r <= -n:
            out[b], out[b + 1], out[b + 2] = 0.0, 0.0, 0.0
        else:
            n2 = (n + mu * r) / (1.0 + mu * mu)
            out[b], out[b + 1], out[b + 2] = mu * n2 * t0 / r, mu * n2 * t1 / r, n2
    for i in range(n_contact_rows, m):
        out[i] = min(max(x[i], ws.lower[i]), ws.upper[i])


@helper
def _residual(ws, m, n_contact_rows, z, alpha):
    """The natural-map residual ‖z − Π_K(z − α σ̂)‖∞ / α [m/s] of impulses z, with
    σ̂ = G z + g + μ ‖σ_T‖ e_n (De Saxcé's correction); zero exactly at a solution."""
    big, g, w, p = ws.delassus, ws.g, ws.admm_w, ws.admm_p
    for i in range(m):
        s = g[i]
        for c in range(m):
            s += big[i, c] * z[c]
        w[i] = s
    for b in range(0, n_contact_rows, 3):
        w[b + 2] += ws.mu[b // 3] * math.sqrt(w[b] * w[b] + w[b + 1] * w[b + 1])
    for i in range(m):
        w[i] = z[i] - alpha * w[i]
    _project(ws, m, n_contact_rows, w, p)
    worst = 0.0
    for i in range(m):
        worst = max(worst, abs(z[i] - p[i]))
    return worst / alpha


@helper
def _factor(ws, m, rho):
    """Cholesky factor of G + ρ I into ws.admm_chol (lower triangle)."""
    c = ws.admm_chol
    for i in range(m):
        for j in range(i + 1):
            s = ws.delassus[i, j] + (rho if i == j else 0.0)
            for k in range(j):
                s -= c[i, k] * c[j, k]
            c[i, j] = math.sqrt(s) if i == j else s / c[j, j]


@helper
def _admm(ws, m, n_contact_rows, tolerance, max_iterations):
    """ADMM on the step's problem (Carpentier, Le Lidec & Montaut 2024: the same problem
    as Pinocchio's ``ADMMConstraintSolver``), for the De Saxcé shift s fixed at each
    iteration: x = argmin ½ xᵀ G x + (g + s)ᵀ x + ρ/2 ‖x − z + u‖², z = Π_K(x + u),
    u += x − z; ρ adapts to balance the primal and dual residuals. Starts from ws.lam,
    leaves its impulses there; returns (iterations, converged)."""
    big, x, z, u, zp = ws.delassus, ws.admm_x, ws.lam, ws.admm_u, ws.admm_p
    scale = 0.0
    for i in range(m):
        scale = max(scale, big[i, i])
    alpha = 1.0 / scale
    rho = 0.0
    for i in range(m):
        rho += big[i, i] / m
    _factor(ws, m, rho)
    for i in range(m):
        u[i] = 0.0
    for it in range(1, max_iterations + 1):
        for i in range(m):  # σ = G z + g, then the right-hand side −(g + s) + ρ (z − u)
            s = ws.g[i]
            for c in range(m):
                s += big[i, c] * z[c]
            ws.admm_w[i] = s
        for i in range(m):
            x[i] = -ws.g[i] + rho * (z[i] - u[i])
        for b in range(0, n_contact_rows, 3):
            w0, w1 = ws.admm_w[b], ws.admm_w[b + 1]
            x[b + 2] -= ws.mu[b // 3] * math.sqrt(w0 * w0 + w1 * w1)
        c = ws.admm_chol
        for i in range(m):  # (G + ρ I) x = rhs: forward, then back substitution
            s = x[i]
            for k in range(i):
                s -= c[i, k] * x[k]
            x[i] = s / c[i, i]
        for i in range(m - 1, -1, -1):
            s = x[i]
            for k in range(i + 1, m):
                s -= c[k, i] * x[k]
            x[i] = s / c[i, i]
        primal, dual = 0.0, 0.0
        for i in range(m):
            zp[i] = z[i]
            ws.admm_w[i] = x[i] + u[i]
        _project(ws, m, n_contact_rows, ws.admm_w, z)
        for i in range(m):
            u[i] += x[i] - z[i]
            primal = max(primal, abs(x[i] - z[i]))
            dual = max(dual, abs(z[i] - zp[i]))
        if it % ADMM_CHECK == 0:
            if _residual(ws, m, n_contact_rows, z, alpha) <= tolerance:
                return it, True
            ratio = 1.0
            if primal * scale > 10.0 * rho * dual:
                ratio = 5.0
            elif rho * dual > 10.0 * primal * scale:
                ratio = 0.2
            if ratio != 1.0:
                rho *= ratio
                for i in range(m):
                    u[i] /= ratio  # the scaled dual variable follows ρ
                _factor(ws, m, rho)
    return max_iterations, _residual(ws, m, n_contact_rows, z, alpha) <= tolerance


@kernel
def run(pm, sc, ws, q, v, u, h, t0, k0, n_steps, every, out):
    """``n_steps`` steps of size h from (q, v) at time t0 (global step index k0), in place.

    ``u`` is the input held over the steps, or, with ``sc.pd_on``, overwritten by the PD law
    at each step. Samples at global steps that are multiples of ``every`` go to ``out``
    (their index: step // every). Returns (status, steps done, time reached).
    """
    nv, nq = v.shape[0], q.shape[0]
    nc = sc.contact_joint.shape[0]
    t = t0
    for s in range(n_steps):
        k = k0 + s
        if sc.pd_on:
            for i in range(nv):
                u[i] = -sc.kd[i] * v[i]
            for n in range(sc.pd_iq.shape[0]):
                iv = sc.pd_iv[n]
                u[iv] += sc.kp[iv] * (sc.q_ref[sc.pd_iq[n]] - q[sc.pd_iq[n]])
        for i in range(nv):  # the efforts applied: inputs clipped to their limits (inf: none)
            ws.u_applied[i] = min(max(u[i], -sc.effort_limit[i]), sc.effort_limit[i])
            ws.tau[i] = ws.u_applied[i] - sc.damping[i] * v[i]
        for n in range(sc.elastic_iq.shape[0]):
            iv = sc.elastic_iv[n]
            ws.tau[iv] -= sc.stiffness[iv] * (q[sc.elastic_iq[n]] - sc.q_rest[sc.elastic_iq[n]])
        # the free velocity ṽ = v + h M⁻¹ (τ − b): RNEA, CRBA and its LTDL factors
        joint_transforms(pm, q)
        nonlinear_effects(pm, v, ws.bias)
        crba_from_transforms(pm, ws.mass)
        for r in range(nv):
            for c in range(nv):
                ws.factors[r, c] = ws.mass[r, c]
        ltdl(pm, ws.factors)
        for i in range(nv):
            ws.acc[i] = ws.tau[i] - ws.bias[i]
        ltdl_solve(pm, ws.factors, ws.acc)
        for i in range(nv):
            ws.v_free[i] = v[i] + h * ws.acc[i]
        _world(pm, ws.rotation, ws.position)
        potential = _potential(pm, ws.rotation, ws.position)
        elastic = 0.0
        for n in range(sc.elastic_iq.shape[0]):
            d = q[sc.elastic_iq[n]] - sc.q_rest[sc.elastic_iq[n]]
            elastic += 0.5 * sc.stiffness[sc.elastic_iv[n]] * d * d
        energy = 0.5 * _quadratic(ws.mass, v, v) + potential + elastic
        if k > 0:  # close the previous step's explicit term with E(q, v) here
            ws.audit[1] += energy
        _gaps(pm, sc, ws)
        if k % every == 0:
            j = k // every
            out.t[j] = t
            for i in range(nq):
                out.q[j, i] = q[i]
            for i in range(nv):
                out.v[j, i] = v[i]
                out.u[j, i] = u[i]
            out.work[j], out.lost[j] = ws.totals[0], ws.totals[1]
            out.audit[j, 0], out.audit[j, 1] = ws.audit[0], ws.audit[1]
            for c in range(nc):
                out.gap[j, c] = ws.gap[c]
        # the rows: active contacts, joints near a limit, joint friction
        m = 0
        for c in range(nc):
            ws.active[c] = ws.gap[c] <= sc.margin + 2.0 * h * max(ws.closing[c], 0.0)
            if ws.active[c]:
                ws.gap[c] = _contact_row(pm, sc, ws, c, m)
                for r in range(3):
                    ws.g[m + r] = _row_dot(ws, m + r, ws.v_free)
                    ws.lam[m + r] = ws.warm[c, r]
                    ws.lower[m + r], ws.upper[m + r] = -math.inf, math.inf
                ws.g[m + 2] += ws.gap[c] / h
                ws.mu[m // 3] = sc.friction[c]
                m += 3
        n_contact_rows = m
        for n in range(sc.limit_iq.shape[0]):
            iq, iv = sc.limit_iq[n], sc.limit_iv[n]
            reach = sc.margin + 2.0 * h * abs(v[iv])
            for side in range(2):  # a side violated at the start engages once inside
                dist = q[iq] - sc.limit_lower[n] if side == 0 else sc.limit_upper[n] - q[iq]
                if dist >= 0.0:
                    ws.engaged[n, side] = True
                if ws.engaged[n, side] and dist <= reach:
                    sign = 1.0 if side == 0 else -1.0
                    for col in range(nv):
                        ws.jac[m, col] = 0.0
                    ws.jac[m, iv] = sign
                    ws.g[m] = sign * ws.v_free[iv] + dist / h
                    ws.lam[m] = ws.warm_limit[n, side]
                    ws.lower[m], ws.upper[m] = 0.0, math.inf
                    ws.row_of[m] = 2 * n + side
                    m += 1
        limit_end = m
        if limit_end > n_contact_rows:
            ws.stats[3] += 1
        for n in range(sc.mimic_ratio.shape[0]):  # q_f = k q_l + c: J = e_f − k e_l, free λ
            f, lead, k_ = sc.mimic_iv[n, 0], sc.mimic_iv[n, 1], sc.mimic_ratio[n]
            for col in range(nv):
                ws.jac[m, col] = 0.0
            ws.jac[m, f], ws.jac[m, lead] = 1.0, -k_
            residual = q[sc.mimic_iq[n, 0]] - k_ * q[sc.mimic_iq[n, 1]] - sc.mimic_offset[n]
            ws.g[m] = ws.v_free[f] - k_ * ws.v_free[lead] + residual / h
            ws.lam[m] = ws.warm_mimic[n]
            ws.lower[m], ws.upper[m] = -math.inf, math.inf
            m += 1
        mimic_end = m
        for n in range(sc.friction_iv.shape[0]):
            iv = sc.friction_iv[n]
            for col in range(nv):
                ws.jac[m, col] = 0.0
            ws.jac[m, iv] = 1.0
            ws.g[m] = ws.v_free[iv]
            bound = sc.friction_torque[n] * h
            ws.lam[m] = min(max(ws.warm_friction[n], -bound), bound)
            ws.lower[m], ws.upper[m] = -bound, bound
            m += 1
        for i in range(nv):
            ws.v_next[i] = ws.v_free[i]
        dissipated = 0.0
        if m > 0:
            for i in range(m):  # Z_i = L⁻ᵀ J_iᵀ: G = J M⁻¹ Jᵀ = Zᵀ D⁻¹ Z
                for c in range(nv):
                    ws.half[i, c] = ws.jac[i, c]
                ltdl_half(pm, ws.factors, ws.half[i])
            for i in range(m):
                for j in range(i, m):
                    g = 0.0
                    for c in range(nv):
                        g += ws.half[i, c] * ws.half[j, c] / ws.factors[c, c]
                    ws.delassus[i, j] = g
                    ws.delassus[j, i] = g
            its, converged = _solve(ws, m, n_contact_rows, sc.tolerance, sc.max_iterations)
            ws.stats[0] += its
            if not converged:
                if ws.stats[1] < ws.unconverged_at.shape[0]:
                    ws.unconverged_at[ws.stats[1]] = t
                ws.stats[1] += 1
            for c in range(nv):  # v⁺ = ṽ + M⁻¹ Jᵀ λ
                ws.acc[c] = 0.0
            for i in range(m):
                for c in range(nv):
                    ws.acc[c] += ws.jac[i, c] * ws.lam[i]
            ltdl_solve(pm, ws.factors, ws.acc)
            for c in range(nv):
                ws.v_next[c] += ws.acc[c]
            for i in range(m):
                dissipated -= 0.5 * ws.lam[i] * (_row_dot(ws, i, v) + _row_dot(ws, i, ws.v_next))
        # warm starts and contact impulses (world axes); touchdown and lift-off events
        m = 0
        for c in range(nc):
            touching = False
            if ws.active[c]:
                for r in range(3):
                    ws.warm[c, r] = ws.lam[m + r]
                    touching = touching or ws.lam[m + r] != 0.0
                if k % every == 0:
                    for r in range(3):
                        out.force[k // every, c, r] = (
                            sc.plane_rotation[c, r, 0] * ws.lam[m]
                            + sc.plane_rotation[c, r, 1] * ws.lam[m + 1]
                            + sc.plane_rotation[c, r, 2] * ws.lam[m + 2]
                        ) / h
                m += 3
            else:
                for r in range(3):
                    ws.warm[c, r] = 0.0
                    if k % every == 0:
                        out.force[k // every, c, r] = 0.0
            if k % every == 0:
                out.closed[k // every, c] = 1.0 if ws.active[c] else 0.0
            if touching != ws.touching[c]:  # (the buffer holds nc events per step)
                out.events[ws.stats[2], 0] = t
                out.events[ws.stats[2], 1] = c
                out.events[ws.stats[2], 2] = 1.0 if touching else 0.0
                ws.stats[2] += 1
                ws.touching[c] = touching
        for n in range(sc.limit_iq.shape[0]):
            ws.warm_limit[n, 0] = 0.0
            ws.warm_limit[n, 1] = 0.0
        for i in range(n_contact_rows, limit_end):
            ws.warm_limit[ws.row_of[i] // 2, ws.row_of[i] % 2] = ws.lam[i]
        for n in range(sc.mimic_ratio.shape[0]):
            ws.warm_mimic[n] = ws.lam[limit_end + n]
        for n in range(sc.friction_iv.shape[0]):
            ws.warm_friction[n] = ws.lam[mimic_end + n]
        # energy audit (the module docstring of pinext.contact.timestepping)
        for i in range(nv):
            ws.dv_free[i] = ws.v_free[i] - v[i]
            ws.dv_next[i] = ws.v_next[i] - v[i]
        ws.audit[0] += 0.5 * _quadratic(ws.mass, ws.dv_free, ws.dv_next)
        explicit = 0.5 * _quadratic(ws.mass, ws.v_next, ws.v_next) + potential + elastic
        explicit -= _quadratic(ws.mass, ws.v_next, ws.dv_free)
        for i in range(nv):
            explicit += ws.v_next[i] * h * (ws.u_applied[i] - sc.damping[i] * v[i])
        ws.audit[1] -= explicit
        for i in range(nv):
            ws.totals[0] += ws.u_applied[i] * ws.v_next[i] * h
            ws.totals[1] += sc.damping[i] * v[i] * ws.v_next[i] * h
        ws.totals[1] += dissipated
        for i in range(nv):
            ws.dv_next[i] = h * ws.v_next[i]
        integrate(pm, q, ws.dv_next, ws.q_next)
        finite = True
        for i in range(nq):
            q[i] = ws.q_next[i]
            finite = finite and math.isfinite(q[i])
        for i in range(nv):
            v[i] = ws.v_next[i]
            finite = finite and math.isfinite(v[i])
        t += h
        if not finite:
            return NON_FINITE, s + 1, t
    return DONE, n_steps, t


@kernel
def close(pm, sc, ws, q, v):
    """At the end of a run: the last step's explicit term closed with E(q, v), and the
    contacts' gaps at (q, v) in ws.gap."""
    joint_transforms(pm, q)
    nonlinear_effects(pm, v, ws.bias)
    _world(pm, ws.rotation, ws.position)
    crba_from_transforms(pm, ws.mass)
    elastic = 0.0
    for n in range(sc.elastic_iq.shape[0]):
        d = q[sc.elastic_iq[n]] - sc.q_rest[sc.elastic_iq[n]]
        elastic += 0.5 * sc.stiffness[sc.elastic_iv[n]] * d * d
    ws.audit[1] += (
        0.5 * _quadratic(ws.mass, v, v) + _potential(pm, ws.rotation, ws.position) + elastic
    )
    _gaps(pm, sc, ws)
