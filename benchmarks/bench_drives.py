"""Panda (7 DOF) with DC motors and elastic transmissions, 5 s: pinext vs MuJoCo.

pinext integrates the complete model (20.98)-(20.99) + (20.70) with its default method (the
compiled Radau IIA from the start when the linearised fast modes die out early in the run, else
DOP853, switching to Radau when its stiffness test fires), DOP853 only, Radau only; MuJoCo gets the
same model: per joint a rotor hinge (joint-side coordinate theta/N, armature J N^2, damping
from back-EMF and friction, motor gear N C_M / R) coupled to the link joint by a fixed tendon
spring (stiffness c, damping d). Jiminy (RK4, DOPRI5; its own venv, see ``_jiminy_peer.py``)
gets it too: rotor links with SimpleMotors and viscoelastic coupling forces (``jiminy_spec``).
All are compared against a tight pinext reference.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import per_call, print_table, robots_dir  # noqa: E402
from _jiminy_peer import (  # noqa: E402
    chain_urdf,
    dopri_settings,
    jiminy_curves,
    jiminy_peer_curves,
    link_name,
    rk4_settings,
    rotation_stiffness,
    rotor_link,
)
from _peers import (  # noqa: E402
    REPEATS,
    equal_error_header,
    equal_error_table,
    machine_load,
    median_run,
    mujoco_rollout,
)

import pinext as px  # noqa: E402
from pinext.drives import DCMotor, Drive, ElasticTransmission  # noqa: E402

DURATION = 5.0
SAMPLE = 0.01
JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
RATIO = np.array([100.0, 100.0, 100.0, 100.0, 80.0, 80.0, 80.0])
STIFFNESS = np.array([8000.0, 8000.0, 6000.0, 6000.0, 2500.0, 2500.0, 2500.0])
DAMPING = np.array([4.0, 4.0, 3.0, 3.0, 1.0, 1.0, 1.0])
MOTOR = dict(
    resistance=0.5,
    torque_constant=0.05,
    back_emf_constant=0.05,
    rotor_inertia=2e-5,
    viscous_friction=1e-6,
)
Q0 = np.array([0.0, -0.6, 0.0, -2.2, 0.0, 1.6, 0.8])
#: pinext's tolerances, loosest first.
RTOLS = (1e-1, 3e-2, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10)
#: The fixed steps of MuJoCo and Jiminy RK4 [s]: each divides SAMPLE, and they are dense near
#: the explicit and semi-implicit methods' stability limits (3.3 and 2.5 ms), where the
#: cheapest stable run sets the time at loose accuracy.
STEPS = (1e-2, 5e-3, 1e-2 / 3, 2.5e-3, 2e-3, 1e-3, 5e-4, 2e-4, 1e-4, 5e-5)


def panda_robot(base: Path) -> px.Robot:
    """The Panda arm with its fingers locked (7 DOF)."""
    full = pin.buildModelFromUrdf(str(base / "panda_description/urdf/panda.urdf"))
    fingers = [full.getJointId(n) for n in ("panda_finger_joint1", "panda_finger_joint2")]
    model = pin.buildReducedModel(full, fingers, pin.neutral(full))
    return px.Robot.from_model(model)


def voltages(robot: px.Robot) -> np.ndarray:
    """Constant voltages: gravity compensation at Q0 plus a 1 V step on every motor."""
    g = pin.computeGeneralizedGravity(robot.model, robot.model.createData(), Q0)
    m = MOTOR
    return g / RATIO * m["resistance"] / m["torque_constant"] + 1.0


def panda_system(robot: px.Robot) -> px.System:
    """The Panda with its seven elastic DC drives; no joint limits, as the MuJoCo scene."""
    drives = {
        j: Drive(DCMotor(**MOTOR), ElasticTransmission(n, c, d))
        for j, n, c, d in zip(JOINTS, RATIO, STIFFNESS, DAMPING, strict=True)
    }
    return px.System(robot, drives=drives, joint_limits=False)


def pinext_run(
    robot: px.Robot, u: np.ndarray, rtol: float, method: str | None = None, repeats: int = REPEATS
) -> tuple[np.ndarray, dict, float]:
    """Samples every SAMPLE seconds, the stats of the last run and the median wall time of
    ``repeats`` runs of one System (built, and its linear phase identified, before the timed
    runs, as MuJoCo's model is compiled before its timed runs)."""
    system = panda_system(robot)

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the announced switch to Radau
            return px.simulate(
                system,
                DURATION,
                q0=Q0,
                control=u,
                rtol=rtol,
                atol=rtol * 1e-2,
                output_dt=SAMPLE,
                method=method,
            )

    run()  # the System's one-time work: identification, packing (and first compilation)
    traj, wall = median_run(run, repeats)
    return traj.q, traj.meta["stats"], wall


def mjcf(robot: px.Robot) -> str:
    """An MJCF of the same model: links from Pinocchio's inertias, rotors, tendon springs."""
    model = robot.model
    m = MOTOR
    parts = [
        '<mujoco model="panda_elastic"><compiler angle="radian"/>',
        '<option gravity="0 0 -9.81" integrator="RK4"><flag contact="disable"/></option>',
        "<worldbody>",
    ]
    closing = []
    for i in range(1, model.njoints):
        placement = model.jointPlacements[i]
        pos = " ".join(f"{x:.17g}" for x in placement.translation)
        quat = pin.Quaternion(placement.rotation)
        qs = f"{quat.w:.17g} {quat.x:.17g} {quat.y:.17g} {quat.z:.17g}"
        inertia = model.inertias[i]
        com = " ".join(f"{x:.17g}" for x in inertia.lever)
        inert = inertia.inertia
        full = " ".join(
            f"{x:.17g}"
            for x in (inert[0, 0], inert[1, 1], inert[2, 2], inert[0, 1], inert[0, 2], inert[1, 2])
        )
        k = i - 1
        n = RATIO[k]
        reflected = (m["rotor_inertia"]) * n**2
        emf = (
            m["torque_constant"] * m["back_emf_constant"] / m["resistance"] + m["viscous_friction"]
        ) * n**2
        # the rotor: a hinge on the parent link, in joint-side units (phi = theta / N)
        parts.append(
            f'<body name="rotor{k}" pos="{pos}" quat="{qs}"><inertial pos="0 0 0" mass="1e-9" '
            f'diaginertia="1e-12 1e-12 1e-12"/><joint name="rotor{k}" type="hinge" axis="0 0 1" '
            f'armature="{reflected:.17g}" damping="{emf:.17g}"/></body>'
        )
        parts.append(
            f'<body name="link{k}" pos="{pos}" quat="{qs}"><inertial pos="{com}" '
            f'mass="{inertia.mass:.17g}" fullinertia="{full}"/>'
            f'<joint name="q{k}" type="hinge" axis="0 0 1" damping="{model.damping[k]:.17g}"/>'
        )
        closing.append("</body>")
    parts += closing[::-1] + ["</worldbody><tendon>"]
    for k in range(7):
        parts.append(
            f'<fixed name="spring{k}" stiffness="{STIFFNESS[k]:.17g}" damping="{DAMPING[k]:.17g}" '
            f'springlength="0"><joint joint="rotor{k}" coef="1"/><joint joint="q{k}" coef="-1"/>'
            "</fixed>"
        )
    parts.append("</tendon><actuator>")
    for k in range(7):
        gear = RATIO[k] * m["torque_constant"] / m["resistance"]
        parts.append(f'<motor joint="rotor{k}" gear="{gear:.17g}"/>')
    parts.append("</actuator></mujoco>")
    return "".join(parts)


def jiminy_spec(robot: px.Robot, u: np.ndarray, settings: list[dict], repeats: int) -> dict:
    """The same model for Jiminy (see ``_jiminy.py``), the way its API offers each effect:

    - rotors: a leaf link without inertia per joint, hinged on the parent link at the link
      joint's placement (joint-side angle theta/N), driven by a ``SimpleMotor`` with
      ``mechanicalReduction`` N, ``armature`` J (Jiminy adds J N^2 to the rotor joint's diagonal
      in its ABA), viscous friction (C_M C_E / R + b) N^2 (back-EMF and rotor friction, joint
      side) and the constant command C_M u / R (motor torque; N C_M u / R on the joint);
    - tendon springs: ``register_viscoelastic_coupling_force`` between the rotor's and the link's
      body frames (coincident at phi = q) with stiffness c and damping d about z only, i.e. the
      torque c (phi - q) + d (phi' - q') between rotor and link (log3 of a rotation about z is
      its angle): C++, no Python per evaluation;
    - link joint damping (Pinocchio's ``model.damping``): a ``SimpleMotor`` on each link joint
      with zero command and viscous friction ``model.damping``;
    - gravity -9.81, no position limits (+-1e300 in the URDF), no effort or velocity limits, no
      sensors, no contacts; the pre-deflected start of the MuJoCo scene.
    """
    model = robot.model
    m = MOTOR
    g = pin.computeGeneralizedGravity(model, model.createData(), Q0)
    motors, couplings = [], []
    for k in range(7):
        j = k + 1
        n = float(RATIO[k])
        motors.append(
            {
                "name": f"motor{j}",
                "joint": f"rotor{j}",
                "reduction": n,
                "armature": m["rotor_inertia"],
                "viscous": (
                    m["torque_constant"] * m["back_emf_constant"] / m["resistance"]
                    + m["viscous_friction"]
                )
                * n**2,
                "command": float(m["torque_constant"] / m["resistance"] * u[k]),
            }
        )
        motors.append(
            {
                "name": f"damping{j}",
                "joint": model.names[j],
                "reduction": 1.0,
                "armature": 0.0,
                "viscous": float(model.damping[k]),
                "command": 0.0,
            }
        )
        couplings.append(
            {
                "frame1": rotor_link(j),
                "frame2": link_name(model, j),
                "stiffness": rotation_stiffness(model, j, float(STIFFNESS[k])),
                "damping": rotation_stiffness(model, j, float(DAMPING[k])),
            }
        )
    links = [model.names[j] for j in range(1, 8)]
    return {
        "urdf": chain_urdf(model, rotors=True),
        "joints": links + [f"rotor{j}" for j in range(1, 8)],
        "observe": links,
        "q0": np.r_[Q0, Q0 + g / STIFFNESS].tolist(),
        "v0": [0.0] * 14,
        "duration": DURATION,
        "sample": SAMPLE,
        "gravity": [0.0, 0.0, -9.81],
        "frames": [],
        "couplings": couplings,
        "motors": motors,
        "settings": settings,
        "repeats": repeats,
    }


def mujoco_run(xml: str, robot: px.Robot, u: np.ndarray, dt: float, integrator: str, rollout):
    """Link angles every SAMPLE seconds and the median wall time: MuJoCo's Python step loop
    (``rollout=False``) or its ``rollout`` (no Python per step)."""
    import mujoco

    xml = xml.replace('integrator="RK4"', f'integrator="{integrator}"')
    mj = mujoco.MjModel.from_xml_string(xml)
    mj.opt.timestep = dt
    data = mujoco.MjData(mj)
    g = pin.computeGeneralizedGravity(robot.model, robot.model.createData(), Q0)
    rotor = [mj.joint(f"rotor{k}").qposadr[0] for k in range(7)]
    link = [mj.joint(f"q{k}").qposadr[0] for k in range(7)]
    per_sample = int(round(SAMPLE / dt))
    steps = int(round(DURATION / dt))

    def start():
        mujoco.mj_resetData(mj, data)
        data.qpos[link] = Q0
        data.qpos[rotor] = Q0 + g / STIFFNESS  # the same pre-deflected springs as pinext
        data.ctrl[:] = u

    def loop():
        start()
        samples = [data.qpos[link].copy()]
        for s in range(steps):
            mujoco.mj_step(mj, data)
            if (s + 1) % per_sample == 0:
                samples.append(data.qpos[link].copy())
        return np.array(samples)

    def rolled():
        start()
        states = mujoco_rollout(mj, data, u, steps)
        qpos = states[per_sample - 1 :: per_sample, 1 : 1 + mj.nq]
        return np.vstack((Q0, qpos[:, link]))

    q, wall = median_run(rolled if rollout else loop)
    return q, wall, steps


def main() -> None:
    base = robots_dir()
    if base is None:
        print("example-robot-data not installed: bench_drives skipped (pip install '.[robots]')")
        return
    robot = panda_robot(base)
    u = voltages(robot)
    model, data = robot.model, robot.model.createData()
    aba = per_call(lambda: pin.aba(model, data, Q0, np.zeros(7), np.zeros(7)))
    reference, ref_stats, _ = pinext_run(robot, u, 1e-12, "DOP853", repeats=1)
    rows = []
    curves: dict[str, list[tuple[float, float]]] = {}
    pinext_peers = (
        ("pinext", None, "0"),  # the default: Radau when the fast modes die out, else DOP853
        ("pinext DOP853 only", "DOP853", "0"),
        ("pinext Radau", "Radau", "0"),  # compiled Radau IIA from the start
        ("pinext Python path", None, "1"),
    )
    for name, method, flag in pinext_peers:
        os.environ["PINEXT_NO_COMPILED"] = flag
        curves[name] = []
        for rtol in RTOLS:
            q, stats, wall = pinext_run(robot, u, rtol, method)
            err = float(np.abs(q - reference).max())
            curves[name].append((err, wall))
            per_eval = stats["wall_time"] / stats["nfev"]
            switched = stats["switched_to_radau_at"]
            rows.append(
                [
                    f"{name} rtol {rtol:g}" + (f" (Radau at {switched:.2f} s)" if switched else ""),
                    f"{err:.1e}",
                    f"{wall:.3f}",
                    stats["nfev"],
                    f"{per_eval * 1e6:.1f}",
                    f"{per_eval / aba:.2f}",
                ]
            )
    os.environ.pop("PINEXT_NO_COMPILED")
    try:
        import mujoco  # noqa: F401
    except ImportError:
        print("mujoco not installed: MuJoCo rows skipped (pip install '.[bench]')")
    else:
        xml = mjcf(robot)
        mujoco_peers = (
            ("MuJoCo RK4 mj_step", "RK4", False),
            ("MuJoCo RK4 rollout", "RK4", True),
            ("MuJoCo implicitfast rollout", "implicitfast", True),
        )
        for name, integrator, rollout in mujoco_peers:
            curves[name] = []
            for dt in STEPS:
                q, wall, steps = mujoco_run(xml, robot, u, dt, integrator, rollout)
                err = float(np.abs(q - reference[: len(q)]).max())
                if not np.isfinite(err):
                    err = np.inf
                curves[name].append((err, wall))
                rows.append([f"{name} dt {dt:.3g}", f"{err:.1e}", f"{wall:.3f}", steps, "", ""])
    settings = rk4_settings(list(STEPS)) + dopri_settings([10.0**-k for k in range(2, 11)], 1e-2)
    out = jiminy_curves(jiminy_spec(robot, u, settings, REPEATS))
    if out is not None:

        def jiminy_row(name, result, err):
            evals = result.get("evals")
            per_eval = result["wall"] / evals if evals and not result["failed"] else None
            return [
                f"{name} {result['label'].split(' ', 1)[1]}",
                f"{err:.1e}",
                f"{result['wall']:.3f}",
                evals or result.get("steps", ""),
                "" if per_eval is None else f"{per_eval * 1e6:.1f}",
                "" if per_eval is None else f"{per_eval / aba:.2f}",
            ]

        def jiminy_error(result):
            q = np.array(result["samples"])
            return np.abs(q - reference[: len(q)]).max() if len(q) == len(reference) else np.inf

        jiminy_peer_curves(out, jiminy_error, rows, curves, jiminy_row)
    print(
        f"Panda, 7 DC motors + elastic transmissions, {DURATION:g} s; reference: pinext "
        f"rtol 1e-12 ({ref_stats['nfev']} rhs evaluations); one pin.aba = {aba * 1e6:.2f} us; "
        f"walls are medians of {REPEATS} runs; {machine_load()}"
    )
    print_table(
        rows,
        ["run", "max |q - q_ref| [rad]", "wall [s]", "rhs evals / steps", "per eval [us]",
         "eval/aba"],
    )  # fmt: skip
    print("at equal error (each peer's wall interpolated along its own error-time curve):")
    print_table(equal_error_table(curves, "pinext"), equal_error_header(curves, "pinext"))


if __name__ == "__main__":
    main()
