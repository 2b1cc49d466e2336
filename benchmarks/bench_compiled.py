"""Cost of one forward-dynamics evaluation: the compiled ABA kernel against ``pin.aba``.

Run: ``python benchmarks/bench_compiled.py``. Every figure is measured in this run on this
machine. The compiled kernel is called from inside an ``@njit`` loop (as a compiled integrator
calls it: no Python call per evaluation); ``pin.aba`` is called from a Python loop (as pinext's
Python right-hand side calls it). Times are the least CPU time of this process
(``time.process_time``) over 15 batches, which the other processes of a shared machine disturb
less than wall time. The last column is ``pin.aba`` on a one-joint model: Python's call
overhead, which ``pin.aba`` pays on every evaluation.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pinocchio as pin
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_flexible import arm  # noqa: E402
from bench_simulate import stiff_chain  # noqa: E402

from pinext.compiled import aba, minv_solve, momentum_rhs, momentum_rhs_crba, pack  # noqa: E402
from pinext.dynamics import momentum  # noqa: E402
from pinext.robots import load_robot  # noqa: E402

CALLS = 20000


@njit  # not cached: Numba would not see changes in pinext.compiled
def _loop(pm, q, v, tau, a, n):
    """n calls of the compiled ABA, varying v slightly so nothing is hoisted."""
    total = 0.0
    for _ in range(n):
        v[0] += 1e-12
        aba(pm, q, v, tau, a)
        total += a[0]
    return total


@njit  # not cached: Numba would not see changes in pinext.compiled
def _minv_loop(pm, q, b, tau, out, n):
    """One ABA at q, then n solves M⁻¹ b reusing its factors."""
    aba(pm, q, b, tau, out)
    total = 0.0
    for _ in range(n):
        b[0] += 1e-12
        minv_solve(pm, b, out)
        total += out[0]
    return total


@njit  # not cached: Numba would not see changes in pinext.compiled
def _momentum_loop(pm, q, p, tau, v_out, p_dot, n):
    """n calls of the compiled momentum right-hand side."""
    total = 0.0
    for _ in range(n):
        p[0] += 1e-12
        momentum_rhs(pm, q, p, tau, v_out, p_dot)
        total += p_dot[0]
    return total


@njit  # not cached: Numba would not see changes in pinext.compiled
def _momentum_crba_loop(pm, q, p, tau, v_out, p_dot, n):
    """n calls of the compiled momentum right-hand side, v = M⁻¹p by CRBA + LTDL."""
    total = 0.0
    for _ in range(n):
        p[0] += 1e-12
        momentum_rhs_crba(pm, q, p, tau, v_out, p_dot)
        total += p_dot[0]
    return total


def compiled_per_call(pm, q, v, tau, loop=_loop) -> float:
    """Least CPU time of one call [s] over 15 batches of CALLS calls from an njit loop."""
    a, b = np.zeros(v.size), np.zeros(v.size)
    args = (a,) if loop in (_loop, _minv_loop) else (a, b)
    loop(pm, q, v.copy(), tau, *args, 10)
    samples = []
    for _ in range(15):
        start = time.process_time()
        loop(pm, q, v.copy(), tau, *args, CALLS)
        samples.append((time.process_time() - start) / CALLS)
    return min(samples)


def python_per_call(func, calls: int = 5000) -> float:
    """Least CPU time of one call [s] over 15 batches of a Python loop."""
    func()
    samples = []
    for _ in range(15):
        start = time.process_time()
        for _ in range(calls):
            func()
        samples.append((time.process_time() - start) / calls)
    return min(samples)


def models() -> list[tuple[str, pin.Model]]:
    rows = [("11-DOF chain", stiff_chain().model)]
    for name in ("ur5", "panda", "talos_arm", "solo12"):
        rows.append((name, load_robot(name).model))
    rows.append(("flexible arm nu=10", arm(10).model))
    return rows


def call_overhead() -> float:
    """CPU time of pin.aba on a one-joint model [s]: mostly Python's call overhead."""
    model = pin.Model()
    model.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "j")
    data, x = model.createData(), np.zeros(1)
    return python_per_call(lambda: pin.aba(model, data, x, x, x))


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"pin.aba on a 1-joint model (call overhead): {call_overhead() * 1e6:.3f} us")
    print(
        f"{'model':22s} {'nv':>3s} {'compiled [us]':>14s} {'pin.aba [us]':>13s} {'ratio':>6s}"
        f" {'minv_solve [us]':>16s}"
    )
    for name, model in models():
        data = model.createData()
        lo = np.maximum(np.nan_to_num(model.lowerPositionLimit, neginf=-1.0), -3.0)
        hi = np.minimum(np.nan_to_num(model.upperPositionLimit, posinf=1.0), 3.0)
        q = pin.randomConfiguration(model, lo, hi)
        v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
        pm = pack(model)
        t_c = compiled_per_call(pm, q, v, tau)
        t_p = python_per_call(lambda: pin.aba(model, data, q, v, tau))  # noqa: B023
        t_s = compiled_per_call(pm, q, v, tau, loop=_minv_loop)
        print(
            f"{name:22s} {model.nv:3d} {t_c * 1e6:14.3f} {t_p * 1e6:13.3f} {t_c / t_p:6.2f}"
            f" {t_s * 1e6:16.3f}"
        )


def serial_chain(n: int, joint: str, seed: int = 0) -> pin.Model:
    """n links of 0.3 m with random (consistent) inertias, revolute ("R", alternating z and y
    axes) or spherical ("S") joints, as Celentano (2008) Table 1 counts spatial robots."""
    rng = np.random.default_rng(seed)
    model = pin.Model()
    parent = 0
    for i in range(n):
        if joint == "S":
            jm = pin.JointModelSpherical()
        else:
            jm = pin.JointModelRZ() if i % 2 == 0 else pin.JointModelRY()
        placement = pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.3 if i else 0.0]))
        parent = model.addJoint(parent, jm, placement, f"j{i}")
        moments = rng.uniform(0.01, 0.05, 3)
        body = pin.Inertia(rng.uniform(1.0, 3.0), np.array([0.0, 0.0, 0.15]), np.diag(moments))
        model.appendBodyToJoint(parent, body, pin.SE3.Identity())
    return model


def momentum_table() -> None:
    """The momentum right-hand side F(q, p, τ) = (M⁻¹p, ṗ) against one forward dynamics."""
    print()
    print("Celentano (2008) momentum right-hand side vs one ABA, serial chains (CPU us per call)")
    print("  F/ABA: momentum_rhs (v = M⁻¹p by ABA); F/CRBA: momentum_rhs_crba (by CRBA + LTDL)")
    print(
        f"{'chain':8s} {'nv':>3s} {'F/ABA':>8s} {'F/CRBA':>8s} {'aba':>8s} {'ratios':>11s}"
        f" {'pin.aba (Py)':>13s} {'Python F':>9s}"
    )
    rng = np.random.default_rng(1)
    for joint in ("R", "S"):
        for n in range(1, 8):
            model = serial_chain(n, joint)
            data = model.createData()
            q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
            v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
            pm = pack(model)
            p = momentum.momentum_from_velocity(model, data, q, v)
            t_m = compiled_per_call(pm, q, p, tau, loop=_momentum_loop)
            t_c = compiled_per_call(pm, q, p, tau, loop=_momentum_crba_loop)
            t_a = compiled_per_call(pm, q, v, tau)
            t_p = python_per_call(lambda: pin.aba(model, data, q, v, tau))  # noqa: B023
            t_f = python_per_call(
                lambda: momentum.momentum_rhs(model, data, q, p, tau),  # noqa: B023
                calls=500,
            )
            print(
                f"{joint}x{n:<6d} {model.nv:3d} {t_m * 1e6:8.3f} {t_c * 1e6:8.3f} {t_a * 1e6:8.3f}"
                f" {t_m / t_a:5.2f} {t_c / t_a:5.2f} {t_p * 1e6:13.3f} {t_f * 1e6:9.1f}"
            )


if __name__ == "__main__":
    main()
    momentum_table()
