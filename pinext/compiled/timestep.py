"""Moreau–Jean time stepping, compiled: every step of a run in one Numba loop.

The scheme is :mod:`pinext.contact.timestepping`'s (Moreau 1988; Jean 1999; its docstring
derives the step and its energy audit): the free velocity ``ṽ = v + h M⁻¹ (τ − b(q, v))``,
the impulses ``λ`` of one problem on the Delassus operator ``G = J M⁻¹ Jᵀ`` for the rows of
the step — frictional point contacts on planes, joint limits near their bounds, ``<mimic>``
couplings, loop closures, prescribed joints (their law at the step's end, from
``ws.prescribed_ref``), Coulomb joint friction, written in that order in :func:`run` — then
``v⁺ = ṽ + M⁻¹ Jᵀ λ`` and ``q⁺ = q ⊕ h v⁺``. The kinematics, the bias forces (RNEA), the
joint-space inertia (CRBA, with its sparse LTDL factors), the Delassus operator and the
problem (:mod:`pinext.compiled.conic`) are compiled, so that a step costs no Python call.
The impulses start from the previous step's (warm start). The components' own states
(drives' rotors and currents: :class:`pinext.contact.stepped_states.ComponentStates`, whose
forces are linear) join each step linearly implicit, their elimination in the stepper's
armature and in constant matrices (:mod:`pinext.compiled.linear_steps`).

A control law held over each step is either given (one call per step) or a joint PD law,
``u = K_p (q_r − q) + K_d (v_r − v)`` on one-degree-of-freedom joints, evaluated inside the
loop with the reference of each step written into the workspace by the driver; inputs
are clipped at the effort limits where the System saturates them.
"""

from __future__ import annotations

import math

from ..dynamics import rotations
from .aba import joint_transforms
from .conic import solve as _solve
from .crba import crba_from_transforms, ltdl, ltdl_half, ltdl_solve
from .frames import axis_motion, held, placements
from .linear_steps import linear_efforts, own_advance, own_efforts
from .model import FREE_FLYER, PRISMATIC, REVOLUTE, REVOLUTE_UNBOUNDED, SPHERICAL, TRANSLATION
from .rnea import nonlinear_effects
from .spatial import entry, helper

_exp_at = helper(rotations.exp_at)

#: Status codes of :func:`run`.
DONE, NON_FINITE = 0, 1


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
def _quadratic(pm, m, a, b):
    """aᵀ M b for the joint-space inertia M, symmetric and zero between unrelated dofs (as
    :func:`crba_from_transforms` leaves it): the diagonal and each dof's ancestors only."""
    s = 0.0
    for r in range(a.shape[0]):
        s += a[r] * m[r, r] * b[r]
        c = pm.dof_parent[r]
        while c >= 0:
            s += m[r, c] * (a[r] * b[c] + a[c] * b[r])
            c = pm.dof_parent[c]
    return s


@helper
def _kinetic(pm, sc, m, v):
    """½ vᵀ M v [J] with the System's armature (the stepper's, less ``sc.armature_shift``)."""
    e = 0.5 * _quadratic(pm, m, v, v)
    for i in range(v.shape[0]):
        e -= 0.5 * sc.armature_shift[i] * v[i] * v[i]
    return e


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
        elif code == SPHERICAL:  # (Pinocchio keeps the product's sign)
            _exp_at(q, iq, dv, iv, out, iq, False)
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
            _exp_at(q, iq + 3, dv, iv + 3, out, iq + 3, True)  # (on the side of q, as Pinocchio)


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
            c0, c1, c2, _, _, _ = axis_motion(pm, rot_w, a, col, r0, r1, r2)
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
def _on_chain(pm, tip, dof):
    """Whether dof is tip or one of its ancestors in ``pm.dof_parent``."""
    while tip >= 0:
        if tip == dof:
            return True
        tip = pm.dof_parent[tip]
    return False


@helper
def _tip(pm, a, b):
    """The deeper of dofs a and b when the other is on its chain, else −1 (a row across two
    branches)."""
    if _on_chain(pm, a, b):
        return a
    return b if _on_chain(pm, b, a) else -1


@helper
def _delassus(pm, ws, m):
    """The Delassus operator of the m rows of ws.jac into ws.delassus:
    G = J M⁻¹ Jᵀ = Zᵀ D⁻¹ Z with Z_i = L⁻ᵀ J_iᵀ (the factors of :func:`ltdl` in ws.factors).

    A row whose Jacobian lies on the dof chain of its tip ``ws.tip[i]`` (the tip and its
    ancestors: a point of a body, a joint's own row) keeps Z_i on that chain, since L⁻ᵀ moves
    entries to ancestors only (Featherstone (2008), ch. 6, the branch-induced sparsity):
    its half-solve and its products walk the chain alone. A row across two branches (tip −1)
    is solved and multiplied densely.
    """
    nv, lam = ws.factors.shape[0], pm.dof_parent
    for c in range(nv):
        ws.dinv[c] = 1.0 / ws.factors[c, c]
    for i in range(m):
        for c in range(nv):
            ws.half[i, c] = ws.jac[i, c]
        if ws.tip[i] < 0:
            ltdl_half(pm, ws.factors, ws.half[i])
        a = ws.tip[i]
        while a >= 0:  # ltdl_half's loop over the chain's dofs, deepest first
            z, j = ws.half[i, a], lam[a]
            while j >= 0:
                ws.half[i, j] -= ws.factors[a, j] * z
                j = lam[j]
            a = lam[a]
    for i in range(m):
        for j in range(i, m):
            a = ws.tip[i] if ws.tip[i] >= 0 else ws.tip[j]
            g = 0.0
            if a < 0:
                for c in range(nv):
                    g += ws.half[i, c] * ws.half[j, c] * ws.dinv[c]
            while a >= 0:  # (Z_i or Z_j is zero off the chain)
                g += ws.half[i, a] * ws.half[j, a] * ws.dinv[a]
                a = lam[a]
            ws.delassus[i, j] = g
            ws.delassus[j, i] = g


@entry
def run(pm, sc, ws, q, v, z, u, h, t0, k0, n_steps, every, out):
    """``n_steps`` steps of size h from (q, v) at time t0 (global step index k0), in place.

    ``u`` is the input held over the steps, or, with ``sc.pd_on``, overwritten by the PD law
    to the reference of each step (``ws.q_ref[s]``, ``ws.v_ref[s]``, s = 0 .. n_steps − 1)
    at each step. Samples at global steps that are multiples of ``every`` go to ``out``
    (their index: step // every). Returns (status, steps done, time reached).
    """
    nv, nq = v.shape[0], q.shape[0]
    nc = sc.contact_joint.shape[0]
    t = t0
    for s in range(n_steps):
        k = k0 + s
        if sc.pd_on:  # JointPD: u = K_p (q_r − q) + K_d (v_r − v), the reference of step s
            for i in range(nv):
                u[i] = sc.kd[i] * (ws.v_ref[s, i] - v[i])
            for n in range(sc.pd_iq.shape[0]):
                iv = sc.pd_iv[n]
                u[iv] += sc.kp[iv] * (ws.q_ref[s, sc.pd_iq[n]] - q[sc.pd_iq[n]])
        for i in range(nv):  # the efforts applied: inputs clipped to their limits (inf: none)
            if sc.torque_inputs:
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
        linear_efforts(sc, ws, q, v)
        own_efforts(sc, ws, q, v, z, h)
        for i in range(nv):
            ws.acc[i] = ws.tau[i] + ws.own_extra[i] - ws.bias[i]
        ltdl_solve(pm, ws.factors, ws.acc)
        for i in range(nv):
            ws.v_free[i] = v[i] + h * ws.acc[i]
        placements(pm, ws.rotation, ws.position)
        potential = _potential(pm, ws.rotation, ws.position)
        elastic = 0.0
        for n in range(sc.elastic_iq.shape[0]):
            d = q[sc.elastic_iq[n]] - sc.q_rest[sc.elastic_iq[n]]
            elastic += 0.5 * sc.stiffness[sc.elastic_iv[n]] * d * d
        kinetic = _kinetic(pm, sc, ws.mass, v)
        ws.energy[0], ws.energy[1], ws.energy[2] = kinetic, potential, elastic
        energy = kinetic + potential + elastic
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
            for i in range(u.shape[0]):
                out.u[j, i] = u[i]
            for i in range(z.shape[0]):
                out.own[j, i] = z[i]
            out.work[j], out.lost[j] = ws.totals[0], ws.totals[1]
            out.audit[j, 0], out.audit[j, 1] = ws.audit[0], ws.audit[1]
            for r in range(3):
                out.energy[j, r] = ws.energy[r]
            for c in range(nc):
                out.gap[j, c] = ws.gap[c]
        # the rows: active contacts, joints near a limit, joint friction
        m = 0
        for c in range(nc):
            ws.active[c] = ws.gap[c] <= sc.margin + 2.0 * h * max(ws.closing[c], 0.0)
            if ws.active[c]:
                ws.gap[c] = _contact_row(pm, sc, ws, c, m)
                j = sc.contact_joint[c]
                for r in range(3):
                    ws.tip[m + r] = pm.idx_v[j] + pm.nv[j] - 1
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
                    ws.tip[m] = iv
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
            ws.tip[m] = _tip(pm, f, lead)
            residual = q[sc.mimic_iq[n, 0]] - k_ * q[sc.mimic_iq[n, 1]] - sc.mimic_offset[n]
            ws.g[m] = ws.v_free[f] - k_ * ws.v_free[lead] + residual / h
            ws.lam[m] = ws.warm_mimic[n]
            ws.lower[m], ws.upper[m] = -math.inf, math.inf
            m += 1
        mimic_end = m
        held(pm, sc.frames, ws.closure_residual)  # closures: B v⁺ + Θ / h = 0, free λ
        for i in range(ws.closure_residual.shape[0]):
            norm = 0.0
            for col in range(nv):
                ws.jac[m, col] = sc.frames.jac[i, col]
                norm += abs(ws.jac[m, col])
            ws.warm_closure[i] = ws.warm_closure[i] if norm > 0.0 else 0.0
            if norm == 0.0:  # (a row that no motion moves: a planar loop's out of plane)
                continue
            ws.row_of[m] = i
            ws.tip[m] = -1
            ws.g[m] = _row_dot(ws, m, ws.v_free) + ws.closure_residual[i] / h
            ws.lam[m] = ws.warm_closure[i]
            ws.lower[m], ws.upper[m] = -math.inf, math.inf
            m += 1
        closure_end = m
        for n in range(sc.prescribed_iv.shape[0]):  # v⁺ = (q_ref(t + h) − q) / h, free λ
            iq, iv = sc.prescribed_iq[n], sc.prescribed_iv[n]
            for col in range(nv):
                ws.jac[m, col] = 0.0
            ws.jac[m, iv] = 1.0
            ws.tip[m] = iv
            if sc.prescribed_continuous[n]:  # (the angle's difference wrapped)
                error = math.atan2(q[iq + 1], q[iq]) - ws.prescribed_ref[s, n]
                error = math.atan2(math.sin(error), math.cos(error))
            else:
                error = q[iq] - ws.prescribed_ref[s, n]
            ws.g[m] = ws.v_free[iv] + error / h
            ws.lam[m] = ws.warm_prescribed[n]
            ws.lower[m], ws.upper[m] = -math.inf, math.inf
            m += 1
        prescribed_end = m
        for n in range(sc.friction_iv.shape[0]):
            iv = sc.friction_iv[n]
            for col in range(nv):
                ws.jac[m, col] = 0.0
            ws.jac[m, iv] = 1.0
            ws.tip[m] = iv
            ws.g[m] = ws.v_free[iv]
            bound = sc.friction_torque[n] * h
            ws.lam[m] = min(max(ws.warm_friction[n], -bound), bound)
            ws.lower[m], ws.upper[m] = -bound, bound
            m += 1
        for i in range(nv):
            ws.v_next[i] = ws.v_free[i]
        dissipated, driven = 0.0, 0.0
        if m > 0:
            _delassus(pm, ws, m)
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
            for i in range(m):  # the prescribed joints' impulses' work is input work
                work = 0.5 * ws.lam[i] * (_row_dot(ws, i, v) + _row_dot(ws, i, ws.v_next))
                if closure_end <= i < prescribed_end:
                    driven += work
                else:
                    dissipated -= work
        own_advance(sc, ws, v, z, h)
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
        for i in range(mimic_end, closure_end):
            ws.warm_closure[ws.row_of[i]] = ws.lam[i]
        for n in range(sc.prescribed_iv.shape[0]):
            ws.warm_prescribed[n] = ws.lam[closure_end + n]
        for n in range(sc.friction_iv.shape[0]):
            ws.warm_friction[n] = ws.lam[prescribed_end + n]
        # energy audit (pinext.contact.timestepping.step_audit; the own states' terms from
        # _own_advance): the efforts on the mechanism over the step are τ + the own states'
        for i in range(nv):
            ws.dv_next[i] = ws.v_next[i] - v[i]
            ws.springs[i] = 0.0
        for n in range(sc.elastic_iq.shape[0]):  # τ_el, the joint springs
            iq = sc.elastic_iq[n]
            iv = sc.elastic_iv[n]
            ws.springs[iv] = -sc.stiffness[iv] * (q[iq] - sc.q_rest[iq])
        numerical = 0.0
        explicit = _kinetic(pm, sc, ws.mass, ws.v_next) + potential + elastic
        for i in range(nv):
            numerical += (ws.tau[i] + ws.own_applied[i] - ws.bias[i]) * ws.dv_next[i]
            explicit += h * ws.v_next[i] * (ws.bias[i] - ws.springs[i])
        ws.audit[0] += 0.5 * h * numerical + ws.own_terms[0]
        ws.audit[1] += ws.own_terms[1] - explicit
        for i in range(nv):
            ws.totals[0] += (ws.u_applied[i] + ws.lin_tau[i]) * ws.v_next[i] * h
            ws.totals[1] += sc.damping[i] * v[i] * ws.v_next[i] * h
        ws.totals[0] += ws.own_terms[2] + driven
        ws.totals[1] += dissipated + ws.own_terms[3]
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
        n_p, n_s = sc.own_inertia.shape[0], sc.own_metric.shape[0]
        for i in range(n_p):  # w⁺ = w + Δw, p⁺ = p + h w⁺, s⁺ = s + Δs
            z[n_p + i] = ws.own_vel[nv + i]
            z[i] += h * z[n_p + i]
        for i in range(n_s):
            z[2 * n_p + i] += ws.own_ds[i]
        for i in range(z.shape[0]):
            finite = finite and math.isfinite(z[i])
        t += h
        if not finite:
            return NON_FINITE, s + 1, t
    return DONE, n_steps, t


@entry
def close(pm, sc, ws, q, v):
    """At the end of a run: the last step's explicit term closed with E(q, v), the energies
    at (q, v) in ws.energy and the contacts' gaps there in ws.gap."""
    joint_transforms(pm, q)
    nonlinear_effects(pm, v, ws.bias)
    placements(pm, ws.rotation, ws.position)
    crba_from_transforms(pm, ws.mass)
    elastic = 0.0
    for n in range(sc.elastic_iq.shape[0]):
        d = q[sc.elastic_iq[n]] - sc.q_rest[sc.elastic_iq[n]]
        elastic += 0.5 * sc.stiffness[sc.elastic_iv[n]] * d * d
    ws.energy[0] = _kinetic(pm, sc, ws.mass, v)
    ws.energy[1], ws.energy[2] = _potential(pm, ws.rotation, ws.position), elastic
    ws.audit[1] += ws.energy[0] + ws.energy[1] + ws.energy[2]
    _gaps(pm, sc, ws)
