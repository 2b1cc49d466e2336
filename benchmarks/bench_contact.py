"""Benchmark: contact simulation.

1. The writing task (3 s, event-driven) in its three environments, compiled and on the Python
   path, at rtol 1e-6, 1e-8 and 1e-10: wall time of ``simulate``, real-time factor, RHS
   calls, one evaluation against ``pin.aba`` and ``pin.constraintDynamics``, the pen tip's
   and the normal force's errors against rtol 1e-12, impact-time error, energy audit.
2. Solo12 dropped from 0.3 m, standing for 5 s under a PD posture law (four frictional foot
   contacts): real-time factor of pinext's time stepping (Moreau–Jean with Pinocchio's ADMM)
   and of MuJoCo on the same scene (the same model, built as MJCF from Pinocchio's model:
   same inertias and joint placements, a ball at each foot against a floor plane, elliptic
   friction cone μ = 0.9; the same PD law evaluated in Python at every step of 1 ms), with
   MuJoCo's default soft contact (solref 0.02 s) and a stiff one (solref 2 dt).
   Medians of 5 runs (``--repeats``); the machine load is printed with the numbers.

Run: ``python benchmarks/bench_contact.py [--skip-writing] [--repeats N] [--markdown
docs/bench_contact_table.md]`` (the last writes the Solo12 tables that ``docs/performance.md``
includes, with the date, the versions and the load).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import pinocchio as pin  # noqa: E402

import pinext as px  # noqa: E402
from benchmarks._common import markdown, per_call, print_table  # noqa: E402
from benchmarks._peers import machine_load  # noqa: E402
from pinext.control import JointPD  # noqa: E402
from tests._contact_models import impact_time_reference  # noqa: E402

#: Radius of the foot balls in the MuJoCo scene [m]; its floor is lowered by it, so that the
#: ball centres (pinext's contact points, the foot frames' origins) touch at z = 0.
FOOT_RADIUS = 0.001
T_FINAL, DT, DROP_HEIGHT, MU = 5.0, 1e-3, 0.3, 0.9


def _writing_run(scene, rtol: float, output_dt: float | None = None):
    """One run of the writing task's scene (:func:`pinext.tasks.writing_scene`), 3 s."""
    system, q0, law = scene
    return px.simulate(
        system, 3.0, q0=q0, control=law, control_period=0.0, rtol=rtol, atol=rtol * 1e-2,
        output_dt=output_dt, progress=False,
    )  # fmt: skip


def writing_task(repeats: int) -> None:
    """The writing task in its three environments, on the compiled and the Python path, at
    three tolerances: the wall time of ``simulate`` on the built scene (medians of
    ``repeats`` runs after one that loads the kernels; the Python path one run), the
    real-time factor, one evaluation (integrator step included) against ``pin.aba`` and
    against ``pin.constraintDynamics`` with one 3D contact at the pen tip (the nearest
    Pinocchio call for ABA plus a contact row), both timed at the task's start pose; one
    evaluation of the whole call (start-up and Trajectory included) and of the integration
    alone (``stats["wall_time"]``: the segments and the events between them, as
    ``bench_simulate.py`` counts one evaluation), and the
    error that buys: the pen tip's path and the normal force against a run at rtol 1e-12
    (sampled every 1 ms), the impact time against bisection, the energy audit."""
    from pinext.tasks import FRAME, start_configuration, writing_arm, writing_scene

    model = writing_arm().model
    data = model.createData()
    q = start_configuration(model, np.array([0.55, -0.1, 0.25]))
    v = tau = np.zeros(model.nv)
    frame_id = model.getFrameId(FRAME)
    frame = model.frames[frame_id]
    models = pin.StdVec_RigidConstraintModel()
    models.append(
        pin.RigidConstraintModel(
            pin.ContactType.CONTACT_3D, model, frame.parentJoint, frame.placement, pin.LOCAL
        )
    )
    datas = pin.StdVec_RigidConstraintData()
    datas.append(models[0].createData())
    pin.initConstraintDynamics(model, data, models, datas)
    settings = pin.ProximalSettings(1e-12, 1e-12, 1)
    aba = per_call(lambda: pin.aba(model, data, q, v, tau))
    cd = per_call(lambda: pin.constraintDynamics(model, data, q, v, tau, models, datas, settings))
    print(f"pin.aba {aba * 1e6:.2f} us, pin.constraintDynamics (one 3D contact) {cd * 1e6:.2f} us")

    def tips(traj):
        out = np.empty((traj.t.size, 3))
        for k, qk in enumerate(traj.q):
            pin.framesForwardKinematics(model, data, qk)
            out[k] = data.oMf[frame_id].translation
        return out

    print(
        f"{'environment':12s} {'path':9s} {'rtol':>6s} {'wall [s]':>9s} {'x real time':>12s} "
        f"{'rhs calls':>10s} {'us/eval':>8s} {'/ aba':>6s} {'/ cD':>6s} {'run / cD':>9s} "
        f"{'tip error [m]':>14s} "
        f"{'force error [N]':>16s} {'impact error [s]':>17s} {'energy residual':>16s}"
    )
    t_ref = None
    for environment in ("rigid", "compliant", "spring"):
        scene = writing_scene(environment)
        os.environ["PINEXT_NO_COMPILED"] = "0"
        reference = _writing_run(scene, 1e-12, 1e-3)
        tip_ref, force_ref = tips(reference), reference.outputs["contact.force"]
        if t_ref is None:
            t_ref = impact_time_reference(reference)  # the approach is the same for all three
        for path, flag in (("compiled", "0"), ("python", "1")):
            os.environ["PINEXT_NO_COMPILED"] = flag
            _writing_run(scene, 1e-6)  # loads the kernels
            for rtol in (1e-6, 1e-8, 1e-10):
                walls, runs = [], []
                for _ in range(repeats if flag == "0" else 1):
                    start = time.perf_counter()
                    traj = _writing_run(scene, rtol)
                    walls.append(time.perf_counter() - start)
                    runs.append(traj.meta["stats"]["wall_time"])
                wall, run = float(np.median(walls)), float(np.median(runs))
                sampled = _writing_run(scene, rtol, 1e-3)  # the same steps, sampled
                tip = np.abs(tips(sampled) - tip_ref).max()
                force = np.abs(sampled.outputs["contact.force"] - force_ref).max()
                per_eval = wall / traj.meta["stats"]["nfev"]
                print(
                    f"{environment:12s} {path:9s} {rtol:6.0e} {wall:9.4f} {3.0 / wall:12.1f} "
                    f"{traj.meta['stats']['nfev']:10d} {per_eval * 1e6:8.2f} "
                    f"{per_eval / aba:6.2f} {per_eval / cd:6.2f} "
                    f"{run / traj.meta['stats']['nfev'] / cd:9.2f} {tip:14.2e} {force:16.2e} "
                    f"{traj.events[0].t - t_ref:17.2e} "
                    f"{traj.energy_balance().max_relative():16.1e}"
                )
    os.environ.pop("PINEXT_NO_COMPILED")


# -- Solo12 in MuJoCo -------------------------------------------------------------------------
def _vec(values) -> str:
    return " ".join(f"{float(v):.17g}" for v in values)


def _quat_wxyz(rotation: np.ndarray) -> str:
    quat = pin.Quaternion(rotation)
    return _vec([quat.w, quat.x, quat.y, quat.z])


def _axis(joint: pin.JointModel) -> np.ndarray:
    kind = joint.shortname()
    if kind in ("JointModelRX", "JointModelRY", "JointModelRZ"):
        return np.eye(3)["XYZ".index(kind[-1])]
    if kind == "JointModelRevoluteUnaligned":
        return np.asarray(joint.extract().axis)
    raise ValueError(f"joint kind {kind} is not translated to MJCF here")


def solo12_mjcf(
    model: pin.Model, feet: tuple[str, ...], timeconst: float = 0.02, pd: tuple | None = None
) -> str:
    """MJCF of a free-flyer Pinocchio model with revolute joints: bodies at the joint
    placements with the joints' inertias, a ball geom at each foot frame, a floor; contacts
    with MuJoCo's ``solref = "timeconst 1"`` (0.02 s: its default). ``pd = (kp, kd)`` adds
    a position actuator on each joint, the PD law inside MuJoCo."""
    children: dict[int, list[int]] = {}
    for j in range(2, model.njoints):
        children.setdefault(model.parents[j], []).append(j)
    foot_of: dict[int, list[tuple[str, pin.SE3]]] = {}
    for name in feet:
        frame = model.frames[model.getFrameId(name)]
        foot_of.setdefault(frame.parentJoint, []).append((name, frame.placement))

    def body(j: int, depth: int) -> str:
        pad = "  " * depth
        placement = model.jointPlacements[j]
        inertia = model.inertias[j]
        matrix = inertia.inertia
        full = [matrix[0, 0], matrix[1, 1], matrix[2, 2], matrix[0, 1], matrix[0, 2], matrix[1, 2]]
        lines = [
            f'{pad}<body name="{model.names[j]}" pos="{_vec(placement.translation)}" '
            f'quat="{_quat_wxyz(placement.rotation)}">',
            f'{pad}  <inertial pos="{_vec(inertia.lever)}" mass="{inertia.mass:.17g}" '
            f'fullinertia="{_vec(full)}"/>',
        ]
        if j == 1:
            lines.append(f"{pad}  <freejoint/>")
        else:
            lines.append(
                f'{pad}  <joint name="{model.names[j]}" type="hinge" '
                f'axis="{_vec(_axis(model.joints[j]))}"/>'
            )
        for name, frame in foot_of.get(j, []):
            lines.append(
                f'{pad}  <geom name="{name}" type="sphere" size="{FOOT_RADIUS}" '
                f'pos="{_vec(frame.translation)}" contype="1" conaffinity="0" '
                f'friction="{MU} 0 0" condim="3" solref="{timeconst} 1"/>'
            )
        for child in children.get(j, []):
            lines.append(body(child, depth + 1))
        lines.append(f"{pad}</body>")
        return "\n".join(lines)

    actuators = ""
    if pd is not None:
        lines = [
            f'    <position joint="{model.names[j]}" kp="{pd[0]}" kv="{pd[1]}"/>'
            for j in range(2, model.njoints)
        ]
        actuators = "  <actuator>\n" + "\n".join(lines) + "\n  </actuator>"
    return f"""<mujoco model="solo12">
  <option timestep="{DT}" gravity="0 0 -9.81" cone="elliptic" integrator="Euler"/>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 1" pos="0 0 {-FOOT_RADIUS}" contype="0"
          conaffinity="1" friction="{MU} 0 0" condim="3" solref="{timeconst} 1"/>
{body(1, 2)}
  </worldbody>
{actuators}
</mujoco>"""


def run_mujoco(mj_model, q0: np.ndarray, q_ref: np.ndarray, kp: float, kd: float):
    """Drop and stand in MuJoCo: (wall time [s], base heights and lowest foot-ball centre
    every 10 ms [m], the final qpos)."""
    import mujoco

    data = mujoco.MjData(mj_model)
    data.qpos[:3] = q0[:3]
    data.qpos[3:7] = [q0[6], q0[3], q0[4], q0[5]]  # MuJoCo's quaternion is (w, x, y, z)
    data.qpos[7:] = q0[7:]
    data.qvel[:] = 0.0
    target = q_ref[7:]
    steps = int(round(T_FINAL / DT))
    heights, feet_z, feet_xy = [], [], []
    start = time.perf_counter()
    for k in range(steps):
        data.qfrc_applied[6:] = kp * (target - data.qpos[7:]) - kd * data.qvel[6:]
        mujoco.mj_step(mj_model, data)
        if k % 10 == 0:
            heights.append(data.qpos[2])
            feet_z.append(data.geom_xpos[1:, 2].min())  # ball centres: z = 0 on the floor
            feet_xy.append(data.geom_xpos[1:, :2].copy())
    wall = time.perf_counter() - start
    return wall, np.array(heights), np.array(feet_z), data.qpos.copy(), np.array(feet_xy)


def run_mujoco_actuated(mj_model, q0: np.ndarray, q_ref: np.ndarray):
    """The same drop with the PD law in MuJoCo's position actuators: ten steps per call
    (``mj_step(..., nstep=10)``), no Python per step; the same samples as
    :func:`run_mujoco`."""
    import mujoco

    data = mujoco.MjData(mj_model)
    data.qpos[:3] = q0[:3]
    data.qpos[3:7] = [q0[6], q0[3], q0[4], q0[5]]
    data.qpos[7:] = q0[7:]
    data.qvel[:] = 0.0
    data.ctrl[:] = q_ref[7:]
    heights, feet_z, feet_xy = [], [], []
    start = time.perf_counter()
    for _ in range(int(round(T_FINAL / DT)) // 10):
        heights.append(data.qpos[2])
        feet_z.append(data.geom_xpos[1:, 2].min())
        feet_xy.append(data.geom_xpos[1:, :2].copy())
        mujoco.mj_step(mj_model, data, nstep=10)
    wall = time.perf_counter() - start
    return wall, np.array(heights), np.array(feet_z), data.qpos.copy(), np.array(feet_xy)


def slip(feet_z: np.ndarray, feet_xy: np.ndarray) -> float:
    """Largest horizontal travel of a foot from 50 ms after the first touchdown to the end
    [m] (samples every 10 ms)."""
    down = int(np.flatnonzero(feet_z < 1e-3)[0]) + 5
    return float(np.abs(feet_xy[down:] - feet_xy[down]).max())


def _its(iterations: float) -> str:
    """Solver iterations per step, or a dash for a simulator that does not report them."""
    return f"{iterations:.1f}" if np.isfinite(iterations) else "—"


def solo12(repeats: int, markdown_path: Path | None = None) -> None:
    """The Solo12 scene on every simulator, in turn within each of ``repeats`` rounds (the
    ratios are taken within a round, so that each compares two runs in one state of the
    machine; the table gives the medians)."""
    from pinext.robots.solo12 import FEET, load_solo12, posture_law
    from pinext.simulation.timestepping import simulate_timestepping

    robot, q_ref = load_solo12()
    q0 = q_ref.copy()
    q0[2] = DROP_HEIGHT
    kp, kd = 10.0, 0.2
    law = posture_law(q_ref, kp, kd)
    system = px.System(robot, contacts=())
    gains = np.r_[np.zeros(6), np.full(12, kp)], np.r_[np.zeros(6), np.full(12, kd)]
    pd = JointPD(system, q_ref, *gains)  # the same law, evaluated inside the compiled loop

    def stepped(control, solver):
        def run():
            start = time.perf_counter()
            traj = simulate_timestepping(
                system, T_FINAL, q0=q0, control=control, dt=DT, output_dt=0.01, solver=solver
            )
            return time.perf_counter() - start, traj

        return run

    runners = [
        ("pinext compiled, JointPD in the loop", stepped(pd, "auto")),
        ("pinext compiled, Python law per step", stepped(law, "auto")),
        ("pinext, Pinocchio's ADMM per step", stepped(law, "admm")),
    ]
    ours = len(runners)
    try:
        import mujoco
    except ImportError:
        print("MuJoCo is not installed (pip install mujoco): pinext only")
        mujoco = None
    if mujoco is not None:
        for label, timeconst, actuated in [
            ("MuJoCo solref 0.02 (default), PD in Python", 0.02, None),
            ("MuJoCo solref 0.002 (stiff), PD in Python", 2 * DT, None),
            ("MuJoCo solref 0.02, PD actuators, nstep 10", 0.02, (kp, kd)),
            ("MuJoCo solref 0.002, PD actuators, nstep 10", 2 * DT, (kp, kd)),
        ]:
            mj_model = mujoco.MjModel.from_xml_string(
                solo12_mjcf(robot.model, FEET, timeconst, actuated)
            )
            assert abs(float(sum(mj_model.body_mass)) - pin.computeTotalMass(robot.model)) < 1e-9
            if actuated is None:
                runners.append((label, partial(run_mujoco, mj_model, q0, q_ref, kp, kd)))
            else:
                runners.append((label, partial(run_mujoco_actuated, mj_model, q0, q_ref)))
    walls = np.zeros((repeats, len(runners)))
    last: list = [None] * len(runners)
    for r in range(repeats):
        for i, (_, run) in enumerate(runners):
            result = run()
            walls[r, i], last[i] = result[0], result
    rows = []
    data = robot.model.createData()
    for i, (label, _) in enumerate(runners):
        wall = float(np.median(walls[:, i]))
        if i < ours:
            traj = last[i][1]
            feet = []
            for q in traj.q:
                pin.framesForwardKinematics(robot.model, data, q)
                feet.append([data.oMf[robot.model.getFrameId(f)].translation.copy() for f in FEET])
            feet_arr = np.array(feet)
            stats = traj.meta["stats"]
            z_end, pen = traj.q[-1, 2], max(0.0, -float(traj.outputs["contact.gap"].min()))
            travel = slip(feet_arr[:, :, 2].min(axis=1), feet_arr[:, :, :2])
            its = stats["solver_iterations"] / stats["steps"]
        else:
            _, _, feet_z, qpos, feet_xy = last[i]
            z_end, pen = qpos[2], max(0.0, -float(feet_z.min()))
            travel, its = slip(feet_z, feet_xy), float("nan")
        rows.append((label, wall, T_FINAL / wall, z_end, pen, travel, its))
    caption = (
        f"Solo12 dropped from {DROP_HEIGHT} m, PD posture (kp {kp}, kd {kd}), {T_FINAL:g} s at "
        f"dt = {DT * 1e3:g} ms; {repeats} rounds, the simulators in turn in each; wall: the "
        f"median (pinext: the whole simulate_timestepping call), ratio: the median of the "
        f"rounds' ratios; {machine_load()}"
    )
    if mujoco is not None:
        caption += f"; MuJoCo {mujoco.__version__}"
    header = [
        "simulator", "wall [s]", "real time x", "base z end [m]", "max penetration [m]",
        "foot slip [m]", "solver it/step",
    ]  # fmt: skip
    table = [
        [name, f"{wall:.3f}", f"{rtf:.1f}", f"{z:.6f}", f"{pen:.2e}", f"{travel:.2e}", _its(its)]
        for name, wall, rtf, z, pen, travel, its in rows
    ]
    print(f"\n{caption}")
    print_table(table, header)
    peers = range(ours, len(runners))
    ratio_header = ["pinext / MuJoCo wall", *(runners[j][0].removeprefix("MuJoCo ") for j in peers)]
    ratios = [
        [runners[i][0], *(f"{np.median(walls[:, i] / walls[:, j]):.2f}" for j in peers)]
        for i in range(ours)
    ]
    print_table(ratios, ratio_header)
    if markdown_path is not None:
        text = markdown(table, header, caption) + "\n" + markdown(ratios, ratio_header, None)
        markdown_path.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-writing", action="store_true", help="only the Solo12 scene")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--markdown", type=Path, help="also write the Solo12 tables there")
    args = parser.parse_args()
    if not args.skip_writing:
        writing_task(args.repeats)
    solo12(args.repeats, args.markdown)


if __name__ == "__main__":
    main()
