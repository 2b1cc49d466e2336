"""The linear components of a compiled time step: drives' own states and stateless efforts.

:class:`pinext.contact.stepped_states.ComponentStates` (rotors' angles and velocities,
motors' currents, acted on by linear forces, linearly implicit in the step) and
:class:`pinext.contact.stepped_states.LinearEfforts` (the efforts of components without states
of their own, explicit) as the compiled loop (:mod:`pinext.compiled.timestep`) takes them:
:func:`linear_fields` packs them into its scene once, and the loop calls :func:`linear_efforts`
and :func:`own_efforts` before the free velocity, :func:`own_advance` after the velocity
update. The step, its elimination and its energy terms are ComponentStates' (its docstring
derives them); the tests compare both sample by sample.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pinocchio as pin

from .model import PRISMATIC, REVOLUTE
from .spatial import helper


def flat_dofs(model: pin.Model, pm: Any) -> tuple[dict[int, int], dict[int, int]]:
    """({velocity index: configuration index} of the revolute and prismatic joints' dofs,
    {velocity index: joint} of every dof)."""
    flat = {
        joint.idx_v: joint.idx_q
        for joint, code in zip(model.joints[1:], pm.jtype[1:], strict=True)
        if int(code) in (REVOLUTE, PRISMATIC)
    }
    owner = {
        model.joints[j].idx_v + d: j for j in range(1, model.njoints)
        for d in range(model.joints[j].nv)
    }  # fmt: skip
    return flat, owner


#: The fields of :class:`StepScene` that depend on the step h (:func:`step_matrices`).
STEP_FIELDS = ("own_couple", "own_rate", "own_rate_v", "own_solve_w", "own_avw", "own_awv")


def step_matrices(stepped: Any, model: pin.Model, h: float) -> dict[str, np.ndarray]:
    """The own states' elimination for a step h (:meth:`pinext.contact.stepped_states.
    ComponentStates.stepper_model`, which also sets ``model``'s armature)."""
    stepped.stepper_model(model, h)
    nv = model.nv
    return {
        "own_couple": stepped.couple,
        "own_rate": stepped.rate,
        "own_rate_v": stepped.rate_v,
        "own_solve_w": stepped.solve_w,
        "own_avw": stepped.a[:nv, nv:] @ stepped.solve_w,
        "own_awv": stepped.a[nv:, :nv],
    }


def linear_fields(
    stepped: Any,
    efforts: Any,
    model: pin.Model,
    pm: Any,
    h: float,
    armature: np.ndarray,
    q_start: np.ndarray,
) -> dict[str, Any] | str:
    """The :class:`StepScene` fields of the linear components: the own states of
    ``stepped`` (a :class:`pinext.contact.stepped_states.ComponentStates`, or None), with
    ``model``'s armature set for a step h, and the explicit efforts of ``efforts`` (a
    :class:`pinext.contact.stepped_states.LinearEfforts`, or None), their Δq from
    ``q_start`` (``armature``: the System's, which the loop's energies use); or why the
    compiled loop does not take them."""
    nv = model.nv
    fields: dict[str, Any] = {name: np.zeros((0, 0)) for name in STEP_FIELDS}
    for name in ("own_jac", "own_k", "own_c", "own_e", "own_gq", "own_diss", "lin_jac"):
        fields[name] = np.zeros((0, 0))
    for name in ("own_p_ref", "own_inertia", "own_metric", "own_f0"):
        fields[name] = np.zeros(0)
    coupled = np.zeros(nv, dtype=bool)
    if efforts is not None:
        if efforts.reason is not None:
            return efforts.reason
        fields["lin_jac"] = efforts.jacobian
        coupled |= np.any(efforts.jacobian[:, :nv] != 0, axis=0)
    if stepped is not None:
        form = stepped.dissipation_form()
        if isinstance(form, str):
            return form
        jac, n_q, rest = stepped.jacobian, nv + stepped.p.size, stepped.rest
        coupled |= np.any(jac[:, :nv] != 0, axis=0) | np.any(form[:, :nv] != 0, axis=0)
        zero = np.zeros(stepped.system.n_inputs)
        fields |= {
            "own_p_ref": rest[stepped.p].copy(),
            "own_inertia": stepped.inertia.copy(),
            "own_metric": stepped.metric.copy(),
            "own_jac": jac.copy(),
            "own_f0": stepped.forces(0.0, rest, zero),
            "own_k": jac[:n_q, :n_q].copy(),
            "own_c": jac[:n_q, n_q : 2 * n_q].copy(),
            "own_e": jac[:n_q, 2 * n_q :].copy(),
            "own_gq": jac[n_q:, :n_q].copy(),
            "own_diss": form,
        }
        steps = step_matrices(stepped, model, h)
        fields |= {name: np.ascontiguousarray(a) for name, a in steps.items()}
    flat, owner = flat_dofs(model, pm)
    loose = sorted(
        {model.names[owner[int(c)]] for c in np.flatnonzero(coupled) if int(c) not in flat}
    )
    if loose:
        return f"their forces act on {', '.join(loose)}, not revolute nor prismatic"
    fields["armature_shift"] = np.asarray(model.armature, dtype=float) - armature
    fields["own_dq_iq"] = np.array([flat.get(c, -1) for c in range(nv)], dtype=np.int64)
    fields["own_q_ref"] = np.asarray(q_start, dtype=float).copy()
    return fields


@helper
def linear_efforts(sc, ws, q, v):
    """The efforts of the components without states of their own, ``f_u + J (Δq, v)``
    (:class:`pinext.contact.stepped_states.LinearEfforts`), into ws.lin_tau and added to
    ws.tau."""
    nv = v.shape[0]
    if sc.lin_jac.shape[0] == 0:
        return
    for r in range(nv):
        e = ws.lin_fu[r]
        for c in range(nv):
            iq = sc.own_dq_iq[c]
            if iq >= 0:
                e += sc.lin_jac[r, c] * (q[iq] - sc.own_q_ref[iq])
            e += sc.lin_jac[r, nv + c] * v[c]
        ws.lin_tau[r] = e
        ws.tau[r] += e


@helper
def _add_product(m, x, start, out, at, scale):
    """out[at + r] += scale Σ_c m[r, c] x[start + c], over m's rows and columns."""
    for r in range(m.shape[0]):
        e = 0.0
        for c in range(m.shape[1]):
            e += m[r, c] * x[start + c]
        out[at + r] += scale * e


@helper
def own_efforts(sc, ws, q, v, z, h):
    """The components' own states z = (p, w, s) in the step (:class:`pinext.contact.
    stepped_states.ComponentStates`, linearly implicit): their forces ``f = f_u + J d`` at
    ``d = (ΔQ, V, s)``, ``h g + h² G_Q V``, ``b`` of ``A ΔV = b`` and the efforts on the
    mechanism that the stepper's armature turns into the step's velocity update."""
    nv, n_p, n_s = v.shape[0], sc.own_inertia.shape[0], sc.own_metric.shape[0]
    if sc.own_jac.shape[0] == 0:
        return
    n_q, d = nv + n_p, ws.own_d
    for c in range(nv):
        iq = sc.own_dq_iq[c]
        d[c] = q[iq] - sc.own_q_ref[iq] if iq >= 0 else 0.0
        d[n_q + c] = v[c]
    for i in range(n_p):
        d[nv + i] = z[i] - sc.own_p_ref[i]
        d[n_q + nv + i] = z[n_p + i]
    for i in range(n_s):
        d[2 * n_q + i] = z[2 * n_p + i]
    for r in range(n_q + n_s):  # f = f_u + J d
        ws.own_f[r] = ws.own_fu[r]
    _add_product(sc.own_jac, d, 0, ws.own_f, 0, 1.0)
    for r in range(n_s):  # h g + h² G_Q V
        ws.own_rates[r] = h * ws.own_f[n_q + r]
    _add_product(sc.own_gq, d, n_q, ws.own_rates, 0, h * h)
    for r in range(n_q):  # b = h F + h² K V + h E R (h g + h² G_Q V)
        ws.own_b[r] = h * ws.own_f[r]
    _add_product(sc.own_k, d, n_q, ws.own_b, 0, h * h)
    _add_product(sc.own_couple, ws.own_rates, 0, ws.own_b, 0, 1.0)
    for r in range(nv):  # (b_v + A_vw (J − A_ww)⁻¹ b_w) / h
        ws.own_extra[r] = ws.own_b[r]
    _add_product(sc.own_avw, ws.own_b, nv, ws.own_extra, 0, 1.0)
    for r in range(nv):
        ws.own_extra[r] /= h


@helper
def own_advance(sc, ws, v, z, h):
    """The own states' step, the velocity's ``ws.v_next`` known (:meth:`pinext.contact.
    stepped_states.ComponentStates.advance`): Δw, Δs, V⁺ = (v⁺, w⁺) into ws.own_step,
    ws.own_ds and ws.own_vel, the forces applied over the step into ws.own_applied, and the
    energy terms (numerical dissipation, explicit error, input work, dissipation) into
    ws.own_terms."""
    nv, n_p, n_s = v.shape[0], sc.own_inertia.shape[0], sc.own_metric.shape[0]
    if sc.own_jac.shape[0] == 0:
        return
    n_q, d, step, tmp = nv + n_p, ws.own_d, ws.own_step, ws.own_tmp
    for c in range(nv):
        step[c] = ws.v_next[c] - v[c]
    for r in range(n_p):  # Δw = (J − A_ww)⁻¹ (b_w + A_wv Δv)
        tmp[r] = ws.own_b[nv + r]
        step[nv + r] = 0.0
    _add_product(sc.own_awv, step, 0, tmp, 0, 1.0)
    _add_product(sc.own_solve_w, tmp, 0, step, nv, 1.0)
    for r in range(n_s):  # Δs = R (h g + h² G_Q V + rate_v ΔV)
        tmp[r] = ws.own_rates[r]
        ws.own_ds[r] = 0.0
    _add_product(sc.own_rate_v, step, 0, tmp, 0, 1.0)
    _add_product(sc.own_rate, tmp, 0, ws.own_ds, 0, 1.0)
    for c in range(n_q):
        ws.own_vel[c] = d[n_q + c] + step[c]
    numerical, stored, remainder, held, balance, lost = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    for r in range(n_p):
        numerical += 0.5 * sc.own_inertia[r] * step[nv + r] * step[nv + r]
    for r in range(n_s):
        ds, s = ws.own_ds[r], z[2 * n_p + r]
        numerical += 0.5 * sc.own_metric[r] * ds * ds
        stored += (s + ds) * sc.own_metric[r] * ds  # s⁺ᵀ P Δs
        balance += s * sc.own_metric[r] * ws.own_f[n_q + r]  # sᵀ P g
    for r in range(n_q):
        applied, potential, spring = ws.own_f[r], sc.own_f0[r], 0.0
        for c in range(n_q):
            applied += sc.own_c[r, c] * step[c]
            potential += sc.own_k[r, c] * d[c]  # F_U(Q)
            spring += sc.own_k[r, c] * ws.own_vel[c]
        for c in range(n_s):
            applied += sc.own_e[r, c] * ws.own_ds[c]
        applied += h * spring  # the springs at the step's end
        ws.own_applied[r] = applied
        remainder += 0.5 * h * h * ws.own_vel[r] * spring  # ½ h² V⁺ᵀ K V⁺
        held += h * (applied - potential - h * spring) * ws.own_vel[r]
        balance += (ws.own_f[r] - potential) * d[n_q + r]  # F_ncᵀ V
    n = d.shape[0]
    lost = ws.own_diss_c[0]
    for r in range(n if ws.own_diss_exact[0] == 0.0 else 0):
        e = ws.own_diss_l[r]
        for c in range(n):
            e += sc.own_diss[r, c] * d[c]
        lost += e * d[r]
    ws.own_terms[0] = numerical
    ws.own_terms[1] = remainder + held + stored - h * balance
    ws.own_terms[2] = h * (balance + lost)
    ws.own_terms[3] = h * lost
