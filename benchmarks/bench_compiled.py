"""Cost of one forward-dynamics evaluation: the compiled ABA kernel against ``pin.aba``.

Run: ``python benchmarks/bench_compiled.py``. Every figure is measured in this run on this
machine. The compiled kernel is called from inside an ``@njit`` loop (as a compiled integrator
calls it: no Python call per evaluation); ``pin.aba`` is called from a Python loop (as pinext's
Python right-hand side calls it), and its C++ time alone is estimated as Pinocchio's own
``pin.aba`` through a timed C++ loop is not exposed: we report the Python-loop time.
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

from _common import per_call  # noqa: E402
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
    a = np.zeros(v.size)
    _loop(pm, q, v.copy(), tau, a, 10)
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        _loop(pm, q, v.copy(), tau, a, CALLS)
        samples.append((time.perf_counter() - start) / CALLS)
    return sorted(samples)[2]


def models() -> list[tuple[str, pin.Model]]:
    rows = [("11-DOF chain", stiff_chain().model)]
    for name in ("ur5", "panda", "talos_arm", "solo12"):
        rows.append((name, load_robot(name).model))
    rows.append(("flexible arm nu=10", arm(10).model))
    return rows


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"{'model':22s} {'nv':>3s} {'compiled [us]':>14s} {'pin.aba [us]':>13s} {'ratio':>6s}")
    for name, model in models():
        data = model.createData()
        lo = np.maximum(np.nan_to_num(model.lowerPositionLimit, neginf=-1.0), -3.0)
        hi = np.minimum(np.nan_to_num(model.upperPositionLimit, posinf=1.0), 3.0)
        q = pin.randomConfiguration(model, lo, hi)
        v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
        pm = pack(model)
        t_c = compiled_per_call(pm, q, v, tau)
        t_p = per_call(lambda: pin.aba(model, data, q, v, tau))  # noqa: B023
        print(f"{name:22s} {model.nv:3d} {t_c * 1e6:14.3f} {t_p * 1e6:13.3f} {t_c / t_p:6.2f}")


if __name__ == "__main__":
    main()
