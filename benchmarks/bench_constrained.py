"""Two arms holding a 2 kg box (two weld loops): pinext vs Pinocchio and MuJoCo.

* Per evaluation: pinext's right-hand side of the cell against ``pin.constraintDynamics``
  with the same two 6D constraints (and one ``pin.aba`` as the unit): the compiled kernel
  called from a compiled loop, a whole compiled run's wall time over its evaluations
  (integrator included), and the Python path's ``System.derivative``.
* Wall time at equal accuracy of the box's trajectory: a reference run (pinext, rtol 1e-12),
  then for each peer an error-time curve, medians of 5 repeats per point: pinext over rtol,
  MuJoCo (RK4) over time steps on an MJCF of the same kinematics and inertias with ``weld``
  equality constraints. The peers are compared at common error levels by interpolating each
  one's curve in log-log.

The cell is examples/two_arms_carry.py's, without joint limits; the inputs are the torques
that hold it still with a 20 N squeeze (McClamroch (1986) §5) plus a constant step on four
joints, so the box swings and sinks for 2 s.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import per_call, print_table  # noqa: E402
from _peers import equal_error_header, equal_error_table  # noqa: E402

import pinext as px  # noqa: E402

DURATION = 2.0
SAMPLE = 0.01
STEP = {0: 3.0, 2: -2.0, 7: 2.0, 10: 1.0}  # dof -> torque added to the holding torque [N.m]
REPEATS = 5


def cell() -> tuple[px.System, np.ndarray, np.ndarray, list[px.Loop]]:
    """The two-arm cell (no joint limits: MuJoCo's has none), its start state at rest and
    the constant inputs."""
    spec = importlib.util.spec_from_file_location("carry", ROOT / "examples/two_arms_carry.py")
    carry = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(carry)
    built, x0 = carry.build()
    loops = [c for c in built.components if isinstance(c, px.Loop)]
    system = px.System(built.robot, loops=loops, joint_limits=False)
    q0, _ = system.split(x0)
    nv = system.model.nv
    planner = carry.Planner(system, x0, 1.0)
    hold = px.constrained_inverse_dynamics(
        system, q0, np.zeros(nv), np.zeros(nv), internal=planner.internal
    )
    u = hold.tau.copy()
    u[12:] = 0.0
    for dof, torque in STEP.items():
        u[dof] += torque
    return system, system.initial_state(q0, np.zeros(nv)), u, loops


def box_positions(system: px.System, traj: px.Trajectory) -> np.ndarray:
    """The box's position in the world at every sample, shape (n, 3) [m]."""
    model = system.model
    placement = model.jointPlacements[model.getJointId("box_joint")]
    return placement.translation + traj.q[:, -7:-4] @ placement.rotation.T


def pinext_curve_point(system, x0, u, rtol: float, repeats: int):
    """Box positions and (median wall time, rhs evaluations) over ``repeats`` runs."""
    runs = []
    for _ in range(repeats):
        traj = px.simulate(
            system, DURATION, x0=x0, control=u, rtol=rtol, atol=rtol * 1e-2, output_dt=SAMPLE
        )
        runs.append((traj.meta["stats"]["wall_time"], traj))
    runs.sort(key=lambda r: r[0])
    wall, traj = runs[len(runs) // 2]
    return box_positions(system, traj), wall, traj.meta["stats"]["nfev"]


def compiled_rhs_time(system: px.System, x: np.ndarray, u: np.ndarray) -> float:
    """One evaluation of the compiled right-hand side of the cell [s], called 20 000 times from
    a compiled loop (no Python per call), median of 5."""
    from numba import njit

    from pinext.compiled.phase import rhs
    from pinext.compiled.struct import view
    from pinext.simulation.chart import Chart

    law = px.simulation.arguments.checked_control(u, system, x)
    chart = Chart(system, x)
    kernel = view(px.compiled.phase_kernel(system, system.initial_phase(0.0, x, law), chart, law))
    y = chart.to_internal(x)
    out = np.empty_like(y)

    @njit
    def loop(kernel, y, out, n):
        for _ in range(n):
            rhs(kernel, 0.0, y, out)

    loop(kernel, y, out, 1)
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        loop(kernel, y, out, 20000)
        samples.append((time.perf_counter() - start) / 20000)
    return sorted(samples)[2]


# -- Pinocchio's constraintDynamics with the same constraints -------------------------------
def pin_constraints(system: px.System, loops: list[px.Loop]):
    """Two CONTACT_6D RigidConstraintModels: each tool's frame to the box's grip frame."""
    model = system.model
    models = pin.StdVec_RigidConstraintModel()
    datas = pin.StdVec_RigidConstraintData()
    for loop in loops:
        tool = model.frames[model.getFrameId(loop.frame_a)]
        box = model.frames[model.getFrameId(loop.frame_b)]
        cm = pin.RigidConstraintModel(
            pin.ContactType.CONTACT_6D,
            model,
            tool.parentJoint,
            tool.placement,
            box.parentJoint,
            box.placement * loop.placement,
            pin.ReferenceFrame.LOCAL,
        )
        models.append(cm)
        datas.append(cm.createData())
    return models, datas


# -- MuJoCo ------------------------------------------------------------------------------------
def _f(values) -> str:
    return " ".join(f"{x:.17g}" for x in values)


def _quat(rotation: np.ndarray) -> str:
    quat = pin.Quaternion(rotation)
    return _f((quat.w, quat.x, quat.y, quat.z))


def mjcf(system: px.System, loops: list[px.Loop], dt: float) -> str:
    """An MJCF of the same cell: one body per Pinocchio joint at its joint frame (inertias
    from the model), the box on a free joint, the grips as ``weld`` equality constraints at
    the loops' placements, made as hard as MuJoCo allows (solref at twice the step, solimp
    0.9999)."""
    model = system.model
    children: dict[int, list[int]] = {}
    for i in range(1, model.njoints):
        children.setdefault(model.parents[i], []).append(i)
    axes = {"RX": "1 0 0", "RY": "0 1 0", "RZ": "0 0 1"}

    def body(i: int) -> str:
        placement, inertia = model.jointPlacements[i], model.inertias[i]
        kind = model.joints[i].shortname()
        if kind == "JointModelFreeFlyer":
            joint = f'<freejoint name="{model.names[i]}"/>'
        elif kind[-2:] in axes:
            joint = f'<joint name="{model.names[i]}" type="hinge" axis="{axes[kind[-2:]]}"/>'
        else:
            raise NotImplementedError(kind)
        tensor = inertia.inertia
        full = (tensor[0, 0], tensor[1, 1], tensor[2, 2], tensor[0, 1], tensor[0, 2], tensor[1, 2])
        mass = max(inertia.mass, 1e-9)
        inner = "".join(body(k) for k in children.get(i, []))
        return (
            f'<body name="{model.names[i]}" pos="{_f(placement.translation)}" '
            f'quat="{_quat(placement.rotation)}"><inertial pos="{_f(inertia.lever)}" '
            f'mass="{mass:.17g}" fullinertia="{_f(full)}"/>{joint}{inner}</body>'
        )

    welds = []
    for loop in loops:
        tool = model.frames[model.getFrameId(loop.frame_a)]
        box = model.frames[model.getFrameId(loop.frame_b)]
        # the box's joint frame in the tool joint's frame, when the grip is closed
        relative = tool.placement * (box.placement * loop.placement).inverse()
        welds.append(
            f'<weld body1="{model.names[tool.parentJoint]}" body2="{model.names[box.parentJoint]}" '
            f'relpose="{_f(relative.translation)} {_quat(relative.rotation)}" '
            f'solref="{2 * dt:.17g} 1" solimp="0.9999 0.9999 0.001 0.5 2"/>'
        )
    motors = [f'<motor joint="{model.names[i]}"/>' for i in range(1, 13)]
    return (
        '<mujoco model="two_arms"><compiler angle="radian"/>'
        f'<option gravity="{_f(model.gravity.linear)}" timestep="{dt:.17g}" integrator="RK4">'
        '<flag contact="disable"/></option>'
        f"<worldbody>{''.join(body(k) for k in children[0])}</worldbody>"
        f"<equality>{''.join(welds)}</equality>"
        f"<actuator>{''.join(motors)}</actuator></mujoco>"
    )


def mujoco_run(system: px.System, loops, x0: np.ndarray, u: np.ndarray, dt: float):
    """Box positions every SAMPLE seconds and the wall time of the stepping loop."""
    import mujoco

    mj = mujoco.MjModel.from_xml_string(mjcf(system, loops, dt))
    data = mujoco.MjData(mj)
    q0, _ = system.split(x0)
    box = system.model.jointPlacements[system.model.getJointId("box_joint")]
    data.qpos[:12] = q0[:12]
    data.qpos[12:15] = box.translation + box.rotation @ q0[12:15]
    w = pin.Quaternion(q0[15:19]) * pin.Quaternion(box.rotation)
    data.qpos[15:19] = [w.w, w.x, w.y, w.z]
    data.ctrl[:] = u[:12]
    per_sample = int(round(SAMPLE / dt))
    steps = int(round(DURATION / dt))
    samples = [data.qpos[12:15].copy()]
    start = time.perf_counter()
    for s in range(steps):
        mujoco.mj_step(mj, data)
        if (s + 1) % per_sample == 0:
            samples.append(data.qpos[12:15].copy())
    return np.array(samples), time.perf_counter() - start, steps


def main() -> None:
    print(f"machine load (1, 5, 15 min): {os.getloadavg()}")
    system, x0, u, loops = cell()
    model = system.model
    q0, v0 = system.split(x0)
    data = model.createData()

    # per evaluation
    phase = system.initial_phase(0.0, x0, px.simulation.controls.as_control(u, len(u)))
    rng = np.random.default_rng(7)
    x = px.close_loops(system, q0, rng.normal(scale=0.3, size=model.nv))
    q, v = system.split(x)
    models, datas = pin_constraints(system, loops)
    pin.initConstraintDynamics(model, data, models, datas)
    settings = pin.ProximalSettings(1e-12, 0.0, 1)
    a_pin = pin.constraintDynamics(model, data, q, v, u, models, datas, settings)
    for loop in loops:
        loop.stabilization = None  # the bare index-1 rows, as Pinocchio's (for the check)
    a_px = system.step(0.0, x, u, phase=phase).a
    for loop in loops:
        loop.stabilization = 20.0
    t_pin = per_call(lambda: pin.constraintDynamics(model, data, q, v, u, models, datas, settings))
    t_rhs = per_call(lambda: system.derivative(0.0, x, u, phase))
    t_aba = per_call(lambda: pin.aba(model, data, q, v, u))
    t_kernel = compiled_rhs_time(system, x, u)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, wall, nfev = pinext_curve_point(system, x0, u, 1e-10, REPEATS)
    t_run = wall / nfev
    print(
        f"two arms + box ({model.nv} DOF, 12 constraint rows): |a_pinext - a_pin| = "
        f"{np.abs(a_px - a_pin).max():.1e}"
    )
    print_table(
        [
            ["pin.aba (no constraints)", f"{t_aba * 1e6:.1f}", "1.0", f"{t_aba / t_pin:.2f}"],
            [
                "pin.constraintDynamics (2 x 6D)",
                f"{t_pin * 1e6:.1f}",
                f"{t_pin / t_aba:.1f}",
                "1.00",
            ],
            [
                "pinext compiled right-hand side (called in a compiled loop)",
                f"{t_kernel * 1e6:.1f}",
                f"{t_kernel / t_aba:.1f}",
                f"{t_kernel / t_pin:.2f}",
            ],
            [
                "pinext compiled run, wall / evaluations (DOP853 rtol 1e-10)",
                f"{t_run * 1e6:.1f}",
                f"{t_run / t_aba:.1f}",
                f"{t_run / t_pin:.2f}",
            ],
            [
                "pinext Python path, System.derivative",
                f"{t_rhs * 1e6:.1f}",
                f"{t_rhs / t_aba:.1f}",
                f"{t_rhs / t_pin:.2f}",
            ],
        ],
        ["evaluation", "per call [us]", "ratio to aba", "ratio to constraintDynamics"],
    )
    print(f"pinext compiled run / constraintDynamics per evaluation = {t_run / t_pin:.2f}")

    # equal accuracy of the box's trajectory
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference, _, ref_nfev = pinext_curve_point(system, x0, u, 1e-12, 1)
        rows = []
        curves: dict[str, list[tuple[float, float]]] = {"pinext": [], "MuJoCo": []}
        for rtol in (1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10):
            box, wall, nfev = pinext_curve_point(system, x0, u, rtol, REPEATS)
            err = float(np.abs(box - reference).max())
            curves["pinext"].append((err, wall))
            rows.append(
                [
                    f"pinext DOP853 rtol {rtol:g}",
                    f"{err:.1e}",
                    f"{wall:.3f}",
                    nfev,
                    f"{wall / nfev * 1e6:.0f}",
                ]
            )
    try:
        import mujoco  # noqa: F401
    except ImportError:
        print("mujoco not installed: MuJoCo rows skipped (pip install '.[bench]')")
    else:
        for dt in (2e-3, 1e-3, 5e-4, 2.5e-4, 1e-4, 5e-5, 2e-5, 1e-5):
            runs = [mujoco_run(system, loops, x0, u, dt) for _ in range(REPEATS)]
            box, wall, steps = sorted(runs, key=lambda r: r[1])[REPEATS // 2]
            err = float(np.abs(box - reference[: len(box)]).max())
            curves["MuJoCo"].append((err, wall))
            per_eval = wall / (4 * steps) * 1e6
            rows.append(
                [f"MuJoCo RK4 dt {dt:g}", f"{err:.1e}", f"{wall:.3f}", 4 * steps, f"{per_eval:.1f}"]
            )
    drop = np.abs(reference - reference[0]).max()
    print(
        f"\nbox trajectory over {DURATION:g} s (it moves {drop:.2f} m); reference: pinext rtol "
        f"1e-12 ({ref_nfev} rhs evaluations); medians of {REPEATS} runs"
    )
    print_table(rows, ["run", "max |p_box - p_ref| [m]", "wall [s]", "rhs evals", "per eval [us]"])
    if curves["MuJoCo"]:
        print(
            "at equal error of the box's trajectory (each peer's wall interpolated along its own "
            "curve):"
        )
        levels = (1e-4, 1e-5, 1e-6, 1e-7, 1e-8)
        print_table(
            equal_error_table(curves, "pinext", levels, unit=" m"),
            equal_error_header(curves, "pinext"),
        )
    print(f"machine load (1, 5, 15 min): {os.getloadavg()}")


if __name__ == "__main__":
    main()
