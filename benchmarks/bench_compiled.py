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

from pinext.compiled import aba, pack  # noqa: E402
from pinext.robots import load_robot  # noqa: E402

CALLS = 20000


@njit(cache=True)
def _loop(pm, q, v, tau, a, n):
    """n calls of the compiled ABA, varying v slightly so nothing is hoisted."""
    total = 0.0
    for _ in range(n):
        v[0] += 1e-12
        aba(pm, q, v, tau, a)
        total += a[0]
    return total


def compiled_per_call(pm, q, v, tau) -> float:
    """Least CPU time of one call [s] over 15 batches of CALLS calls from an njit loop."""
    a = np.zeros(v.size)
    _loop(pm, q, v.copy(), tau, a, 10)
    samples = []
    for _ in range(15):
        start = time.process_time()
        _loop(pm, q, v.copy(), tau, a, CALLS)
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
    print(f"{'model':22s} {'nv':>3s} {'compiled [us]':>14s} {'pin.aba [us]':>13s} {'ratio':>6s}")
    for name, model in models():
        data = model.createData()
        lo = np.maximum(np.nan_to_num(model.lowerPositionLimit, neginf=-1.0), -3.0)
        hi = np.minimum(np.nan_to_num(model.upperPositionLimit, posinf=1.0), 3.0)
        q = pin.randomConfiguration(model, lo, hi)
        v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
        pm = pack(model)
        t_c = compiled_per_call(pm, q, v, tau)
        t_p = python_per_call(lambda: pin.aba(model, data, q, v, tau))  # noqa: B023
        print(f"{name:22s} {model.nv:3d} {t_c * 1e6:14.3f} {t_p * 1e6:13.3f} {t_c / t_p:6.2f}")


if __name__ == "__main__":
    main()
