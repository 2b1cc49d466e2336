"""Flexible links: cost against ν, modal analysis at ν = 100, and MuJoCo at equal accuracy.

Run: ``python benchmarks/bench_flexible.py``. Every figure is measured in this run on this
machine; the ratios are what to compare.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import pinocchio as pin

from pinext.flexible import FlexibleLink, natural_frequencies
from pinext.robot import load_urdf
from pinext.robots import robot_path
from pinext.simulation.simulate import simulate

ARM = robot_path("flexible_arm")
I_STEEL = 0.01**4 / 12


def arm(nu: int, damping_ratio: float = 0.0):
    bar = FlexibleLink("bar", nu, 1e11, I_STEEL, damping_ratio=damping_ratio)
    return load_urdf(ARM, flexible=[bar])


def control(nu: int) -> np.ndarray:
    return np.r_[0.5, np.zeros(nu)]  # hub torque [N.m]: a slewing start that excites the bar


def fit_exponent(x, y) -> float:
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def cost_against_nu(damping_ratio: float, method: str) -> None:
    nus = [5, 10, 20, 40, 80]
    per_second, per_call = [], []
    for nu in nus:
        robot = arm(nu, damping_ratio)
        model, data = robot.model, robot.data
        q, v, tau = pin.neutral(model), np.zeros(model.nv), np.zeros(model.nv)
        n = 2000
        start = time.perf_counter()
        for _ in range(n):
            pin.aba(model, data, q, v, tau)
        per_call.append((time.perf_counter() - start) / n)
        t_final = 0.2
        start = time.perf_counter()
        run = simulate(robot, t_final, control=control(nu), method=method, rtol=1e-6, atol=1e-9)
        per_second.append((time.perf_counter() - start) / t_final)
        f_max = natural_frequencies(robot)[-1]
        print(
            f"  nu={nu:3d}  wall/sim-s {per_second[-1]:8.3f} s   rhs evals "
            f"{run.meta['stats']['nfev']:8d}   ABA {per_call[-1] * 1e6:6.2f} us"
            f"   highest mode {f_max:9.0f} Hz"
        )
    print(
        "  fitted exponent, wall time per simulated second ~ nu^"
        f"{fit_exponent(nus, per_second):.2f}"
    )
    print(
        f"  fitted exponent, one ABA call (the dynamics)     ~ nu^{fit_exponent(nus, per_call):.2f}"
    )


def modal_time() -> None:
    robot = arm(100)
    start = time.perf_counter()
    repeats = 5
    for _ in range(repeats):
        natural_frequencies(robot)
    elapsed = (time.perf_counter() - start) / repeats
    print(f"  natural_frequencies at nu=100 (101 DOF): {elapsed * 1e3:.1f} ms")


def mujoco_chain(robot) -> str:
    """The same serial chain in MJCF: hinge joints about z with the elastic stiffness."""
    model = robot.model
    body = ""
    for j in range(model.njoints - 1, 0, -1):
        p = model.jointPlacements[j].translation
        inertia = model.inertias[j]
        c, m, rot = inertia.lever, inertia.mass, inertia.inertia
        full = f"{rot[0, 0]} {rot[1, 1]} {rot[2, 2]} {rot[0, 1]} {rot[0, 2]} {rot[1, 2]}"
        stiffness = robot.joint_stiffness[model.joints[j].idx_v]
        body = (
            f'<body name="b{j}" pos="{p[0]} {p[1]} {p[2]}">'
            f'<joint name="j{j}" type="hinge" axis="0 0 1" stiffness="{stiffness}" springref="0"/>'
            f'<inertial pos="{c[0]} {c[1]} {c[2]}" mass="{m}" fullinertia="{full}"/>{body}</body>'
        )
    return (
        '<mujoco><option gravity="0 0 0" integrator="RK4" timestep="{dt}"/>'
        f"<worldbody>{body}</worldbody>"
        '<actuator><motor joint="j1" gear="1"/></actuator></mujoco>'
    )


def mujoco_side_by_side(nu: int = 10, t_final: float = 2.0) -> None:
    import mujoco

    robot = arm(nu)
    u = control(nu)
    reference = simulate(robot, t_final, control=u, rtol=1e-13, atol=1e-14)
    x_ref = np.concatenate([reference.q[-1], reference.v[-1]])

    def error(x):
        return float(np.linalg.norm(x - x_ref) / np.linalg.norm(x_ref))

    repeats = 5  # walls are medians of this many runs

    rows_px = []
    for rtol in (1e-4, 1e-6, 1e-8):
        walls = []
        for _ in range(repeats):
            start = time.perf_counter()
            run = simulate(robot, t_final, control=u, rtol=rtol, atol=rtol * 1e-3)
            walls.append(time.perf_counter() - start)
        x = np.concatenate([run.q[-1], run.v[-1]])
        rows_px.append((rtol, error(x), float(np.median(walls))))
    xml = mujoco_chain(robot)
    rows_mj = []
    for dt in (2e-3, 1e-3, 5e-4, 2.5e-4, 1.25e-4, 6.25e-5, 3.125e-5):
        mj_model = mujoco.MjModel.from_xml_string(xml.replace("{dt}", repr(dt)))
        mj_data = mujoco.MjData(mj_model)
        mj_data.ctrl[0] = u[0]
        steps = int(round(t_final / dt))
        walls = []
        for _ in range(repeats):
            mujoco.mj_resetData(mj_model, mj_data)
            mj_data.ctrl[0] = u[0]
            start = time.perf_counter()
            for _ in range(steps):
                mujoco.mj_step(mj_model, mj_data)
            walls.append(time.perf_counter() - start)
        x = np.concatenate([mj_data.qpos, mj_data.qvel])
        err = error(x) if np.all(np.isfinite(x)) else np.inf
        rows_mj.append((dt, err, float(np.median(walls))))
    print(f"  reference: pinext DOP853 rtol=1e-13; nu={nu}, {t_final} s, hub torque {u[0]} N.m")
    for rtol, err, wall in rows_px:
        print(
            f"  pinext  rtol={rtol:7.0e}  final-state error {err:9.2e}  wall {wall * 1e3:8.1f} ms"
        )
    for dt, err, wall in rows_mj:
        print(
            f"  MuJoCo  RK4 dt={dt:8.2e}  final-state error {err:9.2e}  wall {wall * 1e3:8.1f} ms"
        )
    # equal error: MuJoCo's wall time interpolated along its own error-time curve (log-log)
    curve = sorted((e, w) for _, e, w in rows_mj if np.isfinite(e) and e > 0)
    log_e = np.log([e for e, _ in curve])
    log_w = np.log([w for _, w in curve])
    for _, err, wall in rows_px:
        if not curve or not log_e[0] <= np.log(err) <= log_e[-1]:
            print(f"  at error {err:.1e}: outside MuJoCo's measured range (no interpolation)")
            continue
        mj_wall = float(np.exp(np.interp(np.log(err), log_e, log_w)))
        print(
            f"  at error {err:.1e}: pinext {wall * 1e3:.1f} ms, MuJoCo {mj_wall * 1e3:.1f} ms "
            f"(interpolated)  -> MuJoCo/pinext = {mj_wall / wall:.2f}"
        )


def main() -> None:
    warnings.simplefilter("ignore")
    if "--mujoco" in sys.argv:  # only the side-by-side comparison
        mujoco_side_by_side()
        return
    print("1. cost against the number of sublinks (pinext.simulate, rtol 1e-6, 0.2 s)")
    print(" a. damping ratio 2 % (stiffness-proportional), Radau with the analytic Jacobian")
    cost_against_nu(0.02, "Radau")
    print(" b. undamped, DOP853: every excited mode up to the highest (~nu^2) is resolved")
    cost_against_nu(0.0, "DOP853")
    print("2. modal analysis")
    modal_time()
    print("3. MuJoCo side by side (same undamped chain, hinge joints with stiffness, RK4)")
    try:
        mujoco_side_by_side()
    except ImportError:
        print("  mujoco is not installed: pip install 'pinext[bench]'")


if __name__ == "__main__":
    main()
