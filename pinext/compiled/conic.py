"""The contact problem of one time step, compiled: projected Gauss–Seidel, then ADMM.

The problem (:mod:`pinext.contact.timestepping`'s docstring): find impulses λ in the rows'
cones K (each contact's friction cone ‖λ_T‖ ≤ μ λ_n, λ ≥ 0 on a joint limit, a box on a
joint's Coulomb friction, free on a ``<mimic>`` coupling) with ``σ̂ = G λ + g + μ ‖σ_T‖ e_n``
in the dual cone and orthogonal to λ (De Saxcé's form of Coulomb's law). Gauss–Seidel sweeps
the blocks first (cheap, warm started): per contact the normal impulse
``λ_n ← max(0, λ_n − σ_n / G_nn)`` and then the tangential one
``λ_T ← Π_{‖λ_T‖ ≤ μ λ_n}(λ_T − σ_T / ρ)`` with ρ the largest eigenvalue of the 2 × 2 block
``G_TT`` (a scalar step keeps the fixed point Coulomb's maximal dissipation); a row in a box
or a half-line ``λ ← clip(λ − σ / G_ii)``. Where it stalls (a singular Delassus operator,
coupled friction rows) ADMM takes over from its iterate (Carpentier, Le Lidec & Montaut
2024: the problem of Pinocchio's ``ADMMConstraintSolver``). Both stop on the natural-map
residual ``‖λ − Π_K(λ − α σ̂)‖∞ / α`` [m/s], zero exactly at a solution.

The workspace ``ws`` is :class:`pinext.compiled.stepping.StepWork`: ``delassus`` (G), ``g``,
``lam`` (warm start in, impulses out), ``lower``/``upper`` (the rows' boxes after the contact
rows), ``mu`` (each contact's μ) and the ADMM scratch.
"""

from __future__ import annotations

import math

from .spatial import helper


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
def solve(ws, m, n_contact_rows, tolerance, max_iterations):
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
