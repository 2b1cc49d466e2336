"""Flexible links: cost against ν, modal analysis at ν = 100, MuJoCo and Jiminy at equal accuracy.

Run: ``python benchmarks/bench_flexible.py``. Every figure is measured in this run on this
machine; the ratios are what to compare.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin

from pinext.flexible import FlexibleLink, natural_frequencies
from pinext.robot import load_urdf
from pinext.robots import robot_path
from pinext.simulation.simulate import simulate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table  # noqa: E402
from _jiminy_peer import (  # noqa: E402
    chain_urdf,
    dopri_settings,
    jiminy_curves,
    jiminy_peer_curves,
    link_name,
    rk4_settings,
    rotation_stiffness,
)
from _peers import (  # noqa: E402
    REPEATS,
    equal_error_header,
    equal_error_table,
    machine_load,
    median_run,
    mujoco_rollout,
)

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
    """Wall time per simulated second against ν, on the compiled and on the Python path."""
    nus = [5, 10, 20, 40, 80]
    walls: dict[str, list[float]] = {"compiled": [], "python": []}
    per_call = []
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
        line = f"  nu={nu:3d}"
        for path, flag in (("compiled", "0"), ("python", "1")):
            os.environ["PINEXT_NO_COMPILED"] = flag
            run, wall = median_run(
                lambda robot=robot, nu=nu, t_final=t_final: simulate(
                    robot, t_final, control=control(nu), method=method, rtol=1e-6, atol=1e-9
                ),
                repeats=3,
            )
            walls[path].append(wall / t_final)
            line += f"  {path} {walls[path][-1]:8.3f} s/sim-s ({run.meta['stats']['nfev']} evals)"
        os.environ.pop("PINEXT_NO_COMPILED")
        f_max = natural_frequencies(robot)[-1]
        print(f"{line}   ABA {per_call[-1] * 1e6:6.2f} us   highest mode {f_max:9.0f} Hz")
    for path, per_second in walls.items():
        print(
            f"  fitted exponent, wall time per simulated second ({path}) ~ nu^"
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


def jiminy_spec(robot, u: np.ndarray, t_final: float, settings: list[dict]) -> dict:
    """The same chain for Jiminy (see ``_jiminy.py``): the URDF of the Pinocchio model; each
    elastic joint's spring -k q as Jiminy's ``register_viscoelastic_coupling_force`` (C++, no
    Python per evaluation) between a frame added on the parent body at the joint's placement
    and the child body's frame, stiffness k about the joint axis only (log3 of a rotation about
    that axis is the joint angle), no damping; the hub torque as a ``SimpleMotor`` (reduction 1,
    no armature, no effort limit) with a constant command. No gravity, no limits, no sensors;
    only the final state is logged (one breakpoint, at the end)."""
    model = robot.model
    frames, couplings = [], []
    for j in range(1, model.njoints):
        k = float(robot.joint_stiffness[model.joints[j].idx_v])
        if k == 0.0:
            continue
        placement = model.jointPlacements[j]
        quat = pin.Quaternion(placement.rotation)
        frames.append(
            {
                "name": f"anchor{j}",
                "body": link_name(model, model.parents[j]),
                "xyz": placement.translation.tolist(),
                "quat": [quat.x, quat.y, quat.z, quat.w],
            }
        )
        couplings.append(
            {
                "frame1": f"anchor{j}",
                "frame2": link_name(model, j),
                "stiffness": rotation_stiffness(model, j, k),
                "damping": [0.0] * 6,
            }
        )
    names = [model.names[j] for j in range(1, model.njoints)]
    hub = {"name": "hub", "joint": names[0], "reduction": 1.0, "armature": 0.0, "viscous": 0.0}
    return {
        "urdf": chain_urdf(model),
        "joints": names,
        "observe": names,
        "q0": [0.0] * model.nq,
        "v0": [0.0] * model.nv,
        "duration": t_final,
        "sample": t_final,
        "gravity": [0.0, 0.0, 0.0],
        "frames": frames,
        "couplings": couplings,
        "motors": [dict(hub, command=float(u[0]))],
        "settings": settings,
        "repeats": REPEATS,
    }


def mujoco_side_by_side(nu: int = 10, t_final: float = 2.0) -> None:
    """Error-time curves of pinext (compiled and Python paths) and MuJoCo RK4 (Python step
    loop and ``rollout``), compared at equal final-state error (log-log interpolation)."""
    import mujoco

    robot = arm(nu)
    u = control(nu)
    reference = simulate(robot, t_final, control=u, rtol=1e-13, atol=1e-14)
    x_ref = np.concatenate([reference.q[-1], reference.v[-1]])

    def error(x):
        return float(np.linalg.norm(x - x_ref) / np.linalg.norm(x_ref))

    curves: dict[str, list[tuple[float, float]]] = {
        "pinext": [],
        "pinext (Python path)": [],
        "MuJoCo RK4 mj_step": [],
        "MuJoCo RK4 rollout": [],
    }
    rows = []
    for path, flag in (("pinext", "0"), ("pinext (Python path)", "1")):
        os.environ["PINEXT_NO_COMPILED"] = flag
        for rtol in (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11):
            run, wall = median_run(
                lambda rtol=rtol: simulate(robot, t_final, control=u, rtol=rtol, atol=rtol * 1e-3)
            )
            err = error(np.concatenate([run.q[-1], run.v[-1]]))
            curves[path].append((err, wall))
            rows.append([f"{path} rtol {rtol:.0e}", f"{err:.2e}", f"{wall * 1e3:.1f}"])
    os.environ.pop("PINEXT_NO_COMPILED")
    xml = mujoco_chain(robot)
    for k in range(10):
        dt = 4e-3 / 2**k
        mj_model = mujoco.MjModel.from_xml_string(xml.replace("{dt}", repr(dt)))
        mj_data = mujoco.MjData(mj_model)
        steps = int(round(t_final / dt))

        def loop(mj_model=mj_model, mj_data=mj_data, steps=steps):
            mujoco.mj_resetData(mj_model, mj_data)
            mj_data.ctrl[0] = u[0]
            for _ in range(steps):
                mujoco.mj_step(mj_model, mj_data)
            return np.concatenate([mj_data.qpos, mj_data.qvel])

        def rolled(mj_model=mj_model, mj_data=mj_data, steps=steps):
            mujoco.mj_resetData(mj_model, mj_data)
            last = mujoco_rollout(mj_model, mj_data, u[:1], steps)[-1]
            return last[1 : 1 + mj_model.nq + mj_model.nv]

        for name, func in (("MuJoCo RK4 mj_step", loop), ("MuJoCo RK4 rollout", rolled)):
            x, wall = median_run(func)
            err = error(x) if np.all(np.isfinite(x)) else np.inf
            curves[name].append((err, wall))
            rows.append([f"{name} dt {dt:.2e}", f"{err:.2e}", f"{wall * 1e3:.1f}"])
    # RK4 over MuJoCo's steps and one more (to span 1e-8); DOPRI5 with pinext's atol = rtol 1e-3
    # down to 1e-12, where Jiminy's error stalls at ~1e-8, then rtol 1e-14 with atol 1e-16
    settings = rk4_settings([4e-3 / 2**k for k in range(11)]) + dopri_settings(
        [10.0**-k for k in range(3, 13)], 1e-3
    )
    settings += [dict(dopri_settings([1e-14], 1e-2)[0], label="DOPRI5 rtol 1e-14 atol 1e-16")]
    out = jiminy_curves(jiminy_spec(robot, u, t_final, settings))
    per_eval = []
    if out is not None:
        per_eval = jiminy_peer_curves(
            out,
            lambda result: error(np.array(result["final"])),
            rows,
            curves,
            lambda name, result, err: [
                f"{name} {result['label'].split(' ', 1)[1]}",
                f"{err:.2e}",
                f"{result['wall'] * 1e3:.1f}",
            ],
        )
    print(
        f"  reference: pinext DOP853 rtol=1e-13; nu={nu}, {t_final} s undamped, hub torque "
        f"{u[0]} N.m; walls are medians of {REPEATS} runs; {machine_load()}"
    )
    print_table(rows, ["run", "final-state error", "wall [ms]"])
    if per_eval:
        assert out is not None
        print(
            f"  Jiminy {out['jiminy']}: wall per dynamics evaluation "
            f"{np.median(per_eval) * 1e6:.2f} us (median over its runs; evaluations counted in "
            "an untimed run)"
        )
    print("  at equal error (each peer's wall interpolated along its own error-time curve):")
    print_table(equal_error_table(curves, "pinext"), equal_error_header(curves, "pinext"))


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
